"""The judge stage of ``gradebox grade``: annotate batches of samples with the LLM judge.

Importing this module imports :mod:`judge` and with it ``openai`` (~0.4 s):
the CLI imports it only when the judge is switched on.

What the judge sees is built here from two things only: the public task
(spec, signature, rubric name) and the extracted code. :class:`gradebox.pipeline.core.Graded`
carries neither the reply's prose nor the hidden cases, and :class:`judge.JudgeItem`
has no field for them.

Before the first judgement the judge probes the endpoint (:meth:`judge.Judge.probe`:
which response-format rung validates, whether temperature 0 is accepted);
:meth:`JudgeStage.endpoint_record` is what the manifest keeps of it.

The row's ``judge`` field is :meth:`judge.JudgeResult.to_row`: ``status`` is
``scored``, ``needs_review`` (the reply broke protocol), ``unavailable`` (no
reply: infrastructure) or ``skipped`` (with ``reason``: no code extracted, no
public spec, or no endpoint configured). The verdict reads only ``mismatch``
and ``unscored``, which can downgrade a pass to ``needs_review`` and never
rescue a failure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gradebox.errors import BadInput, SetupError
from gradebox.pipeline.core import Annotation, Graded
from judge import Judge, JudgeConfig, JudgeConfigError, JudgeItem, JudgeNotConfigured, JudgeResult
from judge.invariance import variants
from judge.repeat import combine_panel
from judge.types import InvarianceProbe, ProbeCheck
from rubrics import RubricError

__all__ = ["JudgeStage", "SkippedJudge", "default_cache_path", "open_judge_stage"]


class JudgeStage:
    """Judge batches of graded samples; one :class:`Judge`, its own concurrency."""

    field = "judge"
    """The row field this stage fills."""

    def __init__(
        self,
        judge: Judge,
        *,
        rubric: str | None = None,
        config: JudgeConfig | None = None,
        probes: bool = False,
        panel: Sequence[Judge] = (),
    ) -> None:
        """Set up the stage.

        Args:
            judge: The judge (endpoint, cache, concurrency); closed by :meth:`close`.
            rubric: A rubric for every task, instead of each task's own.
            config: The configuration ``judge`` was built from (endpoint and model used).
            probes: Also judge each candidate's invariance rewrites (``--judge-probes``).
            panel: More judges, one per further model (``--judge-model a,b,c``): every
                item is judged by each and the row holds the majority; closed by
                :meth:`close` too.
        """
        self.judge = judge
        self.rubric = rubric
        self.config = config
        self.probes = probes
        self.members: list[tuple[str, Judge]] = [(judge.model, judge)]
        self.members += [(j.model, j) for j in panel]

    @property
    def base_url(self) -> str | None:
        """The endpoint used."""
        return self.config.base_url if self.config else None

    @property
    def model(self) -> str | None:
        """The model used (from ``--judge-model`` or the environment); ``a,b,c`` for a panel."""
        if len(self.members) > 1:
            return ",".join(m for m, _ in self.members)
        return self.config.model if self.config else None

    def endpoint_record(self) -> dict[str, Any]:
        """What the manifest keeps of the endpoint: the probe, repeats, fingerprints seen.

        ``probe`` is ``None`` when nothing was judged (every row from the cache or
        skipped); ``fingerprint_changed`` is true when fresh replies carried more
        than one ``system_fingerprint`` (the backend changed within the run).
        """
        record = self._record(self.judge)
        if len(self.members) > 1:
            record["panel"] = {model: self._record(j) for model, j in self.members}
        return record

    def _record(self, judge: Judge) -> dict[str, Any]:
        report = judge.probe_report
        seen = judge.fingerprints_seen()
        repeat = None
        if report is not None:
            repeat = self.config.repeat if self.config and self.config.repeat else None
            repeat = repeat or (1 if report.capabilities.deterministic else 3)
        return {
            "probe": None if report is None else report.to_json(),
            "deterministic": None if report is None else report.capabilities.deterministic,
            "repeat": repeat,
            "extra_body": dict(self.config.extra_body) if self.config else {},
            "fingerprints_seen": seen,
            "fingerprint_changed": len(seen) > 1,
        }

    def rubric_digest(self, name: str | None) -> str:
        """The digest of rubric ``name`` (or the override) and its prompt templates."""
        rubric = self.judge.rubric(self.rubric or name or "default")
        templates = json.dumps(dataclasses.asdict(rubric.prompt), sort_keys=True, default=str)
        return (
            f"{rubric.name}@{rubric.version}:{rubric.digest}:"
            + hashlib.sha256(templates.encode("utf-8")).hexdigest()
        )

    def item(self, g: Graded, *, scope: str = "") -> JudgeItem | JudgeResult:
        """What the judge is asked about ``g``, or why it is not asked.

        ``scope`` is the item's :attr:`judge.JudgeItem.cache_scope` (the service's
        token id: no token is answered from, or learns of, another's cache entries).
        """
        if g.code is None:
            return JudgeResult.skipped("no_code", "no code was extracted")
        if g.public is None or not g.public.spec.strip():
            return JudgeResult.skipped(
                "disabled", "no public spec for this task (give --public with a 'spec')"
            )
        return JudgeItem(
            sample_id=g.sample_id,
            fn=g.fn,
            spec=g.public.spec,
            signature=g.public.signature,
            code=g.code,
            rubric_name=self.rubric or g.public.rubric,
            cache_scope=scope,
        )

    def run(self, items: Sequence[Graded], *, scope: str = "") -> list[Annotation]:
        """Judge every item that has code and a public spec; one annotation per item.

        ``scope``: the items' cache scope (see :meth:`item`).

        With :attr:`probes`, each item's rewrites (:func:`judge.invariance.variants`)
        are judged in the same batch and compared with it (``judge.invariance``).
        """
        planned = [self.item(g, scope=scope) for g in items]
        asked = [p for p in planned if isinstance(p, JudgeItem)]
        rewrites: list[tuple[int, InvarianceProbe, JudgeItem]] = []
        if self.probes:
            for index, it in enumerate(asked):
                for probe, code in variants(it.code, it.fn).items():
                    rewrite = dataclasses.replace(
                        it, sample_id=f"{it.sample_id}#{probe}", code=code
                    )
                    rewrites.append((index, probe, rewrite))
        answers = self._judge_all([*asked, *(r for _, _, r in rewrites)])
        base = answers[: len(asked)]
        checks: dict[int, list[ProbeCheck]] = {}
        for (index, probe, _), result in zip(rewrites, answers[len(asked) :], strict=True):
            checks.setdefault(index, []).append(_check(probe, base[index], result))
        judged = iter(
            dataclasses.replace(r, invariance=tuple(checks.get(i, ()))) for i, r in enumerate(base)
        )
        return [_note(next(judged) if isinstance(p, JudgeItem) else p) for p in planned]

    def crashed(self, items: Sequence[Graded], message: str) -> list[Annotation]:
        """Annotations for a batch whose judging raised: ``unavailable`` on each."""
        result = JudgeResult(status="unavailable", reason_code="endpoint_error", reason=message)
        return [_note(result)] * len(items)

    def _judge_all(self, items: list[JudgeItem]) -> list[JudgeResult]:
        """Judge ``items`` with the one judge, or with every panel member (side by side)."""
        if len(self.members) == 1:
            return self.judge.judge_many(items)
        with ThreadPoolExecutor(len(self.members), thread_name_prefix="gradebox-panel") as pool:
            per_model = list(pool.map(lambda member: member[1].judge_many(items), self.members))
        return [
            combine_panel(
                [(model, per_model[k][i]) for k, (model, _) in enumerate(self.members)],
                self.judge.rubric(item.rubric_name),
            )
            for i, item in enumerate(items)
        ]

    def close(self) -> None:
        """Close the judges (their caches and clients)."""
        for _, judge in self.members:
            judge.close()


class SkippedJudge:
    """The judge stage when no endpoint is configured: every row says so."""

    field = "judge"
    """The row field this stage fills."""

    def __init__(self, notice: str, reason: str = "not configured") -> None:
        """Every row gets ``{"status": "skipped", "reason": reason, ...}``.

        Args:
            notice: One line for the user saying how to switch the judge on.
            reason: The rows' ``reason``.
        """
        self.notice = notice
        self.base_url: str | None = None
        self.model: str | None = None
        self._result = JudgeResult.skipped("disabled", reason)

    def rubric_digest(self, name: str | None) -> str:
        """No rubric is used."""
        return "none"

    def endpoint_record(self) -> dict[str, Any]:
        """No endpoint was asked."""
        return {"probe": None, "deterministic": None, "repeat": None, "fingerprints_seen": {}}

    def run(self, items: Sequence[Graded], *, scope: str = "") -> list[Annotation]:
        """The same skipped annotation for every item (``scope`` is not used)."""
        return [Annotation(self._result) for _ in items]

    def crashed(self, items: Sequence[Graded], message: str) -> list[Annotation]:
        """Not reached (:meth:`run` cannot fail); the skipped annotation."""
        return self.run(items)

    def close(self) -> None:
        """Nothing to close."""


def _note(result: JudgeResult) -> Annotation:
    return Annotation(result)


def _check(probe: InvarianceProbe, base: JudgeResult, rewrite: JudgeResult) -> ProbeCheck:
    both = base.status == rewrite.status == "scored" and None not in (base.verdict, rewrite.verdict)
    return ProbeCheck(
        probe, rewrite.status, rewrite.verdict, both and base.verdict != rewrite.verdict
    )


def default_cache_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/gradebox/judge.sqlite``, else ``~/.cache/gradebox/judge.sqlite``."""
    base = environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "gradebox" / "judge.sqlite"


