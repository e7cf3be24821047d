"""The SQL of :class:`~gradebox.service.store.Store`: its schema, migrations and shared statements.

Kept apart from the store's methods so that the tables can be read in one place.
"""

from __future__ import annotations

__all__ = [
    "BACKFILL_REVISIONS",
    "MIGRATIONS",
    "ORPHANED",
    "PENDING",
    "PRUNE_REVISIONS",
    "PRUNE_SNAPSHOTS",
    "RENAMES",
    "SCHEMA",
    "UNFINISHED",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    role TEXT NOT NULL CHECK (role IN ('admin', 'grader')),
    hash TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL,
    tasks TEXT
);
CREATE TABLE IF NOT EXISTS tasks (
    task TEXT PRIMARY KEY,
    public TEXT NOT NULL,
    hidden TEXT NOT NULL,
    limits TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated REAL NOT NULL,
    disclosure TEXT NOT NULL DEFAULT 'counts',
    static TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'cancelled')),
    created REAL NOT NULL,
    finished REAL,
    total INTEGER NOT NULL,
    options TEXT NOT NULL DEFAULT '{}',
    reason TEXT
);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT NOT NULL REFERENCES runs (id),
    idx INTEGER NOT NULL,
    sample TEXT NOT NULL,
    row TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS grades (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created REAL NOT NULL,
    row TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_owner ON runs (status, owner, created);
CREATE TABLE IF NOT EXISTS task_revisions (
    task TEXT NOT NULL,
    revision INTEGER NOT NULL,
    public TEXT NOT NULL,
    hidden TEXT NOT NULL,
    limits TEXT NOT NULL,
    disclosure TEXT NOT NULL,
    static TEXT NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (task, revision)
);
CREATE TABLE IF NOT EXISTS run_tasks (
    run_id TEXT NOT NULL REFERENCES runs (id),
    task TEXT NOT NULL,
    revision INTEGER NOT NULL,
    PRIMARY KEY (run_id, task)
);
CREATE TABLE IF NOT EXISTS rubrics (
    name TEXT PRIMARY KEY,
    toml TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS feedback (
    kind TEXT NOT NULL CHECK (kind IN ('grade', 'run')),
    key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    owner TEXT NOT NULL,
    accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
    reviewer TEXT,
    note TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (kind, key, idx)
);
CREATE INDEX IF NOT EXISTS feedback_by_owner ON feedback (owner, created);
CREATE TABLE IF NOT EXISTS rubric_snapshots (
    digest TEXT PRIMARY KEY,
    texts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_rubrics (
    run_id TEXT NOT NULL REFERENCES runs (id),
    task TEXT NOT NULL,
    rubric TEXT NOT NULL,
    revision INTEGER NOT NULL,
    digest TEXT,
    PRIMARY KEY (run_id, task)
);
"""

MIGRATIONS = (
    # Databases from before per-task disclosure: their tasks get the default.
    (
        "tasks",
        "disclosure",
        "ALTER TABLE tasks ADD COLUMN disclosure TEXT NOT NULL DEFAULT 'counts'",
    ),
    # From before static settings per task: the server's policy and lockfile.
    ("tasks", "static", "ALTER TABLE tasks ADD COLUMN static TEXT NOT NULL DEFAULT '{}'"),
    # From before per-run layer options: the defaults of the time (tests only).
    ("runs", "options", "ALTER TABLE runs ADD COLUMN options TEXT NOT NULL DEFAULT '{}'"),
    # From before token expiry and task scopes: no expiry, every task.
    ("tokens", "expires", "ALTER TABLE tokens ADD COLUMN expires REAL"),
    ("tokens", "tasks", "ALTER TABLE tokens ADD COLUMN tasks TEXT"),
    # From before runs said why they were cancelled: no reason.
    ("runs", "reason", "ALTER TABLE runs ADD COLUMN reason TEXT"),
)
RENAMES = (
    # From before task ids: the tables keyed tasks by their function name, which was
    # the task's id; the column is renamed, every value stays (a task's entry point
    # is its public line's ``fn``, stored with it all along).
    ("tasks", "fn", "task"),
    ("task_revisions", "fn", "task"),
    ("run_tasks", "fn", "task"),
    ("run_rubrics", "fn", "task"),
)
BACKFILL_REVISIONS = (
    # From before revisions were kept: each task's current revision is its first kept one.
    "INSERT OR IGNORE INTO task_revisions "
    "(task, revision, public, hidden, limits, disclosure, static, updated) "
    "SELECT task, revision, public, hidden, limits, disclosure, static, updated FROM tasks"
)
PRUNE_REVISIONS = (
    "DELETE FROM task_revisions WHERE task = ? AND revision <> ? AND revision NOT IN "
    "(SELECT run_tasks.revision FROM run_tasks JOIN runs ON runs.id = run_tasks.run_id "
    "WHERE run_tasks.task = ? AND runs.status IN (?, ?))"
)
PRUNE_SNAPSHOTS = (
    "DELETE FROM rubric_snapshots WHERE digest NOT IN "
    "(SELECT run_rubrics.digest FROM run_rubrics JOIN runs ON runs.id = run_rubrics.run_id "
    "WHERE run_rubrics.digest IS NOT NULL AND runs.status IN (?, ?))"
)
PENDING = "json_extract(row, '$.judge.status') = 'pending'"

UNFINISHED = ("queued", "running")
ORPHANED = (
    # Unfinished runs whose token is gone (revoked) or expired, with the reason.
    "SELECT runs.id, CASE WHEN tokens.id IS NULL THEN 'token revoked' ELSE 'token expired' END "
    "FROM runs LEFT JOIN tokens ON tokens.id = runs.owner WHERE runs.status IN (?, ?) "
    "AND (tokens.id IS NULL OR (tokens.expires IS NOT NULL AND tokens.expires <= ?))"
)
