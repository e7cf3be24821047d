"""Task sets on the workers: shipped once per run, arguments only, found by name.

A task set is one task's hidden cases (found by task id: tasks may share an
entry point, and each keeps its own set) with everything a sandbox does not need
taken out (expected values and exceptions, tolerances, case names): the
comparison stays in the coordinating process, so expected values never leave
it. The set travels inside a :class:`TaskSetPlugin`, registered once per run
with the scheduler, which hands it to every worker that is there or joins
later (a worker restarted after a crash included); the per-sample work then
names the set, never carries it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from distributed import WorkerPlugin

from sandbox.types import HiddenCase

if TYPE_CHECKING:
    from distributed import Worker

__all__ = ["SENT_FIELDS", "TaskSetPlugin", "arguments_only", "taskset_name"]

SENT_FIELDS = frozenset(
    {"fn", "task", "args", "kwargs", "timeout_s", "args_wire", "kwargs_wire"}
    | {"kind", "stdin", "program", "test", "line"}
)
"""The fields of a :class:`~sandbox.types.HiddenCase` a worker receives (what the
sandbox job is built from); every other field goes out at its default. A field
added to ``HiddenCase`` later stays home until it is named here."""


def arguments_only(cases: Sequence[HiddenCase]) -> tuple[HiddenCase, ...]:
    """The cases as a worker may see them: what goes into the sandbox, nothing else."""
    out = []
    for case in cases:
        cleared: dict[str, Any] = {}
        for f in dataclasses.fields(case):
            if f.name in SENT_FIELDS:
                continue
            if f.default is not dataclasses.MISSING:
                cleared[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                cleared[f.name] = f.default_factory()
            else:  # a required field we do not know: refuse rather than ship it
                raise TypeError(f"HiddenCase.{f.name} has no default; name it in SENT_FIELDS")
        out.append(dataclasses.replace(case, **cleared))
    return tuple(out)


def taskset_name(run: str, sets: Mapping[str, Sequence[HiddenCase]]) -> str:
    """The plugin name of task sets of one run: its run token and a digest of their content."""
    content = sorted((tid, tuple(cases)) for tid, cases in sets.items())
    digest = hashlib.sha256(pickle.dumps(content, protocol=5)).hexdigest()[:16]
    return f"gradebox-cases-{run}-{digest}"


class TaskSetPlugin(WorkerPlugin):
    """Holds task sets on a worker for the length of a run.

    Args:
        name: :func:`taskset_name` of the sets.
        sets: Cases by task id, already :func:`arguments_only`.
    """

    idempotent = True

    def __init__(self, name: str, sets: Mapping[str, tuple[HiddenCase, ...]]) -> None:
        self.name = name
        self.sets = dict(sets)

    def setup(self, worker: Worker) -> None:
        """Nothing to start: the sets are ready once unpickled."""

    def teardown(self, worker: Worker) -> None:
        """Drop the sets when the run ends (the plugin is unregistered)."""
        self.sets = {}
