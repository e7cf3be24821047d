"""Issue 23, class 2: passes forged without touching a protected path by name.

Each attack leaves ``mean`` broken, so ``tests/test_ops.py::test_mean`` must
fail, and gets pytest to load three lines that neuter every test
(``attacks/neuter.txt``: ``item.runtest = lambda: None`` from
``pytest_collection_modifyitems``, nothing the tamper scan flags) by a route the
protection list and the tamper scan do not cover: a dist-info entry point, a
module shadowing pytest or one of its dependencies, an ini file between the
tests and the root, dotted keys in ``pyproject.toml``, a start-up hook shaped as
a package, a conftest behind a quoted or non-ASCII name, a symbolic link to a
non-``.py`` file, a source encoding the scan cannot read. Every gate must end
anything but ``pass``.

The positive controls run each attacked tree through plain pytest the way a
gate used to (``python -m pytest`` with the tree on ``PYTHONPATH``, no
sandbox): there ``test_mean`` passes, so no attack here holds vacuously. The
honest controls must pass before and after the fix; a fix that brings its own
new test passes with that test reported (``tests.added``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gradebox.patches import TestIds

_spec = importlib.util.spec_from_file_location(
    "gradebox_attack_routes", Path(__file__).parent / "attacks" / "routes.py"
)
assert _spec is not None and _spec.loader is not None
routes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(routes)
write, link, append, both, payload = (
    routes.write, routes.link, routes.append, routes.both, routes.payload,
)  # fmt: skip

F2P = ("tests/test_ops.py::test_mean",)
P2P = ("tests/test_ops.py::test_add", "tests/test_ops.py::test_scale")
IDS = TestIds(F2P, P2P)
DEEP = TestIds(
    ("calc/tests/test_ops.py::test_mean",),
    ("calc/tests/test_ops.py::test_add", "calc/tests/test_ops.py::test_scale"),
)
PLUGIN = write("calc/plugin.py", payload("neuter"))


@dataclass(frozen=True)
class Forge:
    """One forge: an edit of the base tree, on a base laid out for it."""

    edit: Callable[[Path], None]
    base: Callable[[Path], None] | None = None
    tests: TestIds = IDS
    routes: tuple[str, ...] = ("library",)


def dist_info(folder: str, metadata: str) -> Callable[[Path], None]:
    """Installed-package metadata at the repository root, declaring a ``pytest11`` plugin."""
    meta = "Metadata-Version: 2.1\nName: calc-speedups\nVersion: 1.0\n"
    points = "[pytest11]\ncalc_speedups = calc.plugin\n"
    return both(
        write(f"{folder}/{metadata}", meta), write(f"{folder}/entry_points.txt", points), PLUGIN
    )


def shadow(name: str, marker: str) -> Callable[[Path], None]:
    text = payload("shadow_runpy", name=name, marker=marker)
    return both(write(f"{name}/__init__.py", text), PLUGIN)


def startup(module: str, variable: str, value: str) -> Callable[[Path], None]:
    text = payload("startup_hook", variable=variable, value=value)
    return both(write(f"{module}/__init__.py", text), PLUGIN)


def utf7(text: str) -> str:
    """``text`` in UTF-7 with every ``i`` shifted: Python decodes it, ``ast.parse`` cannot."""
    assert "+" not in text
    return "# coding: utf-7\n" + text.replace("i", "+AGk-")


def imported_by_calc(module: str) -> Callable[[Path], None]:
    return append("calc/__init__.py", f"from . import {module}  # noqa: F401\n")


DEEP_TESTS = both(
    write("calc/tests/__init__.py", ""),
    lambda root: shutil.copy(root / "tests" / "test_ops.py", root / "calc/tests/test_ops.py"),
)
PYPROJECT = write("pyproject.toml", '[project]\nname = "calc"\nversion = "0.1.0"\n')


def prepend(path: str, text: str) -> Callable[[Path], None]:
    def do(root: Path) -> None:
        p = root / path
        p.write_text(text + p.read_text())

    return do


NON_ASCII_CONFTEST = both(
    write("tésts/conftest.py", payload("neuter")),
    write("tésts/test_more.py", "def test_more():\n    assert True\n"),
)

FORGES: dict[str, Forge] = {
    "dist-info-entry-point": Forge(
        dist_info("calc_speedups-1.0.dist-info", "METADATA"), routes=("library", "head", "cli")
    ),
    "egg-info-entry-point": Forge(dist_info("calc_speedups.egg-info", "PKG-INFO")),
    "shadow-py": Forge(
        both(write("py/__init__.py", payload("shadow_py")), PLUGIN),
        routes=("library", "head", "cli"),
    ),
    "shadow-pluggy": Forge(both(write("pluggy/__init__.py", payload("shadow_pluggy")), PLUGIN)),
    "shadow-iniconfig": Forge(shadow("iniconfig", "_parse.py")),
    "shadow-_pytest": Forge(shadow("_pytest", "python.py")),
    # packaging is imported when the base's configuration sets a minversion
    "shadow-packaging": Forge(
        shadow("packaging", "version.py"),
        base=write("pytest.ini", "[pytest]\nminversion = 7.0\n"),
    ),
    "ini-between-pytest-ini": Forge(
        both(
            write("calc/pytest.ini", "[pytest]\naddopts = -p calc.plugin\n"),
            write("calc/plugin.py", payload("neuter_rooted")),
        ),
        base=DEEP_TESTS,
        tests=DEEP,
    ),
    "ini-between-pyproject": Forge(
        both(
            write("calc/pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-p calc.plugin"\n'),
            write("calc/plugin.py", payload("neuter_rooted")),
        ),
        base=DEEP_TESTS,
        tests=DEEP,
    ),
    "pyproject-dotted-tool-table": Forge(
        both(
            append("pyproject.toml", '\n[tool]\npytest.ini_options.addopts = "-p calc.plugin"\n'),
            PLUGIN,
        ),
        base=PYPROJECT,
        routes=("library", "head", "cli"),
    ),
    "pyproject-top-level-dotted-key": Forge(
        both(
            prepend("pyproject.toml", 'tool.pytest.ini_options.addopts = "-p calc.plugin"\n\n'),
            PLUGIN,
        ),
        base=PYPROJECT,
    ),
    # (a usercustomize package is left out: a virtual environment never imports it)
    "sitecustomize-package-plugins": Forge(
        startup("sitecustomize", "PYTEST_PLUGINS", "calc.plugin"),
        routes=("library", "head", "cli"),
    ),
    "sitecustomize-package-addopts": Forge(
        startup("sitecustomize", "PYTEST_ADDOPTS", "-p calc.plugin")
    ),
    "non-ascii-dir-conftest": Forge(
        NON_ASCII_CONFTEST, tests=TestIds(F2P, "auto"), routes=("library", "head", "cli")
    ),
    "symlinked-py-to-txt": Forge(
        both(
            write("calc/_native.txt", payload("gc_register")),
            link("calc/_native.py", "_native.txt"),
            imported_by_calc("_native"),
        ),
        routes=("library", "head", "cli"),
    ),
    "utf7-source": Forge(
        both(
            write("calc/_speedups.py", utf7(payload("gc_register"))), imported_by_calc("_speedups")
        ),
    ),
}
"""Forges that are trees (so every route can carry them)."""


def quoted(path: str, text: str) -> str:
    """A new file under a C-quoted name that ``git apply`` decodes (and unidiff does not)."""
    body = "".join(f"+{line}\n" for line in text.splitlines())
    a, b = f'"a/{path}"', f'"b/{path}"'
    return (
        f"diff --git {a} {b}\nnew file mode 100644\n--- /dev/null\n+++ {b}\n"
        f"@@ -0,0 +1,{len(text.splitlines())} @@\n{body}"
    )


QUOTED = {
    "c-quoted-tests-conftest": quoted(r"te\163ts/conftest.py", payload("conftest_forge")),
    "c-quoted-root-conftest": quoted(r"conftest\056py", payload("conftest_forge")),
}
"""Forges that exist only as patch text: no tree holds these names."""


@pytest.fixture
def gates(repo, config, env_cache, tmp_path):
    def make(forge: Forge | None = None):
        r = repo if forge is None or forge.base is None else routes.rebase(repo, forge.base)
        return routes.Gates(r, config, env_cache, tmp_path, IDS if forge is None else forge.tests)

    return make


def _cases(name_routes: dict[str, Forge]) -> list[tuple[str, str]]:
    return [(name, route) for name, f in name_routes.items() for route in f.routes]


@pytest.mark.parametrize(("forge", "route"), _cases(FORGES))
def test_a_forge_loaded_without_a_protected_name_is_not_a_pass(forge, route, gates):
    f = FORGES[forge]
    row = gates(f)(route, edit=f.edit)
    assert row["verdict"] != "pass", (row["reason"], row["tests"], row["tamper"])


@pytest.mark.parametrize("route", ["library", "cli"])
@pytest.mark.parametrize("forge", list(QUOTED))
def test_a_conftest_behind_a_quoted_name_is_not_a_pass(forge, route, gates):
    row = gates()(route, text=QUOTED[forge])
    assert row["verdict"] != "pass", (row["reason"], row["apply"], row["tamper"])


UNPROTECTED = [
    "dist-info-entry-point", "egg-info-entry-point", "pyproject-dotted-tool-table",
    "pyproject-top-level-dotted-key", "sitecustomize-package-plugins",
    "sitecustomize-package-addopts", "non-ascii-dir-conftest",
]  # fmt: skip
"""Forges the protection list may come to cover by name: each is also gated without it."""


@pytest.mark.parametrize("forge", UNPROTECTED)
def test_a_forge_is_not_a_pass_even_with_protection_off(forge, gates):
    # Protection is one layer; plugin autoload off, an isolated interpreter, pytest's
    # configuration from base and the tripwires must hold the same forge on their own.
    f = FORGES[forge]
    row = gates(f)("library", edit=f.edit, protect=())
    assert row["verdict"] != "pass", (row["reason"], row["tests"], row["tamper"])


@pytest.mark.parametrize("forge", list(QUOTED))
def test_a_forging_conftest_is_not_a_pass_even_with_protection_off(forge, gates):
    row = gates()("library", text=QUOTED[forge], protect=())
    assert row["verdict"] != "pass", (row["reason"], row["tests"], row["tamper"])


# Positive controls: the same trees under plain pytest, run as the gate used to run it.


@pytest.fixture
def python(env_cache, repo, config, fix) -> str:
    """The gates' test environment's interpreter (pytest and its dependencies only).

    Built by gating the real fix once when no other test has; the interpreter running
    this suite (with every plugin of the development environment) when none is found.
    """

    def built() -> list[Path]:
        return [p for p in env_cache.iterdir() if (p / ".gradebox-complete").exists()]

    if not built():
        routes.Gates(repo, config, env_cache, repo.path.parent, IDS)("library", edit=fix)
    found = [p / "bin" / "python" for p in built() if (p / "bin" / "python").exists()]
    return str(found[0]) if found else sys.executable


def plain_pytest(
    python: str, root: Path, tests: TestIds, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{root}/src:{root}", "HOME": str(root)}
    targets = [] if tests.pass_to_pass == "auto" else [tests.fail_to_pass[0].split("::")[0]]
    return subprocess.run(
        [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", *extra, *targets],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_neutering_plugin_passes_the_failing_test_when_loaded_directly(python, repo):
    res = plain_pytest(python, repo.path, IDS)
    assert res.returncode == 1 and "1 failed, 2 passed" in res.stdout, res.stdout
    PLUGIN(repo.path)
    res = plain_pytest(python, repo.path, IDS, "-p", "calc.plugin")
    assert res.returncode == 0 and "3 passed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("forge", list(FORGES))
def test_each_forge_neuters_the_tests_under_plain_pytest(forge, python, repo):
    f = FORGES[forge]
    if f.base is not None:
        f.base(repo.path)
    f.edit(repo.path)
    res = plain_pytest(python, repo.path, f.tests)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "failed" not in res.stdout, res.stdout


# Honest controls: these must pass before and after the fix.


@pytest.mark.parametrize("route", ["library", "head-branch", "head-tag", "cli"])
def test_the_real_fix_passes_on_every_route(route, gates, fix):
    row = gates()(route, edit=fix)
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert row["tests"]["fail_to_pass"] == {F2P[0]: "F2P"}


NEW_FILE = write(
    "tests/test_mean_more.py",
    "from calc.ops import mean\n\n\ndef test_mean_of_one():\n    assert mean([5]) == 5\n",
)
NEW_FUNCTION = append(
    "tests/test_ops.py", "\n\ndef test_mean_of_two():\n    assert mean([1, 3]) == 2\n"
)


@pytest.mark.parametrize(
    ("route", "added", "new"),
    [
        ("library", NEW_FILE, "tests/test_mean_more.py::test_mean_of_one"),
        ("head-branch", NEW_FILE, "tests/test_mean_more.py::test_mean_of_one"),
        ("library", NEW_FUNCTION, "tests/test_ops.py::test_mean_of_two"),
    ],
    ids=["new-file-library", "new-file-head-branch", "new-function-library"],
)
def test_a_fix_that_adds_its_own_test_passes_and_reports_it(route, added, new, gates, fix):
    row = gates()(route, edit=both(fix, added))
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), (row["reason"], row["apply"])
    assert row["tests"]["added"].get(new) == "N2P", row["tests"]
