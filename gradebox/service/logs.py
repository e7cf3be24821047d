"""Structured logs: one JSON object a line, each carrying the request id it belongs to.

Every HTTP request gets an id: the client's ``X-Request-ID`` when it is 1 to 64
characters of ``[A-Za-z0-9._-]`` (so a caller can follow its own request
through), else a fresh random one. The id goes back in the response's
``X-Request-ID`` header and into every log line written while the request is
served (:data:`REQUEST_ID`, a context variable; the synchronous grading threads
run in a copy of the request's context). Each request also writes one line,
``"request"``, with method, route template (never the path sent), status and
duration.

Lines are made by ``python-json-logger``: ``{"time", "level", "logger",
"message", "request_id", ...extra}``. What the service logs never includes a
hidden value, an expected value, a token or the judge's key: messages name tasks,
runs and counts only, infrastructure causes are cut to 500 printable characters
(:mod:`.rows`), and the canary tests read every line at ``debug`` level.
"""

from __future__ import annotations

import logging
import re
import secrets
import sys
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "REQUEST_ID",
    "LogFormat",
    "RequestIdFilter",
    "RequestIds",
    "json_formatter",
    "setup_logging",
]

REQUEST_ID: ContextVar[str | None] = ContextVar("gradebox_request_id", default=None)
"""The id of the request being served (``None`` outside one: the run worker, start-up)."""
LogFormat = Literal["json", "text"]
"""``json``: one object a line (the default of ``gradebox serve``); ``text``: for a terminal."""

_CLIENT_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_HEADER = b"x-request-id"
_log = logging.getLogger("gradebox.service.http")


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to every record (``None`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always keep the record (without uvicorn's terminal-coloured copy of the message)."""
        record.request_id = REQUEST_ID.get()
        record.__dict__.pop("color_message", None)
        return True


def json_formatter() -> logging.Formatter:
    """The service's JSON line format."""
    return JsonFormatter(
        "{asctime}{levelname}{name}{message}{request_id}",
        style="{",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%S%z",
    )


def setup_logging(level: str, fmt: LogFormat = "json", stream: TextIO | None = None) -> None:
    """Send every logger (uvicorn's too) to ``stream`` (stderr) in ``fmt`` at ``level``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(json_formatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(levelname)s %(name)s [%(request_id)s]: %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


class RequestIds:
    """ASGI middleware: a request id per request, in the response and in every log line."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with :data:`REQUEST_ID` set; log one line once answered."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        token = REQUEST_ID.set(request_id)
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [h for h in message.get("headers", []) if h[0].lower() != _HEADER]
                message["headers"] = [*headers, (_HEADER, request_id.encode("ascii"))]
            await send(message)

        t0 = time.perf_counter()
        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None)
            _log.info(
                "request",
                extra={
                    "method": str(scope.get("method", ""))[:10],
                    "route": route if isinstance(route, str) else "unmatched",
                    "status": status,
                    "ms": round((time.perf_counter() - t0) * 1000, 1),
                },
            )
            REQUEST_ID.reset(token)


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name.lower() == _HEADER:
            text = bytes(value).decode("latin-1")
            if _CLIENT_ID.fullmatch(text):
                return text
            break
    return secrets.token_hex(8)
