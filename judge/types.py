"""The judge's records: what goes in (:class:`JudgeItem`) and what comes out (:class:`JudgeResult`).

A :class:`JudgeResult` is an annotation. It has no pass or fail: the verdict
layer reads :attr:`JudgeResult.mismatch` and :attr:`JudgeResult.unscored`, and
those can only downgrade a passing candidate, never rescue a failing one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "IntentVerdict",
    "InvarianceProbe",
    "Issue",
    "JudgeItem",
    "JudgeResult",
    "JudgeStatus",
    "PanelVote",
    "ProbeCheck",
    "ReasonCode",
    "Repeat",
    "Reply",
    "ResponseMode",
    "Severity",
    "TemperaturePolicy",
    "TokenParam",
    "Tokens",
]

JudgeStatus = Literal["scored", "needs_review", "unavailable", "skipped", "pending"]
"""``scored``: a valid reply. ``needs_review``: a reply that broke protocol (kept
in ``raw``). ``unavailable``: no reply (infrastructure). ``skipped``: not asked.
``pending``: asked, not answered yet (the service's ``judge: "defer"``; the row is
rewritten with the final status once the judge answers). Like ``unavailable`` and
``skipped``, ``pending`` is neither a mismatch nor unscored: it leaves the verdict
as the tests and static layers decided it."""
IntentVerdict = Literal["match", "mismatch"]
"""Does the implementation do what the specification asks."""
Severity = Literal["info", "warning", "error"]
"""How much an issue matters."""
ResponseMode = Literal[
    "json_schema", "json_schema_nonstrict", "json_object_schema", "json_object", "prompt_only"
]
"""The rungs of the capability ladder, best first: a strict ``json_schema`` response
format, ``json_schema`` without ``strict``, JSON mode with the schema in it
(``{"type": "json_object", "schema": ...}``: llama-cpp-python's grammar-constrained
form), JSON mode (``json_object``), or no response format at all. The schema is
stated in the prompt on every rung, and every reply is validated against it
whatever the endpoint promised."""
InvarianceProbe = Literal["rename", "strip", "reorder", "inject"]
"""A rewrite of the candidate that must not change the verdict (:mod:`judge.invariance`)."""
TemperaturePolicy = Literal["zero", "server_default"]
"""``zero``: ``temperature: 0`` is sent. ``server_default``: the endpoint refused it
(reasoning models accept only their default), so no temperature is sent and the
judge is not deterministic."""
TokenParam = Literal["max_tokens", "max_completion_tokens"]
"""Which name the output-token cap is sent under (reasoning models refuse
``max_tokens``; some servers know only ``max_tokens``)."""
ReasonCode = Literal[
    "parse_failure",
    "schema_violation",
    "rubric_violation",
    "refusal",
    "truncated",
    "empty_reply",
    "rate_limited",
    "server_error",
    "timeout",
    "connection",
    "rejected",
    "endpoint_error",
    "no_code",
    "disabled",
]
"""Why a result is not ``scored``. ``needs_review``: parse_failure .. empty_reply;
``unavailable``: rate_limited .. endpoint_error; ``skipped``: no_code, disabled."""


@dataclass(frozen=True, slots=True)
class JudgeItem:
    """One candidate to judge: public task data and extracted code, nothing else.

    There is deliberately no field for hidden cases, expected values, test
    outcomes or the model's prose: the judge reads code, not claims.
    """

    sample_id: str
    """The sample's ``id``."""
    fn: str
    """Name of the function the task asks for."""
    spec: str
    """The public specification (public.jsonl ``spec``)."""
    signature: str
    """The public signature (public.jsonl ``signature``)."""
    code: str
    """The extracted code, exactly as extraction returned it."""
    rubric_name: str = "default"
    """A built-in rubric's name or a rubric file's path (public.jsonl ``rubric``)."""
    cache_scope: str = ""
    """Who may be answered from this item's cache entries: items of different scopes
    never share one (their keys differ), so neither a cached reply nor ``cache_hit``
    says anything about another scope's items. ``""``: one scope for everyone (a
    CLI run); the service gives each token its own."""


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem the judge points at."""

    line: int | None
    """1-based line of the candidate code; ``None`` for the function as a whole."""
    severity: Severity
    """``info``, ``warning`` or ``error``."""
    message: str
    """One sentence."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token usage the endpoint reported."""

    prompt: int
    """Prompt tokens."""
    completion: int
    """Completion tokens."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One completed HTTP exchange, as received (and as cached), redacted of the API key."""

    content: str | None
    """The message content: the JSON the judge wrote, or whatever it wrote instead."""
    model: str
    """The model the endpoint says answered."""
    system_fingerprint: str | None
    """The endpoint's backend fingerprint, when it sends one."""
    finish_reason: str | None
    """``stop``, ``length``, ``content_filter``...; ``None`` when absent."""
    refusal: str | None
    """The model's refusal message, when it refused."""
    tokens: Tokens | None
    """Usage, when reported."""
    mode: ResponseMode
    """The ``response_format`` that was sent."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for the cache."""
        tokens = None if self.tokens is None else [self.tokens.prompt, self.tokens.completion]
        return {
            "content": self.content,
            "model": self.model,
            "system_fingerprint": self.system_fingerprint,
            "finish_reason": self.finish_reason,
            "refusal": self.refusal,
            "tokens": tokens,
            "mode": self.mode,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        """Inverse of :meth:`to_json`."""
        tokens = data["tokens"]
        return cls(
            content=data["content"],
            model=data["model"],
            system_fingerprint=data["system_fingerprint"],
            finish_reason=data["finish_reason"],
            refusal=data["refusal"],
            tokens=None if tokens is None else Tokens(tokens[0], tokens[1]),
            mode=data["mode"],
        )


@dataclass(frozen=True, slots=True)
class Repeat:
    """How a judgement asked ``n`` times came out (``--judge-repeat``)."""

    verdicts: tuple[IntentVerdict | None, ...]
    """Each repeat's verdict in the order asked; ``None`` for a repeat that was not
    scored, or scored by a rubric without a verdict."""
    scored: int
    """Repeats whose reply validated."""
    agreement: float | None
    """Share of scored repeats whose verdict is the majority's; ``None`` without verdicts."""
    flipped: bool
    """The scored repeats disagree on the verdict (or tie): a passing sample is
    ``needs_review``."""
    criteria_flipped: tuple[str, ...] = ()
    """Criterion ids whose score differs between scored repeats."""

    @property
    def n(self) -> int:
        """How many times the item was asked."""
        return len(self.verdicts)

    def to_json(self) -> dict[str, Any]:
        """The row's ``judge.repeat`` field."""
        return {
            "n": self.n,
            "verdicts": list(self.verdicts),
            "scored": self.scored,
            "agreement": self.agreement,
            "flipped": self.flipped,
            "criteria_flipped": list(self.criteria_flipped),
        }

    @classmethod
    def from_json(cls, value: Any) -> Repeat:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        if type(value) is not dict:
            raise ValueError("repeat is not an object")
        verdicts = tuple(
            None if v is None else _word(v, _VERDICTS) for v in _list(value["verdicts"])
        )
        agreement = value["agreement"]
        if agreement is not None and type(agreement) not in (int, float):
            raise ValueError("repeat.agreement is not a number")
        flipped = value["flipped"]
        if type(flipped) is not bool or _int(value["n"]) != len(verdicts):
            raise ValueError("repeat.flipped is not a boolean, or n is not len(verdicts)")
        criteria = _list(value["criteria_flipped"])
        return cls(
            verdicts=verdicts,
            scored=_int(value["scored"]),
            agreement=None if agreement is None else float(agreement),
            flipped=flipped,
            criteria_flipped=tuple(_str(c) for c in criteria),
        )


@dataclass(frozen=True, slots=True)
class PanelVote:
    """One model's judgement in a panel (``--judge-model a,b,c``)."""

    model: str
    """The model asked (as configured)."""
    status: JudgeStatus
    """Its judgement's status."""
    verdict: IntentVerdict | None
    """Its verdict, when scored with one."""
    flipped: bool = False
    """Its own repeats flipped (``--judge-repeat``)."""

    def to_json(self) -> dict[str, Any]:
        """One entry of the row's ``judge.panel``."""
        return {
            "model": self.model,
            "status": self.status,
            "verdict": self.verdict,
            "flipped": self.flipped,
        }

    @classmethod
    def from_json(cls, value: Any) -> PanelVote:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        if type(value) is not dict or type(value.get("flipped")) is not bool:
            raise ValueError("a panel entry is not an object with a boolean 'flipped'")
        verdict = value["verdict"]
        return cls(
            model=_str(value["model"]),
            status=_word(value["status"], _STATUSES),
            verdict=None if verdict is None else _word(verdict, _VERDICTS),
            flipped=value["flipped"],
        )


@dataclass(frozen=True, slots=True)
class ProbeCheck:
    """The judge asked again about a rewrite of the candidate (``--judge-probes``)."""

    probe: InvarianceProbe
    """Which rewrite."""
    status: JudgeStatus
    """The rewrite's judgement status."""
    verdict: IntentVerdict | None
    """Its verdict, when scored with one."""
    flipped: bool
    """Both judgements scored with a verdict, and the verdicts differ."""

    def to_json(self) -> dict[str, Any]:
        """One entry of the row's ``judge.invariance``."""
        return {
            "probe": self.probe,
            "status": self.status,
            "verdict": self.verdict,
            "flipped": self.flipped,
        }

    @classmethod
    def from_json(cls, value: Any) -> ProbeCheck:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        if type(value) is not dict or type(value.get("flipped")) is not bool:
            raise ValueError("an invariance entry is not an object with a boolean 'flipped'")
        verdict = value["verdict"]
        return cls(
            probe=_word(value["probe"], _PROBES),
            status=_word(value["status"], _STATUSES),
            verdict=None if verdict is None else _word(verdict, _VERDICTS),
            flipped=value["flipped"],
        )


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """The judge's annotation of one candidate (the row's ``judge`` field)."""

    status: JudgeStatus
    """``scored``, ``needs_review``, ``unavailable``, ``skipped`` or ``pending``."""
    verdict: IntentVerdict | None = None
    """Intent verdict; ``None`` unless scored by a rubric that asks for one."""
    scores: dict[str, int] = field(default_factory=dict)
    """Score per criterion id; empty unless scored."""
    weighted: float | None = None
    """Weighted mean of the scores, normalised to 0.0 .. 1.0; ``None`` unless scored."""
    issues: tuple[Issue, ...] = ()
    """Problems the judge points at."""
    unmet_requirements: tuple[str, ...] = ()
    """Requirements of the specification the judge found unmet."""
    rationale: str = ""
    """The judge's short justification."""
    rubric: str = ""
    """``name@version`` of the rubric used."""
    model: str = ""
    """The model that answered (as the endpoint reports it), else the configured one."""
    system_fingerprint: str | None = None
    """The endpoint's backend fingerprint, when sent."""
    latency_ms: float = 0.0
    """Wall time of this judgement: requests and retries, or render and lookup on a cache hit
    (time queued in :meth:`judge.Judge.judge_many` not included)."""
    tokens: Tokens | None = None
    """Usage of the reply (on a cache hit: of the original reply, which cost nothing now)."""
    cache_hit: bool = False
    """The reply came from the cache."""
    attempts: int = 0
    """Requests made now (0 on a cache hit or when skipped)."""
    mode: ResponseMode | None = None
    """The ``response_format`` the reply was asked for with."""
    reason_code: ReasonCode | None = None
    """Why not ``scored``; ``None`` when scored."""
    reason: str | None = None
    """Human-readable detail for :attr:`reason_code`."""
    raw: str | None = None
    """The reply as received (redacted of the API key), kept for a human (always, when
    there was one)."""
    key: str = ""
    """The request's cache key (SHA-256); the cache keeps the full request under it."""
    repeat: Repeat | None = None
    """With ``--judge-repeat N`` (N > 1): every repeat's verdict and whether they agree;
    the result's own verdict and scores are then the majority's. ``None`` (and no
    ``repeat`` key on the row) for a single judgement."""
    invariance: tuple[ProbeCheck, ...] = ()
    """With ``--judge-probes``: the verdict on each rewrite of the candidate (no
    ``invariance`` key on the row without probes)."""
    panel: tuple[PanelVote, ...] = ()
    """With a panel (``--judge-model a,b,c``): each model's vote; the result is their
    majority, and a split sends a passing sample to ``needs_review`` (no ``panel`` key
    on the row with one model)."""

    @property
    def mismatch(self) -> bool:
        """A valid reply said the implementation does not match the specification."""
        return self.status == "scored" and self.verdict == "mismatch"

    @property
    def unscored(self) -> bool:
        """A reply came but broke protocol, repeats flipped or a panel split: a human must look."""
        return (
            self.status == "needs_review"
            or (self.repeat is not None and self.repeat.flipped)
            or self.split
        )

    @property
    def split(self) -> bool:
        """The panel's scored members disagree on the verdict, or one of them flipped."""
        verdicts = {v.verdict for v in self.panel if v.status == "scored" and v.verdict}
        return len(verdicts) > 1 or any(v.flipped for v in self.panel)

    @classmethod
    def skipped(cls, reason_code: ReasonCode, reason: str) -> JudgeResult:
        """A result for a candidate the judge was not asked about."""
        return cls(status="skipped", reason_code=reason_code, reason=reason)

    @classmethod
    def pending(cls, reason: str) -> JudgeResult:
        """A placeholder for a judgement that is still running (``reason`` says where to look)."""
        return cls(status="pending", reason=reason)

    def to_row(self) -> dict[str, Any]:
        """The results row's ``judge`` field: plain JSON."""
        tokens = None
        if self.tokens is not None:
            tokens = {"prompt": self.tokens.prompt, "completion": self.tokens.completion}
        row = {
            "status": self.status,
            "verdict": self.verdict,
            "scores": dict(self.scores),
            "weighted": self.weighted,
            "issues": [
                {"line": i.line, "severity": i.severity, "message": i.message} for i in self.issues
            ],
            "unmet_requirements": list(self.unmet_requirements),
            "rationale": self.rationale,
            "rubric": self.rubric,
            "model": self.model,
            "system_fingerprint": self.system_fingerprint,
            "latency_ms": round(self.latency_ms, 3),
            "tokens": tokens,
            "cache_hit": self.cache_hit,
            "attempts": self.attempts,
            "mode": self.mode,
            "reason_code": self.reason_code,
            "reason": self.reason,
            "raw": self.raw,
            "key": self.key,
        }
        if self.repeat is not None:  # absent for a single judgement: rows stay as they were
            row["repeat"] = self.repeat.to_json()
        if self.invariance:
            row["invariance"] = [check.to_json() for check in self.invariance]
        if self.panel:
            row["panel"] = [vote.to_json() for vote in self.panel]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> JudgeResult:
        """Inverse of :meth:`to_row`, checking every field's type and vocabulary.

        Args:
            row: A ``judge`` field as :meth:`to_row` wrote it.

        Returns:
            The result; ``from_row(r.to_row()).to_row() == r.to_row()``.

        Raises:
            ValueError: A field is missing, of the wrong type or out of vocabulary.
        """
        try:
            tokens = row["tokens"]
            if tokens is not None:
                tokens = Tokens(_int(tokens["prompt"]), _int(tokens["completion"]))
            scores = row["scores"]
            if type(scores) is not dict or not all(
                type(k) is str and type(v) is int for k, v in scores.items()
            ):
                raise ValueError("scores is not an object of integers")
            issues = tuple(
                Issue(
                    None if i["line"] is None else _int(i["line"]),
                    _word(i["severity"], _SEVERITIES),
                    _str(i["message"]),
                )
                for i in _list(row["issues"])
            )
            unmet = _list(row["unmet_requirements"])
            if not all(type(u) is str for u in unmet):
                raise ValueError("unmet_requirements is not a list of strings")
            weighted = row["weighted"]
            if weighted is not None and type(weighted) not in (int, float):
                raise ValueError("weighted is not a number")
            verdict, mode, code = row["verdict"], row["mode"], row["reason_code"]
            return cls(
                status=_word(row["status"], _STATUSES),
                verdict=None if verdict is None else _word(verdict, _VERDICTS),
                scores=dict(scores),
                weighted=weighted,
                issues=issues,
                unmet_requirements=tuple(unmet),
                rationale=_str(row["rationale"]),
                rubric=_str(row["rubric"]),
                model=_str(row["model"]),
                system_fingerprint=_opt_str(row["system_fingerprint"]),
                latency_ms=float(row["latency_ms"]),
                tokens=tokens,
                cache_hit=row["cache_hit"] is True,
                attempts=_int(row["attempts"]),
                mode=None if mode is None else _word(mode, _MODES),
                reason_code=None if code is None else _word(code, _REASON_CODES),
                reason=_opt_str(row["reason"]),
                raw=_opt_str(row["raw"]),
                key=_str(row["key"]),
                repeat=Repeat.from_json(row["repeat"]) if "repeat" in row else None,
                invariance=tuple(ProbeCheck.from_json(c) for c in _list(row.get("invariance", []))),
                panel=tuple(PanelVote.from_json(v) for v in _list(row.get("panel", []))),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a judge row: {exc!r}") from exc


_STATUSES: frozenset[str] = frozenset(get_args(JudgeStatus))
_VERDICTS: frozenset[str] = frozenset(get_args(IntentVerdict))
_SEVERITIES: frozenset[str] = frozenset(get_args(Severity))
_MODES: frozenset[str] = frozenset(get_args(ResponseMode))
_REASON_CODES: frozenset[str] = frozenset(get_args(ReasonCode))
_PROBES: frozenset[str] = frozenset(get_args(InvarianceProbe))


def _int(value: Any) -> int:
    if type(value) is not int:
        raise ValueError(f"{value!r} is not an integer")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise ValueError(f"{value!r} is not a string")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise ValueError(f"{value!r} is not a list")
    return value


def _word(value: Any, vocabulary: frozenset[str]) -> Any:
    if type(value) is not str or value not in vocabulary:
        raise ValueError(f"{value!r} is not one of {sorted(vocabulary)}")
    return value
