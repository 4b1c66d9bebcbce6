"""Fault: write files into the scratch folder (home, temporary files) until a write fails,
as a submission filling the disk that holds the results would. Caught by: the scratch
quota (worker.scratch_mb, a tmpfs): writes fail with ENOSPC past it, the verdict names the
quota, and the folder is gone with the run. Prints the bytes written (WROTE n) and where
(SCRATCH path)."""
import os

from task import input_t, output_t

_CHUNK = b"\1" * (1 << 20)


def custom_kernel(data: input_t) -> output_t:
    home = os.environ["HOME"]
    print(f"SCRATCH {home}", flush=True)
    written, n = 0, 0
    try:
        while True:
            folder = os.environ["TMPDIR"] if n % 2 else home
            with open(os.path.join(folder, f"fill{n}"), "wb") as fh:
                for _ in range(16):  # 16 MiB a file, under RLIMIT_FSIZE
                    fh.write(_CHUNK)
                    fh.flush()
                    written += len(_CHUNK)
            n += 1
    finally:
        print(f"WROTE {written}", flush=True)
