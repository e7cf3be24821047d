"""Run a repository's pytest in the sandbox and read per-test status from JUnit XML.

Each run gets a fresh sandbox (:func:`sandbox.command.run_command`) and a fresh
copy of the tree at ``/repo`` (a private tmpfs: writable, but for its tests and
test configuration, mounted read-only over it; nothing reaches the host disk)
and the environment read-only. pytest writes JUnit XML (``junit_family=xunit1``:
each case names its file) to the sandbox's private ``/tmp``, which the sandbox
hands back when pytest ends; the XML is size-checked and parsed with
:mod:`defusedxml` (no entities, no external references), and at most
:data:`MAX_TESTS` ids of at most :data:`MAX_ID_CHARS` characters are read.

The XML is written by the process the patch's code runs in, so it is
cross-checked (:attr:`SuiteRun.problems`) against what the grader sees from
outside: the exit code (0 iff no test failed; 1, or 2 for errors during
collection, iff some did), and the test
ids a separate collection run listed (``pytest --collect-only -q``, another
sandbox). Zero parsed tests, an exit code that contradicts the XML, a
collected test missing from the XML, or an unparseable XML make the run
unreliable: never a pass.
"""

from __future__ import annotations

import configparser
import dataclasses
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from gradebox.patches.build import LIB_DIR, Installed
from gradebox.patches.env import TestEnv
from gradebox.patches.protect import readonly_paths
from gradebox.patches.tree import Tree
from sandbox.command import CommandLimits, Mount, run_command

__all__ = [
    "INI_FILES",
    "MAX_ID_CHARS",
    "MAX_TESTS",
    "MAX_XML_BYTES",
    "Installed",
    "PytestSetup",
    "Status",
    "SuiteRun",
    "node_id",
    "pytest_setup",
    "run_suite",
]

Status = Literal["passed", "failed", "skipped"]
"""A test's status in one run (an error counts as failed)."""

MAX_XML_BYTES = 32 * 1024 * 1024
"""Largest JUnit XML read back from a sandbox."""
MAX_TESTS = 100_000
"""Most test cases read from one run (more makes the run unreliable)."""
MAX_ID_CHARS = 500
"""Longest test id read (a longer one makes the run unreliable)."""
_XML = "/tmp/gradebox-junit.xml"  # noqa: S108 - the sandbox's private /tmp
_PROBLEMS_MAX = 5


@dataclass(frozen=True, slots=True)
class SuiteRun:
    """One pytest run in the sandbox, as the grader read it."""

    statuses: dict[str, Status]
    """Node id -> status, for every test case in the XML."""
    exit_code: int | None
    """pytest's exit code (``None``: killed at the time limit or not run)."""
    timed_out: bool
    """The run hit its wall clock."""
    collected: int | None
    """Tests the separate collection run listed (``None`` when it was not run)."""
    problems: tuple[str, ...]
    """Why the run cannot be believed (empty when it can)."""
    wall_s: float
    """Seconds the test run took."""
    listed: frozenset[str] = frozenset()
    """Node ids the separate collection run listed (empty when it was not run)."""

    @property
    def reliable(self) -> bool:
        """True when the XML, the exit code and the collection agree."""
        return not self.problems


@dataclass(frozen=True, slots=True)
class PytestSetup:
    """How pytest is started: everything here comes from the base revision or the environment."""

    config: str | None
    """The ini file at base (``pytest.ini``, ``pyproject.toml``...) passed with ``-c``; the test
    tree holds its base bytes. ``None``: ``-c /dev/null`` (base has no pytest configuration)."""
    plugins: tuple[str, ...] = ()
    """Plugin modules of the environment (its ``pytest11`` entry points), loaded with ``-p``;
    nothing else is autoloaded."""


