"""Every shell command shown in README.md and docs/ is run, and its shown output checked.

The convention (docs/examples.md says it for writers): every fenced block in ``sh``,
``bash``, ``shell`` or ``console`` carries a marker on the line above it,

- ``<!-- run -->``: the block is executed, top to bottom, one shell per page (variables
  set by one command are seen by the next). A line starting with ``$ `` is a command (a
  trailing backslash continues it); the lines under it, up to the next command, are the
  output it must print (stdout, then stderr), where ``...`` stands for anything and
  ``[exit N]`` for a non-zero exit status. A command with no lines under it must exit 0.
- ``<!-- not run: REASON -->``: the block is not executed (it needs GitHub, a cluster, a
  model server...); the reason is required and the count of such blocks per page is
  pinned below, so it cannot grow silently.

A ``gradebox serve`` command is started in the background (its log is not compared) and
waited for until ``/readyz`` answers; later commands reach it on the port it was given.
Commands run from the repository's root against the bundled ``examples/``; ``/tmp/``
becomes a scratch directory of the test and port 8000 a free port, and both outputs are
normalised for ids, tokens, times, durations, ports and paths before they are compared.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ports import free_port
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_FENCE = re.compile(r"^```(?:sh|bash|shell|console)\b", re.M)
MARKED = re.compile(
    r"<!-- (?:(?P<run>run)|not run: (?P<reason>[^\n]+?)) -->\n"
    r"```(?:sh|bash|shell|console)[^\n]*\n(?P<body>.*?)^```$",
    re.M | re.S,
)

#: page -> blocks shown but not executed. Raise a number only with a reason in the page.
NOT_RUN = {
    "README.md": 1,
    "docs/guides/cluster.md": 2,
    "docs/guides/gate.md": 1,
    "docs/guides/grade.md": 2,
    "docs/guides/inspect.md": 1,
    "docs/guides/judge.md": 3,
    "docs/guides/mine.md": 1,
    "docs/guides/benchmarks.md": 1,
    "docs/guides/pull-requests.md": 1,
    "docs/guides/service.md": 3,
}


@dataclass(frozen=True, slots=True)
class Command:
    """One ``$ `` command of a block and what the page shows it printing."""

    text: str
    """The command as shown, continuation lines joined."""
    shown: tuple[str, ...]
    """The output lines under it (``[exit N]`` lines taken out)."""
    exit_code: int
    """The exit status it must end with."""


@dataclass(frozen=True, slots=True)
class Block:
    """A marked shell block of a page."""

    page: str
    line: int
    reason: str | None
    """Why it is not run; ``None`` when it is."""
    body: str


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    page = path.relative_to(ROOT).as_posix()
    return [
        Block(page, text.count("\n", 0, m.start()) + 2, m["reason"], m["body"])
        for m in MARKED.finditer(text)
    ]


def _complete(cmd: str) -> bool:
    """Whether ``cmd`` closes every quote it opens (a quoted JSON body may span lines)."""
    try:
        shlex.split(cmd)
    except ValueError:
        return False
    return True


def commands(body: str) -> list[Command]:
    out: list[Command] = []
    lines = body.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"output before any command: {lines[i]!r}")
        cmd = lines[i][2:]
        while cmd.endswith("\\") or not _complete(cmd):
            i += 1
            cmd += "\n" + lines[i]
        i += 1
        shown: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        codes = [int(s[6:-1]) for s in shown if re.fullmatch(r"\[exit \d+\]", s)]
        shown = [s for s in shown if not re.fullmatch(r"\[exit \d+\]", s)]
        out.append(Command(cmd, tuple(shown), codes[0] if codes else 0))
    return out


_NORMAL = [
    (re.compile(r"gbx_[A-Za-z0-9_\-]+"), "gbx_<token>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hex>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r'("\w+_(?:ms|s)"):\s?[\d.]+'), r"\1: <n>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b"), "<duration>"),
    (re.compile(r"(localhost|127\.0\.0\.1):\d+"), r"\1:<port>"),
]


def normalise(text: str, scratch: str) -> str:
    text = text.replace(scratch, "/tmp")
    for pattern, repl in _NORMAL:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def matches(shown: str, real: str, scratch: str = "\0") -> bool:
    """Whether ``real`` is what ``shown`` says, ``...`` standing for anything."""
    want = normalise(shown, scratch)
    got = normalise(real, scratch)
    pattern = ".*?".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got, re.S) is not None


def test_every_shell_block_is_marked_run_or_not_run_with_a_reason():
    marker = re.compile(r"<!-- (?:run|not run: [^\n]+?) -->")
    unmarked = []
    for path in PAGES:
        lines = path.read_text().split("\n")
        for n, line in enumerate(lines):
            if SHELL_FENCE.match(line) and not (n and marker.fullmatch(lines[n - 1])):
                unmarked.append(f"{path.relative_to(ROOT)}:{n + 1}")
    assert not unmarked, unmarked


def test_blocks_not_run_are_counted_per_page():
    found = {}
    for path in PAGES:
        skipped = [b for b in blocks(path) if b.reason is not None]
        if skipped:
            found[skipped[0].page] = len(skipped)
        for b in skipped:
            assert len(b.reason or "") > 10, f"{b.page}:{b.line}: say why it is not run"
    assert found == NOT_RUN


def test_the_readme_shows_its_commands_and_every_one_is_run_or_marked():
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) < 250
    shown = [c.text for b in blocks(readme) if b.reason is None for c in commands(b.body)]
    assert "make demo" in shown


def test_shown_output_is_compared_after_normalising_ids_times_ports_and_paths():
    real = (
        '{"grade_id":"d1c045e13460f10fbfbcb945","latency_ms":41.2,'
        '"url":"http://127.0.0.1:41873/x","out":"/var/tmp/abc/r.jsonl"}'
    )
    shown = (
        '{"grade_id":"10430d3a585ac4f05dad5405","latency_ms":100.0,'
        '"url":"http://127.0.0.1:8000/x","out":"/tmp/r.jsonl"}'
    )
    assert matches(shown, real, "/var/tmp/abc")
    assert matches('{"grade_id":...,"out":"/tmp/r.jsonl"}', real, "/var/tmp/abc")
    assert not matches(shown.replace("r.jsonl", "s.jsonl"), real, "/var/tmp/abc")


def test_a_stale_row_fails_the_comparison():
    """The README's first service example once showed per-case outcomes under ``counts``."""
    real = '{"id":"s1","verdict":"fail","counts":{"passed":2,"failed":1,"timed_out":0}}'
    stale = '{"id":"s1","verdict":"fail","outcomes":["ok","ok","error"],...}'
    assert not matches(stale, real)
    assert matches('{"id":"s1","verdict":"fail",...}', real)


