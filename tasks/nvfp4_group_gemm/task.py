from typing import TypedDict, TypeVar

import torch

# (abc per group, (sfa, sfb) per group, (sfa_reordered, sfb_reordered) per group, (M, N, K, L) per group)
input_t = TypeVar(
    "input_t",
    bound=tuple[
        list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
        list[tuple[torch.Tensor, torch.Tensor]],
        list[tuple[torch.Tensor, torch.Tensor]],
        list[tuple[int, int, int, int]],
    ],
)
output_t = TypeVar("output_t", bound=list[torch.Tensor])


class TestSpec(TypedDict):
    g: int
    m: list[int]
    n: list[int]
    k: list[int]
    seed: int
