"""Keep the judge's API key out of everything the endpoint sends back.

An endpoint's text is not ours: real proxies quote the key they were sent
("Incorrect API key provided: sk-..."), in an error body, a header, even the
status line, and a model can be made to repeat it in its reply. So every piece
of endpoint-derived text is redacted of the configured key *before* it is
stored or shown anywhere: by :class:`judge.endpoint.Endpoint` as each reply or
error arrives (reply content, refusal, model, fingerprint; the mapped error,
its parameter and its chained openai exception), by :class:`judge.Judge` again
on whatever it reads back from its cache (entries an older version may have
written), and by :class:`RedactingFilter` on the HTTP stack's own log records
(openai's, httpx's and httpcore's loggers print response headers and status
lines at ``DEBUG`` and ``INFO``).

What counts as the key:

- a key of :data:`MIN_RUN` (8) characters or more: **any run of 8 or more
  consecutive characters of it**, compared case-insensitively in ASCII. The
  whole key, a prefix such as OpenAI's masked ``sk-proj-****...abcd`` prints
  (its first 8 characters), a middle part, a tail: each becomes
  :data:`REDACTED`. A masked form that shows at most 7 characters of the key in
  a row (``sk-...abcd``) is left as it is: it identifies a key, it does not
  give one away;
- a shorter key (local servers' placeholders, ``EMPTY``, ``ollama``): only its
  whole, exact occurrences.

Not caught: the key encoded (base64, hex, percent-encoding) or interleaved with
other characters. An endpoint that goes to such lengths is hostile, not
careless; the key must then be revoked, and the redaction is no substitute for
that. ``openai``'s exception keeps the raw HTTP response as ``response``: its
text attributes are redacted, the response object is not (nothing here prints
or stores it).
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from judge.types import Reply

__all__ = ["HTTP_LOGGERS", "MIN_RUN", "REDACTED", "RedactingFilter", "Redactor"]

REDACTED = "[REDACTED]"
"""What a run of the key is replaced with."""
MIN_RUN = 8
"""The shortest run of a key's characters that counts as the key."""
HTTP_LOGGERS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2")
"""Logger namespaces of the HTTP stack under the openai client (whose records can hold
response headers and status lines)."""
_CORE_PARTS = ("connection", "http11", "http2", "proxy", "socks")
_KNOWN_LOGGERS = (
    "openai._base_client",
    "openai._response",
    "openai._legacy_response",
    "httpx",
    "httpx2",
    *(f"httpcore.{part}" for part in _CORE_PARTS),
    *(f"httpcore2.{part}" for part in _CORE_PARTS),
)
"""Loggers that exist once those libraries are imported (named here so that a filter is
attached even to one created later)."""
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_EXCEPTION_TEXT = ("message", "body", "param", "code", "type")
"""Text attributes of openai's exceptions (and ``param`` of ours) that quote the endpoint."""


