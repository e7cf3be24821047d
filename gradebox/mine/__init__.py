"""Held-out task sets from a repository's own history (``gradebox mine``).

A commit that fixes code and its tests together is a task: its parent is the
base, its change outside the tests is the gold patch, its change to the tests
is the hidden test patch, and the tests that fail before and pass after
(found by running them in the sandbox, several times) are FAIL_TO_PASS.
Instances are written in SWE-bench's format, so ``gradebox gate --swebench``
grades a model's patches against them.

Example:
    >>> from gradebox.mine import Miner, MineConfig
    >>> config = MineConfig(Path("repo"), "acme/repo", rev_range="v1.0..main")
    >>> miner = Miner(config)  # doctest: +SKIP
    >>> kept = [o.instance for o in miner.run(miner.commits()) if o.kept]  # doctest: +SKIP
"""

from gradebox.mine.engine import Miner
from gradebox.mine.model import (
    DROP_REASONS,
    Commit,
    DropReason,
    EnvSetup,
    GateCheck,
    Instance,
    MineConfig,
    Outcome,
    Validation,
)
from gradebox.mine.report import report, summary_line

__all__ = [
    "DROP_REASONS",
    "Commit",
    "DropReason",
    "EnvSetup",
    "GateCheck",
    "Instance",
    "MineConfig",
    "Miner",
    "Outcome",
    "Validation",
    "report",
    "summary_line",
]
