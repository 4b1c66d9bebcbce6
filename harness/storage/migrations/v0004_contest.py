"""The contest server: users with hashed tokens, the durable queue of uploaded
submissions, the machines that judge them, and per-task contest rules."""

STATEMENTS = [
    """CREATE TABLE users (
        id {pk},
        name TEXT NOT NULL UNIQUE,
        token_hash TEXT NOT NULL UNIQUE,
        admin INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        revoked_at TEXT)""",
    """CREATE TABLE jobs (
        id {pk},
        user_name TEXT NOT NULL,
        task TEXT NOT NULL,
        mode TEXT NOT NULL,
        gpu TEXT NOT NULL,
        file_name TEXT NOT NULL,
        code TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'queued',
        created_at TEXT NOT NULL,
        created_ts DOUBLE PRECISION NOT NULL,
        started_ts DOUBLE PRECISION,
        ended_ts DOUBLE PRECISION,
        lease_until DOUBLE PRECISION,
        worker TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        verdict TEXT,
        exit_code INTEGER,
        submission_id INTEGER,
        result TEXT)""",
    "CREATE INDEX jobs_by_status ON jobs (status, id)",
    "CREATE INDEX jobs_by_user ON jobs (user_name, id)",
    """CREATE TABLE workers (
        name TEXT PRIMARY KEY,
        gpu TEXT NOT NULL,
        seen_ts DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE contest_rules (
        task TEXT PRIMARY KEY,
        deadline TEXT,
        modes TEXT,
        closed INTEGER NOT NULL DEFAULT 0)""",
]
