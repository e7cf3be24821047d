"""``samples.jsonl`` as the sampler writes it: one row per completion, durable as it lands.

Each row is written with one ``write`` and ``fsync``-ed before the next, so a
run killed at any moment keeps every completion that finished. A line the kill
cut short (no newline at the end of the file) is cut off when the file is opened
again, and its sample is asked again. Rows are in completion order; ``gradebox
grade`` does not care about order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from gradebox.errors import BadInput

__all__ = ["SampleStore"]


class SampleStore:
    """The output file: which sample ids it has, and appending rows durably."""

    def __init__(self, path: Path) -> None:
        """Open ``path`` (created when missing), drop a torn last line, read the ids.

        Raises:
            BadInput: A complete line is not a JSON object with a string ``id``
                (the file is not one this command wrote): ``file:line: what``.
        """
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.ids = self._read_ids()
        except BaseException:
            os.close(self._fd)
            raise

    def _read_ids(self) -> set[str]:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a line a kill cut short: its sample is asked again
            os.ftruncate(self._fd, end)
            os.fsync(self._fd)
        ids: set[str] = set()
        problems: list[str] = []
        for number, line in enumerate(data[:end].splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                problems.append(f"{self.path}:{number}: not JSON: {exc}")
                continue
            if type(row) is not dict or type(row.get("id")) is not str:
                problems.append(f"{self.path}:{number}: not a sample (no string 'id')")
                continue
            ids.add(row["id"])
        if problems:
            raise BadInput(problems)
        return ids

    def append(self, row: dict[str, Any]) -> None:
        """Write one row and make it durable before returning."""
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)
        self.ids.add(str(row["id"]))

    def close(self) -> None:
        """Close the file."""
        os.close(self._fd)

    def __enter__(self) -> SampleStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
