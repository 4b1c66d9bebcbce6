"""vectoradd, asking its user's name at import as torch.compile's caches do
(getpass.getuser()): the worker's user has no entry in the passwd file, so the answer must
come from the environment the judge gives it."""
import getpass

import torch

USER = getpass.getuser()


def custom_kernel(data):
    a, b = data
    return torch.add(a, b)
