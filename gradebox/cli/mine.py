"""``gradebox mine``: turn a repository's own fixes into held-out SWE-bench instances."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import IO

import click

from gradebox.cli.errors import EXIT_OK, exit_codes
from gradebox.cli.options import sandbox_python_option
from gradebox.errors import BadInput, SetupError
from gradebox.mine import MineConfig, Miner, Outcome, report, summary_line
from gradebox.patches.env import default_cache
from gradebox.runs.private import private_text
from sandbox.backends import find_python
from sandbox.command import CommandLimits
from sandbox.errors import IsolationUnavailable

__all__ = ["mine"]

_FILE = click.Path(path_type=Path, dir_okay=False)
_DIR = click.Path(path_type=Path, file_okay=False)
_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@click.command(context_settings={"max_content_width": 100})
@click.option("--repo", type=_DIR, required=True, help="The git repository to mine (read as "
              "objects only, never checked out or written).")  # fmt: skip
@click.option("--rev-range", metavar="A..B", help="Commits B reaches and A does not (A.. is "
              "A..HEAD; B alone: all B reaches). Default: all HEAD reaches.")  # fmt: skip
@click.option("--max", "max_instances", type=click.IntRange(1, 100_000), default=100,
              show_default=True, help="Stop once this many instances are kept.")  # fmt: skip
@click.option("--validate", is_flag=True, help="Gate each instance's gold patch (must be "
              "resolved), a no-op patch and the reversed gold patch (must not be); keep only "
              "instances the gate agrees with.")  # fmt: skip
@click.option("--out", type=_FILE, required=True, help="instances.jsonl to write (SWE-bench's "
              "instance format; one line per kept instance, written as it is kept).")  # fmt: skip
@click.option("--report", "report_path", type=_FILE, help="report.json to write: commits seen, "
              "kept, drop reasons with counts, validation agreement, timing.")  # fmt: skip
@click.option("--repo-name", metavar="OWNER/NAME", help="The instances' repo (the gate finds "
              "the clone at DIR/OWNER__NAME). Default: OWNER/NAME when --repo is a folder named "
              "OWNER__NAME, else local/<its name>.")  # fmt: skip
@click.option("--runs", type=click.IntRange(1, 10), default=2, show_default=True,
              help="Runs of the tests at base and at the commit; a test whose status differs "
              "is flaky and left out.")  # fmt: skip
@click.option("--max-lines", type=click.IntRange(1, 1_000_000), default=500, show_default=True,
              help="Most changed lines of the patch, and of the test patch.")  # fmt: skip
@click.option("--max-files", type=click.IntRange(1, 100_000), default=20, show_default=True,
              help="Most files the patch (outside the tests) changes.")  # fmt: skip
@click.option("--env", "env_dir", type=_DIR, help="A prepared virtual environment for every "
              "commit, instead of one built from each base's requirements.txt.")  # fmt: skip
@click.option("--env-cache", type=_DIR, help="Where built environments are cached (the gate's).")
@click.option("--no-install", is_flag=True, help="Run the tests against the tree as is: do not "
              "build and install the package under test (as `gate --no-install`).")  # fmt: skip
@click.option("--timeout", type=click.FloatRange(1, 7200), default=600, show_default=True,
              help="Seconds per pytest run.")  # fmt: skip
@click.option("--memory-mb", type=click.IntRange(256, 65536), default=4096, show_default=True,
              help="Memory of each test run's whole process tree.")  # fmt: skip
@click.option("--tree-mb", type=click.IntRange(16, 65536), default=1024, show_default=True,
              help="Size of the in-memory copy of the tree a test run works in.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@sandbox_python_option
@exit_codes
def mine(**opts: object) -> None:
    """Mine held-out tasks from a repository's history, validated by running its tests.

    Each non-merge commit in the range, newest first, that changes the tests and
    Python code outside them together becomes a SWE-bench instance: the parent
    is base_commit, the change outside the tests the gold patch, the change to
    the tests the test_patch; FAIL_TO_PASS are the tests that fail at base with
    the test patch and pass at the commit, in every one of --runs runs of each
    (PASS_TO_PASS pass in all); tests that change status are flaky and left out.
    Every test runs in the gate's sandbox. Other commits are dropped with a
    reason (report.json counts them). Progress, one line per commit, on stderr.

    Grade a model against the result with
    gradebox gate --swebench instances.jsonl --predictions preds.jsonl --repos DIR,
    DIR/OWNER__NAME being a clone of the repository (see --repo-name).

    Exit 0 when the range was mined (whatever was kept), 2 for bad input or an
    infrastructure error.

    \b
    Examples:
      gradebox mine --repo clones/acme__calc --rev-range v2.0..main --max 50 \\
                    --out instances.jsonl --report report.json
      gradebox mine --repo ../calc --repo-name acme/calc --max 10 --validate \\
                    --out instances.jsonl
    """  # noqa: D301 - click needs a real \b
    config = _config(opts)
    miner = Miner(config)
    shas = miner.commits()
    out, report_path = _path(opts["out"]), opts["report_path"]
    _refuse_inside(config.repo, [out, report_path])
    _say(f"{len(shas)} non-merge commit(s) in range; keeping up to {config.max_instances}")
    outcomes: list[Outcome] = []
    t0 = time.monotonic()
    with _sink(out) as sink:
        for outcome in miner.run(shas):
            outcomes.append(outcome)
            if outcome.kept and outcome.instance is not None:
                sink.write(json.dumps(outcome.instance.to_row(), ensure_ascii=False) + "\n")
                sink.flush()
            _say(_progress(len(outcomes), len(shas), outcome))
    total = time.monotonic() - t0
    full = report(config, outcomes, total)
    if isinstance(report_path, Path):
        _write(report_path, json.dumps(full, indent=2, ensure_ascii=False) + "\n")
    _say(summary_line(config, outcomes, total))
    if opts["as_json"]:
        click.echo(json.dumps({k: v for k, v in full.items() if k != "commits"}))
    sys.exit(EXIT_OK)


def _config(o: dict[str, object]) -> MineConfig:
    repo = _path(o["repo"])
    name = str(o["repo_name"]) if o["repo_name"] else _default_name(repo)
    if not _NAME.fullmatch(name):
        raise BadInput([f"--repo-name {name!r}: give OWNER/NAME (letters, digits, . _ -)"])
    try:
        python = find_python(None if o["sandbox_python"] is None else str(o["sandbox_python"]))
    except IsolationUnavailable as exc:
        raise SetupError(str(exc)) from exc
    limits = CommandLimits(timeout_s=float(str(o["timeout"])), memory_mb=int(str(o["memory_mb"])),
                           tmp_mb=int(str(o["tree_mb"])))  # fmt: skip
    return MineConfig(
        repo=repo, repo_name=name,
        rev_range=None if o["rev_range"] is None else str(o["rev_range"]),
        max_instances=int(str(o["max_instances"])), runs=int(str(o["runs"])),
        validate=bool(o["validate"]), max_lines=int(str(o["max_lines"])),
        max_files=int(str(o["max_files"])), limits=limits,
        env=_path(o["env_dir"]) if o["env_dir"] else None,
        env_cache=_path(o["env_cache"]) if o["env_cache"] else default_cache(), python=python,
        install=not o["no_install"],
    )  # fmt: skip


def _default_name(repo: Path) -> str:
    """``owner/name`` for a clone named as the gate's ``--repos`` holds it, else ``local/...``."""
    folder = repo.resolve().name
    owner, sep, name = folder.partition("__")
    if sep and _NAME.fullmatch(f"{owner}/{name}"):
        return f"{owner}/{name}"
    return f"local/{folder}"


