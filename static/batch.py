"""Run the tool layers (lint, types, security) over many candidates at once.

Starting ruff, mypy and bandit once per candidate costs far more than the
candidate itself (per ~30-line file, measured by ``bench/static.py``: ruff 10 ms,
bandit 200 ms, mypy 190 ms with a warm cache and 800 ms without). :func:`check_batch`
writes every candidate of a batch into one private temporary directory and runs
each tool once (or once per shard) over all of them, then splits the results
back per candidate:

- **Names.** Each candidate's file is ``c-<hash>.py``, the hash of its code,
  function name and signature: opaque (no sample id or task name leaks), equal
  for equal candidates (checked once, reported to each), and stable, so mypy's
  cache entry of a candidate graded again is valid. A candidate's ``scope`` (the
  service's token id) is hashed in too: one scope's cache entries never serve
  another, so how fast a check is says nothing about another scope's code.
- **Isolation.** ``c-<hash>`` is not a Python identifier: no ``import`` statement
  can name it, so no candidate can import another or see its types. Each is a
  top-level module of its own; mypy sees the standard library only. ruff and
  bandit look at one file at a time by design.
- **Two views.** ruff and bandit check the candidate's code as it is
  (``src/``); mypy checks :func:`static.typecheck.prepare`'s copy with the
  task's signature (``types/``). Line numbers agree between the two.
- **Parallelism.** The three tools run at the same time, and mypy and bandit
  (the heavy two) are split into ``jobs // 2`` shards of at least
  :data:`MIN_SHARD` files each.
- **Warm cache.** ``StaticConfig.cache_dir`` is mypy's persistent cache: after
  the first batch the standard library is never analysed again. It grows by
  roughly 2 KB per distinct candidate; give each run (or suite) its own, or
  clear it now and then.
- **What the tools read.** Each file is written in UTF-8 from
  :func:`static.source.for_tools`: no BOM, coding cookies neutralised, so a
  tool reads the same text that the sandbox compiles.
- **Failures.** A tool that fails is an infrastructure error for its layer
  only (``StaticResult.tool_errors``), never a finding, and only for the
  candidates it failed on. A tool that names the files it failed on
  (:class:`static.findings.FileErrors`) is believed. When a run over many files
  fails without saying where, a canary (a file every tool reads) is run first:
  if the tool fails on it too, the tool itself is broken and every candidate
  gets the error. Otherwise the files are bisected down to single files
  (about ``2 k log2 n`` more runs for ``k`` bad files among ``n``): a candidate
  is blamed only when the tool failed on it alone. A timeout is not bisected
  (it would multiply the wait).

For one candidate at a time (a service's gating path), :class:`Session` keeps
the tools warm: bandit in this process through its API, mypy in a long-lived
worker process, ruff as a process (it starts in ~10 ms).

For the many batches of one grading run, :class:`WarmTools` keeps mypy and
bandit in long-lived worker processes (:class:`static.typecheck.Worker`,
:class:`static.security.Worker`) and runs :func:`check_batch`'s steps through
them: the same files, options, shards, canary and bisection, so the same
results, without starting both tools for every batch. On batches of 64 small
candidates that start-up was most of the stage (``bench/static.py``).

Layers are listed in :data:`LAYERS`; each is ``check(files, config) -> {file: findings}``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from static import lint, security, typecheck
from static.config import LayerName, StaticConfig
from static.findings import FileErrors, Finding, ToolError
from static.source import for_tools

__all__ = [
    "LAYERS",
    "MIN_SHARD",
    "TOOLS",
    "Candidate",
    "LayerCheck",
    "LayerName",
    "Session",
    "StaticConfig",
    "StaticResult",
    "WarmTools",
    "check_batch",
    "check_tools",
]

MIN_SHARD = 100
"""mypy and bandit are not split into shards smaller than this (their start-up dominates)."""


class LayerCheck(Protocol):
    """One tool layer: check many candidate files with as few processes as possible."""

    def __call__(self, files: Sequence[Path], config: StaticConfig, /) -> dict[Path, list[Finding]]:
        """Return findings per file; raise :class:`ToolError` when the tool fails."""
        ...


LAYERS: Mapping[LayerName, LayerCheck] = {
    "lint": lint.check,
    "types": typecheck.check,
    "security": security.check,
}
"""The registry of tool layers."""

TOOLS: Mapping[LayerName, Callable[[StaticConfig], str]] = {
    "lint": lint.find_tool,
    "types": typecheck.find_tool,
    "security": security.find_tool,
}
"""Each layer's tool locator; each raises :class:`ToolError` saying what to install."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate, as the tool layers need it."""

    code: str
    """The candidate's source; never run."""
    fn: str
    """The task's function name."""
    signature: str | None = None
    """The task's signature (``"def is_even(n: int) -> bool"``), when public.jsonl has one."""
    scope: str = ""
    """Whose cache entries this candidate may use: candidates of different scopes get
    different module names, so mypy's cache never answers one scope from another's
    entry (a hit would be faster: the time would tell that the same code was checked
    before). ``""``: one scope (a CLI run); the service gives each token its own."""


