"""ASGI middleware of the app: request metrics (request ids are :mod:`gradebox.service.logs`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from gradebox.service.engine.metrics import Metrics

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RequestMetrics"]


class RequestMetrics:
    """ASGI middleware: counts each HTTP request by route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        """Wrap ``app``."""
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request; count it once answered (500 when the app raised)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        t0 = time.perf_counter()
        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None)
            self.metrics.request(
                scope["method"],
                route if isinstance(route, str) else "unmatched",
                status,
                time.perf_counter() - t0,
            )
