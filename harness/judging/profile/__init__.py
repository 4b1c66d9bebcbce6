"""Profile mode: the framework profiler and Nsight Compute."""
