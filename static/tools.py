"""Finding the static tools' executables (one rule for every tool)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from static.findings import ToolError

__all__ = ["locate"]


def locate(name: str, override: str | None) -> str:
    """Find tool ``name``: ``override`` wins, else next to the running Python, else PATH.

    Args:
        name: The executable's name (``ruff``, ``mypy``, ``bandit``).
        override: An explicit path or name from the configuration.

    Returns:
        The executable to run.

    Raises:
        ToolError: It is not installed; the message says how to install it.
    """
    if override is not None:
        if shutil.which(override) is None:
            raise ToolError(f"{name} not found at {override!r}: fix the path or install {name}")
        return override
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise ToolError(f"{name} not found: install it (`pip install {name}`) next to gradebox")
    return found
