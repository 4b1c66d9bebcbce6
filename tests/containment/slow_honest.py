"""Not an attack: the run beside `read_other_scratch`. It leaves a marker in its scratch
folder and does not finish loading until the test, once the attacker has run, leaves
ATTACK_DONE beside the marker (at most 60 s), so that the attacker runs while it does."""
import os
import time

from task import input_t, output_t

with open("VICTIM_MARKER.txt", "w") as fh:
    fh.write("victim's private scratch file")
deadline = time.monotonic() + 60
while not os.path.exists("ATTACK_DONE") and time.monotonic() < deadline:
    time.sleep(0.05)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