@dataclass(frozen=True, slots=True)
class StaticResult:
    """What the tool layers found in one candidate."""

    findings: list[Finding]
    """All findings of the layers that ran, by line, column, layer and rule."""
    tool_errors: dict[str, str]
    """Layer -> what went wrong, for each layer whose tool failed on this candidate."""


def check_tools(config: StaticConfig) -> None:
    """Fail fast, before any work, when a tool that a layer needs is missing.

    Args:
        config: The layers that will run and the tool paths.

    Raises:
        ToolError: one or more tools are missing; the message says what to install.
    """
    problems = []
    for layer in sorted(config.layers):
        try:
            TOOLS[layer](config)
        except ToolError as exc:
            problems.append(f"{layer}: {exc}")
    if problems:
        raise ToolError("; ".join(problems))


def check_batch(candidates: Sequence[Candidate], config: StaticConfig) -> list[StaticResult]:
    """Run the configured tool layers over a batch, each tool once (or once per shard).

    Args:
        candidates: The batch; equal candidates are checked once.
        config: Layers, rule groups, cache, cores and tool paths.

    Returns:
        One result per candidate, in order. A tool that fails gives
        ``tool_errors[layer]`` on the candidates it failed for, never findings.
    """
    return _check_batch(candidates, config, lambda layer, _shard: LAYERS[layer])


_Checks = Callable[[LayerName, int], LayerCheck]
"""The check that runs shard ``k`` of a layer."""


def _check_batch(
    candidates: Sequence[Candidate], config: StaticConfig, checks: _Checks
) -> list[StaticResult]:
    if not candidates or not config.layers:
        return [StaticResult(findings=[], tool_errors={}) for _ in candidates]
    names = [_module_name(candidate) for candidate in candidates]
    unique = dict(zip(names, candidates, strict=True))
    found: dict[str, list[Finding]] = {name: [] for name in unique}
    failed: dict[str, dict[str, str]] = {name: {} for name in unique}
    with contextlib.ExitStack() as scratch:
        files = _write_batch(scratch, unique, config.layers)
        tasks = [
            (layer, k, shard)
            for layer in _ORDER
            if layer in config.layers
            for k, shard in enumerate(_shards(layer, files[layer], config.jobs))
        ]
        with ThreadPoolExecutor(max_workers=min(len(tasks), config.jobs + 1)) as pool:
            futures = [
                (layer, shard, pool.submit(_isolating, checks(layer, k), shard, config))
                for layer, k, shard in tasks
            ]
            for layer, shard, future in futures:
                results, errors = future.result()
                for path in shard:
                    if path in errors or path not in results:
                        failed[path.stem][layer] = errors.get(path, f"{layer}: no result")
                    else:
                        found[path.stem].extend(results[path])
    return [_result(found[name], failed[name]) for name in names]


