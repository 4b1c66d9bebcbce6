"""Every upload the server accepted, kept whatever becomes of its job (judged, failed,
deleted by its owner), so that the rate limit counts them all; an admin's delete refunds
one. Jobs already there are counted from their own rows."""

STATEMENTS = [
    """CREATE TABLE uploads (
        id {pk},
        user_name TEXT NOT NULL,
        created_ts DOUBLE PRECISION NOT NULL,
        job_id INTEGER,
        refunded INTEGER NOT NULL DEFAULT 0)""",
    "CREATE INDEX uploads_by_user ON uploads (user_name, created_ts)",
    "INSERT INTO uploads (user_name, created_ts, job_id) "
    "SELECT user_name, created_ts, id FROM jobs",
]
