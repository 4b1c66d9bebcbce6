"""The C library, loaded once for the sandbox's system calls (Landlock, mounts, capabilities)."""

from __future__ import annotations

import ctypes


def _load() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - no C library to call
        return None


LIBC = _load()  # None where there is no C library to call
