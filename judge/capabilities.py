"""What an endpoint can do: the capability ladder and its records.

"OpenAI-compatible" servers differ exactly where the judge depends on them, so
the judge asks before it judges (:meth:`judge.Judge.probe`), with one fixed
probe item that no candidate can influence, and keeps the first rung of
:data:`LADDER` whose reply *validates* against the reply schema (not the first
that answers 200):

1. ``json_schema``: a strict ``json_schema`` response format;
2. ``json_schema_nonstrict``: the same without ``strict`` (servers that refuse it);
3. ``json_object_schema``: ``{"type": "json_object", "schema": ...}``, the form
   llama-cpp-python turns into a grammar (it refuses ``json_schema`` outright);
4. ``json_object``: JSON mode;
5. ``prompt_only``: no response format; the schema in the prompt only.

The schema is stated in the prompt on every rung. A refusal is read from what the
server says, not from its status: a 4xx, 500 or 501 whose body says the
``response_format`` type (or another parameter) is not accepted is a capability
answer -- the rung is ``rejected`` and the probe moves on -- not an outage
(:func:`judge.endpoint.map_openai_error`). On the way, two refusals are
recognised from the error and worked around: a model that refuses
``temperature: 0`` is asked with the server's default temperature (the judge is
then *not deterministic*, and repeats with a majority unless told otherwise), and
a server that refuses ``max_tokens`` (or ``max_completion_tokens``) gets the other
name. What each endpoint family does (the probe's tests imitate each):

=========================  ===============================================  ======================
endpoint                   quirk                                            rung / policy
=========================  ===============================================  ======================
OpenAI, vLLM, SGLang       strict ``json_schema`` honoured                  ``json_schema``
llama.cpp ``llama-server``  a schema it cannot turn into a grammar: 200       the next rung that
                           with free text                                   validates
llama-cpp-python           HTTP 500 for ``json_schema`` (``Input should be   ``json_object_schema``
                           'text' or 'json_object'``); grammar from
                           ``json_object`` + ``schema``
LM Studio                  400 for ``response_format: json_object``          ``json_schema``
OpenAI reasoning models    400 for ``temperature`` other than the default,   ``server_default``
                           400 for ``max_tokens``                           + repeats
Ollama                     does not put the schema into the prompt           schema in prompt
=========================  ===============================================  ======================

The probe also names the server when it tells (:mod:`judge.servers`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from judge.errors import EndpointError, ParameterUnsupported
from judge.types import ResponseMode, TemperaturePolicy, TokenParam

__all__ = [
    "LADDER",
    "Capabilities",
    "ProbeReport",
    "RungTrial",
    "TrialOutcome",
    "adjusted",
    "next_rung",
]

LADDER: tuple[ResponseMode, ...] = get_args(ResponseMode)
"""The rungs, best first."""
TrialOutcome = Literal["validated", "invalid", "rejected"]
"""A rung's probe reply validated, came but did not validate, or the request was refused."""
_QUOTED = re.compile(r"['\"`]([a-z_]+)['\"`]")
_BARE = re.compile(r"\b(temperature|max_completion_tokens|max_tokens)\b")


