"""A canary API key and an endpoint that echoes it everywhere a real proxy might.

Real proxies quote the key they were sent: in error bodies, response headers and
even the status line. :class:`EchoServer` is the scripted OpenAI-compatible
server (``openai_server``) that also puts the key in the status line and two
headers of every reply; :class:`Canary` finds any 8-character run of the key
(``judge.redact``'s rule) in text.
"""

from __future__ import annotations

from typing import Any

from openai_server import ScriptedServer

SHORTEST = 8
"""Any run of this many characters of the key counts as the key (``judge.redact``)."""


class Canary:
    """A key and the forms proxies print it in."""

    def __init__(self, key: str, partial: slice) -> None:
        """``key`` and the slice of it a proxy prints as a middle part."""
        self.key = key
        self.masked = key[:8] + "*" * 20 + key[-4:]  # OpenAI's mask: the 8 are a leak too
        self.partial = key[partial] + "..."
        self.grams = {key[i : i + SHORTEST].lower() for i in range(len(key) - SHORTEST + 1)}

    def leaks(self, text: str | bytes) -> list[str]:
        """Every 8-character run of the key found in ``text`` (case-insensitive)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        low = text.lower()
        return sorted(g for g in self.grams if g in low)


class EchoServer(ScriptedServer):
    """The scripted server, with the key in the status line and headers of every reply."""

    def __init__(self, canary: Canary) -> None:
        """Serve scripted replies, echoing ``canary`` in every one."""
        self.canary = canary  # before the base class builds its handler
        super().__init__()

    def _handler(self) -> Any:
        base = super()._handler()
        canary = self.canary

        class Handler(base):  # type: ignore[misc, valid-type]
            def send_response(self, code: int, message: str | None = None) -> None:
                super().send_response(code, f"Denied for {canary.key}")
                self.send_header("X-Request-ID", canary.key)
                self.send_header("X-Upstream-Auth", f"Bearer {canary.masked} ({canary.partial})")

        return Handler
