"""The configuration of one ``gradebox grade`` run, resolved once at the CLI boundary.

:func:`build_config` turns the command's options and the environment into a
frozen :class:`RunConfig`; nothing after it reads ``os.environ`` or an options
dict. What a run *used* beyond the options (file contents, the judge endpoint
the environment named, tool versions) is fingerprinted per sample by
:mod:`gradebox.runs.fingerprint`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gradebox.errors import BadInput
from sandbox.types import Limits

__all__ = [
    "JUDGE_ENV",
    "JudgeOptions",
    "RunConfig",
    "StaticOptions",
    "build_config",
    "sandbox_python_version",
    "static_tool_versions",
]

JUDGE_ENV = (
    "GRADEBOX_JUDGE_BASE_URL",
    "GRADEBOX_JUDGE_API_KEY",
    "GRADEBOX_JUDGE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "XDG_CACHE_HOME",
)
"""The environment variables a grading run reads (at the boundary only)."""


@dataclass(frozen=True, slots=True)
class StaticOptions:
    """The static layers' options (present only when the layers are on)."""

    lockfile: Path | None
    """requirements.txt, uv.lock, poetry.lock or pylock.toml; ``None``: what is installed."""
    policy: Path | None
    """The static policy file; ``None`` for the default policy."""
    cache_dir: Path | None
    """mypy's cache; ``None`` for a temporary one."""
    advisories: Path | None = None
    """An OSV advisory directory or zip for the ``deps`` layer; ``None``: the layer is off."""


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    """The judge's options (present only when the judge is on)."""

    model: str | None
    """``--judge-model``; ``None`` leaves it to ``GRADEBOX_JUDGE_MODEL``."""
    rubric: str | None
    """One rubric for every task; ``None``: each task's own."""
    cache: Path | None
    """The reply cache; ``None`` for the default path."""
    no_cache: bool
    """Neither read nor write the cache."""
    concurrency: int | None
    """Requests in flight at once; ``None`` keeps the judge's default."""
    environ: Mapping[str, str]
    """The judge's environment variables (:data:`JUDGE_ENV`), read-only."""
    repeat: int | None = None
    """``--judge-repeat``: judgements per item; ``None``: 1, or 3 for a non-deterministic judge."""
    extra_body: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """``--judge-extra-body``: provider options merged into every request."""
    max_tokens: int | None = None
    """``--judge-max-tokens``: cap on each reply's tokens; ``None`` sends none."""
    probes: bool = False
    """``--judge-probes``: judge each candidate's invariance rewrites too."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything one grading run was asked to do; frozen, built by :func:`build_config`."""

    hidden: Path
    """hidden.jsonl: the deciding cases."""
    samples: Path
    """samples.jsonl: the candidates."""
    public: Path | None
    """public.jsonl, if given."""
    limits: Limits
    """Resource limits per candidate."""
    jobs: int
    """Candidates graded at once."""
    isolation: str
    """``auto``, ``bwrap`` or ``none``."""
    sandbox_python: Path | None
    """The interpreter that runs candidates; ``None`` for the system one."""
    banned_imports: tuple[str, ...] | None
    """The run's import denylist; ``None``: the task's or the default."""
    explain: bool
    """Put arguments and expected values of failed cases on rows."""
    skip_bad_lines: bool
    """Grade the good lines of samples.jsonl and public.jsonl, report the bad."""
    static: StaticOptions | None
    """The static layers, or ``None`` with ``--no-static``."""
    judge: JudgeOptions | None
    """The judge, or ``None`` with ``--no-judge``."""
    reference: Path | None
    """Reference solutions for derived limits and generated cases."""
    properties: Path | None
    """properties.jsonl: generated extra cases."""
    seed: int | None
    """Overrides every property's seed."""
    out: Path | None
    """Where results.jsonl goes; ``None``: stdout."""
    run_dir: Path | None
    """The run directory, if any."""
    sarif: Path | None
    """``--sarif``."""
    junit: Path | None
    """``--junit``."""
    html: Path | None
    """``--html``."""
    gate_exit: bool
    """Exit 1 when any verdict is not ``pass``."""
    as_json: bool
    """Print the summary as JSON."""
    argv: tuple[str, ...] = ()
    """The command line, for the manifest."""
    scheduler: str | None = None
    """``--scheduler``: ``local:N`` or a Dask scheduler's address; ``None``: this machine's
    pool. Not a grade option (rows are the same either way), so not fingerprinted."""

    def options(self) -> dict[str, Any]:
        """The options that change a grade, as plain JSON (for the fingerprint and manifest)."""
        return {
            "isolation": self.isolation,
            "banned_imports": None if self.banned_imports is None else list(self.banned_imports),
            "explain": self.explain,
            "seed": self.seed,
            "static": self.static is not None,
            "judge": self.judge is not None,
            "judge_rubric": self.judge.rubric if self.judge else None,
            **self._judge_options(),
        }

    def _judge_options(self) -> dict[str, Any]:
        """The judge's request options, only when set (so older fingerprints stay valid)."""
        j = self.judge
        if j is None:
            return {}
        found = {
            "judge_repeat": j.repeat,
            "judge_extra_body": dict(j.extra_body) or None,
            "judge_max_tokens": j.max_tokens,
            "judge_probes": True if j.probes else None,
        }
        return {k: v for k, v in found.items() if v is not None}


