import torch

from tasks.helpers import load_reference

ref = load_reference("vectoradd")


def test_inputs():
    a, b = ref.generate_input(size=16, seed=4, device="cpu")
    assert a.dtype == b.dtype == torch.float16 and tuple(a.shape) == (16, 16)
    assert not torch.equal(a, b)
    again = ref.generate_input(size=16, seed=4, device="cpu")
    assert torch.equal(a, again[0])


def test_check():
    data = ref.generate_input(size=8, seed=1, device="cpu")
    assert ref.check_implementation(data, data[0] + data[1])[0]
    assert not ref.check_implementation(data, data[0] - data[1])[0]
