"""vectoradd, with a C++ library that torch's cpp_extension.load builds at import (in the
worker, with the compiler the machine names: harness/judging/sandbox/sandbox.py): the build
and the build folder (TORCH_EXTENSIONS_DIR) of load_inline's, from a source that includes
none of torch's headers, so that it builds in a second rather than in twenty."""
import os
from pathlib import Path

import torch
from torch.utils.cpp_extension import load

SOURCE = 'extern "C" int answer() { return 42; }\n'


def _source() -> str:
    """The source, written once beside the builds (a path that stays, as load_inline's
    does: a rerun then finds its build up to date)."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or str(Path.home() / ".cache" / "torch_extensions")
    path = Path(root) / "answer_src" / "answer.cpp"
    if not path.is_file() or path.read_text() != SOURCE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SOURCE)
    return str(path)


_library = load(name="answer_cpp", sources=[_source()], is_python_module=False, verbose=False)


def custom_kernel(data):
    a, b = data
    return torch.add(a, b)
