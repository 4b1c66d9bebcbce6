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


def neighbour(flag, mode):
    while flag.value:
        if mode == "nap":
            time.sleep(0.0001)


def main():
    torch.set_num_threads(1)
    ts = [torch.empty(64) for _ in range(10)]
    host = torch.empty((8, 10), dtype=torch.int64)

    def snippet():
        rows, first = [], 0
        for i in range(2):
            a, b, c, d, e = ts[5 * i:5 * i + 5]
            rows.append([a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), e.data_ptr(),
                         128, 4096, 1536, first, 32])
            first += 64
        host[:len(rows)] = torch.tensor(rows, dtype=torch.int64)
        return host[:len(rows)].clone()

    def block():
        out = []
        for _ in range(100):
            t0 = time.perf_counter_ns()
            for _ in range(15):
                snippet()
            out.append((time.perf_counter_ns() - t0) / 15)
        return out

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
