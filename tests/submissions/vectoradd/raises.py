from task import input_t, output_t


def _helper(a):
    return a.reshape(3, -1, 7)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return _helper(a) + b
