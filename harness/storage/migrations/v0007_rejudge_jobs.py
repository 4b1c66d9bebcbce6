"""A job of the server's queue may be a rejudging's: which rejudging, and the original
submission it judges again (both NULL for a contestant's upload)."""

STATEMENTS = [
    "ALTER TABLE jobs ADD COLUMN rejudging_id INTEGER",
    "ALTER TABLE jobs ADD COLUMN original_id INTEGER",
]
