# A correct submission that prints (its output shows on the web page), counts its calls
# and branches on the count (a screen finding that marks it suspicious without refusing
# its rank): it stalls on every 15th call (long samples: a note on its page); its short
# sleeps rank it between fast.py and sleep_1ms.py (a mean of about 0.75 ms; 15 is odd, so the stalls
# fall on timed calls whether or not untimed rehearsals come between them).
import os
import time

from task import input_t, output_t

print("hello from the worker, HOME is set:", bool(os.environ.get("HOME")))
_calls = 0


def custom_kernel(data: input_t) -> output_t:
    global _calls
    _calls += 1
    a, b = data
    time.sleep(0.006 if _calls % 15 == 0 else 0.0003)  # long: over 4x a median below 1.5 ms
    return a + b
