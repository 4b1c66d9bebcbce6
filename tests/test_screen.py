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
    ("import torch\ns = torch.cuda.Stream()\n", "side-streams"),
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
