#!POPCORN leaderboard all_gather
"""Every rank gathers every rank's vector with torch.distributed's all_gather (the process
group is set up before this file is imported: gloo on the CPU, NCCL on GPUs)."""
import torch
import torch.distributed as dist
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    parts = [torch.empty_like(data) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, data)
    return torch.cat(parts)
