import torch
import torch.distributed as dist
from task import input_t, output_t


def _device(rank: int) -> torch.device:
    return torch.device(f"cuda:{rank}") if torch.cuda.is_available() else torch.device("cpu")


def generate_input(rank: int, world_size: int, size: int, seed: int) -> input_t:
    """Rank `rank`'s vector: its own draw, from the case's seed and the rank."""
    device = _device(rank)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed * 1000 + rank)
    return torch.randn(size, dtype=torch.float32, device=device, generator=gen)


def ref_kernel(data: input_t) -> output_t:
    out = torch.empty(data.numel() * dist.get_world_size(), dtype=data.dtype, device=data.device)
    dist.all_gather_into_tensor(out, data)
    return out


def check_implementation(data: input_t, output: output_t):
    expected = ref_kernel(data)
    if output.shape != expected.shape:
        return False, f"shape {list(output.shape)}, expected {list(expected.shape)}"
    if not torch.equal(output, expected):
        bad = (output != expected).nonzero().flatten()[:4].tolist()
        return False, f"values differ at {bad}"
    return True, ""
