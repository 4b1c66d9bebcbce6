"""Attack: reach the worker's own protocol through importlib (which the screen's import
rule did not read) and hook its mailbox, to compute outputs where no clock looks, behind
the hidden window of a GPU run: `Mailbox.pending` sees each request before any clock
starts, and a scored sample's request carries its GPU sleep (a probe's is 0). On scored
calls only it computes the output there; the probes, where the two clocks used to be
compared, stay honest.

The kernel itself is a slow honest one (about 1 ms of GPU sleep, then the sum). Caught by:
the scored samples on both clocks, their sleep left out (`integrity.scored_clocks`); the
screen's `touches-harness` rule reads `importlib.import_module("harness...")`.
"""
import importlib

import torch

from task import input_t, output_t

_protocol = importlib.import_module("harness.judging.worker.protocol")
_state = {"slot": None, "inputs": {}, "ready": {}}
_pending = _protocol.Mailbox.pending


def _slow(a, b):
    torch.cuda._sleep(2_000_000)  # about 1 ms of GPU time
    return a + b


def _on_request(self, last):
    request = _pending(self, last)
    if request is not None:
        _state["slot"] = request[2]
        if request[1] == "noop":
            _state["inputs"].clear()
        scored = request[1] == "call" and request[3] != 0
        if scored and request[2] in _state["inputs"]:
            _state["ready"][request[2]] = _slow(*_state["inputs"][request[2]])
            torch.cuda.synchronize()
    return request


_protocol.Mailbox.pending = _on_request


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    slot = _state["slot"]
    if slot is not None:
        _state["inputs"][slot] = (a, b)
    out = _state["ready"].pop(slot, None)
    return out if out is not None else _slow(a, b)
