"""Does what fills the hidden window change the time of the calls behind it? (run 25)

The harness hides host launch time behind a GPU sleep (one block spinning); the public
nvfp4 and mxfp4 evaluators hide it behind a 64 GB randn (the whole GPU busy). If the
GPU's clock drops during a mostly idle window, small calls behind a sleep run slower.
Times 15 small matmuls back to back (as one nvfp4 sample) behind: nothing, a 20 ms sleep,
20 ms of randn, and 20 ms of host idling; interleaved rounds, medians per call.
"""

from __future__ import annotations

import statistics
import time

import torch


def main() -> None:
    dev = torch.device("cuda")
    sizes = {"small": 1024, "medium": 2048}
    mats = {k: torch.randn(n, n, device=dev, dtype=torch.float16) for k, n in sizes.items()}
    big = torch.empty(1 << 30, device=dev)  # 4 GiB for the randn window
    mhz = torch.cuda.clock_rate() if hasattr(torch.cuda, "clock_rate") else 1980
    props = torch.cuda.get_device_properties(dev)
    print(props.name, "clock_rate", mhz)

    def randn_ms(ms: float) -> None:
        t = time.perf_counter()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); big.normal_(); e1.record(); torch.cuda.synchronize()
        return e0.elapsed_time(e1)

    one = randn_ms(0)
    reps = max(1, round(20.0 / one))
    print(f"one 4 GiB normal_ {one:.2f} ms, {reps} per window")
    windows = {
        "none": lambda: None,
        "sleep": lambda: torch.cuda._sleep(int(20e-3 * 1980e6)),
        "randn": lambda: [big.normal_() for _ in range(reps)],
        "host_idle": lambda: time.sleep(0.02),
    }
    res = {(w, k): [] for w in windows for k in sizes}
    for _ in range(30):
        for w, fill in windows.items():
            for k, a in mats.items():
                torch.cuda.synchronize()
                fill()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(15):
                    a @ a
                e.record()
                torch.cuda.synchronize()
                res[(w, k)].append(s.elapsed_time(e) * 1e3 / 15)
    for (w, k), v in res.items():
        print(f"{k:7s} behind {w:9s}: median {statistics.median(v):8.2f} us per call, "
              f"min {min(v):8.2f}, max {max(v):8.2f}")


if __name__ == "__main__":
    main()
