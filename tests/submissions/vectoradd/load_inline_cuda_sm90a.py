"""vectoradd through a CUDA kernel that torch's load_inline builds at import, in the worker.
The kernel adds only where it was built for Hopper's sm_90a target (the target the H200
machines name in TORCH_CUDA_ARCH_LIST, which wgmma needs); built for plain sm_90 it
subtracts, and the output is wrong."""
import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <cuda_fp16.h>
__global__ void add_kernel(const __half* a, const __half* b, __half* c, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        c[i] = __hadd(a[i], b[i]);
#else
        c[i] = __hsub(a[i], b[i]);
#endif
    }
}
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto c = torch::empty_like(a);
    long n = a.numel();
    add_kernel<<<(n + 255) / 256, 256>>>(
        reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
        reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
        reinterpret_cast<__half*>(c.data_ptr<at::Half>()), n);
    return c;
}
"""

_mod = load_inline(
    name="add_sm90a",
    cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b);",
    cuda_sources=_CUDA,
    functions=["add"],
    verbose=False,
)


def custom_kernel(data):
    a, b = data
    return _mod.add(a.contiguous(), b.contiguous())
