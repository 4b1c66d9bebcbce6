"""The program's identity apart from comments and layout (harness.results.ranking): one
program evaluated again counts with its median. NULL on older rows (sha256 then)."""

STATEMENTS = ["ALTER TABLE submissions ADD COLUMN program TEXT"]
