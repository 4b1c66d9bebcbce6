import pytest
from conftest import ROOT

from harness.loading.screen import RULES, screen, worst


def rules(source):
    return {f.rule for f in screen(source)}


@pytest.mark.parametrize("source,rule", [
    ("import torch\ntorch.cuda.Event.elapsed_time = lambda s, e: 0\n", "patches-timing"),
    ("import time\ntime.perf_counter = lambda: 0\n", "patches-timing"),
    ("import torch\nsetattr(torch.cuda, 'synchronize', print)\n", "patches-timing"),
    # a module alias does not hide a patch (tests/adversarial/poll_hook.py)
    ("import time as _t\n_t.perf_counter = lambda: 0\n", "patches-timing"),
    ("import time as _t\nsetattr(_t, 'sleep', print)\n", "patches-timing"),
    ("import torch.cuda as tc\ntc.synchronize = print\n", "patches-timing"),
    ("import sys as s\nm = s.modules\n", "sys-modules"),
    ("import time\nx, time.sleep = 1, print\n", "patches-timing"),
    ("import time as t\nt = t\nt.perf_counter = print\n", "patches-timing"),  # laundered
    ("import time\n[a, *time.monotonic] = [1, print]\n", "patches-timing"),
    ("import gc as g\nx = g.get_objects()\n", "gc-walk"),
    ("import torch\ntorch.allclose = lambda *a: True\n", "patches-checker"),
    ("import sys\nsys.modules['torch'].x = 1\n", "sys-modules"),
    ("from reference import ref_kernel\n", "touches-harness"),
    ("import harness.judging.judge\n", "touches-harness"),
    ("import importlib\np = importlib.import_module('harness.judging.worker.protocol')\n",
     "touches-harness"),
    ("m = __import__('reference')\n", "touches-harness"),
    ("import importlib as il\nm = il.import_module('runner')\n", "touches-harness"),
    ("import threading as th\n", "threads"),
    ("import gc\nx = gc.get_objects()\n", "gc-walk"),
    ("import sys\nf = sys._getframe(1)\n", "frame-walk"),
    ("import torch\nclass L(torch.Tensor):\n    pass\n", "tensor-subclass"),
    ("import os\nos.system('pip install foo')\n", "installs-packages"),
    ("c = {}\ndef f(x):\n    k = id(x)\n    if k in c:\n        return c[k]\n", "cache-by-id"),
    ("c = {}\ndef f(a):\n    return c.get(a.data_ptr())\n", "cache-by-pointer"),
    ("import hashlib\nk = hashlib.sha1(b'x').hexdigest()\n", "cache-by-content"),
    ("import subprocess\n", "spawns-processes"),
    ("import threading\n", "threads"),
    ("import _thread\n", "threads"),
    ("import torch\ns = torch.cuda.Stream()\ndef f():\n    with s:\n        g()\n",
     "side-streams"),
    ("import os\nos.write(5, b'x')\n", "writes-fds"),
    ("import os\nprint(os.environ)\n", "reads-environment"),
    ("import os\nos._exit(0)\n", "exits-process"),
])
def test_each_rule_matches(source, rule):
    assert rule in rules(source)


def test_every_rule_explains_itself():
    for rule in RULES:
        assert rule.severity in ("hard", "flag", "info") and len(rule.explanation) > 20


def test_pointer_use_without_a_cache_is_fine():
    source = "def f(a, lib):\n    ptr = a.data_ptr()\n    lib.launch(ptr)\n"
    assert "cache-by-pointer" not in rules(source)


@pytest.mark.parametrize("path", sorted((ROOT / "submissions").rglob("*.py")), ids=lambda p: p.name)
def test_honest_examples_are_clean(path):
    findings = [f for f in screen(path.read_text()) if f.severity != "info"]
    assert findings == [], findings


def test_syntax_errors_screen_to_nothing():
    assert screen("def (:\n") == [] and worst([]) is None


