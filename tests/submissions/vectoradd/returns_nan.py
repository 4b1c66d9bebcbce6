from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    c = a + b
    c.view(-1)[::7] = float("nan")
    return c
