"""Durable state in one SQLite file (WAL): tokens, tasks, runs and per-sample results.

Each sample of a run is one row of ``samples`` keyed by ``(run_id, idx)``; its
result is a column of that row, written once (``... WHERE row IS NULL``) and
committed as soon as the sample is graded. So a run killed at any moment keeps
every finished result, a resumed run grades only the samples without a result,
and no sample can ever have two results.

Hidden cases are stored here and read only by the grader (:meth:`Store.task`);
nothing that serves a client reads that column.

Two connections, each behind its own lock: one writes (``synchronous=FULL``:
a committed result survives a power cut, at the price of an fsync per commit,
~5 ms here), one reads. Reads (a token on every request, a task's revision on
every grade) so never wait behind another thread's fsync; WAL lets them see
every committed write. Rows of synchronous grades, which their client already
holds, and feedback commit with ``synchronous=NORMAL`` (``_write_fast``):
they survive a crash of the process, and a power cut may lose the last of them.
"""

from __future__ import annotations

from gradebox.service.store.feedback import FeedbackTable
from gradebox.service.store.gates import GateTable
from gradebox.service.store.grades import GradeTable
from gradebox.service.store.rubrics import RubricTable
from gradebox.service.store.runs import RunTable
from gradebox.service.store.tasks import TaskTable
from gradebox.service.store.tokens import TokenTable

__all__ = ["Store"]


class Store(TokenTable, TaskTable, RunTable, GradeTable, RubricTable, FeedbackTable, GateTable):
    """The service's SQLite database: every table's methods over one pair of connections."""