def run_suite(
    tree: Path,
    env: TestEnv,
    targets: Sequence[str],
    limits: CommandLimits,
    *,
    collect: bool,
    readonly: Sequence[str] = (),
    setup: PytestSetup | None = None,
    package: Installed | None = None,
) -> SuiteRun:
    """Run pytest over ``targets`` (files or node ids; all tests when empty) in a copy of ``tree``.

    Args:
        tree: A written tree without ``.git`` (not modified: each sandbox copies it).
        env: The test environment.
        targets: pytest arguments naming what to run.
        limits: Limits of each sandbox.
        collect: Also list the tests in a separate sandbox, for the cross-check.
        readonly: Globs of the tree mounted read-only over the writable copy
            (the tests and their configuration: see :func:`readonly_paths`).
        setup: The configuration and plugins (base revision's); ``None``: no ini file.
        package: The package under test, built from this tree: installed into the
            sandbox's private ``/tmp`` before pytest starts, ahead of the tree on
            ``sys.path`` (``None``: the tests import from the tree).
    """
    setup = setup or PytestSetup(None)
    scratch = Path(tempfile.mkdtemp(prefix="gradebox-run-"))
    try:
        scratch.chmod(0o755)
        (scratch / "boot").mkdir(mode=0o755)
        (scratch / "boot" / "pytest_boot.py").write_text(BOOT, encoding="utf-8")
        (scratch / "boot" / "pytest_boot.py").chmod(0o644)
        (scratch / "boot").chmod(0o755)
        mounts = [
            Mount(tree, "/repo", copy=True),
            *_readonly(tree, readonly),
            Mount(env.path, str(env.path)),
            Mount(scratch / "boot", _BOOT_DIR),
        ]
        if package is not None:
            mounts += [Mount(package.wheel_dir, "/.gradebox-wheel"), Mount(package.lib, LIB_DIR)]
        environ = _env(env, installed=package is not None)
        listed = _collect(env, targets, limits, mounts, setup, environ) if collect else None
        argv = [*_pytest(env, setup), f"--junitxml={_XML}", *targets]
        res = run_command(
            argv, cwd="/repo", mounts=mounts, env=environ, limits=limits,
            result_file=_XML, result_bytes=MAX_XML_BYTES + 1,
        )  # fmt: skip
        if res.status == "infra_error":
            return SuiteRun({}, None, False, None, (f"sandbox: {res.infra_error}",), res.wall_s)
        statuses, problems = _read_xml(res.result or b"", tree)
        problems += _cross_check(statuses, res.exit_code, listed, collect=collect)
        if res.status == "timeout":
            problems.insert(0, f"the test run hit its {limits.timeout_s:g} s limit")
        return SuiteRun(
            statuses,
            res.exit_code,
            res.status == "timeout",
            None if listed is None else len(listed),
            tuple(problems[:_PROBLEMS_MAX]),
            round(res.wall_s, 3),
            frozenset(listed or ()),
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_PYTEST_OPTS = [
    "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-q", "--color=no",
    "-o", "console_output_style=classic", "--rootdir=/repo", "--confcutdir=/repo",
    "--continue-on-collection-errors",
]  # fmt: skip
"""``--continue-on-collection-errors``: a module that does not import (at base, before the
fix it needs; at head, broken by the patch) is that module's failure, not the end of the
session: every other module, the planted tripwires included, still runs."""
_BOOT_DIR = "/.gradebox"
_SITE_PATH = "/tmp/gradebox-site:/repo"  # noqa: S108 - the sandbox's private /tmp

BOOT = """\
# gradebox's pytest start-up: runs with ``python -I`` (no PYTHONPATH, no cwd, no user
# site on sys.path; no start-up hook from the tree). The tree goes on sys.path *after*
# the environment, and pytest's own modules are imported before any test is collected,
# so nothing in the tree can stand in for pytest or what it imports.
import importlib
import pkgutil
import sys

import os

_TREE = ["/repo/src", "/repo"]
if os.path.isdir("/.gradebox-wheel"):  # the package under test, built from this tree
    sys.path.insert(0, "/.gradebox-lib")
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    _SITE = "/tmp/gradebox-site"
    _scheme = {k: _SITE for k in ("purelib", "platlib", "headers", "scripts", "data")}
    for _wheel in sorted(os.listdir("/.gradebox-wheel")):
        with WheelFile.open(os.path.join("/.gradebox-wheel", _wheel)) as _source:
            install(_source, SchemeDictionaryDestination(_scheme, sys.executable, "posix"), {})
    sys.path.remove("/.gradebox-lib")
    for _name in [m for m in sys.modules if m == "installer" or m.startswith("installer.")]:
        del sys.modules[_name]
    _TREE = [_SITE, "/repo"]  # installed first; /repo for the tests' own helpers
sys.path[:] = [p for p in sys.path if p not in ("", ".", "/repo")] + _TREE
import pytest  # noqa: E402
import _pytest  # noqa: E402

for _info in pkgutil.walk_packages(_pytest.__path__, "_pytest."):
    try:
        importlib.import_module(_info.name)
    except Exception:  # an optional part whose own dependency is absent
        pass
for _name in ("pluggy", "iniconfig", "packaging", "doctest", "pdb", "bdb", "unittest",
              "difflib", "pprint", "json", "shlex", "tempfile", "importlib.metadata",
              "faulthandler", "xml.etree.ElementTree", "textwrap", "tokenize", "inspect",
              "traceback", "warnings", "fnmatch", "glob", "tomllib", "configparser"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass
sys.exit(pytest.main(sys.argv[1:]))
"""
"""The first Python the sandbox runs (see its comments)."""


def _pytest(env: TestEnv, setup: PytestSetup) -> list[str]:
    config = "/dev/null" if setup.config is None else f"/repo/{setup.config}"
    plugins = [a for m in setup.plugins for a in ("-p", m)]
    return [env.python, "-I", f"{_BOOT_DIR}/pytest_boot.py", *_PYTEST_OPTS, "-c", config,
            *plugins]  # fmt: skip


INI_FILES = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml",
             "tox.ini", "setup.cfg")  # fmt: skip
