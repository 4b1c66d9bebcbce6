# A correct submission that prints (its output shows on the web page) and reads the
# environment (a screen finding that marks it suspicious without refusing its rank); its
# short sleep ranks it between fast.py and sleep_1ms.py.
import os
import time

from task import input_t, output_t

print("hello from the worker, HOME is set:", bool(os.environ.get("HOME")))


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    time.sleep(0.0003)
    return a + b
