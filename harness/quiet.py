"""Warnings that tell a user nothing: silenced before torch is imported.

PyTorch's CPU wheels do not require NumPy; without it, `import torch` warns "Failed to
initialize NumPy" in every process that imports it (the judge, and the worker, whose
stderr is shown as the submission's). The harness never uses NumPy, and a submission
that does gets its own ModuleNotFoundError. `pyproject.toml` lists NumPy, so an install
has it; this covers a checkout run with the packages already on a machine.
"""

from __future__ import annotations

import warnings


def hush_numpy_warning() -> None:
    """Ignore torch's "Failed to initialize NumPy" warning (call before importing torch)."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy",
                            category=UserWarning)
