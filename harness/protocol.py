"""Messages between judge and worker.

Judge to worker: pickled dicts (tensors travel as CUDA IPC handles or shared-memory file
names). Worker to judge: JSON only, because the judge must never unpickle what untrusted
code could have written.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Worker events, and the kinds of error a worker reports.
READY, LOADED, DONE, ERROR, ACK = "ready", "loaded", "done", "error", "ack"
ERROR_KINDS = {
    "syntax_error", "import_error", "missing_entry", "exception", "wrong_output",
    "cuda_error", "compile_error", "needs_gpu", "out_of_memory", "load_error", "protocol",
}


class ProtocolError(ValueError):
    """A worker message that is not well-formed."""


def encode(message: dict[str, Any]) -> bytes:
    """The bytes a worker sends."""
    return json.dumps(message, separators=(",", ":"), default=str).encode()


def decode(raw: bytes) -> dict[str, Any]:
    """Parse and validate a worker message without trusting it."""
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"unreadable message from the worker ({len(raw)} bytes)") from exc
    if not isinstance(message, dict) or not isinstance(message.get("event"), str):
        raise ProtocolError("a worker message without an event")
    if message["event"] == DONE:
        ns = message.get("ns")
        if not isinstance(ns, (int, float)) or not math.isfinite(ns) or ns < 0:
            raise ProtocolError(f"the worker reported an impossible time: {ns!r}")
    if message["event"] == ERROR and message.get("kind") not in ERROR_KINDS:
        raise ProtocolError(f"the worker reported an unknown error kind {message.get('kind')!r}")
    return message
