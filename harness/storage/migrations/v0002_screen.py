"""The static screen's findings and why a submission may not rank, kept with it."""

STATEMENTS = [
    "ALTER TABLE submissions ADD COLUMN screen TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE submissions ADD COLUMN refused TEXT",
]
