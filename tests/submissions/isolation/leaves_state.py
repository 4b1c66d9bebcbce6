"""Leaves every kind of state a worker could carry to the next submission, after checking
that none was left to it: a second run of this file (or of its twin) in a worker that an
earlier submission touched fails with the list of what it found."""
import os
import sys
import tempfile
from pathlib import Path

import torch
from task import input_t, output_t

MARK = "left-by-an-earlier-submission"


def traces() -> list[str]:
    """What an earlier submission left in this process, its folders or torch."""
    found = []
    if MARK in sys.modules:
        found.append("a module in sys.modules")
    if getattr(torch, "_isolation_mark", None) == MARK:
        found.append("a global of torch")
    if getattr(torch.add, "_isolation_mark", None) == MARK:
        found.append("a monkey-patched torch.add")
    if os.environ.get("ISOLATION_MARK") == MARK:
        found.append("an environment variable")
    for folder in (Path.cwd(), Path(tempfile.gettempdir()), Path.home()):
        if (folder / MARK).exists():
            found.append(f"a file in {folder}")
    if torch.get_default_dtype() != torch.float32:
        found.append("torch's default dtype")
    if torch.are_deterministic_algorithms_enabled():
        found.append("torch's deterministic algorithms")
    if not torch.backends.mkldnn.enabled:
        found.append("torch.backends.mkldnn")
    if torch.cuda.is_available():
        if torch.backends.cuda.matmul.allow_tf32:
            found.append("torch.backends.cuda.matmul.allow_tf32")
        if torch.cuda.current_stream() != torch.cuda.default_stream():
            found.append("the current CUDA stream")
    return found


def leave() -> None:
    sys.modules[MARK] = sys
    torch._isolation_mark = MARK
    add = torch.add

    def patched(*args, **kwargs):
        return add(*args, **kwargs)

    patched._isolation_mark = MARK
    torch.add = patched
    os.environ["ISOLATION_MARK"] = MARK
    for folder in (Path.cwd(), Path(tempfile.gettempdir()), Path.home()):
        (folder / MARK).write_text(MARK)
    torch.set_default_dtype(torch.float64)
    torch.use_deterministic_algorithms(True)
    torch.backends.mkldnn.enabled = False
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.cuda.set_stream(torch.cuda.Stream())


# a worker forked from a slot's judge template has its modules (sandbox/forked.py), and
# what it inherited frozen out of the garbage collector's walks
print("worker: " + ("forked" if "harness.execution.judge_template" in sys.modules
                    else "new interpreter"), f"frozen={__import__('gc').get_freeze_count()}")
FOUND = traces()
leave()
assert len(traces()) >= 9, traces()  # the checks see what this file leaves


def custom_kernel(data: input_t) -> output_t:
    if FOUND:
        raise RuntimeError(f"state of an earlier submission: {', '.join(FOUND)}")
    a, b = data
    return (a + b).to(a.dtype)
