"""The judge and its worker: one evaluation, run in two processes, timed and checked."""
