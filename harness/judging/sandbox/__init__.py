"""The sandbox around the worker: Landlock, seccomp, limits, refusals and what is left."""
