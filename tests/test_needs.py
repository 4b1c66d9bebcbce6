"""What a failure says this machine lacks (harness/judging/needs.py): the reading itself."""

from __future__ import annotations

import pytest

from harness.consts import Status
from harness.judging import needs

CUDA_GENERATOR = ('RuntimeError("Cannot get CUDA generator without ATen_cuda library. PyTorch '
                  'splits its backend into two shared libraries...")')


def test_a_cuda_generator_on_the_cpu_needs_a_gpu():
    need = needs.of_failure(CUDA_GENERATOR, "cpu")
    assert need is not None and need.status == Status.NEEDS_GPU and need.title == "needs a GPU"
    assert needs.of_failure(CUDA_GENERATOR, "cuda", "90") is None  # not the reason there


def test_load_inline_without_a_cuda_compiler_needs_a_gpu_or_rocm_for_hip_code():
    text = "OSError: CUDA_HOME environment variable is not set. Please set it"
    assert needs.of_failure(text, "cpu").title == "needs a GPU"
    hip = "os.environ['PYTORCH_ROCM_ARCH'] = 'gfx942'\n#include <hip/amd_detail/amd_hip_fp8.h>"
    need = needs.of_failure(text, "cpu", source=hip)
    assert need.status == Status.CANNOT_RUN and need.title == "needs a ROCm GPU"
    assert "HIP" in need.hint


@pytest.mark.parametrize("module,package", [
    ("cuda.bindings.driver", "cuda-python"), ("cutlass.cute", "nvidia-cutlass-dsl"),
    ("cv2", "opencv-python"),
])
def test_a_known_module_is_named_by_its_real_package(module, package):
    need = needs.missing_module(module, "cuda")
    assert need.status == Status.CANNOT_RUN and need.title == f"needs package {package!r}"
    assert module in need.hint


def test_gpu_packages_say_a_gpu_is_needed_too_on_the_cpu():
    assert needs.missing_module("cuda.bindings", "cpu").title == (
        "needs package 'cuda-python' and a GPU")
    assert needs.missing_module("cv2", "cpu").title == "needs package 'opencv-python'"


def test_aiter_needs_a_rocm_gpu_wherever_it_is_imported():
    need = needs.missing_module("aiter.ops.shuffle", "cuda")
    assert need.title == "needs a ROCm GPU and aiter" and "amd-aiter" in need.hint


def test_an_unknown_module_is_a_need_only_for_the_tasks_own_code():
    assert needs.missing_module("kernel_magic", "cpu") is None  # a submission's: its error
    need = needs.missing_module("kernel_magic", "cpu", unknown_too=True)
    assert need.title == "needs package 'kernel_magic'"
    # a file the folder lacks is the folder's fault, not the machine's
    assert needs.missing_module("utils", "cpu", unknown_too=True) is None


def test_a_blackwell_failure_on_an_older_gpu_needs_compute_capability_10():
    text = "RuntimeError: tcgen05 instructions require sm_100a"
    need = needs.of_failure(text, "cuda", "90")
    assert need.status == Status.CANNOT_RUN
    assert need.title == "needs compute capability 10.0 (B200)" and "sm_90" in need.hint
    assert needs.of_failure(text, "cuda", "100") is None  # a B200: the failure is real
    assert needs.of_failure("RuntimeError: wrong shape", "cuda", "90") is None


def test_an_exception_chain_is_read_through():
    try:
        try:
            import aiter  # noqa: F401 - not installed here
        except ModuleNotFoundError as inner:
            raise RuntimeError("the reference could not start") from inner
    except RuntimeError as exc:
        need = needs.of_exception(exc, "cpu")
    assert need is not None and need.title == "needs a ROCm GPU and aiter"


def test_a_plain_failure_needs_nothing():
    assert needs.of_exception(ValueError("bad case"), "cpu") is None
    assert needs.of_failure("ZeroDivisionError: division by zero", "cpu") is None


def test_a_long_message_is_cut_to_its_first_sentence():
    exc = RuntimeError("Cannot get CUDA generator without ATen_cuda library. PyTorch splits "
                       "its backend into two shared libraries: a CPU library and a CUDA "
                       "library; this error has occurred because ...")
    assert needs.brief(exc) == ("RuntimeError: Cannot get CUDA generator without ATen_cuda "
                                "library. [...]")
    assert needs.brief(ValueError("short")) == "ValueError: short"


def test_cublas_refusing_an_fp4_product_before_sm100_needs_a_b200():
    """As the nvidia nvfp4 references fail on an H100 (seen 2026-12-06): torch._scaled_mm on
    float4_e2m1fn_x2 data ends in CUBLAS_STATUS_NOT_SUPPORTED."""
    text = ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling "
            "`cublasLtMatmulAlgoGetHeuristic( ltHandle, ...)`")
    source = "res = torch._scaled_mm(a.view(torch.float4_e2m1fn_x2), b, scale_a, scale_b)"
    need = needs.of_failure(text, "cuda", "90", source)
    assert need.title == "needs compute capability 10.0 (B200)" and "FP4" in need.hint
    assert needs.of_failure(text, "cuda", "100", source) is None  # a real failure on a B200
    assert needs.of_failure(text, "cuda", "90", "torch.matmul(a, b)") is None  # not FP4
