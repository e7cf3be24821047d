"""Rubrics stored as data: the text of a rubric file by name, with its revision."""

from __future__ import annotations

import time

from gradebox.service.store.db import Database

__all__ = ["RubricTable"]


class RubricTable(Database):
    """Stored rubrics (built-in ones are files, never rows)."""

    def rubric(self, name: str) -> tuple[str, int, float] | None:
        """A stored rubric's ``(text, revision, updated)``, or ``None``."""
        row = self._one("SELECT toml, revision, updated FROM rubrics WHERE name = ?", (name,))
        return None if row is None else (str(row[0]), int(row[1]), float(row[2]))

    def put_rubric(self, name: str, text: str, revision: int) -> None:
        """Store ``text`` as revision ``revision`` of rubric ``name`` (the caller counts)."""
        self._write(
            "INSERT OR REPLACE INTO rubrics (name, toml, revision, updated) VALUES (?, ?, ?, ?)",
            (name, text, revision, time.time()),
        )