def _progress(n: int, total: int, o: Outcome) -> str:
    head = f"[{n}/{total}] {o.commit.sha[:12]} {o.commit.subject[:50]!r}:"
    secs = f"({o.mine_s + o.validate_s:.1f} s)"
    inst = o.instance
    if inst is not None and (o.kept or o.validation is not None):
        tests = f"F2P {len(inst.fail_to_pass)}, P2P {len(inst.pass_to_pass)}"
        tests += f", flaky {len(o.flaky)}" if o.flaky else ""
        if o.validation is not None:
            v = o.validation
            tests += (f"; gate: gold {_yes(v.gold.resolved)}, {v.noop.patch} "
                      f"{_yes(v.noop.resolved)}, reversed {_yes(v.reversed.resolved)}")  # fmt: skip
        verdict = "kept" if o.kept else f"dropped ({o.reason})"
        return f"{head} {verdict}: {tests} {secs}"
    detail = f": {o.detail[:160]}" if o.detail else ""
    return f"{head} dropped ({o.reason}){detail} {secs}"


def _yes(resolved: bool) -> str:
    return "resolved" if resolved else "not resolved"


def _refuse_inside(repo: Path, paths: list[object]) -> None:
    """Refuse output paths inside the repository's git directory (mining never writes there)."""
    git_dir = (repo / ".git").resolve()
    for p in paths:
        if isinstance(p, Path) and (p.resolve() == git_dir or git_dir in p.resolve().parents):
            raise BadInput([f"{p}: inside {git_dir} (mining never writes into the repository)"])


def _say(line: str) -> None:
    click.echo(f"gradebox mine: {line}", err=True)


class _sink:
    """``--out`` opened for writing, closed at the end."""

    def __init__(self, path: Path) -> None:
        try:
            # the gold patches and the hidden tests: the owner's only (0600)
            self._fh: IO[str] = private_text(path)
        except OSError as exc:
            raise SetupError(f"cannot write {path}: {exc}") from exc

    def __enter__(self) -> IO[str]:
        return self._fh

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


def _write(path: Path, text: str) -> None:
    try:
        with private_text(path) as fh:
            fh.write(text)
    except OSError as exc:
        raise SetupError(f"cannot write {path}: {exc}") from exc


def _path(value: object) -> Path:
    assert isinstance(value, Path)  # noqa: S101 - click's path_type
    return value
