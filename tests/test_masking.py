"""harness.judging.measure.masking: the XOR mask of timing.rehearse_late's fresh inputs."""

import subprocess
import sys

import pytest
import torch
from conftest import gpu

from harness.judging.measure.masking import copy_spans, stream_seed, xor_mask


def _bytes(t: torch.Tensor) -> bytes:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [
        torch.randn(64, 33, generator=g),
        torch.randint(-9, 9, (1000,), generator=g, dtype=torch.int64),
        torch.randn(40, 24, generator=g).to(torch.float16).t(),       # strided
        torch.randn(30, generator=g)[::3],                             # a step
        torch.ones(2000, dtype=torch.bool),
        torch.tensor(3.5),                                             # 0-d
        torch.zeros(0, 4),                                             # empty
        torch.randn(8, generator=g).to(torch.complex64),
        torch.arange(12, dtype=torch.uint8).reshape(3, 4).expand(5, 3, 4),  # stride 0
    ]


def test_masking_twice_with_one_key_gives_back_every_byte():
    ts = _inputs()
    before = [_bytes(t) for t in ts]
    xor_mask(ts, 123456789)
    changed = [_bytes(t) != b for t, b in zip(ts, before) if t.numel() > 1]
    assert all(changed)  # every tensor of more than one element reads otherwise
    xor_mask(ts, 123456789)
    assert [_bytes(t) for t in ts] == before


def test_another_key_does_not_unmask_even_one_differing_above_32_bits():
    """The stream's seed is a 64-bit digest of the whole key: keys that agree in their low
    32 bits (all that an mt19937 seed would keep) draw other bytes, on the CPU too."""
    for other in (2, 1 + (7 << 32)):
        ts = _inputs()[:2]
        before = [_bytes(t) for t in ts]
        xor_mask(ts, 1)
        xor_mask(ts, other)
        assert all(_bytes(t) != b for t, b in zip(ts, before))
    assert stream_seed(1, "cpu") != stream_seed(1 + (7 << 32), "cpu")
    assert stream_seed(1, "cpu") != stream_seed(1, "cuda")


def test_one_stream_per_sample_in_order():
    """The judge masks the sample's tensors as one sequence, the worker unmasks the same
    sequence: the same tensors in another order do not come back."""
    first, second = _inputs()[:2], _inputs()[2:4]
    before = [_bytes(t) for t in first + second]
    xor_mask(first + second, 99)
    xor_mask(second + first, 99)
    assert [_bytes(t) for t in first + second] != before


def test_span_bytes_copy_keeps_masked_bools_and_gaps():
    """A masked bool holds bytes other than 0 and 1: copied as values they would be lost,
    so the judge copies masked twins into the slots as bytes."""
    src = [torch.arange(10) % 3 == 0, torch.arange(30, dtype=torch.int64).reshape(5, 6)[:, 1:4]]
    plain = [t.clone() for t in src]
    dst = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype) for t in src]
    xor_mask(src, 5)
    copy_spans(dst, src)
    xor_mask(dst, 5)
    assert all(torch.equal(a, b) for a, b in zip(dst, plain))


