"""Attack: read the environment for the harness's secrets or database path. Caught by: the
worker's environment is an allow-list without them; screen flag reads-environment."""
import os

from task import input_t, output_t

print("ENV_DUMP " + " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())), flush=True)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
