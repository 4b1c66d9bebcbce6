"""Rejudgings: a task's stored submissions evaluated again (on a new task version or
harness), their new results kept beside the originals until an organiser applies or
cancels them. `rejudged` pairs each original with its new submission, the mark admission
gave it (it takes that status when applied) or why it was not judged."""

STATEMENTS = [
    """CREATE TABLE rejudgings (
        id {pk},
        task TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'open',
        ended_at TEXT)""",
    """CREATE TABLE rejudged (
        rejudging_id INTEGER NOT NULL REFERENCES rejudgings(id),
        original_id INTEGER NOT NULL REFERENCES submissions(id),
        submission_id INTEGER REFERENCES submissions(id),
        mark TEXT,
        error TEXT,
        PRIMARY KEY (rejudging_id, original_id))""",
]
