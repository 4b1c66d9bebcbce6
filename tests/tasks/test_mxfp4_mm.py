import pytest
import torch

from tasks.helpers import load_reference

ref = load_reference("mxfp4_mm")
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def quant_block(values):
    """Quantize one 32-element block; return (codes as floats with sign, scale exponent)."""
    x = torch.tensor(values + [0.0] * (32 - len(values)), dtype=torch.float32).reshape(1, 32)
    packed, scales = ref.quant_mxfp4(x)
    deq = ref.dequant_mxfp4(packed, scales)[0, : len(values)].tolist()
    return deq, int(scales[0, 0]) - 127


def test_scale_exponent_and_the_1_75_threshold():
    # amax 6.0 = 1.5 * 2^2: below 1.75, stays 2^2, e = 0
    assert quant_block([6.0])[1] == 0
    # amax 7.0 = 1.75 * 2^2: rounds up to 2^3, e = 1
    assert quant_block([7.0])[1] == 1
    # just below 1.75 * 2^2
    assert quant_block([6.99])[1] == 0
    # amax 1.0 = 2^0 -> e = -2
    assert quant_block([1.0])[1] == -2


def test_zeros_stay_zero_with_the_lowest_scale():
    deq, e = quant_block([0.0] * 32)
    assert e == -127 and deq == [0.0] * 32


@pytest.mark.parametrize("x,expected", [
    (0.25, 0.0), (0.26, 0.5), (0.75, 1.0), (0.74, 0.5), (1.25, 1.0), (1.26, 1.5),
    (1.75, 2.0), (1.74, 1.5), (2.5, 2.0), (2.51, 3.0), (3.5, 4.0), (3.49, 3.0),
    (5.0, 4.0), (5.01, 6.0),
])
def test_round_to_nearest_even_at_each_boundary(x, expected):
    """With amax 6 the scale is 1, so elements round directly on the e2m1 grid."""
    deq, e = quant_block([6.0, x, -x])
    assert e == 0
    assert deq[1] == expected and deq[2] == -expected


def test_saturation_at_six():
    # amax 6.9 -> scale 2^0 (6.9 < 7): 6.9 saturates at 6
    deq, e = quant_block([6.9])
    assert e == 0 and deq[0] == 6.0


def test_negative_values_and_packing_order():
    x = torch.zeros(1, 32)
    x[0, 0], x[0, 1] = 1.0, -6.0  # scale 1: codes 2 (1.0) and 0xF (-6)
    packed, _ = ref.quant_mxfp4(x)
    assert int(packed[0, 0]) == 0x2 | (0xF << 4)  # low nibble = even element


def test_shuffles_invert():
    q = torch.randint(0, 256, (64, 96), dtype=torch.uint8)
    assert torch.equal(ref.unshuffle_weight(ref.shuffle_weight(q)), q)
    s = torch.randint(0, 256, (300, 20), dtype=torch.uint8)
    sh = ref.shuffle_scales(s)
    assert tuple(sh.shape) == (512, 24)  # padded to 256 rows and 8 columns
    assert torch.equal(ref.unshuffle_scales(sh, 300, 20), s)


def test_inputs_deterministic_and_consistent():
    a = ref.generate_input(16, 256, 512, seed=3, device="cpu")
    b = ref.generate_input(16, 256, 512, seed=3, device="cpu")
    assert all(torch.equal(x.view(torch.uint8) if x.element_size() == 1 else x,
                           y.view(torch.uint8) if y.element_size() == 1 else y) for x, y in zip(a, b))
    q, s = ref.quant_mxfp4(a[1])
    assert torch.equal(a[2].view(torch.uint8), q)
    assert torch.equal(ref.unshuffle_weight(a[3].view(torch.uint8)), q)


def test_k_must_be_a_multiple_of_64():
    with pytest.raises(ValueError, match="multiple of 64"):
        ref.generate_input(8, 64, 96, seed=1, device="cpu")


@pytest.mark.slow
def test_check_rejections():
    data = ref.generate_input(8, 256, 512, seed=4, device="cpu")
    good = ref.ref_kernel(data)
    assert ref.check_implementation(data, good.clone())[0]
    assert "dtype" in ref.check_implementation(data, good.float())[1]
    assert "shape" in ref.check_implementation(data, good[:4])[1]
    bad = good.clone()
    bad[0, 0] = float("inf")
    assert not ref.check_implementation(data, bad)[0]
    # a quantizer that rounds ties up instead of to even fails the check
    a = data[0].float()
    ups = a.clone()
    assert not ref.check_implementation(data, (good.float() * 1.1).to(torch.bfloat16))[0]
    assert ups.shape == a.shape


@pytest.mark.parametrize("scaled,code", [
    (-0.1, 0x8), (-0.25, 0x8), (-0.0, 0x8), (-0.26, 0x9), (0.25, 0x0), (0.0, 0x0),
    (1.25, 0x2), (1.75, 0x4), (2.5, 0x4), (5.0, 0x6), (7.0, 0x7), (-7.0, 0xF),
])
def test_codes_match_amds_quantizer_bit_for_bit(scaled, code):
    """AMD's dynamic_mxfp4_quant ORs the sign bit in whatever the magnitude rounds to:
    a negative value that rounds to zero is "-0" (0x8), never 0x0 (codes from a bit-exact
    emulation of its kernel)."""
    assert int(ref.e2m1_codes(torch.tensor([scaled]))[0]) == code


def test_b_q_keeps_the_sign_of_negative_values_that_round_to_zero():
    x = torch.zeros(1, 32)
    x[0, 0], x[0, 1], x[0, 2] = 6.0, -0.1, 0.1  # scale 1: -0.1 -> 0x8, 0.1 -> 0x0
    packed, _ = ref.quant_mxfp4(x)
    assert int(packed[0, 0]) == 0x7 | (0x8 << 4) and int(packed[0, 1]) & 0xF == 0x0
