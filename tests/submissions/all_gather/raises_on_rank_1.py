# Rank 1 raises before the collective; the other ranks wait for it there.
import torch
import torch.distributed as dist


def custom_kernel(data):
    if dist.get_rank() == 1:
        raise RuntimeError("rank 1 gives up")
    parts = [torch.empty_like(data) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, data)
    return torch.cat(parts)
