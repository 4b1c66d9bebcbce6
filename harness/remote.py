"""One evaluation in its own judge process: the unit of work of `batch`.

    python -m harness.remote < request.json    # writes the result document to request["out"]

The request (JSON on standard input, so the leaderboard secret never sits in an
environment or on a command line) names the file, task, mode, device, cases, timeout,
settings file and, in leaderboard mode, the secret in hex. Nothing is recorded here: the
batch driver records every result in one place.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def evaluate_request(request: dict[str, Any]) -> dict[str, Any]:
    """Run one evaluation in this process and return its result document."""
    from .evaluate import Request, evaluate, prepare
    from .settings import Settings

    settings = Settings.load(Path(request["config"]) if request.get("config") else None)
    req = Request(Path(request["file"]), request.get("task"), request.get("mode", "leaderboard"),
                  list(request.get("cases", [])), request.get("device"), request.get("timeout"),
                  bytes.fromhex(request["secret"]) if request.get("secret") else None)
    evaluation = evaluate(prepare(req), settings)
    return evaluation.to_dict()


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        doc = evaluate_request(request)
    except Exception as exc:  # noqa: BLE001 - reported to the driver as a failed evaluation
        doc = {"error": f"{type(exc).__name__}: {exc}"}
    Path(request["out"]).write_text(json.dumps(doc, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