"""pytest's configuration files at the root, in the order pytest prefers them: a deciding
tree holds them as they are at base."""


def pytest_setup(base: Tree, env: TestEnv) -> PytestSetup:
    """How pytest starts for this base tree and environment (its ini file, its plugins)."""
    return PytestSetup(_pytest_config(base), _plugins(env))


def _pytest_config(before: Tree) -> str | None:
    """The root ini file pytest would read at base (``None``: it would read none)."""
    for name in INI_FILES:
        entry = before.get(name)
        if entry is None or entry.is_link:
            continue
        text = entry.data.decode("utf-8", "replace")
        if name in ("pytest.ini", ".pytest.ini"):
            return name
        if name.endswith(".toml") and name != "pyproject.toml":
            return name
        if name == "pyproject.toml" and ("[tool.pytest" in text or "tool.pytest" in text):
            return name
        if name == "tox.ini" and _has_section(text, "pytest"):
            return name
        if name == "setup.cfg" and _has_section(text, "tool:pytest"):
            return name
    return None


def _has_section(text: str, section: str) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    return parser.has_section(section)


def _plugins(env: TestEnv) -> tuple[str, ...]:
    """The environment's pytest plugins (``pytest11`` entry points' modules), sorted."""
    mods: set[str] = set()
    for info in env.path.glob("lib/python*/site-packages/*.dist-info/entry_points.txt"):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(info.read_text(encoding="utf-8", errors="replace"))
        except configparser.Error:
            continue
        if parser.has_section("pytest11"):
            for _, value in parser.items("pytest11"):
                mods.add(value.split(":", 1)[0].strip())
    return tuple(sorted(m for m in mods if m))


