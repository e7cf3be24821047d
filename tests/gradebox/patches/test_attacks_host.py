"""Issue 23, class 1: a patch must never get a host-side tool to run its commands.

Each attack is a patch a hostile author who read ``gradebox/patches/`` would
send: it writes the clone's ``.git/`` (its ``config``, ``info/attributes``,
``hooks/``) through a name that the gate's vetting reads one way and an applier
(``git apply``, GNU ``patch --fuzz``) another, or through a symbolic link the
patch adds. The payload (``attacks/git_config.txt``, ``attacks/git_hook.txt``)
puts a command in every git configuration key that runs one, each command
creating its own marker file under the test's ``markers/`` directory, plus
attributes (``* filter=x diff=x merge=x``) that make git use them on every file.

What is asserted, after a gate without and a gate with a hidden test patch
(applying the hidden tests is the host-side git run that used to read the
candidate's ``.git/config``): no marker exists; the user's ``.git/config``,
``.git/info/*`` and ``.git/hooks/*`` are byte-identical (checked by
``attacks/routes.py`` around every gate); the verdict is not ``pass``.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gradebox.patches import TestIds

_spec = importlib.util.spec_from_file_location(
    "gradebox_attack_routes", Path(__file__).parent / "attacks" / "routes.py"
)
assert _spec is not None and _spec.loader is not None
routes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(routes)

F2P = ("tests/test_ops.py::test_mean",)
P2P = ("tests/test_ops.py::test_add", "tests/test_ops.py::test_scale")
HOOKS = (
    "post-checkout", "pre-commit", "post-commit", "post-merge", "post-rewrite", "pre-auto-gc",
    "reference-transaction", "post-index-change", "pre-applypatch", "post-applypatch",
    "fsmonitor-watchman", "pre-push",
)  # fmt: skip
ATTRIBUTES = "* filter=x diff=x merge=x\n*.txt filter=p\n"


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    d = tmp_path / "markers"
    d.mkdir()
    return d


@pytest.fixture
def gates(repo, config, env_cache, tmp_path):
    return routes.Gates(repo, config, env_cache, tmp_path, TestIds(F2P, P2P))


@pytest.fixture
def hidden(repo) -> str:
    """A hidden test patch (SWE-bench's ``test_patch``): one more test of ``mean``."""
    return repo.patch(
        routes.append("tests/test_ops.py", "\n\ndef test_mean_one():\n    assert mean([4]) == 4\n")
    )


def plus(text: str) -> str:
    return "".join(f"+{line}\n" for line in text.splitlines())


def config_hunk(markers: Path) -> str:
    """A hunk for the clone's ``.git/config``: every command key first, its ``[core]`` kept."""
    body = routes.payload("git_config", m=str(markers))
    return f"@@ -1 +1,{len(body.splitlines()) + 1} @@\n{plus(body)} [core]\n"


def new_hunk(text: str) -> str:
    return f"@@ -0,0 +1,{len(text.splitlines())} @@\n{plus(text)}"


def hook(markers: Path, name: str) -> str:
    return routes.payload("git_hook", m=str(markers), hook=name)


def quoted(dot_git: str) -> Callable[[Path], str]:
    """Git's C-quoted names: ``git apply`` refuses ``.git``, GNU ``patch`` unquotes and writes."""

    def build(m: Path) -> str:
        q = lambda path: (f'"a/{dot_git}/{path}"', f'"b/{dot_git}/{path}"')  # noqa: E731
        a, b = q("config")
        out = f"diff --git {a} {b}\n--- {a}\n+++ {b}\n{config_hunk(m)}"
        a, b = q("info/attributes")
        out += f"diff --git {a} {b}\nnew file mode 100644\n--- /dev/null\n+++ {b}\n"
        out += new_hunk(ATTRIBUTES)
        for name in HOOKS:
            a, b = q(f"hooks/{name}")
            out += f"diff --git {a} {b}\nnew file mode 100755\n--- /dev/null\n+++ {b}\n"
            out += new_hunk(hook(m, name))
        return out + tree_attributes()

    return build


def tree_attributes() -> str:
    b = "b/.gitattributes"
    return f"diff --git a/.gitattributes {b}\nnew file mode 100644\n--- /dev/null\n+++ {b}\n" + (
        new_hunk(ATTRIBUTES)
    )


def index_no_slash(m: Path) -> str:
    """Names with no slash, which ``-p1`` ignores, so GNU ``patch`` takes the ``Index:`` line."""
    out = f"Index: x/.git/config\n--- config\n+++ config\n{config_hunk(m)}"
    out += "Index: x/.git/info/attributes\n--- attributes\n+++ attributes\n"
    out += new_hunk(ATTRIBUTES)
    for name in HOOKS[:3]:
        out += f"Index: x/.git/hooks/{name}\n--- {name}\n+++ {name}\n" + new_hunk(hook(m, name))
    return out


def context_header(m: Path) -> str:
    """A context diff (``*** ``/``--- `` headers) for ``.git/config`` in a git section's header."""
    cfg = routes.payload("git_config", m=str(m))
    ctx = (
        "*** x/.git/config\n--- x/.git/config\n***************\n*** 1 ****\n--- 1,"
        f"{len(cfg.splitlines()) + 1} ----\n"
        + "".join(f"+ {line}\n" for line in cfg.splitlines())
        + "  [core]\n"
    )
    b = "b/calc/helpers.py"
    return (
        f"diff --git a/calc/helpers.py {b}\nnew file mode 100644\n{ctx}--- /dev/null\n+++ {b}\n"
        + new_hunk("HELP = 1\n")
        + tree_attributes()
    )


def link(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


def through(prefix: str, m: Path) -> str:
    """The payload written below ``prefix``, a link the same patch adds into ``.git``."""
    a, b = f"a/{prefix}/config", f"b/{prefix}/config"
    out = f"diff --git {a} {b}\n--- {a}\n+++ {b}\n{config_hunk(m)}"
    b = f"b/{prefix}/info/attributes"
    out += f"diff --git a/{prefix}/info/attributes {b}\nnew file mode 100644\n--- /dev/null\n"
    out += f"+++ {b}\n" + new_hunk(ATTRIBUTES)
    for name in HOOKS:
        b = f"b/{prefix}/hooks/{name}"
        out += f"diff --git a/{prefix}/hooks/{name} {b}\nnew file mode 100755\n--- /dev/null\n"
        out += f"+++ {b}\n" + new_hunk(hook(m, name))
    return out + tree_attributes()


HOST: dict[str, Callable[[Path], str]] = {
    "c-quoted-octal": quoted(r".gi\164"),
    "c-quoted-dot": quoted(r"\056git"),
    "index-no-slash": index_no_slash,
    "context-diff-header": context_header,
    "symlink-into-git": lambda m: link("g", ".git") + through("g", m),
    "symlink-chain-into-git": lambda m: (
        link("calc/a", "b") + link("calc/b", "../.git") + through("calc/a", m)
    ),
}


JUNK = {"context-diff-header"}
"""Attacks whose hostile lines an applier may read as junk between the files."""


def problems(markers: Path, **rows: dict[str, Any]) -> list[str]:
    """What went wrong, all of it: markers created, gates that passed."""
    out = [f"marker created: {p.name}" for p in sorted(markers.iterdir())]
    return out + [f"{name}: verdict pass" for name, row in rows.items() if row["verdict"] == "pass"]


def test_the_payload_runs_its_commands_when_git_reads_it(tmp_path, markers):
    # The control: outside any gate, git does run what the payload plants, so the
    # attacks below cannot hold because a marker command is broken.
    r = tmp_path / "r"
    r.mkdir()
    routes.git(r, "init", "-q")
    with (r / ".git" / "config").open("a") as fh:
        fh.write(routes.payload("git_config", m=str(markers)))
    for name in ("pre-commit", "post-commit", "post-checkout"):
        (r / ".git" / "hooks" / name).write_text(hook(markers, name))
        (r / ".git" / "hooks" / name).chmod(0o755)
    (r / ".gitattributes").write_text(ATTRIBUTES)
    (r / "a.py").write_text("x = 1\n")
    routes.git(r, "add", "-A")
    routes.git(r, "commit", "-qm", "c")
    (r / "a.py").write_text("x = 2\n")
    routes.git(r, "diff")
    routes.git(r, "checkout", "--", "a.py")
    ran = {p.name for p in markers.iterdir()}
    assert ran >= {
        "core.fsmonitor", "filter.x.clean", "filter.x.smudge", "diff.x.command",
        "hook.pre-commit", "hook.post-commit", "hook.post-checkout",
    }, ran  # fmt: skip


@pytest.mark.parametrize("attack", list(HOST))
def test_git_files_written_through_hostile_names_never_run(attack, gates, markers, repo, fix,
                                                           hidden):  # fmt: skip
    # The real fix rides along (the author wants a pass as well), but where the hostile part
    # may be dropped as junk: a verdict of pass there would say nothing about the attack.
    text = HOST[attack](markers) + ("" if attack in JUNK else repo.patch(fix))
    first = gates("library", text=text)
    seen = problems(markers, gate=first)
    second = gates("library", text=text, test_patch=hidden)
    assert not seen + problems(markers, gate_with_hidden_tests=second), (first, second)


@pytest.mark.parametrize("attack", ["c-quoted-octal", "index-no-slash", "symlink-into-git"])
def test_git_files_written_through_the_cli_never_run(attack, gates, markers, repo, fix, hidden):
    row = gates("cli", text=HOST[attack](markers) + repo.patch(fix), test_patch=hidden)
    assert not problems(markers, gate=row), row


def test_a_committed_link_into_git_and_filter_attributes_never_run(gates, markers, hidden):
    # A head revision is a real tree: git's own diff names cannot be forged, but the
    # tree can hold links into .git and attributes naming drivers.
    attack = routes.both(
        routes.link("g", ".git"),
        routes.link("calc/hooks", "../.git/hooks"),
        routes.write(".gitattributes", ATTRIBUTES),
    )
    row = gates("head", edit=attack, test_patch=hidden)
    assert not problems(markers, gate=row), row


def test_a_link_chain_out_of_the_tree_writes_nothing_outside(gates, tmp_path, repo, fix):
    outside = tmp_path / "outside"
    outside.mkdir()
    # d/c resolves to the gate's temporary directory on disk (d/a is the tree, d/b its
    # parent), while every link reads as inside the tree; the file goes on from there.
    rel = os.path.relpath(outside, tempfile.gettempdir())
    text = (
        link("d/a", "..") + link("d/b", "a/..") + link("d/c", "b/..")
        + f"diff --git a/d/c/{rel}/pwned b/d/c/{rel}/pwned\nnew file mode 100644\n"
        + f"--- /dev/null\n+++ b/d/c/{rel}/pwned\n" + new_hunk("pwned\n")
    )  # fmt: skip
    row = gates("library", text=text + repo.patch(fix))
    assert list(outside.iterdir()) == [], row
    assert row["verdict"] != "pass", row
