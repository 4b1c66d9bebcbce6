"""Attack: walk up from the working directory, the home folder, /tmp and the project,
and set every score-like column of every *.db to 1e-9 (the issue's report). Contained:
no folder outside scratch is listed, no database opened."""
from _attack import attempt, find_databases, report, rewrite
from task import input_t, output_t

for db in attempt("find databases", find_databases) or []:
    attempt(f"rewrite {db}", lambda db=db: rewrite(db))
for db in ("results.db", "../results.db", "/tmp/results.db"):
    attempt(f"rewrite {db}", lambda db=db: rewrite(db))
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
