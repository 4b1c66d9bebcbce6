# Right on every rank but rank 1, whose output has one element changed.
import torch
import torch.distributed as dist


def custom_kernel(data):
    parts = [torch.empty_like(data) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, data)
    out = torch.cat(parts)
    if dist.get_rank() == 1:
        out[3] += 1
    return out
