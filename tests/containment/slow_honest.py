"""Not an attack: the run beside `read_other_scratch`. It leaves a marker in its scratch
folder and loads slowly, so that the attacker runs while it does."""
import time

from task import input_t, output_t

with open("VICTIM_MARKER.txt", "w") as fh:
    fh.write("victim's private scratch file")
time.sleep(40)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
