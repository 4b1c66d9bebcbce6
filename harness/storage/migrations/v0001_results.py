"""The results: leaderboards (one per task version, with its secret), submissions and
their runs."""

STATEMENTS = [
    """CREATE TABLE leaderboards (
        id {pk},
        task TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        secret TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (task, content_hash))""",
    """CREATE TABLE submissions (
        id {pk},
        leaderboard_id INTEGER NOT NULL REFERENCES leaderboards(id),
        user_name TEXT NOT NULL,
        file_name TEXT NOT NULL,
        code TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        created_at TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'ok')""",
    """CREATE TABLE runs (
        id {pk},
        submission_id INTEGER NOT NULL REFERENCES submissions(id),
        mode TEXT NOT NULL,
        seeds TEXT NOT NULL,
        device_kind TEXT NOT NULL,
        device_name TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT NOT NULL,
        passed INTEGER NOT NULL,
        score_ns DOUBLE PRECISION,
        cases TEXT NOT NULL,
        messages TEXT NOT NULL,
        harness_version TEXT NOT NULL,
        system TEXT NOT NULL)""",
    "CREATE INDEX runs_by_submission ON runs (submission_id)",
    "CREATE INDEX submissions_by_board ON submissions (leaderboard_id, user_name)",
]
