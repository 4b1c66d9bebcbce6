"""The schema's migrations, one module per change, applied in the order of their numbers
(`vNNNN_name.py`) by harness/storage/migrate.py. Each holds STATEMENTS, run in one
transaction with its number's row in `schema_version`. A new one: the next number, and
statements that keep the rows there (expand, then migrate the data, then contract in a
later one). Never edit one that has shipped."""