@pytest.mark.slow
def test_the_same_key_draws_the_same_mask_in_another_process():
    """Judge and worker are two processes: each draws the stream from the key."""
    t = torch.zeros(4096, dtype=torch.uint8)
    xor_mask([t], 2024)
    code = ("import torch; from harness.judging.measure.masking import xor_mask; "
            "t = torch.zeros(4096, dtype=torch.uint8); xor_mask([t], 2024); "
            "print(t.numpy().tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == t.numpy().tobytes().hex()


def test_a_submission_replacing_xor_later_never_sees_the_mask(monkeypatch):
    """The functions are taken as the module is imported, before any submission: one that
    replaces Tensor.bitwise_xor_ (to catch the stream as the worker unmasks) is not called."""
    seen = []
    monkeypatch.setattr(torch.Tensor, "bitwise_xor_", lambda self, other: seen.append(other))
    monkeypatch.setattr(torch, "frombuffer", lambda *a, **k: pytest.fail("frombuffer replaced"))
    t = torch.arange(16.0)
    xor_mask([t], 5)
    assert not seen and not torch.equal(t, torch.arange(16.0))


def test_cpu_tensors_on_a_gpu_run_draw_their_stream_on_the_gpu():
    """draw_on="cuda" (a GPU run, both ends): a CPU tensor's bytes come from a generator on
    the GPU (Philox, seeded from the key's CPU seed) and are copied to the CPU, not from
    SHAKE-256 (nvfp4's some 227 MB a sample); applied twice, the bytes are back. Faked
    here with CPU generators that note the device asked for."""
    from dataclasses import replace

    from harness.judging.measure.masking import _TORCH

    asked = []

    def randint(low, high, size, dtype, device, generator):
        asked.append(device)
        return torch.randint(low, high, size, dtype=dtype, generator=generator)

    fns = replace(_TORCH, generator=lambda device: torch.Generator(),
                  randint=randint, to=lambda t, device: t.clone())
    plain = torch.arange(1000, dtype=torch.float32)
    masked = plain.clone()
    xor_mask([masked], 99, fns, draw_on="cuda")
    assert asked == ["cuda"] and not torch.equal(masked, plain)
    shake = plain.clone()
    xor_mask([shake], 99)  # the SHAKE-256 stream: another one
    assert not torch.equal(shake, masked)
    xor_mask([masked], 99, fns, draw_on="cuda")
    assert torch.equal(masked, plain)


@gpu
def test_the_gpu_drawn_stream_round_trips_a_cpu_tensor():
    from harness.judging.measure.masking import draw_device

    assert draw_device() == "cuda"
    plain = torch.randn(4096)
    masked = plain.clone()
    xor_mask([masked], 12345, draw_on="cuda")
    assert not torch.equal(masked, plain)
    xor_mask([masked], 12345, draw_on="cuda")
    assert torch.equal(masked, plain)


def test_cpu_tensors_alone_are_left_unmasked_on_request():
    """timing.mask_cpu_inputs: a GPU tensor (any device but the CPU; here `meta`) is
    always masked, a CPU tensor unless the setting is false."""
    from harness.judging.measure.masking import masks

    gpu, cpu = torch.empty(1, device="meta"), torch.empty(1)
    assert masks(gpu, False) and masks(gpu, True) and masks(cpu, True)
    assert not masks(cpu, False)


def test_host_stream_falls_back_to_a_fresh_copy_where_nothing_can_be_pinned():
    """Without a GPU no page-locked buffer can be taken: the stream's copy is a fresh tensor
    (the kept buffer stays unset), its bytes those drawn."""
    from harness.judging.measure.masking import HostStream

    try:
        torch.empty(1, pin_memory=True)
        pytest.skip("pinning works here")
    except RuntimeError:
        pass
    host = HostStream()
    drawn = torch.arange(300, dtype=torch.int16).to(torch.uint8)
    first = host.copy(drawn)
    assert torch.equal(first, drawn) and host.buffer is None and not host.reuse
    assert torch.equal(host.copy(drawn), drawn) and host.buffer is None


@gpu
def test_host_stream_reuses_one_pinned_buffer_and_grows_it():
    """On a GPU the stream lands in one page-locked buffer, kept across samples and grown
    for a larger one; a masking through it unmasks as one through a fresh copy does."""
    from harness.judging.measure.masking import HostStream

    host = HostStream()
    small = torch.randint(0, 256, (1000,), dtype=torch.uint8, device="cuda")
    a = host.copy(small)
    assert a.is_pinned() and torch.equal(a, small.cpu())
    b = host.copy(small.flip(0))
    assert b.data_ptr() == a.data_ptr() and torch.equal(b, small.flip(0).cpu())
    large = torch.randint(0, 256, (5000,), dtype=torch.uint8, device="cuda")
    assert torch.equal(host.copy(large), large.cpu()) and host.buffer.numel() == 5000
    ts = _inputs()
    before = [_bytes(t) for t in ts]
    xor_mask(ts, 77, draw_on="cuda", host=host)
    xor_mask(ts, 77, draw_on="cuda", host=HostStream(reuse=False))
    assert [_bytes(t) for t in ts] == before
