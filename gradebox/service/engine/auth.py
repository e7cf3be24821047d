"""Bearer tokens: creation, hashing, and checking in constant time.

A token reads ``gbx_<id>_<secret>``: ``id`` (16 hex digits) finds the stored
record, and the SHA-256 of the whole token is compared with
:func:`hmac.compare_digest`. Only the hash is stored; the token is shown once,
when it is created. An unknown id is compared against a dummy hash so that a
miss costs the same as a wrong secret.

A token may expire (``expires``, Unix time) and may be scoped to some tasks
(``tasks``); an expired, revoked or unknown token is the same 401, checked on
every request against the database, so a change takes effect at the next one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gradebox.service.store import Store

__all__ = ["MAX_EXPIRY_S", "ROLES", "Principal", "authenticate", "create_token", "hash_token"]

ROLES = ("admin", "grader")
"""``admin`` registers tasks and reads everything; ``grader`` grades and reads its own runs."""

MAX_EXPIRY_S = 10 * 365 * 86400
"""Longest a token may be made to last (ten years)."""
_TOKEN = re.compile(r"gbx_([0-9a-f]{16})_[A-Za-z0-9_-]{43}")
_DUMMY_HASH = hashlib.sha256(b"gradebox: no such token").hexdigest()


@dataclass(frozen=True, slots=True)
class Principal:
    """Who made a request."""

    token_id: str
    """The token's public id (owner of the runs it submits)."""
    role: Literal["admin", "grader"]
    """What it may do."""
    tasks: frozenset[str] | None = None
    """The tasks it may grade; ``None``: every task."""

    @property
    def is_admin(self) -> bool:
        """Admins may do and read everything."""
        return self.role == "admin"

    def may_use(self, task: str) -> bool:
        """Whether this token may grade task ``task`` (by id; one it may not use looks unknown)."""
        return self.tasks is None or task in self.tasks


def hash_token(token: str) -> str:
    """SHA-256 of a token, hex (tokens carry 256 bits of entropy: no salt needed)."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def create_token(
    store: Store,
    role: str,
    *,
    expires: float | None = None,
    tasks: Iterable[str] | None = None,
) -> str:
    """Create, store (hashed) and return a new token; the caller shows it once.

    Args:
        store: The database.
        role: ``admin`` or ``grader``.
        expires: When the token stops working (Unix time); ``None``: never.
        tasks: The only tasks it may grade; ``None``: every task.

    Raises:
        ValueError: ``role`` is not one of :data:`ROLES`.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    token_id = secrets.token_hex(8)
    token = f"gbx_{token_id}_{secrets.token_urlsafe(32)}"
    scope = None if tasks is None else frozenset(tasks)
    store.add_token(token_id, role, hash_token(token), expires=expires, tasks=scope)
    return token


def authenticate(store: Store, authorization: str | None) -> Principal | None:
    """The principal of an ``Authorization: Bearer ...`` header, or ``None``."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    match = _TOKEN.fullmatch(token) if scheme.lower() == "bearer" else None
    record = store.token(match.group(1)) if match else None
    expected = record.hash if record else _DUMMY_HASH
    given = hash_token(token) if token.isascii() else ""
    if not hmac.compare_digest(given, expected) or record is None:
        return None
    if record.expires is not None and record.expires <= time.time():
        return None  # expired: the same 401 as an unknown token
    return Principal(record.id, record.role, record.tasks)
