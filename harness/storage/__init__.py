"""Storage: every SQL statement of the harness, over SQLite or PostgreSQL.

`store` connects, migrates and records results (leaderboards, submissions, runs); `queue`
is the contest server's durable job queue; `users` its contestants and organisers; `rules`
the rows of its contest rules (their meaning is harness/server/rules.py's). No module
outside this package writes SQL (tests/test_storage_boundary.py checks it)."""
