"""What this machine lacks for a task or a submission: a GPU, a ROCm GPU and aiter, a
compute capability, a package. One place reads a failure's text and says what it needs.

A failure that only shows the machine lacks something is not the submission's fault nor
the task folder's: it gets a `needs a GPU` or `cannot run here` verdict that says what is
missing, whichever step (the reference's import, `generate_input`, the submission's import,
a call) found it. The worker imports this module too (its signs of a missing GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.consts import TASK_NEEDS, Status

# Text of exceptions raised where CUDA (or a GPU at all) is asked for and there is none.
GPU_SIGNS = (
    "Torch not compiled with CUDA enabled", "Found no NVIDIA driver", "active drivers",
    "cannot be accessed from Triton", "No CUDA GPUs are available", "CUDA driver",
    "libcuda", "no GPU", "cuda is not available",
    "Cannot access accelerator device",  # pin_memory() without a GPU
    "No CUDA GPU",  # the wording of some tasks' own evaluators
    "Cannot get CUDA generator",  # torch.Generator(device='cuda') without CUDA
    "CUDA_HOME environment variable is not set",  # torch.utils.cpp_extension.load_inline
)
# Source text that says the code is written for AMD's ROCm (HIP kernels, aiter).
_ROCM_SIGNS = ("PYTORCH_ROCM_ARCH", "<hip/", "hipLaunch", "import aiter", "from aiter",
               "__hip_")
# Failure text that names an architecture of compute capability 10 (B200, Blackwell).
_SM100 = re.compile(r"sm_?10\d|compute capability (?:of )?10|capability 10\.\d|tcgen05|"
                    r"blackwell|nvfp4 requires", re.IGNORECASE)

# Source text of code that multiplies FP4 data (NVFP4, MXFP4 through torch._scaled_mm).
_FP4 = re.compile(r"float4_?e2m1fn|nvfp4|mxfp4", re.IGNORECASE)
# Modules whose distribution on the package registry has another name, or that need a
# particular machine: module -> (the package to install, what it is, needs a GPU).
PACKAGES: dict[str, tuple[str, str, bool]] = {
    "cuda": ("cuda-python", "NVIDIA's CUDA Python bindings (cuda.bindings)", True),
    "cutlass": ("nvidia-cutlass-dsl", "NVIDIA's CuTe DSL", True),
    "cupy": ("cupy-cuda12x", "CuPy for CUDA 12", True),
    "tilelang": ("tilelang", "TileLang", True),
    "helion": ("helion", "PyTorch's Helion kernel language", True),
    "thunderkittens": ("thunderkittens", "ThunderKittens", True),
    "flash_attn": ("flash-attn", "FlashAttention", True),
    "pycuda": ("pycuda", "PyCUDA", True),
    "numba": ("numba", "Numba", False),
    "cv2": ("opencv-python", "OpenCV", False),
    "PIL": ("pillow", "Pillow", False),
    "sklearn": ("scikit-learn", "scikit-learn", False),
    "yaml": ("pyyaml", "PyYAML", False),
}
AITER = "aiter"
# The files of a task folder, by module name: one of them missing is the folder's fault.
_FOLDER_MODULES = {"task", "reference", "utils", "eval", "submission"}


@dataclass(frozen=True)
class Need:
    """What a run needs that this machine lacks: its status, its one-line title (`needs
    ...`) and a hint that says where it can run."""

    status: str
    title: str
    hint: str


def needs_gpu(text: str) -> bool:
    """Whether a failure's text says CUDA or a GPU was asked for where there is none."""
    return any(sign in text for sign in GPU_SIGNS)


def written_for_rocm(source: str) -> bool:
    """Whether code is written for AMD's ROCm (HIP kernels or aiter)."""
    return any(sign in source for sign in _ROCM_SIGNS)


def rocm(aiter: bool = True) -> Need:
    """Code written for AMD GPUs: HIP kernels, or aiter (AMD's ROCm kernel library)."""
    return Need(Status.CANNOT_RUN, "needs a ROCm GPU" + (" and aiter" if aiter else ""),
                "written for AMD GPUs (" + ("aiter, AMD's ROCm kernel library, published as "
                                           "'amd-aiter'" if aiter else "HIP kernels")
                + "); it runs on an AMD machine with ROCm and the harness's '[amd]' extra, "
                "not on this one")


def gpu() -> Need:
    return Need(Status.NEEDS_GPU, "needs a GPU",
                "it asks for CUDA (CUDA tensors or generators, GPU kernels, a CUDA compiler) "
                "and this run has no GPU: run it where one is visible")


def ranks(multi_gpu: bool, cases: list[dict], kind: str, gpus: int) -> Need | None:
    """What a multi-GPU task (`multi_gpu: true`, each case `world_size` ranks, one per
    GPU) needs that this run lacks; None where its ranks are judged here: on the CPU, in
    every mode (each rank a CPU worker, the group over gloo). On GPUs: the GPUs it needs
    beside the `gpus` this run has, else that only the CPU route judges it so far."""
    if not multi_gpu:
        return None
    world = max((int(c.get("world_size", 1)) for c in cases), default=1)
    if kind == "cuda" and world > gpus:
        return rank_gpus(Status.CANNOT_RUN, world, gpus,
                         f"a multi-GPU task (multi_gpu: true): each case runs world_size "
                         f"({world}) ranks, one per GPU, with a process group between them; "
                         "run it where that many GPUs are visible, or on the CPU "
                         "(--device cpu), where each rank is a CPU process")
    if kind == "cuda":
        return Need(Status.CANNOT_RUN, f"runs {world} ranks, judged on the CPU only so far",
                    "the harness judges a multi-GPU task's ranks on the CPU (--device cpu), "
                    "not yet on GPUs")
    return None