class WarmTools:
    """mypy and bandit kept warm across the batches of one run; :meth:`check_batch` as the function.

    Each shard of a batch (see :func:`check_batch`) goes to a worker process of
    its own, started on first use and kept: ``jobs // 2`` at most per tool.
    :meth:`start` starts the first of each in the background (mypy's first
    request analyses the standard library into the cache), so that a caller can
    overlap it with other start-up work. Batches are checked one at a time
    (a lock). Close it (or use ``with``) to stop the workers.
    """

    def __init__(self, config: StaticConfig, *, stdlib_cache: Path | None = None) -> None:
        """Check that the tools are installed; start nothing yet.

        Args:
            config: Layers, rule groups, cache, cores and tool paths. Without a
                ``cache_dir``, mypy's cache lives in the workers' scratch directory.
            stdlib_cache: A directory kept between runs for mypy's analysis of the
                standard library's core (builtins, typing: ~0.5 s of CPU cold). An
                empty ``cache_dir`` starts as a copy of it; the first run fills it.
                mypy checks every cache entry against its source, as with any cache.

        Raises:
            ToolError: a tool is missing.
        """
        check_tools(config)
        self._seed = None if stdlib_cache is None else stdlib_cache / _seed_name()
        self._root = Path(tempfile.mkdtemp(prefix="gradebox-warm-"))
        if config.cache_dir is None:
            config = dataclasses.replace(config, cache_dir=self._root / "mypy-cache")
        self.config = config
        """The configuration the tools run with."""
        self._lock = threading.Lock()
        self._mypy: dict[int, typecheck.Worker] = {}
        self._bandit: dict[int, security.Worker] = {}
        self._starting: Future[None] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradebox-warm")

    def __enter__(self) -> WarmTools:
        """Return the tools themselves."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the tools."""
        self.close()

    def start(self) -> None:
        """Start the first worker of each heavy tool in a background thread (idempotent)."""
        if self._starting is None:
            self._starting = self._pool.submit(self._warm)

    def check_batch(self, candidates: Sequence[Candidate]) -> list[StaticResult]:
        """:func:`check_batch` of ``candidates`` with the warm workers.

        Args:
            candidates: The batch; equal candidates are checked once.

        Returns:
            One result per candidate, in order, equal to :func:`check_batch`'s.
        """
        with self._lock:
            self._wait_started()
            return _check_batch(candidates, self.config, self._check_for)

    def close(self) -> None:
        """Stop every worker and remove the scratch directory; safe to call twice."""
        with contextlib.suppress(Exception):
            self._wait_started()
        self._pool.shutdown(wait=True)
        for workers in (self._mypy, self._bandit):
            for worker in workers.values():
                worker.close()
            workers.clear()
        shutil.rmtree(self._root, ignore_errors=True)

    def _warm(self) -> None:
        if "types" in self.config.layers:
            seeded = self._seeded()
            self._mypy_worker(0)
            if not seeded:
                self._save_seed()
        if "security" in self.config.layers:
            self._bandit_worker(0)

    def _seeded(self) -> bool:
        """Copy the kept standard-library cache into an empty cache; whether it did."""
        cache = self.config.cache_dir
        if self._seed is None or cache is None:
            return True  # nothing to seed from, nothing to save
        if cache.exists() and any(cache.iterdir()):
            return True  # a cache of its own (--cache-dir): nothing to seed, nothing to save
        if not self._seed.is_dir():
            return False
        with contextlib.suppress(OSError):
            shutil.copytree(self._seed, cache, dirs_exist_ok=True)
        return True

    def _save_seed(self) -> None:
        """Keep the cache as the warm-up left it (the standard library only), atomically."""
        cache = self.config.cache_dir
        if self._seed is None or cache is None or not cache.is_dir():
            return
        with contextlib.suppress(OSError):
            self._seed.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".seed-", dir=self._seed.parent))
            try:
                shutil.copytree(cache, tmp, dirs_exist_ok=True)
                tmp.rename(self._seed)  # another run may have won: keep its copy
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def _wait_started(self) -> None:
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.result()  # a ToolError here fails this batch; the next retries the start

    def _mypy_worker(self, shard: int) -> typecheck.Worker:
        worker = self._mypy.get(shard)
        if worker is None:
            workdir = self._root / f"mypy-{shard}"
            workdir.mkdir(exist_ok=True)
            # Only what every check needs (builtins, typing): a run analyses the rest
            # of the standard library when a candidate imports it, not before.
            worker = typecheck.Worker(self.config, workdir, warmup="import typing\n")
            self._mypy[shard] = worker
        return worker

    def _bandit_worker(self, shard: int) -> security.Worker:
        worker = self._bandit.get(shard)
        if worker is None:
            worker = self._bandit[shard] = security.Worker(self.config)
        return worker

    def _check_for(self, layer: LayerName, shard: int) -> LayerCheck:
        if layer == "types":
            return lambda files, _config: self._mypy_worker(shard).check(files)
        if layer == "security":
            return lambda files, _config: self._bandit_worker(shard).check(files)
        return LAYERS[layer]


