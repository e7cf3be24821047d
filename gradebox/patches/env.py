"""The test environment: one virtual environment per repository and lockfile, cached.

Built once, outside the sandbox, with the sandbox's interpreter
(``python -m venv --without-pip``) and the grader's pip (``pip --python``),
then mounted read-only into every sandbox that runs the repository's tests.
What goes in: each distribution the base revision's lockfile pins
(:func:`static.lockfiles.read_lockfile`: requirements files, ``uv.lock``,
``poetry.lock``, ``pylock.toml``), plus ``pytest`` when the lockfile has none.

* **From the base, never from the patch.** The lockfile is read at the base
  revision: a patch cannot add a package to the environment.
* **Wheels only** (``--only-binary :all:``): installing runs no package's build
  code on the host. A distribution without a wheel is :class:`EnvFailed`, which
  says so (the gate reports it as the row's ``infra_error``, never as the
  patch's failure); give a prepared environment with ``--env DIR`` instead.
* The same function builds the *build* environment of a package
  (:mod:`gradebox.patches.build`) from base's ``[build-system] requires``.
* **Keyed** by the interpreter and the requirements, nothing else (two clones
  of one project share an environment): ``<cache>/<sha256 prefix>``. Built
  in a temporary directory and renamed into place under a file lock, so
  concurrent gates build it once and a half-built environment is never used.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from gradebox.errors import SetupError
from static.lockfiles import LockfileError, read_lockfile

__all__ = [
    "EnvFailed",
    "TestEnv",
    "default_cache",
    "ensure_env",
    "given_env",
    "lockfile_requirements",
]


class EnvFailed(SetupError):
    """An environment cannot be built (for this base: reported per row as ``infra_error``)."""


@dataclass(frozen=True, slots=True)
class TestEnv:
    """A virtual environment the tests run in."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    path: Path
    """Its root (mounted read-only at the same path inside the sandbox)."""
    key: str
    """The cache key (``given`` for ``--env DIR``)."""
    built_s: float | None
    """Seconds spent building it now; ``None`` when it came from the cache or was given."""

    @property
    def python(self) -> str:
        """Its interpreter."""
        return str(self.path / "bin" / "python")


def default_cache() -> Path:
    """Where environments are cached: readable by the sandbox's uid when we are root."""
    if os.geteuid() == 0:
        return Path("/var/cache/gradebox/envs")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gradebox" / "envs"


def given_env(path: Path) -> TestEnv:
    """A prepared environment (``--env DIR``); it must have ``bin/python`` and pytest."""
    python = path / "bin" / "python"
    if not python.exists():
        raise SetupError(f"--env {path}: no bin/python there (give a virtual environment's root)")
    return TestEnv(path.resolve(), "given", None)


def ensure_env(
    cache: Path, *, python: str, requirements: Sequence[str], what: str = "test"
) -> TestEnv:
    """The cached environment holding ``requirements``, built if missing.

    Args:
        cache: The cache directory (created, mode 0755).
        python: The sandbox's interpreter (3.11+) the environment is made from.
        requirements: What pip installs (wheels only), e.g. from
            :func:`lockfile_requirements`.
        what: Which environment, for messages (``test``, ``build``).

    Returns:
        The environment: its key is the interpreter and the requirements, nothing
        else (the same lockfile in two clones shares one environment).

    Raises:
        EnvFailed: pip cannot build the environment.
    """
    key = hashlib.sha256("\0".join([python, *requirements]).encode()).hexdigest()[:24]
    if not cache.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        cache.chmod(0o755)  # whatever the umask: the sandbox's uid reads the environments
    final = cache / key
    with open(cache / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / ".gradebox-complete").exists():
            return TestEnv(final, key, None)
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache))
        try:
            _build(tmp, python, list(requirements), what)
            (tmp / ".gradebox-complete").write_text(key)
            _readable(tmp)
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return TestEnv(final, key, round(time.monotonic() - t0, 3))


def lockfile_requirements(name: str | None, text: str | None) -> list[str]:
    """The tests' requirements: each pin of the base lockfile, and pytest when it has none.

    Raises:
        EnvFailed: The lockfile does not parse, or pins a URL.
    """
    pins: dict[str, str] = {}
    if name is not None and text is not None:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / Path(name).name
            path.write_text(text, encoding="utf-8")
            try:
                pins = read_lockfile(path)
            except LockfileError as exc:
                raise EnvFailed(f"the base revision's lockfile: {exc}") from exc
    out = []
    for dist, version in sorted(pins.items()):
        first = version.split(" || ")[0]
        if first.startswith("@"):
            raise EnvFailed(f"{name}: {dist} is pinned to a URL; give a prepared --env DIR")
        out.append(f"{dist}=={first}" if first and first[0].isdigit() else f"{dist}{first}")
    if "pytest" not in pins:
        out.append("pytest")
    return out


def _readable(top: Path) -> None:
    """Let the sandbox's uid read and run the environment, whatever umask built it."""
    for dirpath, dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)  # noqa: S103 - read by the sandbox's uid, written by no one
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                mode = os.stat(p).st_mode
                os.chmod(p, (mode | 0o444 | (0o111 if mode & 0o100 else 0)) & 0o755)
        del dirnames


def _build(dest: Path, python: str, requirements: list[str], what: str) -> None:
    steps = [
        [python, "-m", "venv", "--without-pip", str(dest)],
        [sys.executable, "-m", "pip", "--python", str(dest / "bin" / "python"), "install",
         "--quiet", "--disable-pip-version-check", "--no-input", "--only-binary", ":all:",
         *requirements],
    ]  # fmt: skip
    for argv in steps:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvFailed(f"cannot build the {what} environment: {exc}") from exc
        if proc.returncode:
            lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("WARNING")]
            tail = " / ".join(lines[-3:])[:500]
            raise EnvFailed(f"cannot build the {what} environment: {tail}")
