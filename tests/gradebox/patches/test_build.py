"""The package under test, built by its own backend in the sandbox and installed for each run.

The first repository is shaped like humanize since 2024-09: a ``src/`` layout whose
``__init__`` imports ``_version``, a module hatch-vcs writes at build time. Imported
from the bare tree (as the gate did before it installed packages) nothing imports, at
base or head, and the gate blamed the patch; installed, it is graded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
from gradebox.patches.build import BuildFailed, build_system
from gradebox.patches.tree import Entry

from .conftest import git

HATCH_VCS = """\
[build-system]
requires = ["hatchling", "hatch-vcs"]
build-backend = "hatchling.build"

[project]
name = "vpkg"
dynamic = ["version"]

[tool.hatch.version]
source = "vcs"

[tool.hatch.build.hooks.vcs]
version-file = "src/vpkg/_version.py"
"""
VPKG_INIT = "from vpkg._version import __version__\nfrom vpkg.core import double\n"
VPKG_CORE = "def double(x):\n    return x + x + 1\n"
VPKG_TESTS = """\
from vpkg import __version__, double


def test_double():
    assert double(2) == 4


def test_version_is_a_string():
    assert isinstance(__version__, str)
"""
SETUP_PY = 'from setuptools import setup\n\nsetup(name="calc", version="1.0", packages=["calc"])\n'
CALC = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"
CALC_TESTS = "from calc import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"


def _repo(root: Path, files: dict[str, str]) -> tuple[Path, str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root, git(root, "rev-parse", "HEAD").strip()


def _diff(root: Path, base: str, edits: dict[str, str]) -> str:
    for rel, text in edits.items():
        (root / rel).write_text(text)
    git(root, "add", "-A")
    diff = git(root, "diff", "--cached", "--no-color", base)
    git(root, "reset", "-q", "--hard", base)
    return diff


def _vpkg(tmp_path: Path) -> tuple[Path, str]:
    return _repo(tmp_path / "vpkg", {
        "pyproject.toml": HATCH_VCS, "src/vpkg/__init__.py": VPKG_INIT,
        "src/vpkg/core.py": VPKG_CORE, "tests/test_core.py": VPKG_TESTS,
        "requirements.txt": "pytest\n",
    })  # fmt: skip


def _calc(tmp_path: Path, name: str = "calc", setup: str = SETUP_PY) -> tuple[Path, str]:
    return _repo(tmp_path / name, {
        "setup.py": setup, "calc/__init__.py": CALC, "tests/test_calc.py": CALC_TESTS,
        "requirements.txt": "pytest\n",
    })  # fmt: skip


def _spec(root: Path, base: str, patch: str, f2p: str, **kw: object) -> GateSpec:
    return GateSpec(id="b1", repo=root, base=base, patch=patch,
                    tests=TestIds((f2p,), "auto"), **kw)  # type: ignore[arg-type]  # fmt: skip


def test_a_src_layout_package_whose_version_module_is_written_at_build_is_graded(
    tmp_path: Path, config: GateConfig
) -> None:
    root, base = _vpkg(tmp_path)
    fix = _diff(root, base, {"src/vpkg/core.py": "def double(x):\n    return x + x\n"})
    spec = _spec(root, base, fix, "tests/test_core.py::test_double")
    row = run_gate(spec, config)
    assert (row.verdict, row.reason) == ("pass", "ok"), row.to_row()
    assert row.tests is not None
    assert row.tests.fail_to_pass == {"tests/test_core.py::test_double": "F2P"}
    assert row.tests.pass_to_pass == {"tests/test_core.py::test_version_is_a_string": "P2P"}
    assert dict(row.rules)["install"].startswith("pyproject.toml: hatchling.build [hatchling")
    # The bare tree (the old gate, and --no-install) imports nothing: never a pass.
    bare = run_gate(spec, GateConfig(**{**_fields(config), "install": False}))
    assert bare.verdict != "pass"


def test_a_broken_fix_of_an_installed_package_still_fails(
    tmp_path: Path, config: GateConfig
) -> None:
    root, base = _vpkg(tmp_path)
    wrong = _diff(root, base, {"src/vpkg/core.py": "def double(x):\n    return x * 3\n"})
    row = run_gate(_spec(root, base, wrong, "tests/test_core.py::test_double"), config)
    assert (row.verdict, row.reason) == ("fail", "fail_to_pass")


def test_a_patch_that_breaks_the_build_is_build_failed(tmp_path: Path, config: GateConfig) -> None:
    root, base = _calc(tmp_path)
    broken = SETUP_PY.replace("setup(", 'raise SystemExit("setup.py broken by the patch")\nsetup(')
    patch = _diff(root, base, {"calc/__init__.py": CALC.replace(" + 1", ""), "setup.py": broken})
    row = run_gate(_spec(root, base, patch, "tests/test_calc.py::test_mean"), config)
    assert (row.verdict, row.reason) == ("fail", "build_failed"), row.to_row()
    assert "setup.py broken by the patch" in (row.detail or "")
    good = _diff(root, base, {"calc/__init__.py": CALC.replace(" + 1", "")})
    row = run_gate(_spec(root, base, good, "tests/test_calc.py::test_mean"), config)
    assert (row.verdict, dict(row.rules)["install"][:18]) == ("pass", "setup.py (legacy):")


def test_a_base_that_does_not_build_is_the_environments_failure(
    tmp_path: Path, config: GateConfig
) -> None:
    no_backend = '[build-system]\nrequires = []\nbuild-backend = "no_such_backend_here"\n'
    root, base = _calc(tmp_path, setup=SETUP_PY)
    (root / "pyproject.toml").write_text(no_backend)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a backend nobody has")
    base = git(root, "rev-parse", "HEAD").strip()
    patch = _diff(root, base, {"calc/__init__.py": CALC.replace(" + 1", "")})
    row = run_gate(_spec(root, base, patch, "tests/test_calc.py::test_mean"), config)
    assert (row.verdict, row.reason) == ("needs_review", "infra_error")
    assert (row.infra_error or "").startswith("env: the package does not build at base")


def test_the_build_runs_sandboxed_and_sees_no_host_secret(
    tmp_path: Path, config: GateConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head's setup.py is the patch's code: it runs in the sandbox, not on the host."""
    secret = "sk-gradebox-build-secret-" + os.urandom(6).hex()
    monkeypatch.setenv("GRADEBOX_JUDGE_API_KEY", secret)
    marker = tmp_path / "written-by-the-build"
    hostile = f"""\
import os, socket, sys
for path in ({str(marker)!r}, {str(tmp_path / "calc" / "pwned")!r}):
    try:
        open(path, "w").write("x")
    except OSError as exc:
        print("no write:", type(exc).__name__)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("network: reached")
except OSError:
    print("network: none")
raise SystemExit("ENV=" + repr(sorted(os.environ.items())))
"""
    root, base = _calc(tmp_path)
    patch = _diff(root, base, {"calc/__init__.py": CALC.replace(" + 1", ""), "setup.py": hostile})
    row = run_gate(_spec(root, base, patch, "tests/test_calc.py::test_mean"), config)
    assert (row.verdict, row.reason) == ("fail", "build_failed")
    assert "ENV=" in (row.detail or "")  # the build's own words came back, bounded
    assert len(row.detail or "") < 600
    assert secret not in json.dumps(row.to_row())
    assert not marker.exists() and not (root / "pwned").exists()