def _env(env: TestEnv, *, installed: bool) -> dict[str, str]:
    # PYTHONPATH is for the tests' own child processes (pytest itself runs with -I).
    return {
        "PATH": f"{env.path}/bin:/usr/bin:/bin",
        "PYTHONPATH": _SITE_PATH if installed else "/repo/src:/repo",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def _readonly(copy: Path, patterns: Sequence[str]) -> list[Mount]:
    return [Mount(copy / rel, f"/repo/{rel}") for rel in readonly_paths(str(copy), patterns)]


def _collect(
    env: TestEnv,
    targets: Sequence[str],
    limits: CommandLimits,
    mounts: Sequence[Mount],
    setup: PytestSetup,
    environ: dict[str, str],
) -> set[str] | None:
    argv = [*_pytest(env, setup), "--collect-only", *targets]
    lim = dataclasses.replace(limits, output_bytes=4 * 1024 * 1024)
    res = run_command(argv, cwd="/repo", mounts=mounts, env=environ, limits=lim)
    if res.status != "exited" or res.stdout.endswith("[output truncated]"):
        return None
    return {ln.strip() for ln in res.stdout.splitlines() if "::" in ln and " " not in ln.strip()}


def _read_xml(data: bytes, tree: Path) -> tuple[dict[str, Status], list[str]]:
    if not data:
        return {}, ["pytest wrote no JUnit XML"]
    if len(data) > MAX_XML_BYTES:
        return {}, [f"the JUnit XML is larger than {MAX_XML_BYTES} bytes"]
    try:
        root = SafeET.fromstring(data)
    except (ParseError, DefusedXmlException, ValueError) as exc:
        return {}, [f"the JUnit XML does not parse: {type(exc).__name__}"]
    statuses: dict[str, Status] = {}
    problems: list[str] = []
    for case in root.iter("testcase"):
        nid = node_id(case, tree)
        if nid is None or len(nid) > MAX_ID_CHARS:
            problems = ["the JUnit XML names a test case without a usable id"]
            continue
        if len(statuses) >= MAX_TESTS:
            return statuses, [f"the JUnit XML lists more than {MAX_TESTS} tests"]
        statuses[nid] = _status(case)
    return statuses, problems


def _status(case: Element) -> Status:
    tags = {child.tag for child in case}
    if tags & {"failure", "error"}:
        return "failed"
    return "skipped" if "skipped" in tags else "passed"


def node_id(case: Element, tree: Path) -> str | None:
    """The pytest node id of an xunit1 ``testcase``, as the collection names it.

    ``classname`` is pytest's node id with the module's path dotted, so the module
    that *collected* the test is the longest dotted prefix that is a file of the
    tree. The ``file`` attribute names where the function is *defined*, which for a
    test inherited from a mixin in another module is not where it runs; it is used
    only when ``classname`` names no file.
    """
    name, file, classname = case.get("name"), case.get("file"), case.get("classname", "")
    if not name:
        return None
    parts = classname.split(".") if classname else []
    for cut in range(len(parts), 0, -1):
        candidate = "/".join(parts[:cut]) + ".py"
        if (tree / candidate).is_file():
            return "::".join([candidate, *parts[cut:], name])
    if not file:
        return None
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    classes = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    return "::".join([file, *[c for c in classes.split(".") if c], name])


def _cross_check(
    statuses: dict[str, Status], exit_code: int | None, listed: set[str] | None, *, collect: bool
) -> list[str]:
    problems = []
    failing = any(s == "failed" for s in statuses.values())
    if not statuses:
        problems.append("no test results were parsed")
    if exit_code is not None:
        if exit_code not in (0, 1, 2):
            problems.append(f"pytest exited {exit_code} (not a test outcome)")
        elif exit_code in (1, 2) and not failing:
            problems.append(f"pytest exited {exit_code} but the XML lists no failing test")
        elif exit_code == 0 and failing:
            problems.append("pytest exited 0 but the XML lists failing tests")
    if listed is not None:
        missing = sorted(listed - set(statuses))
        if missing:
            example = missing[0][:200]
            problems.append(f"{len(missing)} collected test(s) have no result, e.g. {example}")
    elif collect:
        problems.append("the separate collection run failed")
    return problems
