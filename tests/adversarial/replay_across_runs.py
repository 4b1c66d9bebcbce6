"""Attack: store every output in the compiler caches, which may outlive the run, and
replay them in the next run of the same file (a leaderboard's secret inputs are the same
in every run of its version). Caught by: ranked runs get private caches, made empty and
dropped with the run, so nothing a ranked run stores reaches the next one; what an
unranked run stores never meets a secret input. Found without naming any variable: through
TorchInductor's own idea of its cache folder."""
import os

import torch
from task import input_t, output_t
from torch._inductor.runtime.cache_dir_utils import cache_dir

STORE = os.path.join(os.path.dirname(cache_dir()), "replay")
os.makedirs(STORE, exist_ok=True)
print(f"REPLAY STORED {len(os.listdir(STORE))}", flush=True)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    key = f"{a.numel()}-" + "-".join(f"{v:.6f}" for v in a.flatten()[:4].tolist())
    path = os.path.join(STORE, key + ".pt")
    if os.path.exists(path):
        return torch.load(path)
    out = a + b
    torch.save(out, path)
    return out
