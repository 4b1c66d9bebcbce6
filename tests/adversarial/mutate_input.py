"""Attack: zero b and return a, so a check that recomputed a + b from the (mutated) input
would agree. Caught by: the judge checks against its own pristine copy (wrong output)."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    b.zero_()
    return a