class Redactor:
    """Replaces the configured key, whole or in runs of :data:`MIN_RUN`, by :data:`REDACTED`.

    Example:
        >>> r = Redactor(["sk-test-0123456789abcdef"])
        >>> r.text("Incorrect API key provided: sk-test-0123456789abcdef.")
        'Incorrect API key provided: [REDACTED].'
        >>> r.text("key sk-test-****cdef, part 23456789ab")
        'key [REDACTED]****cdef, part [REDACTED]'
    """

    def __init__(self, secrets: Iterable[str | None]) -> None:
        """Redact every non-empty string of ``secrets`` (``None`` and ``""`` are skipped)."""
        self._long: list[frozenset[str]] = []
        self._short: list[str] = []
        for secret in dict.fromkeys(s for s in secrets if s):
            if len(secret) >= MIN_RUN:
                low = secret.translate(_ASCII_LOWER)
                self._long.append(
                    frozenset(low[i : i + MIN_RUN] for i in range(len(low) - MIN_RUN + 1))
                )
            else:
                self._short.append(secret)

    def __bool__(self) -> bool:
        """Whether there is anything to redact."""
        return bool(self._long or self._short)

    def text(self, text: str) -> str:
        """``text`` with every run of the key replaced by :data:`REDACTED`."""
        for secret in self._short:
            text = text.replace(secret, REDACTED)
        for grams in self._long:
            text = _cut(text, grams)
        return text

    def optional(self, text: str | None) -> str | None:
        """:meth:`text`, passing ``None`` through."""
        return None if text is None else self.text(text)

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string in it (keys included) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value

    def reply(self, reply: Reply) -> Reply:
        """``reply`` with its endpoint-written text fields redacted."""
        if not self:
            return reply
        return replace(
            reply,
            content=self.optional(reply.content),
            model=self.text(reply.model),
            system_fingerprint=self.optional(reply.system_fingerprint),
            finish_reason=self.optional(reply.finish_reason),
            refusal=self.optional(reply.refusal),
        )

    def exception(self, exc: BaseException) -> None:
        """Redact ``exc`` in place, and every exception chained to it.

        Its ``args`` and the text attributes openai's exceptions carry
        (``message``, ``body``, ``param``, ``code``, ``type``), so that neither
        ``str(exc)`` nor a logged traceback can show the key.
        """
        if not self:
            return
        seen: set[int] = set()
        current: BaseException | None = exc
        pending: list[BaseException] = []
        while current is not None or pending:
            if current is None:
                current = pending.pop()
            if id(current) in seen:
                current = None
                continue
            seen.add(id(current))
            current.args = tuple(self.value(a) for a in current.args)
            for name in _EXCEPTION_TEXT:
                found = getattr(current, name, None)
                if isinstance(found, str | dict | list):
                    # a read-only property is not ours to change (str(exc) reads args)
                    with contextlib.suppress(AttributeError):
                        setattr(current, name, self.value(found))
            if current.__context__ is not None:
                pending.append(current.__context__)
            current = current.__cause__


def _cut(text: str, grams: frozenset[str]) -> str:
    """``text`` with every place an 8-character run of the key starts covered (merged)."""
    if len(text) < MIN_RUN:
        return text
    low = text.translate(_ASCII_LOWER)  # same length as ``text``: positions line up
    hits: list[int] = []
    for gram in grams:
        at = low.find(gram)
        while at >= 0:
            hits.append(at)
            at = low.find(gram, at + 1)
    if not hits:
        return text
    hits.sort()
    out: list[str] = []
    done = 0
    start, end = hits[0], hits[0] + MIN_RUN
    for at in hits[1:]:
        if at <= end:
            end = max(end, at + MIN_RUN)
            continue
        out += [text[done:start], REDACTED]
        done, start, end = end, at, at + MIN_RUN
    out += [text[done:start], REDACTED, text[end:]]
    return "".join(out)


class RedactingFilter(logging.Filter):
    """A logger filter that redacts each record's message, traceback and stack.

    Attached by :class:`judge.Judge` (through :meth:`attach`) to the HTTP stack's
    loggers while it holds a key, and detached when it closes. A filter on a
    logger sees the records made on that logger, before any handler: so the
    redacted record is what every handler, at every level, receives.
    """

    def __init__(self, redactor: Redactor) -> None:
        """Redact with ``redactor``."""
        super().__init__()
        self._redactor = redactor
        self._loggers: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; always keep it."""
        redact = self._redactor.text
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            text = "".join(traceback.format_exception(record.exc_info[1])).rstrip("\n")
            if redact(text) != text:  # else keep exc_info for handlers that want the object
                record.exc_info, record.exc_text = None, redact(text)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True

    def attach(self) -> None:
        """Filter every logger of :data:`HTTP_LOGGERS` that exists, and the known ones."""
        names = set(_KNOWN_LOGGERS)
        for name in list(logging.root.manager.loggerDict):
            if name.split(".", 1)[0] in HTTP_LOGGERS:
                names.add(name)
        for name in sorted(names):
            logger = logging.getLogger(name)
            logger.addFilter(self)
            self._loggers.append(logger)

    def detach(self) -> None:
        """Remove the filter from every logger it was attached to."""
        for logger in self._loggers:
            logger.removeFilter(self)
        self._loggers.clear()
