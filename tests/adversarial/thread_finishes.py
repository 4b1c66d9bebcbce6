"""Attack: return an empty output and let a thread fill it in after custom_kernel
returns. Caught by: the output is copied as soon as the call returns (wrong output), and
any wait shows on the judge's clock; screen flag threads."""
import threading
import time

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    out = torch.empty_like(a)

    def finish():
        time.sleep(0.002)
        torch.add(a, b, out=out)

    threading.Thread(target=finish).start()
    return out
