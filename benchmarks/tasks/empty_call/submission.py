def custom_kernel(data):
    return data[0]
