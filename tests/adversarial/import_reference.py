"""Attack: import the task's reference to compute (or precompute) outputs. Caught by: the
reference is not in the worker's import path (load error); screen hard
(touches-harness)."""
from reference import ref_kernel
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return ref_kernel(data)
