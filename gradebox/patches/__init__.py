"""The patch gate: grade a patch to a repository (``gradebox gate``; SWE-bench-compatible).

Example:
    >>> from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
    >>> spec = GateSpec("fix-1", Path("repo"), "main", patch_text,
    ...                 TestIds(("tests/test_ops.py::test_mean",), "auto"))  # doctest: +SKIP
    >>> run_gate(spec, GateConfig()).to_row()["verdict"]  # doctest: +SKIP
    'pass'
"""

from gradebox.patches.gate import GateConfig, run_gate
from gradebox.patches.model import GateRow, GateSpec, TestIds

__all__ = ["GateConfig", "GateRow", "GateSpec", "TestIds", "run_gate"]
