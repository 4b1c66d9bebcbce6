"""Attack: return a tensor subclass that computes only when read (after the timer
stops). Caught by: outputs must be plain tensors (wrong output); screen hard
(tensor-subclass)."""
import torch
from task import input_t, output_t


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return (a + b).as_subclass(Lazy)