def test_an_alias_of_one_source_does_not_carry_into_the_next():
    """The aliases are read per screened source: `t` means `time` only where imported so."""
    assert "patches-timing" in rules("import time as t\nt.sleep = print\n")
    assert "patches-timing" not in rules("t = object()\nt.sleep = print\n")


@pytest.mark.parametrize("source", [
    "import time as t\nfor t in params:\n    t.grad = None\n",  # a loop variable named t
    "import time as t\ndef f(t):\n    t.sleep = 1\n",  # a parameter named t
    "import time as t\nwith open('x') as t:\n    t.mode2 = 1\n",
    "import time as t\nxs = [t.grad for t in ps]\n",
    "import torch.backends.cudnn as cudnn\ncudnn.benchmark = True\n",  # honest settings
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
    "import numpy as np\nnp.x = 1\n",
    "import importlib\nm = importlib.import_module('triton.language')\n",
])
def test_honest_assignments_are_not_patches(source):
    """Backend settings are the submission's own business (they do not reach the judge,
    another process), and a name rebound in the source is not read as a module alias."""
    assert not {"patches-timing", "touches-harness"} & rules(source)


# Each family of cheats kernelguard knows, written here, with the rule that names it.
CHEATS = {
    "output-replay": (
        "_cache = {}\n"
        "def custom_kernel(data):\n"
        "    key = tuple(data[0].shape)\n"
        "    if key in _cache:\n"
        "        return _cache[key]\n"
        "    out = data[0] + data[1]\n"
        "    _cache[key] = out\n"
        "    return out\n"),
    "output-replay ": (  # unkeyed: the first result handed back for ever
        "_last = None\n"
        "def custom_kernel(data):\n"
        "    global _last\n"
        "    if _last is None:\n"
        "        out = data[0] + data[1]\n"
        "        _last = out\n"
        "    return _last\n"),
    "fake-results": (
        "import os\n"
        "def custom_kernel(data):\n"
        "    os.write(1, b'')\n"
        "    print('benchmark.0.mean: 1.0')\n"
        "    return data[0]\n"),
    "dynamic-code": (
        "import base64\n"
        "exec(base64.b64decode('cHJpbnQoMSk=').decode())\n"),
    "decodes-blobs": (
        "import zlib\n"
        "code = zlib.decompress(b'x')\n"),
    "evaluator-mode": (
        "import sys\n"
        "def custom_kernel(data):\n"
        "    if sys.argv[-1] == 'benchmark':\n"
        "        return data[0]\n"
        "    return data[0] + data[1]\n"),
    "evaluator-mode ": (
        "import os\n"
        "FAST = os.environ.get('POPCORN_FD') is not None\n"),
    "counts-calls": (
        "calls = 0\n"
        "def custom_kernel(data):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    if calls > 3:\n"
        "        return data[0]\n"
        "    return data[0] + data[1]\n"),
    "hard-coded-shapes": (
        "import torch\n"
        "def custom_kernel(data):\n"
        "    a, b = data\n"
        "    if a.shape == (4096, 4096) and b.size(0) == 4096:\n"
        "        return torch.load('answer_4096.pt')\n"
        "    return a + b\n"),
    "cuda-graphs": (
        "import torch\n"
        "g = torch.cuda.CUDAGraph()\n"
        "def custom_kernel(data):\n"
        "    g.replay()\n"
        "    return data[0]\n"),
    "side-streams": (
        "import torch\n"
        "s = torch.cuda.Stream()\n"
        "def custom_kernel(data):\n"
        "    with torch.cuda.stream(s):\n"
        "        out = data[0] + data[1]\n"
        "    return out\n"),
    "reads-environment": (
        "import os\n"
        "def custom_kernel(data):\n"
        "    return [os.environ[k] for k in os.environ]\n"),
}


@pytest.mark.parametrize("rule", sorted(CHEATS))
def test_each_family_of_cheats_is_named(rule):
    assert rule.strip() in rules(CHEATS[rule])


