"""Attack: a thread, started through an import the static screen cannot read, that keeps
running the submission's code between calls (where it could watch the input buffers and
work ahead, outside every timed region). Its outputs are right. Caught by: the worker
finds the thread alive, running the submission's code, after the timed calls return; the
case is flagged."""
import importlib

from task import input_t, output_t

_started = []


def _linger():
    time = importlib.import_module("time")
    while True:
        time.sleep(0.0005)


def custom_kernel(data: input_t) -> output_t:
    if not _started:
        runner = importlib.import_module("thr" + "eading")
        runner.Thread(target=_linger, daemon=True).start()
        _started.append(1)
    a, b = data
    return a + b