def test_base_runs_are_kept_per_base_and_test_patch_and_reused(
    tmp_path: Path, config: GateConfig
) -> None:
    root, base = _calc(tmp_path, name="calc-cache")
    good = _diff(root, base, {"calc/__init__.py": CALC.replace(" + 1", "")})
    wrong = _diff(root, base, {"calc/__init__.py": CALC.replace(" + 1", " + 2")})
    first = run_gate(_spec(root, base, good, "tests/test_calc.py::test_mean"), config)
    second = run_gate(_spec(root, base, wrong, "tests/test_calc.py::test_mean"), config)
    assert (first.timing["base"], second.timing["base"]) == ("run", "cached")
    assert (first.verdict, second.verdict) == ("pass", "fail")
    assert second.tests is not None and first.tests is not None
    hidden = "diff --git a/tests/test_more.py b/tests/test_more.py\nnew file mode 100644\n" \
        "--- /dev/null\n+++ b/tests/test_more.py\n@@ -0,0 +1,2 @@\n+def test_more():\n+    pass\n"
    other = run_gate(_spec(root, base, good, "tests/test_calc.py::test_mean",
                           test_patch=hidden), config)  # fmt: skip
    assert other.timing["base"] == "run"  # another test patch: another base
    assert other.verdict == "pass"


def test_build_system_is_read_from_base_as_pip_reads_it() -> None:
    def tree(files: dict[str, str]) -> dict[str, Entry]:
        return {k: Entry("100644", v.encode()) for k, v in files.items()}

    assert build_system(tree({"tests/test_a.py": ""})) is None
    legacy = build_system(tree({"setup.py": SETUP_PY}))
    assert legacy is not None and legacy.backend == "setuptools.build_meta:__legacy__"
    project_only = build_system(tree({"pyproject.toml": '[project]\nname = "p"\n'}))
    assert project_only is not None and project_only.origin == "setup.py (legacy)"
    pytest_only = tree({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"})
    assert build_system(pytest_only) is None
    hatch = build_system(tree({"pyproject.toml": HATCH_VCS}))
    assert hatch is not None
    assert (hatch.backend, hatch.requires) == ("hatchling.build", ("hatchling", "hatch-vcs",
                                                                   "wheel"))  # fmt: skip
    escaping = '[build-system]\nrequires = []\nbuild-backend = "b"\nbackend-path = ["../x"]\n'
    with pytest.raises(BuildFailed, match="leaves the tree"):
        build_system(tree({"pyproject.toml": escaping}))
    with pytest.raises(BuildFailed, match="does not parse"):
        build_system(tree({"pyproject.toml": "[build-system\n"}))


def _fields(config: GateConfig) -> dict[str, object]:
    return {f: getattr(config, f) for f in config.__dataclass_fields__}
