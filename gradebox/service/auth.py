"""Tokens (an old import path, kept for the CLI): see :mod:`gradebox.service.engine.auth`."""

from gradebox.service.engine.auth import (
    MAX_EXPIRY_S,
    ROLES,
    Principal,
    authenticate,
    create_token,
    hash_token,
)

__all__ = ["MAX_EXPIRY_S", "ROLES", "Principal", "authenticate", "create_token", "hash_token"]
