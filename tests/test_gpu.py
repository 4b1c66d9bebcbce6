"""Verdicts and examples on the GPU (skipped without one; run on the H200)."""

import pytest
from conftest import BAD, SHARED, case_statuses, gpu, needs_shared

pytestmark = gpu


def test_cuda_fault_is_contained_and_the_harness_carries_on(cli):
    r = cli("submit", str(BAD / "cuda_oob.py"), "--task", "vectoradd", "--mode", "test",
            "--timeout", "60")
    assert r.rc == 3
    statuses = case_statuses(r.doc)
    assert statuses[0] == "CUDA error" and len(statuses) == 4  # every case got a verdict
    assert "illegal memory access" in r.doc["phases"][0]["cases"][0]["message"]
    after = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test")
    assert after.rc == 0  # the GPU is still usable


def test_kernel_that_does_not_compile(cli):
    r = cli("submit", str(BAD / "compile_fail.py"), "--task", "vectoradd", "--mode", "test")
    assert r.rc == 1 and case_statuses(r.doc)[0] == "compile error"
    assert "power of 2" in r.doc["phases"][0]["cases"][0]["message"]


@pytest.mark.parametrize("arch,passes", [("9.0a", True), ("9.0", False)])
def test_a_load_inline_cuda_build_targets_what_the_machine_names(cli, arch, passes):
    """A CUDA extension built with load_inline in the worker, for the target the judge's
    TORCH_CUDA_ARCH_LIST names (the H200 machines: 9.0a, which wgmma needs): the kernel adds
    only when built for sm_90a."""
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (sm_90)")
    r = cli("submit", str(BAD / "load_inline_cuda_sm90a.py"), "--task", "vectoradd",
            "--mode", "test", "--timeout", "300", env={"TORCH_CUDA_ARCH_LIST": arch})
    assert (r.rc == 0) == passes, r.out
    assert set(case_statuses(r.doc)) == ({"passed"} if passes else {"failed"})


@needs_shared
def test_nvfp4_seed_does_not_compile_on_hopper(cli):
    r = cli("submit", str(SHARED / "seeds" / "nvfp4_group_gemm_dot_scaled.py"),
            "--task", "nvfp4_group_gemm", "--mode", "test")
    assert r.rc == 1
    message = r.doc["phases"][0]["cases"][0]["message"]
    assert case_statuses(r.doc)[0] == "compile error"
    assert "does not compile for this GPU (sm_90)" in message
    assert "TritonGPUAccelerateMatmul" in message and "sm_100" in message
    assert "/tmp/" not in message.splitlines()[0]  # the submission's own name, not a staging path
    assert "Traceback (most recent call last)" not in r.out


@needs_shared
def test_mxfp4_seed_names_aiter_on_the_gpu(cli):
    r = cli("submit", str(SHARED / "seeds" / "mxfp4_mm_fused_quant_aiter.py"),
            "--task", "mxfp4_mm", "--mode", "test")
    assert r.rc == 1 and "amd-aiter" in r.doc["load_error"]["hint"]


@pytest.mark.parametrize("path", [
    "submissions/vectoradd/add_torch.py", "submissions/vectoradd/add_triton.py",
    "submissions/nvfp4_group_gemm/torch_dequant.py", "submissions/nvfp4_group_gemm/triton_hopper.py",
    "submissions/mxfp4_mm/torch_dequant.py", "submissions/mxfp4_mm/triton_dot_scaled.py",
])
def test_examples_pass_every_test_on_the_gpu(cli, path):
    r = cli("submit", path, "--mode", "test")
    assert r.rc == 0, r.out
    assert "CUDA events" in r.out


@pytest.mark.parametrize("path", ["submissions/vectoradd/add_triton.py",
                                  "submissions/vectoradd/add_torch.py"])
def test_benchmark_mode_uses_events_and_is_not_flagged(cli, path):
    """Honest code unflagged on every case, the scored samples' clocks
    (`integrity.scored_clocks`) among the checks."""
    r = cli("submit", path, "--mode", "benchmark")
    assert r.rc == 0, r.out
    for c in r.doc["phases"][0]["cases"]:
        assert c["flags"] == [] and c["stats"]["calls"] >= 10
        assert 0 < c["integrity"]["speed_of_light_fraction"] <= 1
        # the scored samples in order, with the worker's clock; probes not among them
        ns, host = c["samples"]["ns"], c["samples"]["host_ns"]
        assert len(ns) == len(host) == c["stats"]["calls"]
        assert sum(ns) / len(ns) == pytest.approx(c["score_ns"], rel=1e-4) and min(host) > 0


def assert_honest(r) -> None:
    """Every case of a benchmark passed, unflagged."""
    assert r.rc == 0, r.out
    for c in r.doc["phases"][0]["cases"]:
        assert c["status"] == "passed" and c["flags"] == [], c


@pytest.mark.parametrize("path", ["submissions/vectoradd/add_torch.py",
                                  "submissions/vectoradd/add_triton.py",
                                  "submissions/nvfp4_group_gemm/triton_hopper.py"])
def test_honest_code_is_timed_unflagged(cli, path):
    """The scored samples' clocks and the rehearsal flag no honest case, nvfp4's CPU-side
    scale factors among the inputs."""
    assert_honest(cli("submit", path, "--mode", "benchmark"))


def test_the_rehearsal_cannot_answer_a_timed_call(cli):
    """The rehearsal runs before the next sample's inputs are written: what it precomputes
    is garbage, and the case fails."""
    from test_adversarial import CASE, CORPUS

    r = cli("submit", str(CORPUS / "rehearsal_precompute.py"), "--task", "vectoradd",
            "--mode", "benchmark", *CASE)
    assert r.rc == 1, r.out
    assert {c["status"] for p in r.doc["phases"] for c in p["cases"]} == {"failed"}


