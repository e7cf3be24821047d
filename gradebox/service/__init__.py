"""``gradebox serve``: the grading service (HTTP API, durable runs, tokens).

Build the app with :func:`create_app` and run it with any ASGI server
(``gradebox serve`` uses uvicorn). State lives in one SQLite file
(:class:`Store`); tokens are created with :func:`create_token`.
"""

from gradebox.service.app import create_app
from gradebox.service.config import ServiceConfig
from gradebox.service.engine.auth import Principal, authenticate, create_token
from gradebox.service.store import Store

__all__ = ["Principal", "ServiceConfig", "Store", "authenticate", "create_app", "create_token"]
