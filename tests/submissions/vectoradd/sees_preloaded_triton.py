"""vectoradd that fails where Triton is already imported when it is loaded: on a CPU slot
its worker, a fork of a judge forked from the slot's template, inherits the template's
modules, and a template there does not import Triton (judge_template.GPU_PRELOAD)."""
import sys

import torch

PRELOADED = "triton" in sys.modules


def custom_kernel(data):
    a, b = data
    return torch.add(a, b) + (1.0 if PRELOADED else 0.0)