def rank_gpus(status: str, world: int, gpus: int, hint: str) -> Need:
    """The need of `world` ranks, a GPU each, where this run has `gpus`."""
    has = f"this run has {gpus} GPU{'s' if gpus != 1 else ''}" if gpus else "this run has no GPU"
    return Need(status, f"needs {world} GPUs, {has}", hint)


def missing_module(module: str, device: str, unknown_too: bool = False) -> Need | None:
    """The need behind an import of `module` that failed. A module the harness knows
    nothing of is a need only with `unknown_too` (a task's reference: its author meant a
    real package; a submission's may be a typo, its own error), and never one of a task
    folder's own file names (a file missing from the folder is the folder's fault)."""
    top = module.split(".")[0]
    if top == AITER:
        return rocm()
    known = PACKAGES.get(top)
    if known is None and (not unknown_too or top in _FOLDER_MODULES):
        return None
    package, what, wants_gpu = known or (top, "a package", False)
    title = f"needs package {package!r}"
    if wants_gpu and device != "cuda":
        title += " and a GPU"
    return Need(Status.CANNOT_RUN, title,
                f"it imports {module} ({what}), which is not installed here; install "
                f"{package!r} where the harness runs" + (", on a machine with an NVIDIA GPU"
                                                         if wants_gpu else ""))


def capability_need(text: str, capability: str | None, source: str = "") -> Need | None:
    """`needs compute capability 10.0` where this GPU is older (`capability`: "90" for
    sm_90) and the failure names a Blackwell architecture, or the library refused an
    operation on FP4 data the code uses (cuBLAS has no FP4 matrix product before sm_100),
    else None."""
    if not capability or not capability.isdigit() or int(capability) >= 100:
        return None
    refused_fp4 = "NOT_SUPPORTED" in text and _FP4.search(source)
    if not _SM100.search(text) and not refused_fp4:
        return None
    why = ("the library refused its FP4 operation (cuBLAS multiplies FP4 only from sm_100)"
           if refused_fp4 else "the failure names a Blackwell architecture (sm_100)")
    return Need(Status.CANNOT_RUN, "needs compute capability 10.0 (B200)",
                f"{why} and this GPU is sm_{capability}: it runs on a B200")


def of_failure(text: str, device: str, capability: str | None = None, source: str = "",
               module: str = "", task: bool = False) -> Need | None:
    """What a failure says this machine lacks, or None where it says nothing of the kind.

    `text`: the exception (type, message, traceback); `module`: the module an import
    failed to find; `source`: the code that failed (a submission's text, a task's
    reference), read for ROCm; `capability`: the GPU's, as "90"; `task`: the task's own
    code failed (any package it imports is a need)."""
    if module:
        need = missing_module(module, device, unknown_too=task)
        if need is not None:
            return need
    rocm_code = written_for_rocm(source)
    aiter = f"import {AITER}" in source or f"from {AITER}" in source
    if device != "cuda" and needs_gpu(text):
        return rocm(aiter) if rocm_code else gpu()
    if device == "cuda" and rocm_code and ("hip" in text.lower() or "rocm" in text.lower()):
        return rocm(aiter)
    return capability_need(text, capability, source) if device == "cuda" else None


def of_exception(exc: BaseException, device: str, capability: str | None = None,
                 source: str = "", task: bool = True) -> Need | None:
    """`of_failure` for an exception raised here (its chain read too: a task's code may
    wrap the failure that says what is missing)."""
    texts, module, seen = [], "", exc
    for _ in range(8):
        if seen is None:
            break
        texts.append(f"{type(seen).__module__}.{type(seen).__name__}: {seen}")
        if isinstance(seen, ModuleNotFoundError) and not module:
            module = seen.name or ""
        seen = seen.__cause__ or seen.__context__
    return of_failure("\n".join(texts), device, capability, source, module, task)


def brief(exc: BaseException) -> str:
    """An exception in a line: its type and its message's first sentence (torch's CUDA
    errors go on for a paragraph about linkers)."""
    text = (str(exc).strip().splitlines() or [""])[0]
    cut = text.find(". ", 40)
    if len(text) > 160 and cut > 0:
        text = text[:cut + 1] + " [...]"
    return f"{type(exc).__name__}: {text}"


class TaskNeeds(Exception):
    """The task's own code (its reference's import, `generate_input`, `ref_kernel`)
    failed because this machine lacks what it needs: not the folder's fault."""

    def __init__(self, need: Need, message: str) -> None:
        super().__init__(f"{need.title}: {message}")
        self.need, self.message = need, message

    def verdict(self) -> dict[str, str]:
        """The run's verdict (a load error of kind `task_needs`: never recorded)."""
        return {"status": self.need.status, "kind": TASK_NEEDS,
                "title": f"the task {self.need.title}", "hint": self.need.hint,
                "message": self.message}

