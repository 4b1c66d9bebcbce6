"""Measure the GPU's two ceilings: device-to-device copy bandwidth and bf16 matmul rate.

    python benchmarks/ceilings.py      # prints JSON: copy_tbs (read + write), bf16_tflops
"""

from __future__ import annotations

import json

import torch
import triton.testing


def measure() -> dict:
    """Median of triton.testing.do_bench (which flushes L2) for a 1 GiB copy and 8192^3 bf16."""
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    copy_ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=50, rep=300, return_mode="median")
    size = 8192
    a = torch.randn(size, size, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(size, size, dtype=torch.bfloat16, device="cuda")
    mm_ms = triton.testing.do_bench(lambda: a @ b, warmup=50, rep=300, return_mode="median")
    return {
        "gpu": torch.cuda.get_device_name(0),
        "copy_bytes": 2 * n, "copy_us": copy_ms * 1e3, "copy_tbs": 2 * n / (copy_ms * 1e-3) / 1e12,
        "matmul_flops": 2 * size**3, "matmul_us": mm_ms * 1e3,
        "bf16_tflops": 2 * size**3 / (mm_ms * 1e-3) / 1e12,
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
