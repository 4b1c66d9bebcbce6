import itertools
import math

import pytest
import torch

from harness.judging.worker.structure import clone
from tasks.helpers import load_reference

ref = load_reference("nvfp4_group_gemm")
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


@pytest.mark.parametrize("m,k", [(72, 256), (200, 320), (128, 512), (1, 64)])
def test_blocked_layout_identity_for_odd_sizes(m, k):
    """reordered[i%32, (i%128)//32, i//128, j%4, j//4, l] == sf[i, j, l], also when M is not
    a multiple of 128 and K/16 not a multiple of 4 (k=320: 20 blocks)."""
    gen = torch.Generator().manual_seed(3)
    sf = ref._scales(1, m, k, gen, "cpu")
    blocked = ref.to_blocked(sf, gen, "cpu")
    rest_m, rest_k = math.ceil(m / 128), math.ceil(math.ceil(k / 16) / 4)
    assert tuple(blocked.shape) == (32, 4, rest_m, 4, rest_k, 1)
    # a permuted view of a contiguous [L, rest_m, rest_k, 32, 4, 4], as the public version has it
    assert blocked.stride() == (16, 4, rest_k * 512, 1, 512, rest_m * rest_k * 512)
    for i, j in itertools.product(range(m), range(sf.shape[1])):
        got = blocked[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, 0].float()
        assert got == sf[i, j, 0].float()
    padding = blocked.float()[:, :, -1].reshape(-1)
    assert set(padding.unique().tolist()) <= {1.0, 2.0}


def naive_decode(x: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """Element by element, straight from the nibble encoding (independent of the reference)."""
    u = x.view(torch.uint8)[:, :, 0]
    rows, half = u.shape
    out = torch.empty(rows, half * 2)
    for r in range(rows):
        for b in range(half):
            byte = int(u[r, b])
            for nib, kk in ((byte & 0xF, 2 * b), (byte >> 4, 2 * b + 1)):
                value = E2M1[nib & 7] * (-1 if nib & 8 else 1)
                out[r, kk] = value * float(sf[r, kk // 16, 0])
    return out


def test_reference_agrees_with_a_naive_decode():
    data = ref.generate_input([8, 5], [16, 8], [64, 32], 2, seed=11, device="cpu")
    out = ref.ref_kernel(clone(data))
    for (a, b, _), (sfa, sfb), o in zip(data[0], data[1], out):
        expected = (naive_decode(a, sfa) @ naive_decode(b, sfb).T).to(torch.float16)
        assert torch.equal(o[:, :, 0], expected)


def test_values_ranges_and_layouts():
    data = ref.generate_input([96, 128], [128, 256], [256, 512], 2, seed=1111, device="cpu")
    abc, sf, sf_blocked, sizes = data
    assert sizes == [(96, 128, 256, 1), (128, 256, 512, 1)]
    a, b, c = abc[0]
    assert a.dtype == torch.float4_e2m1fn_x2 and tuple(a.shape) == (96, 128, 1)
    assert c.dtype == torch.float16 and tuple(c.shape) == (96, 128, 1)
    assert (a.view(torch.uint8) & 0b0100_0100).sum() == 0  # magnitudes in {0, .5, 1, 1.5}
    assert sf[0][0].device.type == "cpu" and tuple(sf[0][0].shape) == (96, 16, 1)
    assert set(sf[0][0].float().unique().tolist()) <= {1.0, 2.0}


def test_c_arrives_filled_with_noise():
    c = ref.generate_input([64], [64], [256], 1, seed=5, device="cpu")[0][0][2]
    assert c.float().std() > 0.5 and (c != 0).float().mean() > 0.99


def test_inputs_are_deterministic_per_seed():
    one = ref.generate_input([40], [64], [256], 1, seed=7, device="cpu")
    two = ref.generate_input([40], [64], [256], 1, seed=7, device="cpu")
    other = ref.generate_input([40], [64], [256], 1, seed=8, device="cpu")
    assert torch.equal(one[0][0][0].view(torch.uint8), two[0][0][0].view(torch.uint8))
    assert torch.equal(one[2][0][0].view(torch.uint8), two[2][0][0].view(torch.uint8))
    assert not torch.equal(one[0][0][0].view(torch.uint8), other[0][0][0].view(torch.uint8))


def test_check_rejects_bad_outputs():
    data = ref.generate_input([16, 8], [32, 16], [64, 64], 2, seed=2, device="cpu")
    good = [c.clone() for c in ref.ref_kernel(clone(data))]
    assert ref.check_implementation(data, good) == (True, "")
    assert "expected a list of 2" in ref.check_implementation(data, good[:1])[1]
    assert "shape" in ref.check_implementation(data, [good[0][:, :, 0], good[1]])[1]
    assert "dtype" in ref.check_implementation(data, [good[0].float(), good[1]])[1]
    nan = [good[0].clone(), good[1]]
    nan[0][0, 0, 0] = float("nan")
    assert not ref.check_implementation(data, nan)[0]
    off = [good[0] + 1, good[1]]
    ok, message = ref.check_implementation(data, off)
    assert not ok and "elements differ" in message


def test_work_per_case():
    w = ref.work(m=[80, 176], n=[4096, 4096], k=[7168, 7168])
    assert w["flops"] == 2 * (80 + 176) * 4096 * 7168
    assert w["bytes"] == sum((mi + 4096) * 7168 // 2 + (mi + 4096) * 448 + 2 * mi * 4096
                             for mi in (80, 176))
