"""One of the judge's rank processes (group.py): the task's reference for one rank.

    python -m harness.judging.ranks.reference_rank FD RANK WORLD STORE STAGED DEVICE

FD: its end of a socket pair to the judge; STORE: the group's rendezvous file; STAGED: the
judge's staged copy of the task folder (reference.py and the files it imports); DEVICE:
cpu or cuda (rank r on GPU r of those visible). It joins the group, imports the reference,
says `ready`, then answers the judge's requests in turn, each a pickled tuple:
`("generate", case)` (this rank's inputs: `generate_input(**case, rank=RANK)`, kept and
sent back), `("reference",)` (the task's `ref_kernel` on a copy of the kept inputs: the
expected output, whose layout the judge shares with the submission's worker),
`("check", output)` (the task's `check_implementation` on the kept inputs and
the output: `(ok, message)`), `("stop",)`. A request that raises is answered
`("error", text)`; the judge then stops the whole group (the other ranks may be waiting in
a collective that will never complete). SIGUSR1 writes its Python stack to its output: the
judge asks a rank that does not answer in time where it is.
"""

from __future__ import annotations

import faulthandler
import pickle
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

_LENGTH = struct.Struct("!Q")  # each message: its length, then its pickle


def send(sock: socket.socket, message: Any) -> None:
    """One message to the other end (pickled: the judge and its rank processes trust each
    other; no submission's process is ever on either end)."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LENGTH.pack(len(body)) + body)


def receive(sock: socket.socket, deadline: float | None = None) -> Any:
    """The next message; EOFError where the other end closed, TimeoutError past
    `deadline` (time.monotonic()), None: wait as long as it takes."""
    (size,) = _LENGTH.unpack(_exactly(sock, _LENGTH.size, deadline))
    return pickle.loads(_exactly(sock, size, deadline))


def _exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except TimeoutError as exc:
            raise TimeoutError("no answer in time") from exc
        if not chunk:
            raise EOFError("the other end closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main(argv: list[str]) -> int:
    fd, rank, world, store, staged, device = argv
    rank_no, world_size = int(rank), int(world)
    faulthandler.register(signal.SIGUSR1, all_threads=False)  # where it is, when asked
    sock = socket.socket(fileno=int(fd))

    def say(message: Any) -> None:
        send(sock, message)

    try:
        module = _join(rank_no, world_size, store, Path(staged), device)
    except Exception as exc:  # noqa: BLE001 - told to the judge, which names the rank
        say(("error", f"could not join the group: {exc!r}\n{traceback.format_exc()}"))
        return 1
    say(("ready",))
    data = None
    while True:
        try:
            request = receive(sock)
        except EOFError:  # the judge is gone
            return 0
        try:
            if request[0] == "stop":
                return 0
            if request[0] == "generate":
                data = module.generate_input(**request[1], rank=rank_no)
                say(("ok", data))
            elif request[0] == "reference":
                from harness.judging.worker.structure import clone

                say(("ok", module.ref_kernel(clone(data))))
            elif request[0] == "check":
                say(("ok", tuple(module.check_implementation(data, request[1]))))
            else:
                say(("error", f"unknown request {request[0]!r}"))
        except Exception as exc:  # noqa: BLE001 - told to the judge, which names the rank
            say(("error", f"{exc!r}\n{traceback.format_exc()}"))


def _join(rank: int, world: int, store: str, staged: Path, device: str) -> Any:
    """Join the group (gloo on loopback on the CPU, NCCL on GPU `rank`); the reference."""
    import torch
    import torch.distributed as dist

    if device == "cuda":
        torch.cuda.set_device(rank)
    backend = "nccl" if device == "cuda" else "gloo"
    dist.init_process_group(backend, store=dist.FileStore(store, world), rank=rank,
                            world_size=world)
    sys.path.insert(0, str(staged))
    import reference

    return reference


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