class Shell:
    """Runs a page's commands one after another, variables kept between them."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.port = free_port()
        self.state = scratch / ".shell-state"
        self.state.write_text("")
        self.servers: list[subprocess.Popen[bytes]] = []
        bindir = Path(sys.executable).parent
        self.env = {
            **os.environ,
            "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
            "DEMO_OUT": f"{scratch}/gradebox-demo/results.jsonl",
            "XDG_CACHE_HOME": str(scratch / "cache"),
        }
        for name in [k for k in self.env if k.startswith(("GRADEBOX_", "OPENAI_"))]:
            del self.env[name]
        self.venv_bin = bindir

    def rewrite(self, cmd: str) -> str:
        cmd = cmd.replace("/tmp/", f"{self.scratch}/").replace(".venv/bin/", f"{self.venv_bin}/")
        return re.sub(r"(localhost:|127\.0\.0\.1:|--port )8000\b", rf"\g<1>{self.port}", cmd)

    def run(self, cmd: Command, where: str) -> None:
        text = self.rewrite(cmd.text)
        if re.match(r"(\S*/)?gradebox serve\b", text):
            self.serve(text, where)
            return
        script = f"set -a\n. {self.state}\n{text}\nrc=$?\nexport -p > {self.state}\nexit $rc\n"
        done = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=self.env, capture_output=True,
            text=True, timeout=600, check=False,
        )  # fmt: skip
        real = done.stdout + done.stderr
        assert done.returncode == cmd.exit_code, f"{where}: {cmd.text}\n{real[-3000:]}"
        if cmd.shown:
            shown = "\n".join(cmd.shown)
            assert matches(shown, real, str(self.scratch)), (
                f"{where}: {cmd.text}\nshown:\n{normalise(shown, str(self.scratch))}\n"
                f"real:\n{normalise(real, str(self.scratch))}"
            )

    def serve(self, text: str, where: str) -> None:
        log = (self.scratch / "serve.log").open("wb")
        proc = subprocess.Popen(
            shlex.split(text), cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.servers.append(proc)

        def ready() -> bool:
            assert proc.poll() is None, f"{where}: the server exited: {text}"
            try:
                return httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=5).is_success
            except httpx.TransportError:
                return False

        wait_until(ready, timeout=180, interval=0.2, what=f"{where}: /readyz")

    def close(self) -> None:
        for proc in self.servers:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


RUN_PAGES = [p for p in PAGES if any(b.reason is None for b in blocks(p))]


@pytest.mark.parametrize("path", RUN_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in RUN_PAGES])
def test_the_commands_a_page_shows_print_what_it_shows(path, tmp_path):
    if path.name == "README.md" or path.name == "quickstart.md":
        stale = subprocess.run(
            ["make", "--question", ".venv/.installed"], cwd=ROOT, capture_output=True, check=False
        )
        if stale.returncode != 0:
            pytest.fail("the demo's install step is out of date: run `make demo` once first")
    shell = Shell(tmp_path)
    try:
        for block in blocks(path):
            if block.reason is None:
                for cmd in commands(block.body):
                    shell.run(cmd, f"{block.page}:{block.line}")
    finally:
        shell.close()