class Session:
    """Warm tool layers for one candidate at a time (a service's gating path).

    bandit runs in this process (its plugins loaded once), mypy in a
    long-lived worker process with its modules loaded and its cache warm, ruff
    as a process. :meth:`check` runs the three at the same time. Checks are
    serialised by a lock; use one session per worker. Close it (or use ``with``)
    to stop the worker and remove the scratch directory.
    """

    def __init__(self, config: StaticConfig) -> None:
        """Check the tools and start the warm ones.

        Args:
            config: Layers, rule groups, cache and tool paths (``jobs`` is not used).
                Without a ``cache_dir`` the session keeps mypy's cache in its scratch
                directory.

        Raises:
            ToolError: a tool is missing or its warm mode did not start.
        """
        check_tools(config)
        self._root = Path(tempfile.mkdtemp(prefix="gradebox-session-"))
        if config.cache_dir is None:  # without a cache mypy would not be warm at all
            config = dataclasses.replace(config, cache_dir=self._root / "mypy-cache")
        self._config = config
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2)
        self._bandit: security.InProcess | None = None
        self._mypy: typecheck.Worker | None = None
        try:
            if "security" in config.layers:
                self._bandit = security.InProcess(config)
            if "types" in config.layers:
                self._mypy = typecheck.Worker(config, self._root)
        except ToolError:
            self.close()
            raise

    def __enter__(self) -> Session:
        """Return the session itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the session."""
        self.close()

    def check(self, candidate: Candidate) -> StaticResult:
        """Run the configured tool layers over one candidate.

        Args:
            candidate: The candidate.

        Returns:
            Its result, equal to what :func:`check_batch` gives for it.
        """
        with self._lock:
            name = _module_name(candidate)
            files = _write(self._root, {name: candidate}, self._config.layers)
            try:
                return self._check_files(files)
            finally:
                for paths in files.values():
                    for path in paths:
                        path.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop the mypy worker and remove the scratch directory; safe to call twice."""
        self._pool.shutdown(wait=True)
        if self._mypy is not None:
            self._mypy.close()
            self._mypy = None
        shutil.rmtree(self._root, ignore_errors=True)

    def _check_files(self, files: Mapping[LayerName, list[Path]]) -> StaticResult:
        pending: dict[LayerName, Future[dict[Path, list[Finding]]]] = {}
        if "lint" in files:
            pending["lint"] = self._pool.submit(lint.check, files["lint"], self._config)
        if self._mypy is not None:
            pending["types"] = self._pool.submit(self._mypy.check, files["types"])
        findings: list[Finding] = []
        errors: dict[str, str] = {}
        if self._bandit is not None:
            try:
                findings += self._bandit.check(files["security"])[files["security"][0]]
            except ToolError as exc:
                errors["security"] = str(exc)
        for layer, future in pending.items():
            try:
                findings += future.result()[files[layer][0]]
            except ToolError as exc:
                errors[layer] = str(exc)
        return _result(findings, errors)


_ORDER: tuple[LayerName, ...] = ("types", "security", "lint")


def _seed_name() -> str:
    """The kept cache's name: one per mypy version (and the Python version checked)."""
    return f"mypy-{importlib.metadata.version('mypy')}-py{typecheck.PYTHON_VERSION}"


def _module_name(candidate: Candidate) -> str:
    parts: tuple[str, ...] = (candidate.code, candidate.fn, candidate.signature or "")
    if candidate.scope:  # unscoped names stay as they were (kept caches stay valid)
        parts += (candidate.scope,)
    key = "\0".join(parts)
    return "c-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


#: Where a batch's files go when it can: a memory file system. On a disk one (``/tmp``
#: on ext4 here) creating, reading and removing the two files of a candidate cost
#: ~0.47 ms of the grader's CPU under load, against ~0.30 ms on tmpfs (same run).
_MEMORY_DIR = "/dev/shm"  # noqa: S108 - a private directory (0700) is made inside