def open_judge_stage(
    environ: Mapping[str, str],
    *,
    rubric_names: Iterable[str],
    model: str | None = None,
    rubric: str | None = None,
    cache_path: Path | None = None,
    no_cache: bool = False,
    concurrency: int | None = None,
    repeat: int | None = None,
    extra_body: Mapping[str, Any] | None = None,
    max_output_tokens: int | None = None,
    probes: bool = False,
) -> JudgeStage | SkippedJudge:
    """Configure the judge from the environment and options, and load every rubric.

    Args:
        environ: The environment (``GRADEBOX_JUDGE_*``, ``OPENAI_*``), read here only.
        rubric_names: The rubrics the tasks name (ignored when ``rubric`` is given).
        model: Overrides ``GRADEBOX_JUDGE_MODEL``; ``a,b,c`` (either way) is a panel:
            every item judged by each model, the majority kept, a split ``needs_review``.
        rubric: One rubric for every task.
        cache_path: The reply cache; ``None`` for :func:`default_cache_path`.
        no_cache: Neither read nor write the cache.
        concurrency: Requests in flight at once; ``None`` keeps the default.
        repeat: Judgements per item (``--judge-repeat``); ``None``: 1, or 3 when the
            endpoint refuses temperature 0.
        extra_body: Provider options for every request (``--judge-extra-body``).
        max_output_tokens: Cap on each reply's tokens (``--judge-max-tokens``).
        probes: Judge each candidate's invariance rewrites too (``--judge-probes``).

    Returns:
        The stage, or a :class:`SkippedJudge` (with a ``notice`` for the user)
        when the environment configures no endpoint.

    Raises:
        SetupError: The configuration is invalid or the cache cannot be opened.
        BadInput: A rubric is missing or invalid.
    """
    env = {**environ, "GRADEBOX_JUDGE_MODEL": model} if model else environ
    models = [m.strip() for m in (env.get("GRADEBOX_JUDGE_MODEL") or "").split(",") if m.strip()]
    if len(models) > 1:
        env = {**env, "GRADEBOX_JUDGE_MODEL": models[0]}
        if len(set(models)) != len(models):
            raise SetupError(f"judge: the panel names a model twice: {','.join(models)}")
    try:
        config = JudgeConfig.from_env(env)
    except JudgeNotConfigured as exc:
        return SkippedJudge(f"{exc}; --no-judge silences this line")
    except JudgeConfigError as exc:
        raise SetupError(f"judge: {exc}") from exc
    path = None if no_cache else cache_path or default_cache_path(environ)
    try:
        config = dataclasses.replace(
            config,
            cache_path=path,
            no_cache=no_cache,
            concurrency=concurrency or config.concurrency,
            repeat=repeat,
            extra_body=dict(extra_body or {}),
            max_output_tokens=max_output_tokens,
            probe_rubric=rubric or "default",
        )
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        panel = [Judge(dataclasses.replace(config, model=m)) for m in models[1:]]
        stage = JudgeStage(Judge(config), rubric=rubric, config=config, probes=probes, panel=panel)
    except (JudgeConfigError, OSError) as exc:
        raise SetupError(f"judge: {exc}") from exc
    names = [rubric] if rubric else sorted(set(rubric_names))
    for name in names:
        try:
            stage.judge.rubric(name)
        except RubricError as exc:
            stage.close()
            raise BadInput([f"rubric {name!r}: {p}" for p in exc.problems]) from exc
    return stage