def build_config(
    opts: Mapping[str, Any], environ: Mapping[str, str], argv: tuple[str, ...] = ()
) -> RunConfig:
    """Resolve ``gradebox grade``'s click options and the environment into a :class:`RunConfig`.

    Raises:
        BadInput: Options that contradict each other.
    """
    if opts["sarif"] is not None and opts["no_static"]:
        raise BadInput(["--sarif needs the static layers: drop --no-static"])
    banned = None
    if opts["banned_imports"] is not None:
        banned = tuple(m.strip() for m in opts["banned_imports"].split(",") if m.strip())
    static = None
    if not opts["no_static"]:
        static = StaticOptions(
            opts["lockfile"], opts["static_policy"], opts["cache_dir"], opts.get("advisories")
        )
    judge = None
    if not opts["no_judge"]:
        env = {k: environ[k] for k in JUDGE_ENV if k in environ}
        judge = JudgeOptions(
            model=opts["judge_model"],
            rubric=opts["judge_rubric"],
            cache=opts["judge_cache"],
            no_cache=opts["no_judge_cache"],
            concurrency=opts["judge_concurrency"],
            environ=MappingProxyType(env),
            repeat=opts.get("judge_repeat"),
            extra_body=MappingProxyType(dict(opts.get("judge_extra_body") or {})),
            max_tokens=opts.get("judge_max_tokens"),
            probes=bool(opts.get("judge_probes")),
        )
    limits = Limits(
        case_timeout_s=opts["case_timeout"],
        candidate_timeout_s=opts["candidate_timeout"],
        memory_mb=opts["memory_mb"],
        max_timeouts=opts["max_timeouts"],
        tree_limits=not opts["no_tree_limits"],
    )
    return RunConfig(
        hidden=opts["hidden"],
        samples=opts["samples"],
        public=opts["public"],
        limits=limits,
        jobs=opts["jobs"],
        isolation=opts["isolation"],
        sandbox_python=opts["sandbox_python"],
        banned_imports=banned,
        explain=opts["explain"],
        skip_bad_lines=opts["skip_bad_lines"],
        static=static,
        judge=judge,
        reference=opts["reference"],
        properties=opts["properties"],
        seed=opts["seed"],
        out=opts["out"],
        run_dir=opts["run_dir"],
        sarif=opts["sarif"],
        junit=opts["junit"],
        html=opts["html"],
        gate_exit=opts["gate_exit"],
        as_json=opts["as_json"],
        argv=argv,
        scheduler=opts.get("scheduler"),
    )


def static_tool_versions() -> dict[str, str | None]:
    """Installed versions of gradebox, ruff, mypy and bandit (``None`` when missing)."""
    # Loaded on use (~30 ms of imports): only a run with a run directory asks.
    import importlib.metadata  # noqa: PLC0415

    versions: dict[str, str | None] = {}
    for dist in ("gradebox", "ruff", "mypy", "bandit"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def sandbox_python_version(python: str) -> str:
    """``sys.version`` of the interpreter that runs candidates, with its real path."""
    import subprocess  # noqa: PLC0415 - only when no running worker reported its version

    real = os.path.realpath(python)
    try:
        out = subprocess.run(
            [real, "-I", "-S", "-c", "import sys; print(sys.version)"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        out = f"unknown ({type(exc).__name__})"
    return f"{real} {out}"
