from typing import TypedDict, TypeVar

import torch

# (A [m, k] bf16, B [n, k] bf16, B_q [n, k/2] fp4x2, B_shuffle [n, k/2] fp4x2, B_scale_sh e8m0)
input_t = TypeVar(
    "input_t", bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
)
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    m: int
    n: int
    k: int
    seed: int