@dataclass(frozen=True, slots=True)
class Capabilities:
    """How to ask one endpoint and model."""

    rung: ResponseMode = "json_schema"
    """The response format asked for."""
    temperature: TemperaturePolicy = "zero"
    """Whether ``temperature: 0`` is sent."""
    token_param: TokenParam = "max_tokens"  # noqa: S105 - a parameter name, not a secret
    """Under which name the output-token cap is sent (when one is configured)."""

    @property
    def deterministic(self) -> bool:
        """Asked at temperature 0 (as repeatable as the endpoint allows)."""
        return self.temperature == "zero"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (manifest, probe cache, ``judge probe --json``)."""
        return {
            "rung": self.rung,
            "temperature": self.temperature,
            "token_param": self.token_param,
            "deterministic": self.deterministic,
        }

    @classmethod
    def from_json(cls, value: Any) -> Capabilities:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        try:
            rung, temperature, tokens = value["rung"], value["temperature"], value["token_param"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not capabilities: {exc!r}") from exc
        if rung not in LADDER or temperature not in get_args(TemperaturePolicy):
            raise ValueError(f"unknown rung {rung!r} or temperature policy {temperature!r}")
        if tokens not in get_args(TokenParam):
            raise ValueError(f"unknown token parameter {tokens!r}")
        return cls(rung, temperature, tokens)


@dataclass(frozen=True, slots=True)
class RungTrial:
    """One rung as the probe tried it."""

    rung: ResponseMode
    """The rung."""
    outcome: TrialOutcome
    """``validated``, ``invalid`` or ``rejected``."""
    detail: str
    """Why (the violation or the server's error), cut to 300 characters."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON."""
        return {"rung": self.rung, "outcome": self.outcome, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """What probing one endpoint and model found."""

    base_url: str
    """The endpoint."""
    model: str
    """The model asked."""
    capabilities: Capabilities
    """What the judge uses from now on."""
    trials: tuple[RungTrial, ...]
    """Each rung tried, in order (empty when the capabilities were pinned)."""
    adjustments: tuple[str, ...]
    """Refusals worked around, in words (``temperature 0 refused: ...``)."""
    system_fingerprints: tuple[str, ...]
    """Backend fingerprints the probe's replies carried."""
    probed_at: float
    """When the probe ran (seconds since the epoch)."""
    cached: bool = False
    """Read from the probe cache, not asked now."""
    server: str | None = None
    """The server's kind when it told (``llama-cpp-python``, ``vLLM``...: :mod:`judge.servers`)."""
    server_evidence: str = ""
    """What told (``models owned_by "vllm"``); empty when nothing did."""

    @property
    def validated(self) -> bool:
        """Some rung's reply validated."""
        return any(t.outcome == "validated" for t in self.trials)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (manifest, probe cache, ``judge probe --json``)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "capabilities": self.capabilities.to_json(),
            "validated": self.validated,
            "trials": [t.to_json() for t in self.trials],
            "adjustments": list(self.adjustments),
            "system_fingerprints": list(self.system_fingerprints),
            "probed_at": self.probed_at,
            "cached": self.cached,
            "server": self.server,
            "server_evidence": self.server_evidence,
        }

    @classmethod
    def from_json(cls, value: Any) -> ProbeReport:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        try:
            trials = tuple(
                RungTrial(_one_of(t["rung"], LADDER), _one_of(t["outcome"], _OUTCOMES), t["detail"])
                for t in value["trials"]
            )
            report = cls(
                base_url=value["base_url"],
                model=value["model"],
                capabilities=Capabilities.from_json(value["capabilities"]),
                trials=trials,
                adjustments=tuple(value["adjustments"]),
                system_fingerprints=tuple(value["system_fingerprints"]),
                probed_at=float(value["probed_at"]),
                cached=value["cached"] is True,
                server=value.get("server"),
                server_evidence=value.get("server_evidence", ""),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a probe report: {exc!r}") from exc
        texts = [report.base_url, report.model, *report.adjustments, *report.system_fingerprints]
        texts += [report.server_evidence, *([report.server] if report.server is not None else [])]
        if not all(type(t) is str for t in [*texts, *(t.detail for t in trials)]):
            raise ValueError("a probe report's text field is not a string")
        return report


_OUTCOMES: tuple[str, ...] = get_args(TrialOutcome)


def _one_of(value: Any, vocabulary: tuple[str, ...]) -> Any:
    if value not in vocabulary:
        raise ValueError(f"{value!r} is not one of {vocabulary}")
    return value


def next_rung(rung: ResponseMode) -> ResponseMode | None:
    """The rung below ``rung``, or ``None`` at the bottom."""
    at = LADDER.index(rung)
    return LADDER[at + 1] if at + 1 < len(LADDER) else None


def adjusted(
    exc: EndpointError, caps: Capabilities, *, token_cap: bool
) -> tuple[Capabilities, str] | None:
    """The capabilities that work around a refused parameter, or ``None``.

    Only a 400, or an error whose body said the parameter is not accepted
    (:class:`~judge.errors.ParameterUnsupported`, any status), counts, and only a
    parameter the error names: OpenAI's ``error.param`` when the server sends one,
    else the first of our parameter names quoted in its message (``'temperature'
    does not support 0``).

    Args:
        exc: The refusal.
        caps: What was sent.
        token_cap: Whether an output-token cap was sent at all.

    Returns:
        The new capabilities and a sentence saying what changed, or ``None``
        when the refusal is about something else.
    """
    if exc.status_code != 400 and not isinstance(exc, ParameterUnsupported):
        return None
    named = _named_parameter(exc)
    if named == "temperature" and caps.temperature == "zero":
        return (
            replace(caps, temperature="server_default"),
            f"temperature 0 refused ({_short(str(exc))}): asking at the server's default "
            "temperature; the judge is not deterministic",
        )
    if token_cap and named == caps.token_param:
        other: TokenParam = "max_completion_tokens" if named == "max_tokens" else "max_tokens"
        return replace(caps, token_param=other), f"{named} refused: sending {other} instead"
    return None


def _named_parameter(exc: EndpointError) -> str | None:
    ours = ("temperature", "max_tokens", "max_completion_tokens")
    if exc.param in ours:
        return exc.param
    if exc.param is not None:  # the server named another parameter: not one we adapt
        return None
    text = str(exc)
    quoted = next((m for m in _QUOTED.findall(text) if m in ours), None)
    if quoted is not None:
        return str(quoted)
    bare = _BARE.search(text)
    return bare.group(1) if bare else None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
