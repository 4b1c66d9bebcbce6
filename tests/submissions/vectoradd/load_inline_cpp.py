"""vectoradd through a C++ function that torch's load_inline compiles at import (in the worker,
with the compiler the machine names: harness/judging/sandbox/sandbox.py)."""
import torch
from torch.utils.cpp_extension import load_inline

_mod = load_inline(
    name="add_cpp",
    cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b) { return a + b; }",
    functions=["add"],
    verbose=False,
)


def custom_kernel(data):
    a, b = data
    return _mod.add(a, b)
