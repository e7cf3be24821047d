"""The service's storage layer: SQLite only, behind typed methods.

Nothing above this package writes SQL or imports :mod:`sqlite3`: the API and
the engine call :class:`Store` (its methods are the seam a PostgreSQL store
would implement) and read the frozen records of :mod:`.records`.
"""

from gradebox.service.store.feedback import FeedbackGroup, Target
from gradebox.service.store.gates import GateRecord, RepoRecord
from gradebox.service.store.protocol import GradeStore
from gradebox.service.store.records import (
    QuotaExceeded,
    RubricPin,
    RunInfo,
    RunStatus,
    StoredTask,
    TokenInfo,
    TokenRecord,
    iso_time,
)
from gradebox.service.store.sqlite import Store

__all__ = [
    "FeedbackGroup",
    "GateRecord",
    "GradeStore",
    "QuotaExceeded",
    "RepoRecord",
    "RubricPin",
    "RunInfo",
    "RunStatus",
    "Store",
    "StoredTask",
    "Target",
    "TokenInfo",
    "TokenRecord",
    "iso_time",
]
