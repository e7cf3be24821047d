"""`gradebox serve` runs uvicorn on its C event loop and HTTP parser (the speed dependencies).

`serve` leaves uvicorn's ``loop`` and ``http`` at ``auto``, which picks uvloop and
httptools when they are installed and falls back to asyncio and h11 silently. The
dependencies are declared so that they are; this checks that, as `serve` builds
its server, the fast pair is what uvicorn picks (~0.3 ms of the server's CPU off
a ``GET /healthz``, ~0.7 ms off a tests-only grade: bench/service.py, same run).
"""

from __future__ import annotations

import asyncio

import uvicorn


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("never called")


def test_serve_gets_uvloop_and_httptools_from_uvicorns_defaults() -> None:
    config = uvicorn.Config(_app, log_config=None)  # serve's own call leaves both at "auto"
    assert (config.loop, config.http) == ("auto", "auto")
    config.load()
    assert config.http_protocol_class.__name__ == "HttpToolsProtocol"
    factory = config.get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert type(loop).__module__.startswith("uvloop"), type(loop)
        assert not isinstance(loop, asyncio.SelectorEventLoop)
    finally:
        loop.close()
