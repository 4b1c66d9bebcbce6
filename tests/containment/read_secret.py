"""Attack: read the leaderboard secret from the results database (to compute the secret
seeds), knowing where it is (the test writes its path). Contained: the database cannot be
opened."""
import os

from _attack import attempt, find_databases, project_dir, read_secrets, report
from task import input_t, output_t

candidates = ["__DB__", os.path.join(project_dir(), "results.db")]
candidates += attempt("find databases", find_databases) or []
for db in candidates:
    secret = attempt(f"read the secret of {db}", lambda db=db: read_secrets(db))
    if secret:
        print("SECRET", secret, flush=True)
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
