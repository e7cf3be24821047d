"""Build and install the package under test, the way its own build backend says.

A project whose tests import it as installed (a version module written at build
time by setuptools-scm or hatch-vcs, entry points, compiled metadata) cannot be
tested from the bare tree. SWE-bench's harness installs such a package; so does
the gate, without letting the repository's build code run on the host:

* **What to build with comes from the base revision**: its ``pyproject.toml``'s
  ``[build-system]`` (``requires``, ``build-backend``, ``backend-path``), or
  setuptools' legacy backend when base has a ``setup.py`` or a ``[project]``
  table but no ``[build-system]`` (what pip does); nothing when base has neither.
  The build requirements go into their own cached environment
  (:func:`gradebox.patches.env.ensure_env`: wheels only, pip on the host runs no
  package's code), never into the tests' environment.
* **The build runs in the sandbox** (:func:`build_wheel`), on a private copy of
  the tree as the tests will see it, offline, with ``pyproject_hooks`` (pypa's
  PEP 517 hook caller, copied in read-only) calling the backend's
  ``build_wheel``; the wheel is then installed once in the same sandbox with
  ``installer`` to prove it installs. Versions from VCS metadata are pretended
  (``SETUPTOOLS_SCM_PRETEND_VERSION``): the tree has no ``.git``.
* **The wheel is never opened on the host.** Its bytes come back as the
  sandbox's result file (bounded); its name, read from the sandbox's output, must
  be a wheel file name. Each test run installs it with ``installer`` inside its
  own sandbox into a private ``/tmp`` directory that goes on ``sys.path`` before
  the tree (:mod:`gradebox.patches.testrun`).

A build that fails at base is the environment's failure (:class:`BuildFailed`,
reported ``infra_error``); at head, with base building, it is the patch's.

Limit: with a flat layout (the package at the root, not under ``src/``) and a
``tests`` package, pytest puts ``/repo`` first on ``sys.path`` and the tree's
copy of the package wins over the installed one; a module written only at build
time (a VCS version file) is then missing. ``src/`` layouts, and flat ones whose
tests are not a package, import the installed copy.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import installer
import pyproject_hooks

from gradebox.patches.env import EnvFailed, TestEnv, ensure_env
from gradebox.patches.tree import Tree
from sandbox.command import CommandLimits, Mount, run_command

__all__ = [
    "LIB_DIR",
    "MAX_WHEEL_BYTES",
    "BuildFailed",
    "BuildSystem",
    "Installed",
    "Packaging",
    "Wheel",
    "build_system",
    "build_wheel",
    "lib_dir",
    "packaging_for",
]

MAX_WHEEL_BYTES = 64 * 1024 * 1024
"""Largest wheel read back from a build."""
LIB_DIR = "/.gradebox-lib"
"""Where ``pyproject_hooks`` and ``installer`` are mounted (read-only) in the sandbox."""
PRETEND_VERSION = "0.0.0"
"""The version setuptools-scm and hatch-vcs report for a tree without ``.git``."""

_WHEEL_OUT = "/tmp/gradebox-built.whl"  # noqa: S108 - the sandbox's private /tmp
_MARK = "gradebox-wheel:"
_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_.]*)?"
                         r"-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl")  # fmt: skip
_LEGACY = ("setuptools>=40.8.0", "wheel")
_MAX_DETAIL = 300


class BuildFailed(Exception):
    """The package does not build (or its wheel does not install); the message says why."""


@dataclass(frozen=True, slots=True)
class BuildSystem:
    """How base says its package is built."""

    requires: tuple[str, ...]
    """The build requirements (PEP 518), ``wheel`` added."""
    backend: str
    """The backend object (``setuptools.build_meta``, ``hatchling.build``...)."""
    backend_path: tuple[str, ...]
    """In-tree backend directories (``backend-path``), relative to the root."""
    origin: str
    """Where it was read: ``pyproject.toml`` or ``setup.py (legacy)``."""


@dataclass(frozen=True, slots=True)
class Wheel:
    """A wheel a sandboxed build produced: opaque bytes and their checked file name."""

    name: str
    data: bytes

    def write(self, directory: Path) -> Path:
        """Write it as ``directory/<name>`` (readable by the sandbox's uid); the directory."""
        directory.mkdir(mode=0o755, exist_ok=True)
        directory.chmod(0o755)
        target = directory / self.name
        target.write_bytes(self.data)
        target.chmod(0o644)
        return directory


def build_system(base: Tree) -> BuildSystem | None:
    """The build system base declares, or ``None`` when there is nothing to install.

    Raises:
        BuildFailed: base's ``pyproject.toml`` does not parse or its ``[build-system]``
            is malformed (the environment's failure, not a patch's).
    """
    entry = base.get("pyproject.toml")
    table: dict[str, object] = {}
    project = False
    if entry is not None and not entry.is_link:
        try:
            doc = tomllib.loads(entry.data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise BuildFailed(f"pyproject.toml at base does not parse: {exc}") from exc
        raw = doc.get("build-system")
        table = raw if isinstance(raw, dict) else {}
        project = isinstance(doc.get("project"), dict)
    if table:
        requires = table.get("requires", [])
        backend = table.get("build-backend", "setuptools.build_meta:__legacy__")
        path = table.get("backend-path", [])
        if not (_strings(requires) and isinstance(backend, str) and _strings(path)):
            raise BuildFailed("pyproject.toml at base: [build-system] is malformed")
        assert isinstance(requires, list) and isinstance(path, list)  # noqa: S101 - narrowed
        if any(p.startswith("/") or ".." in p.split("/") for p in path):
            raise BuildFailed("pyproject.toml at base: backend-path leaves the tree")
        reqs = tuple(dict.fromkeys([*requires, "wheel"]))
        return BuildSystem(reqs, backend, tuple(path), "pyproject.toml")
    if project or _file(base, "setup.py"):
        return BuildSystem(_LEGACY, "setuptools.build_meta:__legacy__", (), "setup.py (legacy)")
    return None


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _file(tree: Tree, path: str) -> bool:
    entry = tree.get(path)
    return entry is not None and not entry.is_link


def lib_dir(dest: Path) -> Path:
    """Copy ``pyproject_hooks`` and ``installer`` (pure Python) into ``dest`` for mounting."""
    dest.mkdir(mode=0o755, exist_ok=True)
    for module in (pyproject_hooks, installer):
        src = Path(module.__file__ or "").parent
        shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"),
                        dirs_exist_ok=True)  # fmt: skip
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


BUILD_BOOT = f"""\
# gradebox's build step: runs with ``python -I`` in the sandbox, the tree at /repo.
import json, os, shutil, subprocess, sys, tempfile
sys.path.insert(0, {LIB_DIR!r})
from pyproject_hooks import BuildBackendHookCaller, quiet_subprocess_runner
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile
backend, backend_path = sys.argv[1], json.loads(sys.argv[2])
out = tempfile.mkdtemp(prefix="gradebox-dist-")
caller = BuildBackendHookCaller("/repo", backend, backend_path=backend_path or None,
                                runner=quiet_subprocess_runner, python_executable=sys.executable)
try:
    name = caller.build_wheel(out)
except subprocess.CalledProcessError as exc:
    sys.stderr.write((exc.output or b"").decode("utf-8", "replace")[-4000:])
    sys.exit(1)
built = os.path.join(out, name)
target = tempfile.mkdtemp(prefix="gradebox-check-")
scheme = {{k: target for k in ("purelib", "platlib", "headers", "scripts", "data")}}
with WheelFile.open(built) as source:
    install(source, SchemeDictionaryDestination(scheme, sys.executable, "posix"), {{}})
shutil.copyfile(built, {_WHEEL_OUT!r})
print({_MARK!r} + name)
"""
"""The build step's script (see the module docstring)."""


def build_wheel(
    tree: Path, env: TestEnv, system: BuildSystem, limits: CommandLimits, *, lib: Path
) -> Wheel:
    """Build ``tree``'s wheel in a sandbox with the build environment ``env``.

    Args:
        tree: A written tree without ``.git`` (not modified: the sandbox copies it).
        env: The build environment (:attr:`BuildSystem.requires` installed).
        system: What base declares.
        limits: The sandbox's limits.
        lib: The directory :func:`lib_dir` made.

    Raises:
        BuildFailed: The backend failed, the wheel does not install, or the
            sandbox's answer is not a wheel; the message is bounded and printable.
    """
    scratch = Path(tempfile.mkdtemp(prefix="gradebox-build-"))
    try:
        scratch.chmod(0o755)
        boot = scratch / "build_boot.py"
        boot.write_text(BUILD_BOOT, encoding="utf-8")
        boot.chmod(0o644)
        mounts = [
            Mount(tree, "/repo", copy=True),
            Mount(env.path, str(env.path)),
            Mount(lib, LIB_DIR),
            Mount(scratch, "/.gradebox-build"),
        ]
        argv = [env.python, "-I", "/.gradebox-build/build_boot.py", system.backend,
                _json_list(system.backend_path)]  # fmt: skip
        environ = {
            "PATH": f"{env.path}/bin:/usr/bin:/bin",
            "HOME": "/tmp",  # noqa: S108 - the sandbox's private /tmp
            "SETUPTOOLS_SCM_PRETEND_VERSION": PRETEND_VERSION,
            "PIP_NO_INDEX": "1",
            "SOURCE_DATE_EPOCH": "315532800",
        }
        res = run_command(argv, cwd="/repo", mounts=mounts, env=environ, limits=limits,
                          result_file=_WHEEL_OUT, result_bytes=MAX_WHEEL_BYTES + 1)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if res.status == "infra_error":
        raise BuildFailed(f"sandbox: {res.infra_error}")
    if res.status == "timeout":
        raise BuildFailed(f"the build hit its {limits.timeout_s:g} s limit")
    # With a result file, the sandbox's stdout arrives on stderr.
    names = [ln[len(_MARK) :] for ln in res.stderr.splitlines() if ln.startswith(_MARK)]
    if res.exit_code != 0 or not names or not res.result:
        raise BuildFailed(_detail(res.stderr) or f"the build exited {res.exit_code}")
    if not _WHEEL_NAME.fullmatch(names[-1]):
        raise BuildFailed("the build named a file that is not a wheel")
    if len(res.result) > MAX_WHEEL_BYTES:
        raise BuildFailed(f"the wheel is larger than {MAX_WHEEL_BYTES} bytes")
    return Wheel(names[-1], res.result)


def _json_list(items: tuple[str, ...]) -> str:
    return json.dumps(list(items))


def _detail(stderr: str) -> str:
    """The last lines of a build's stderr: bounded, printable."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()][-3:]
    text = " / ".join(lines)
    return "".join(c if c.isprintable() else "?" for c in text)[:_MAX_DETAIL]


@dataclass(frozen=True, slots=True)
class Installed:
    """The package under test, as each run installs it (:mod:`gradebox.patches.testrun`)."""

    wheel_dir: Path
    """A directory holding the tree's wheel (mounted read-only)."""
    lib: Path
    """``installer``'s copy (:func:`lib_dir`)."""


@dataclass(frozen=True, slots=True)
class Packaging:
    """How a repository's package is built: base's build system and its environment."""

    system: BuildSystem
    env: TestEnv
    lib: Path

    def build(self, tree: Path, limits: CommandLimits, dest: Path) -> tuple[Wheel, Installed]:
        """Build ``tree``'s wheel in the sandbox and keep it in ``dest`` for the runs.

        Raises:
            BuildFailed: See :func:`build_wheel`.
        """
        wheel = build_wheel(tree, self.env, self.system, limits, lib=self.lib)
        return wheel, Installed(wheel.write(dest), self.lib)

    def describe(self) -> str:
        """One line for rows and instances: where it was read, the backend, the requires."""
        return f"{self.system.origin}: {self.system.backend} [{', '.join(self.system.requires)}]"


def packaging_for(base: Tree, *, cache: Path, python: str, scratch: Path) -> Packaging | None:
    """Base's build system with its cached environment (``None``: nothing to install).

    Raises:
        EnvFailed: base's build system is malformed or its environment cannot be built.
    """
    try:
        system = build_system(base)
    except BuildFailed as exc:
        raise EnvFailed(str(exc)) from exc
    if system is None:
        return None
    env = ensure_env(cache, python=python, requirements=system.requires, what="build")
    return Packaging(system, env, lib_dir(scratch / "lib"))