# What honest contest submissions do, which no rule may flag: the code's effect, not its look.
HONEST_IDIOMS = {
    "a side stream joined before returning": (
        "import torch\n"
        "side = torch.cuda.Stream()\n"
        "def custom_kernel(data):\n"
        "    side.wait_stream(torch.cuda.current_stream())\n"
        "    with torch.cuda.stream(side):\n"
        "        out = data[0] + data[1]\n"
        "    torch.cuda.current_stream().wait_stream(side)\n"
        "    return out\n"),
    "an aliasing check by pointer": (
        "def custom_kernel(data):\n"
        "    a, b, out = data\n"
        "    assert out.data_ptr() not in (a.data_ptr(), b.data_ptr())\n"
        "    return out\n"),
    "a tuning knob from the environment": (
        "import os\n"
        "BLOCK = int(os.environ.get('BLOCK_M', '128'))\n"
        "WARPS = int(os.getenv('NUM_WARPS', '4'))\n"
        "DEBUG = os.environ['KERNEL_DEBUG'] if 'KERNEL_DEBUG' in os.environ else ''\n"),
    "compiled kernels cached by shape": (
        "_kernels = {}\n"
        "def custom_kernel(data):\n"
        "    a, b = data\n"
        "    key = (a.shape, a.dtype)\n"
        "    if key not in _kernels:\n"
        "        _kernels[key] = build(*key)\n"
        "    kernel = _kernels[key]\n"
        "    return kernel(a, b)\n"),
    "output buffers kept by shape and rewritten every call": (
        "import torch\n"
        "_buffers = {}\n"
        "def custom_kernel(data):\n"
        "    a, b = data\n"
        "    out = _buffers.get(a.shape)\n"
        "    if out is None:\n"
        "        out = _buffers.setdefault(a.shape, torch.empty_like(a))\n"
        "    torch.add(a, b, out=out)\n"
        "    return out\n"),
    "regular expressions and torch.compile": (
        "import re\nimport torch\n"
        "NAME = re.compile(r'^k_')\n"
        "fast_add = torch.compile(lambda a, b: a + b)\n"),
    "a literal evaluated": "SIZES = eval('[64, 128, 256]')\n",
    "a counter that only counts": (
        "calls = 0\n"
        "def custom_kernel(data):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    return data[0] + data[1]\n"),
    "shape dispatch of configs": (
        "def custom_kernel(data):\n"
        "    a, b = data\n"
        "    m, n = a.shape\n"
        "    cfg = (128, 64) if m == 7168 and n == 4096 else (64, 64)\n"
        "    return launch(a, b, *cfg)\n"),
    "an empty input answered empty, by shape": (
        "import torch\n"
        "def custom_kernel(data):\n"
        "    a, b = data\n"
        "    if a.shape[0] == 0:\n"
        "        return torch.empty_like(a)\n"
        "    cfg = CONFIGS[a.shape] if a.shape == (128, 64) else DEFAULT\n"
        "    return launch(a, b, cfg)\n"),
    "a benchmark word outside a comparison": (
        "def custom_kernel(data):\n"
        "    '''Tuned on the benchmark shapes.'''\n"
        "    return data[0]\n"),
}


def honest_corpus() -> list[tuple[str, str]]:
    """The idioms above, every example under submissions/, and the two contest
    submissions in ../shared/seeds where the project's shared folder is there."""
    files = sorted((ROOT / "submissions").rglob("*.py"))
    files += sorted((ROOT.parent / "shared" / "seeds").glob("*.py"))
    return list(HONEST_IDIOMS.items()) + [(str(p.relative_to(p.parents[1])), p.read_text())
                                          for p in files]


@pytest.mark.parametrize("name,source", honest_corpus(), ids=lambda x: x[:40])
def test_honest_idioms_are_not_flagged(name, source):
    findings = [(f.rule, f.line) for f in screen(source) if f.severity != "info"]
    assert findings == [], name


def test_docs_integrity_lists_every_rule():
    text = (ROOT / "docs" / "integrity.md").read_text()
    missing = [r.name for r in RULES if f"`{r.name}`" not in text]
    assert missing == []
