import torch


def custom_kernel(data):
    x, out = data
    return torch.mul(x, 2, out=out)
