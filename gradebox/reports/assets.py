"""The HTML report's inline style and script (hashed into its Content-Security-Policy).

They are package data (``assets/report.css``, ``assets/report.js``), read once.
"""

from __future__ import annotations

from importlib.resources import files

__all__ = ["CSS", "JS"]

_HERE = files(__package__ or "gradebox.reports") / "assets"

CSS = (_HERE / "report.css").read_text(encoding="utf-8")
"""The report's style sheet."""
JS = (_HERE / "report.js").read_text(encoding="utf-8")
"""The report's script: filters and sorting, no network."""
