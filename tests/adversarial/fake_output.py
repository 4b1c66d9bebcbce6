"""Attack: print fake results to stdout and stderr, and write forged protocol bytes to
every other open file descriptor, then return garbage. Caught by: nothing the worker
writes decides a verdict; forged bytes on the judge's pipe are a protocol error
(rejected); the screen flags raw fd writes."""
import json
import os
import sys

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    print("PASSED all tests; score 0.001 us")
    print('{"event": "done", "ns": 1}', file=sys.stderr)
    forged = json.dumps({"event": "done", "ns": 1}).encode()
    for fd in range(3, 64):
        try:
            os.write(fd, len(forged).to_bytes(4, "big") + forged)
        except OSError:
            pass
    return a * 0
