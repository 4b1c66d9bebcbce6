"""Verdicts: worker error kinds to statuses, and the messages people read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.consts import WORKER_START, Status
from harness.judging import needs

STATUS_BY_KIND = {
    "wrong_output": Status.FAILED, "exception": Status.ERROR, "load_error": Status.ERROR,
    "syntax_error": Status.ERROR, "import_error": Status.ERROR, "missing_entry": Status.ERROR,
    "out_of_memory": Status.ERROR, "compile_error": Status.COMPILE_ERROR, "needs_gpu": Status.NEEDS_GPU,
    "cuda_error": Status.CUDA_ERROR, "protocol": Status.CRASHED, "output_layout": Status.FAILED,
    # a multi-GPU case's rank that could not join the others, before its import: not the
    # submission's own doing
    "group": Status.CRASHED,
}
FATAL = {Status.CUDA_ERROR, Status.CRASHED, Status.TIMED_OUT, Status.REJECTED}


@dataclass(frozen=True)
class Where:
    """What a failure's verdict reads besides its text: the device kind ("cuda", "cpu"),
    the GPU's compute capability ("90"; None on the CPU), the code that failed."""

    device: str
    capability: str | None
    source: str = ""


class CaseFailure(Exception):
    """Ends a case early with a status and a message."""

    def __init__(self, status: str, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.fatal = status, message, fatal


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from, is the GPU running out of memory
    (torch's OutOfMemoryError, or the driver's CUDA_ERROR_OUT_OF_MEMORY)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ == "OutOfMemoryError" or "out of memory" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def worker_start_verdict(status: str, message: str, said: str = "") -> dict[str, Any]:
    """The verdict where the worker could not start, or failed or ended before the
    submission was loaded: not the submission's doing (admission's `not_judged`); `said`: the worker's
    own last error line, if any."""
    return {"status": status, "kind": WORKER_START,
            "title": "the worker could not start (before the submission was loaded)",
            "hint": "not the submission's doing, and not recorded: check the worker settings "
                    "and this machine's torch install",
            "message": message + (f"; it said: {said}" if said else "")}


def load_error_verdict(kind: str, message: str, module: str = "",
                       where: Where | None = None) -> dict[str, Any]:
    """The verdict for a submission that could not be loaded, with a hint. `where`: the
    machine and the submission's text, which say whether it failed for want of something
    this machine lacks (harness.judging.needs)."""
    if where is not None and kind not in ("syntax_error", "missing_entry"):
        need = needs.of_failure(message, where.device, where.capability, where.source,
                                module if kind == "import_error" else "")
        if need is not None:
            return {"status": need.status, "kind": "needs", "title": f"the submission {need.title}",
                    "hint": need.hint, "message": message}
    status = STATUS_BY_KIND.get(kind, Status.ERROR)
    titles = {
        "syntax_error": "the submission has a syntax error",
        "import_error": f"the submission imports {module!r}, which is not installed here",
        "missing_entry": "the submission defines no custom_kernel(data)",
        "needs_gpu": "the submission needs a GPU",
        "group": "a rank's worker could not join the other ranks",
    }
    title = titles.get(kind, "the submission failed while loading")
    hint = ""
    if kind == "import_error" and module.split(".")[0] in ("reference", "eval"):
        hint = "submissions cannot import the task's reference or evaluator"
    elif kind == "import_error":
        hint = (f"install the package that provides {module.split('.')[0]!r} where the "
                "harness runs, or remove the import")
    return {"status": status, "kind": kind, "title": title, "hint": hint, "message": message}


def compile_reason(message: str, stderr: str, staged: str, shown: str, capability: str) -> str:
    """The compiler's one-line reason, from its diagnostics when it printed any."""
    lines = [line.strip().replace(staged, shown) for line in stderr.splitlines()]
    errors = [line for line in lines if " error: " in line or line.startswith("error:")]
    passes = re.findall(r"Pipeline failed while executing \[`(\w+)`", stderr)
    last = message.strip().splitlines()[-1] if message.strip() else "compilation failed"
    reason = errors[0] if errors else last
    if passes:
        reason += f" (the compiler pass {passes[0]} failed)"
    text = f"a kernel does not compile for this GPU (sm_{capability}): {reason}"
    if "dot_scaled" in stderr + message or (passes and passes[0] == "TritonGPUAccelerateMatmul"):
        text += ("\nhint: block-scaled dots (tl.dot_scaled) with float8_e4m3fn scales, as NVFP4 "
                 "uses, need FP4 tensor cores (sm_100, B200); on other GPUs decode the FP4 "
                 "values in registers and use bf16 dots")
    return f"{text}\n(the exception: {last})"
