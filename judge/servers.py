"""Which server is behind an endpoint, when it tells: ``owned_by``, headers, error shapes.

The probe asks ``GET /models`` once (its ``owned_by`` values and a few response
headers) and keeps the errors its rungs met; :func:`identify` reads those against
:data:`SIGNS`, a table of what each server family is known to send, and names the
first family that matches, with the evidence. Nothing is decided from it: the
ladder works from what the server *does*. It is there so that a person reading
``gradebox judge probe`` knows which server's documentation to open.

=====================  ==================================================================
server                 what tells
=====================  ==================================================================
llama-cpp-python       a 500 whose message quotes ``llama_cpp/server`` or pydantic's
                       ``Input should be 'text' or 'json_object'``; ``owned_by: "me"``
                       from ``server: uvicorn``
llama.cpp              ``owned_by: "llamacpp"``, or ``server: llama.cpp``
vLLM                   ``owned_by: "vllm"``
SGLang                 ``owned_by: "sglang"``
Ollama                 ``owned_by: "library"`` or ``"ollama"``
LM Studio              ``owned_by: "organization_owner"``
OpenAI                 ``owned_by`` ``"system"``/``"openai"`` with an ``openai-version`` header
=====================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["SIGNS", "TELLING_HEADERS", "ServerInfo", "identify"]

TELLING_HEADERS = ("server", "x-powered-by", "openai-version", "via")
"""Response headers kept from ``GET /models`` (lower case)."""
_LIMIT = 200
"""Characters kept of each value the server sent."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the server said about itself (bounded, redacted of the API key by the caller)."""

    owned_by: tuple[str, ...] = ()
    """The distinct ``owned_by`` values of ``GET /models``, sorted."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """The :data:`TELLING_HEADERS` it sent, lower-case names."""
    errors: tuple[str, ...] = ()
    """Error messages the probe's requests met (each cut to 300 characters)."""

    @classmethod
    def bounded(
        cls, owned_by: Sequence[str], headers: Mapping[str, str], errors: Sequence[str] = ()
    ) -> ServerInfo:
        """Build from raw values: each cut to 200 characters, at most 20 ``owned_by``."""
        kept = {k.lower(): v[:_LIMIT] for k, v in headers.items() if k.lower() in TELLING_HEADERS}
        owners = tuple(sorted({o[:_LIMIT] for o in owned_by}))[:20]
        return cls(owners, kept, tuple(errors))


@dataclass(frozen=True, slots=True)
class _Sign:
    kind: str
    says: str
    test: Callable[[ServerInfo], bool]


def _owner(*names: str) -> Callable[[ServerInfo], bool]:
    return lambda info: any(o.lower() in names for o in info.owned_by)


def _error(*words: str) -> Callable[[ServerInfo], bool]:
    return lambda info: any(w in e.lower() for e in info.errors for w in words)


def _header(name: str, word: str) -> Callable[[ServerInfo], bool]:
    return lambda info: word in info.headers.get(name, "").lower()


SIGNS: tuple[_Sign, ...] = (
    _Sign(
        "llama-cpp-python",
        "an error quoting llama_cpp.server or its response_format validation",
        _error("llama_cpp/server", "llama_cpp.server", "input should be 'text' or 'json_object'"),
    ),
    _Sign(
        "llama-cpp-python",
        'models owned_by "me" from a uvicorn server',
        lambda i: _owner("me")(i) and _header("server", "uvicorn")(i),
    ),
    _Sign("llama.cpp", 'models owned_by "llamacpp"', _owner("llamacpp")),
    _Sign("llama.cpp", "server header llama.cpp", _header("server", "llama.cpp")),
    _Sign("vLLM", 'models owned_by "vllm"', _owner("vllm")),
    _Sign("SGLang", 'models owned_by "sglang"', _owner("sglang")),
    _Sign("Ollama", 'models owned_by "library" or "ollama"', _owner("library", "ollama")),
    _Sign("LM Studio", 'models owned_by "organization_owner"', _owner("organization_owner")),
    _Sign(
        "OpenAI",
        'models owned_by "system" or "openai" with an openai-version header',
        lambda i: _owner("system", "openai")(i) and "openai-version" in i.headers,
    ),
)
"""What each server family is known to send, most specific first."""


def identify(info: ServerInfo) -> tuple[str, str] | None:
    """The server family ``info`` points at, and what told.

    Args:
        info: What the server said about itself.

    Returns:
        ``(kind, evidence)``, or ``None`` when nothing in :data:`SIGNS` matches.
    """
    return next(((s.kind, s.says) for s in SIGNS if s.test(info)), None)