def _write_batch(
    scratch: contextlib.ExitStack,
    unique: Mapping[str, Candidate],
    layers: frozenset[LayerName],
    memory_dir: str = _MEMORY_DIR,
) -> dict[LayerName, list[Path]]:
    """:func:`_write` into a private directory ``scratch`` removes: in ``memory_dir`` if it can.

    A memory file system that is missing, not ours to write or full (a container's
    small ``/dev/shm``) leaves the batch to the default temporary directory.
    """
    bases = [memory_dir] if os.access(memory_dir, os.W_OK | os.X_OK) else []
    for base in [*bases, None]:
        try:
            tmp = scratch.enter_context(
                tempfile.TemporaryDirectory(prefix="gradebox-static-", dir=base)
            )
            return _write(Path(tmp), unique, layers)
        except OSError:
            if base is None:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _write(
    root: Path, unique: Mapping[str, Candidate], layers: frozenset[LayerName]
) -> dict[LayerName, list[Path]]:
    src, types = root / "src", root / "types"
    src.mkdir(exist_ok=True)
    types.mkdir(exist_ok=True)
    files: dict[LayerName, list[Path]] = {layer: [] for layer in layers}
    for name, candidate in unique.items():
        text = for_tools(candidate.code)
        path = src / f"{name}.py"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        for layer in layers & {"lint", "security"}:
            files[layer].append(path)
        if "types" in layers:
            prepared = typecheck.prepare(text, candidate.fn, candidate.signature)
            path = types / f"{name}.py"
            path.write_bytes(prepared.encode("utf-8", "surrogatepass"))
            files["types"].append(path)
    return files


def _shards(layer: LayerName, files: list[Path], jobs: int) -> list[list[Path]]:
    if layer == "lint":
        return [files]  # ruff is fast and multi-threaded on its own
    count = max(1, min(jobs // 2, len(files) // MIN_SHARD))
    return [files[i::count] for i in range(count)]


_Outcome = tuple[dict[Path, list[Finding]], dict[Path, str]]

_CANARY = '"""gradebox\'s canary: a module every tool reads without a finding."""\n'


def _isolating(check: LayerCheck, files: list[Path], config: StaticConfig) -> _Outcome:
    """Run a layer; if it fails on many files without saying which, find the ones it fails on."""
    outcome = _attempt(check, files, config)
    if isinstance(outcome, tuple):
        return outcome
    if len(files) == 1 or _timed_out(outcome) or not _canary_passes(check, files[0], config):
        return {}, dict.fromkeys(files, str(outcome))  # the tool itself is broken
    return _bisect(check, files, config)


def _attempt(check: LayerCheck, files: list[Path], config: StaticConfig) -> _Outcome | ToolError:
    """One run: its outcome, or the error when it failed without saying where."""
    try:
        return check(files, config), {}
    except FileErrors as exc:
        return exc.found, exc.failed
    except ToolError as exc:
        return exc
    except Exception as exc:  # our own parsing of a tool's output must not take the batch down
        error = ToolError(f"the layer raised {type(exc).__name__}: {exc}"[:500])
        error.__cause__ = exc
        return error


def _bisect(check: LayerCheck, files: list[Path], config: StaticConfig) -> _Outcome:
    """Split ``files`` (which failed together) until each failure is a single file's."""
    found: dict[Path, list[Finding]] = {}
    failed: dict[Path, str] = {}
    middle = len(files) // 2
    for half in (files[:middle], files[middle:]):
        outcome = _attempt(check, half, config)
        if isinstance(outcome, ToolError):
            if len(half) == 1 or _timed_out(outcome):
                outcome = {}, dict.fromkeys(half, str(outcome))
            else:
                outcome = _bisect(check, half, config)
        found.update(outcome[0])
        failed.update(outcome[1])
    return found, failed


def _timed_out(error: ToolError) -> bool:
    return isinstance(error.__cause__, subprocess.TimeoutExpired)


def _canary_passes(check: LayerCheck, beside: Path, config: StaticConfig) -> bool:
    """Whether the tool handles a trivial file (written next to ``beside``) without failing."""
    fd, name = tempfile.mkstemp(prefix="gbx-canary-", suffix=".py", dir=beside.parent)
    canary = Path(name)
    try:
        with open(fd, "w", encoding="utf-8") as file:
            file.write(_CANARY)
        return isinstance(_attempt(check, [canary], config), tuple)
    finally:
        canary.unlink(missing_ok=True)


def _result(findings: list[Finding], errors: dict[str, str]) -> StaticResult:
    ordered = sorted(findings, key=lambda f: (f.line, f.col, f.layer, f.rule, f.message))
    return StaticResult(findings=ordered, tool_errors=dict(sorted(errors.items())))
