"""Does a second process polling shared memory in a tight Python loop (the judge waiting
for the worker's reply) slow the worker's host work on another CPU? (CPU machine; nvfp4
triton_hopper case 3's host work, as in cpu_cold_host.py.)

Samples of 15 calls of the submission's host work, alternating blocks of 100 samples with
and without a neighbour process that spins (reads a shared byte in a loop, as
Channel._wait does) or naps (sleeps 100 µs between reads). Mean and median per call.

    python docs/measurements/2026-12-01/scripts/cpu_spinning_neighbour.py
"""
import multiprocessing as mp
import statistics
import time

import torch
from _host_work import host_work, per_call_ns


def neighbour(flag, mode):
    while flag.value:
        if mode == "nap":
            time.sleep(0.0001)


def main():
    torch.set_num_threads(1)
    snippet = host_work()

    def block():
        return [per_call_ns(snippet) for _ in range(100)]

    block()
    res = {"alone": [], "spinning": [], "napping": []}
    for _ in range(6):
        for k in res:
            flag = mp.Value("b", 1, lock=False)
            p = None
            if k != "alone":
                p = mp.Process(target=neighbour, args=(flag, "spin" if k == "spinning" else "nap"))
                p.start()
                time.sleep(0.05)
            res[k] += block()
            flag.value = 0
            if p:
                p.join()
    for k, v in res.items():
        print(f"{k:9s} mean {statistics.fmean(v) / 1e3:.2f} us  median {statistics.median(v) / 1e3:.2f} us")


if __name__ == "__main__":
    main()
