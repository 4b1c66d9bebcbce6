"""A task or a submission this machine cannot run gets one verdict that says what it needs,
through runner.py: the same status and exit code whichever step found it, the result
document and summary written, never recorded when the task's own code is what cannot run.

The folders are small ones of our own in the public (reference-kernels) format."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from conftest import cpu_only, public_format_folder

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

REFERENCE = """\
import torch
{imports}

def generate_input(size, seed):
    gen = torch.Generator(device={device!r})
    gen.manual_seed(seed)
    return torch.randn(size, generator=gen, device={device!r})

def ref_kernel(data):
    return data * 2

def check_implementation(data, output):
    ok = torch.allclose(output, ref_kernel(data))
    return ok, "" if ok else "values differ"
"""
DOUBLES = "def custom_kernel(data):\n    return data * 2\n"


def public_folder(root: Path, device: str = "cpu", imports: str = "") -> Path:
    return public_format_folder(root, REFERENCE.format(device=device, imports=imports),
                                ['{"size": 64, "seed": 1}'], ['{"size": 64, "seed": 2}'])


def submit(cli, tmp_path: Path, task: Path, code: str = DOUBLES, *extra: str):
    sub = tmp_path / "sub.py"
    sub.write_text(textwrap.dedent(code))
    summary = tmp_path / "summary.md"
    run = cli("submit", str(sub), "--task", str(task), "--device", "cpu", "--timeout", "60",
              "--summary-md", str(summary), *extra)
    run.summary = summary.read_text() if summary.exists() else ""
    return run


@cpu_only
def test_a_task_that_makes_its_inputs_on_cuda_needs_a_gpu_and_is_not_recorded(cli, tmp_path):
    task = public_folder(tmp_path / "cuda_inputs", device="cuda")
    r = submit(cli, tmp_path, task, DOUBLES, "--mode", "leaderboard", "--record")
    assert r.rc == 1, r.out  # as any submission that needs a GPU: not a usage error
    err = r.doc["load_error"]
    assert r.doc["status"] == "needs a GPU" and err["kind"] == "task_needs"
    assert err["title"] == "the task needs a GPU" and "Cannot get CUDA generator" in err["message"]
    assert "the task is broken" not in r.out and "needs a GPU" in r.out
    assert "needs a GPU" in r.summary
    assert "not recorded" in r.out and not r.doc["record"]  # nothing about the submission
    assert "Traceback" not in r.out


def test_a_reference_that_imports_aiter_needs_a_rocm_gpu_as_a_submission_would(cli, tmp_path):
    task = public_folder(tmp_path / "aiter_ref", imports="import aiter")
    by_task = submit(cli, tmp_path, task, DOUBLES, "--mode", "test")
    by_submission = submit(cli, tmp_path, public_folder(tmp_path / "plain"),
                           "import aiter\n" + DOUBLES, "--mode", "test")
    for r, who in ((by_task, "the task"), (by_submission, "the submission")):
        assert r.rc == 1, r.out  # the same cause, the same exit code, whichever found it
        assert r.doc["status"] == "cannot run here"
        assert r.doc["load_error"]["title"] == f"{who} needs a ROCm GPU and aiter"
        assert "amd-aiter" in r.doc["load_error"]["hint"]
        assert "cannot run here" in r.summary


def test_a_reference_that_imports_a_missing_package_names_it(cli, tmp_path):
    task = public_folder(tmp_path / "pkg_ref", imports="import kernel_lib_not_installed_here")
    r = submit(cli, tmp_path, task, DOUBLES, "--mode", "test")
    assert r.rc == 1 and r.doc["status"] == "cannot run here", r.out
    assert r.doc["load_error"]["title"] == (
        "the task needs package 'kernel_lib_not_installed_here'")


@pytest.mark.skipif(importlib.util.find_spec("cuda") is not None,
                    reason="NVIDIA's cuda-python is installed here")
def test_a_submission_importing_cuda_bindings_is_told_the_real_package(cli, tmp_path):
    task = public_folder(tmp_path / "plain")
    r = submit(cli, tmp_path, task, "import cuda.bindings.driver as cuda\n" + DOUBLES,
               "--mode", "test")
    assert r.rc == 1 and r.doc["status"] == "cannot run here", r.out
    assert r.doc["load_error"]["title"].startswith("the submission needs package 'cuda-python'")
    assert "install 'cuda'" not in r.out


@cpu_only
def test_a_hip_kernel_on_the_cpu_needs_a_rocm_gpu(cli, tmp_path):
    task = public_folder(tmp_path / "plain")
    r = submit(cli, tmp_path, task, """\
        import os
        os.environ['PYTORCH_ROCM_ARCH'] = 'gfx942'
        from torch.utils.cpp_extension import load_inline
        SRC = "#include <hip/amd_detail/amd_hip_bf16.h>\\n__global__ void k() {}"
        module = load_inline(name="hip_k", cpp_sources="void k();", cuda_sources=SRC,
                             functions=["k"])

        def custom_kernel(data):
            return data * 2
    """, "--mode", "test")
    assert r.rc == 1 and r.doc["status"] == "cannot run here", r.out
    assert r.doc["load_error"]["title"] == "the submission needs a ROCm GPU"


def test_a_reference_that_is_wrong_is_still_the_broken_task(cli, tmp_path):
    task = public_folder(tmp_path / "broken", imports="raise RuntimeError('typo in the folder')")
    r = submit(cli, tmp_path, task, DOUBLES, "--mode", "test")
    assert r.rc == 2 and "the task is broken" in r.out


OWN_EVAL_WITHOUT_A_GPU = """\
import os
log = os.fdopen(int(os.environ["POPCORN_FD"]), "w")
log.write("check: fail\\nerror: No CUDA GPU available. This script requires a GPU.\\n")
log.flush()
"""


@cpu_only
def test_an_own_evaluator_that_finds_no_gpu_needs_one(cli, tmp_path):
    task = tmp_path / "own"
    task.mkdir()
    (task / "eval.py").write_text(OWN_EVAL_WITHOUT_A_GPU)
    (task / "task.yml").write_text(textwrap.dedent("""\
        files:
          - {"name": "submission.py", "source": "@SUBMISSION@"}
          - {"name": "eval.py", "source": "eval.py"}
        lang: "py"
        tests:
          - {"n": 3}
        benchmarks:
          - {"n": 4}
    """))
    r = submit(cli, tmp_path, task, "def double(n):\n    return 2 * n\n", "--mode", "test")
    assert r.rc == 1 and r.doc["status"] == "needs a GPU", r.out
    assert r.doc["load_error"]["title"] == "the task needs a GPU"
    assert "No CUDA GPU available" in r.doc["load_error"]["message"]


@cpu_only
def test_a_check_that_moves_the_output_to_the_gpu_needs_one(cli, tmp_path):
    task = public_folder(tmp_path / "gpu_check")
    reference = (task / "reference.py").read_text().replace(
        "ok = torch.allclose(output, ref_kernel(data))",
        "ok = torch.allclose(output.cuda(), ref_kernel(data).cuda())")
    (task / "reference.py").write_text(reference)
    r = submit(cli, tmp_path, task, DOUBLES, "--mode", "test")
    assert r.rc == 1 and r.doc["status"] == "needs a GPU", r.out
    assert r.doc["load_error"]["title"] == "the task needs a GPU"
    assert "check_implementation" in r.doc["load_error"]["message"]
