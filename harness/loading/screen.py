"""The static screen: named rules read from a submission's source before it runs.

Cheap and advisory: a `hard` match marks the submission suspicious (and, by default,
refuses it a rank); a `flag` is shown in every report; `info` only informs. Each rule
explains itself, so a contestant knows what was seen and why it matters.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

HARD, FLAG, INFO = "hard", "flag", "info"


@dataclass
class Finding:
    rule: str
    severity: str
    line: int
    excerpt: str
    explanation: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Rule:
    name: str
    severity: str
    explanation: str
    match: Callable[[ast.AST], bool]


def _dotted(node: ast.AST) -> str:
    """`a.b.c` for attribute chains and names, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        inner = _dotted(node.func)
        return ".".join([inner + "()"] + list(reversed(parts))) if inner else ""
    return ""


_ALIASES: dict[str, str] = {}  # `import time as t`: {"t": "time"} (set per screened source)


def _aliases(tree: ast.AST) -> None:
    """The module aliases of `import a.b as c` in `tree`, so that `c.x = ...` reads as
    `a.b.x` (an alias must not get a patch past the rules). A name the source also uses
    as a loop variable, a parameter or a `with`/`except` name is left out: there it names
    each item in turn, and an honest `t.grad = None` on a loop variable `t` must not read
    as a patch of `time`. A plain reassignment keeps the alias (`t = t` must not launder
    it)."""
    _ALIASES.clear()
    rebound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            _ALIASES.update({a.asname: a.name for a in node.names if a.asname})
        else:
            rebound |= _names_bound_per_item(node)
    for name in rebound:
        _ALIASES.pop(name, None)


def _names_bound_per_item(node: ast.AST) -> set[str]:
    """The names `node` binds to each item in turn: a parameter, a loop or comprehension
    variable, a `with ... as` or `except ... as` name."""
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.ExceptHandler):
        return {node.name} if node.name else set()
    target = (node.target if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension))
              else node.optional_vars if isinstance(node, ast.withitem) else None)
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target else set()


def _resolved(node: ast.AST) -> str:
    """`_dotted`, its first name read through the source's module aliases."""
    dotted = _dotted(node)
    head, dot, rest = dotted.partition(".")
    return _ALIASES[head] + dot + rest if head in _ALIASES else dotted


def _call_to(*names: str) -> Callable[[ast.AST], bool]:
    def match(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and any(
            _resolved(node.func) == n or _resolved(node.func).endswith("." + n) for n in names
        )
    return match


_IMPORTERS = ("importlib.import_module", "import_module", "__import__", "builtins.__import__",
              "importlib.__import__")


def _imports(*modules: str) -> Callable[[ast.AST], bool]:
    """An import of one of `modules` (or of a module in them), by statement or by name
    (`importlib.import_module("harness.judging")`, `__import__("harness")`)."""
    def match(node: ast.AST) -> bool:
        if isinstance(node, ast.Import):
            return any(a.name.split(".")[0] in modules for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] in modules and node.level == 0
        if isinstance(node, ast.Call) and _resolved(node.func) in _IMPORTERS and node.args:
            name = node.args[0]
            return (isinstance(name, ast.Constant) and isinstance(name.value, str)
                    and name.value.split(".")[0] in modules)
        return False
    return match


def _assigns_to(*prefixes: str) -> Callable[[ast.AST], bool]:
    """Assignment to an attribute of a module or class (monkey-patching)."""
    def match(node: ast.AST) -> bool:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and _dotted(node.func) == "setattr" and node.args:
            targets = [node.args[0]]
            return any((_resolved(t) + ".").startswith(prefixes) for t in targets)
        return any(isinstance(t, ast.Attribute) and _resolved(t).startswith(prefixes)
                   for t in _unpacked(targets))
    return match


def _unpacked(targets: list[ast.AST]) -> list[ast.AST]:
    """Assignment targets with tuples and lists unpacked (`a.x, b.y = ...`)."""
    out: list[ast.AST] = []
    for t in targets:
        if isinstance(t, ast.Starred):
            t = t.value
        out.extend(_unpacked(list(t.elts)) if isinstance(t, (ast.Tuple, ast.List)) else [t])
    return out


def _sys_modules(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and _resolved(node) == "sys.modules"


def _subclasses_tensor(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        _dotted(b) in ("torch.Tensor", "Tensor") for b in node.bases
    )


def _torch_function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and node.name in (
        "__torch_function__", "__torch_dispatch__")


_TAINTED: dict[str, set[str]] = {"id": set(), "data_ptr": set()}


def _is_key_call(node: ast.AST, attr: str) -> bool:
    if attr == "id":
        return isinstance(node, ast.Call) and _dotted(node.func) == "id"
    return isinstance(node, ast.Call) and _dotted(node.func).endswith("." + attr)


def _taint(tree: ast.AST) -> None:
    """Names assigned from expressions holding id() or data_ptr() (possible cache keys)."""
    for attr in _TAINTED:
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(_is_key_call(n, attr) for n in ast.walk(node.value)):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        _TAINTED[attr] = names


def _keyed_cache(attr: str) -> Callable[[ast.AST], bool]:
    """`id(x)` / `x.data_ptr()` (or a name made from them) used as a dict key or in a
    membership test."""

    def contains_key(node: ast.AST) -> bool:
        return any(_is_key_call(n, attr) or (isinstance(n, ast.Name) and n.id in _TAINTED[attr])
                   for n in ast.walk(node))

    def match(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            return contains_key(node.slice)
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
            # `p in (a.data_ptr(), b.data_ptr())`: an aliasing check against a literal, no cache
            literal = all(isinstance(c, (ast.Tuple, ast.List, ast.Set)) for c in node.comparators)
            return contains_key(node.left) and not literal
        if isinstance(node, ast.Call) and _dotted(node.func).endswith((".get", ".setdefault")):
            return bool(node.args) and contains_key(node.args[0])
        return False
    return match


@dataclass
class _Source:
    """What the rules below read of the whole source being screened: whether it joins
    its side streams (`_streams_joined`), the module-level names `custom_kernel` both
    stores its results in and returns from (`_replayed`), and the `os.environ` nodes read
    by a written name (`_env_uses`)."""

    joins: bool = True
    kept: set[str] = field(default_factory=set)
    env_by_name: set[int] = field(default_factory=set)


_SOURCE = _Source()


def _facts(tree: ast.AST) -> None:
    """Read `tree`'s facts into `_SOURCE`."""
    top = {t.id for n in getattr(tree, "body", []) if isinstance(n, (ast.Assign, ast.AnnAssign))
           for t in _unpacked(n.targets if isinstance(n, ast.Assign) else [n.target])
           if isinstance(t, ast.Name)}
    _SOURCE.joins = _streams_joined(tree)
    _SOURCE.kept = {name for fn in ast.walk(tree)
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and fn.name == "custom_kernel" for name in _replayed(fn, top)}
    _SOURCE.env_by_name = _env_uses(tree)


def _globals_of(fn: ast.AST) -> set[str]:
    """The names a function declares `global`."""
    return {n for g in ast.walk(fn) if isinstance(g, ast.Global) for n in g.names}


def _streams_joined(tree: ast.AST) -> bool:
    """Whether every function that runs work on a side stream joins it afterwards: after
    its last `with torch.cuda.stream(S)` block (or `torch.cuda.set_stream(S)`), the
    current stream waits on S (`wait_stream(S)`, an event's `wait_event`), or S or the
    device is synchronized. A synchronize before the side work joins nothing."""
    made = {_dotted(t) for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call) and _resolved(n.value.func).endswith("cuda.Stream")
            for t in n.targets}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        last_use, last_join = 0, 0
        for node in ast.walk(fn):
            if isinstance(node, ast.With) and any(
                    _dotted(i.context_expr) in made or isinstance(i.context_expr, ast.Call)
                    and i.context_expr.args and _dotted(i.context_expr.args[0]) in made
                    for i in node.items):
                last_use = max(last_use, node.end_lineno or node.lineno)
            if not isinstance(node, ast.Call):
                continue
            name, args = _dotted(node.func), [_dotted(a) for a in node.args]
            if name.endswith("set_stream") and set(args) & made:
                last_use = max(last_use, node.lineno)
            joins = (name.endswith(".wait_stream") and set(args) & made
                     or name.endswith((".wait_event", "cuda.synchronize"))
                     or name.endswith(".synchronize") and name.rsplit(".", 1)[0] in made)
            if joins:
                last_join = max(last_join, node.lineno)
        if last_use and last_join <= last_use:
            return False
    return True


def _replayed(fn: ast.FunctionDef | ast.AsyncFunctionDef, top: set[str]) -> set[str]:
    """Module-level names that `custom_kernel` both stores into and returns from
    (`return CACHE[k]`, `return CACHE.get(k)`, `return LAST` of a `global LAST`): outputs
    kept across calls and handed back. (A helper that builds a kernel once and returns it
    is not `custom_kernel`, and a kernel cached by shape is called, not returned.)"""
    declared = _globals_of(fn)
    returned = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value]

    def store_of(v: ast.AST) -> str | None:
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
            return v.value.id
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr == "get" and isinstance(v.func.value, ast.Name):
            return v.func.value.id
        return v.id if isinstance(v, ast.Name) and v.id in declared else None

    read_back = {store_of(v) for v in returned} & (top | declared)
    stored = {store_of(t) for node in ast.walk(fn) if isinstance(node, ast.Assign)
              for t in _unpacked(node.targets)}
    return {name for name in read_back & stored if name}


def _mode_names(node: ast.AST) -> bool:
    """A condition comparing with the evaluator's mode names, or a read of its protocol's
    environment (POPCORN_*): code that behaves otherwise when timed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.startswith("POPCORN_")
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    return any(isinstance(c, ast.Constant) and c.value in ("benchmark", "leaderboard", "profile")
               for c in sides)


_PROTOCOL = re.compile(r"^(check:\s*(pass|fail)|benchmark-count:|(benchmark|test|leaderboard)"
                       r"\.\d+\.(mean|std|err|best|worst|runs|spec|status))", re.M)


def _counts_calls(node: ast.AST) -> bool:
    """A function that counts its calls in a global and branches on the count."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    declared = _globals_of(node)
    counted = {a.target.id for a in ast.walk(node) if isinstance(a, ast.AugAssign)
               and isinstance(a.target, ast.Name) and a.target.id in declared}
    tests = [n.test for n in ast.walk(node) if isinstance(n, (ast.If, ast.IfExp, ast.While))]
    return any(isinstance(x, ast.Name) and x.id in counted for t in tests for x in ast.walk(t))


_MADE = ("torch.tensor", "torch.zeros", "torch.ones", "torch.full", "torch.load",
         "torch.from_numpy", "numpy.load", "np.load", "torch.as_tensor")


def _shape_answer(node: ast.AST) -> bool:
    """A branch on an input's shape equal to written numbers (`x.shape == (4096, 7168)`,
    `x.size(0) == 128`) whose body returns a tensor made from constants or a file: an
    answer prepared for a known case, not computed from this call's inputs. (Choosing a
    kernel's configuration by shape returns what the kernel computes: not this.)"""
    if not isinstance(node, ast.If) or not isinstance(node.test, (ast.Compare, ast.BoolOp)):
        return False
    compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)
                and any(isinstance(o, ast.Eq) for o in c.ops)]

    def shape_of_input(x: ast.AST) -> bool:
        return (isinstance(x, ast.Attribute) and x.attr == "shape" or isinstance(x, ast.Call)
                and isinstance(x.func, ast.Attribute) and x.func.attr == "size"
                or isinstance(x, ast.Subscript) and shape_of_input(x.value))

    def written(x: ast.AST) -> bool:
        return all(isinstance(e, ast.Constant) and isinstance(e.value, int)
                   for e in (x.elts if isinstance(x, (ast.Tuple, ast.List)) else [x]))

    if not any(any(shape_of_input(x) for x in (c.left, *c.comparators))
               and any(written(x) for x in (c.left, *c.comparators)) for c in compares):
        return False
    returns = [r.value for b in node.body for r in ast.walk(b)
               if isinstance(r, ast.Return) and r.value is not None]
    return any(_call_to(*_MADE)(v) for v in returns)


def _dynamic_code(node: ast.AST) -> bool:
    """exec, eval or compile of anything but a string written in the source."""
    if not (isinstance(node, ast.Call) and _resolved(node.func) in (
            "exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile")):
        return False
    return not (node.args and isinstance(node.args[0], ast.Constant))


def _env_read(node: ast.AST) -> bool:
    """The environment read wholesale or by a computed name; `os.environ.get("BLOCK_M")`
    and `os.getenv("X")` with a written name are tuning knobs, not flagged."""
    if isinstance(node, ast.Call) and _resolved(node.func) in (
            "os.getenv", "os.environ.get", "os.environ.setdefault"):
        return not (node.args and isinstance(node.args[0], ast.Constant))
    if isinstance(node, ast.Subscript) and _resolved(node.value) == "os.environ":
        return not isinstance(node.slice, ast.Constant)
    if isinstance(node, ast.Attribute) and _resolved(node) == "os.environ":
        return id(node) not in _SOURCE.env_by_name
    return False


def _env_uses(tree: ast.AST) -> set[int]:
    """The ids of the `os.environ` nodes read by a written name (`os.environ["X"]`,
    `os.environ.get("X")`, `"X" in os.environ`), which the rule above leaves be."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            found.add(id(node.value))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            found |= {id(c) for c in node.comparators}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "setdefault") and node.args \
                and isinstance(node.args[0], ast.Constant):
            found.add(id(node.func.value))
    return found


RULES: list[Rule] = [
    Rule("patches-timing", HARD,
         "assigns to a timing or synchronization function (torch.cuda.Event, synchronize, "
         "time.*): the reported time could be forged", _assigns_to(
             "torch.cuda.", "torch.Tensor.", "time.", "triton.testing.")),
    Rule("patches-checker", HARD,
         "assigns to torch comparison functions (allclose, isclose, equal...): an attempt to "
         "sway the check", _assigns_to("torch.allclose", "torch.isclose", "torch.equal",
                                       "torch.testing")),
    Rule("touches-harness", HARD,
         "imports the harness, the task's reference or its evaluator", _imports(
             "harness", "reference", "eval", "runner")),
    Rule("sys-modules", HARD,
         "reads or edits sys.modules: module surgery can replace the code that judges", _sys_modules),
    Rule("tensor-subclass", HARD,
         "defines a torch.Tensor subclass or __torch_function__: a lazy output could compute "
         "when read, outside the timed region", lambda n: _subclasses_tensor(n) or _torch_function(n)),
    Rule("gc-walk", HARD, "walks the garbage collector's objects, where references and inputs "
         "of other calls live", _call_to("gc.get_objects", "gc.get_referrers", "gc.get_referents")),
    Rule("frame-walk", HARD, "inspects call frames: a way to reach the caller's variables",
         _call_to("sys._getframe", "inspect.currentframe", "inspect.stack",
                  "inspect.getouterframes", "traceback.extract_stack")),
    Rule("installs-packages", HARD, "installs packages at run time",
         lambda n: isinstance(n, ast.Constant) and isinstance(n.value, str)
         and "pip install" in n.value),
    Rule("cache-by-id", FLAG, "uses id() as a cache key: outputs reused across calls are wrong "
         "here (inputs are fresh every call)", _keyed_cache("id")),
    Rule("cache-by-pointer", FLAG, "uses data_ptr() as a cache key: buffers are reused with new "
         "contents, so such a cache returns stale outputs", _keyed_cache("data_ptr")),
    Rule("cache-by-content", FLAG, "hashes tensor contents (hashlib, .tobytes()): a content-keyed "
         "cache never hits here (inputs are new every call) and costs time",
         lambda n: _call_to("hashlib.sha1", "hashlib.sha256", "hashlib.md5", "hashlib.blake2b",
                            "xxhash.xxh64", "xxhash.xxh3_64")(n) or (
             isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "tobytes")),
    Rule("spawns-processes", FLAG, "starts processes or forks: work could continue after the "
         "timed call", lambda n: _imports("subprocess", "multiprocessing")(n) or _call_to(
             "os.fork", "os.system", "os.popen", "os.spawnv", "os.execv", "pty.spawn")(n)),
    Rule("threads", FLAG, "starts threads: work could continue after custom_kernel returns",
         lambda n: _imports("threading", "concurrent", "_thread")(n)),
    Rule("side-streams", FLAG, "creates CUDA streams and never joins them (wait_stream, "
         "wait_event, synchronize): work left on them when custom_kernel returns is caught by "
         "the judge's clock", lambda n: not _SOURCE.joins
         and _call_to("torch.cuda.Stream", "cuda.Stream")(n)),
    Rule("writes-fds", FLAG, "writes to raw file descriptors or /proc: output the judge ignores",
         lambda n: _call_to("os.write", "os.dup2", "os.fdopen")(n) or (
             isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.startswith(("/proc/", "/dev/fd")))),
    Rule("reads-environment", FLAG, "reads the environment wholesale or by a computed name "
         "(no secret is there; a tuning knob read by its name is fine)", _env_read),
    Rule("evaluator-mode", HARD, "compares with the evaluator's mode names or reads its "
         "protocol's environment (POPCORN_*): code that behaves otherwise when it is timed",
         _mode_names),
    Rule("fake-results", HARD, "holds text in the form of the evaluator's result lines (check: "
         "pass, benchmark.N.mean): an attempt to forge a verdict or a time",
         lambda n: isinstance(n, ast.Constant) and isinstance(n.value, str)
         and _PROTOCOL.search(n.value) is not None),
    Rule("dynamic-code", HARD, "runs code made at run time (exec, eval or compile of a "
         "computed string): code the screen cannot read", _dynamic_code),
    Rule("decodes-blobs", FLAG, "decodes a blob at run time (base64, zlib, lzma, marshal, "
         "pickle): code or data the screen cannot read", _call_to(
             "base64.b64decode", "base64.b85decode", "base64.a85decode", "base64.b32decode",
             "zlib.decompress", "lzma.decompress", "bz2.decompress", "marshal.loads",
             "pickle.loads", "codecs.decode")),
    Rule("output-replay", FLAG, "keeps its outputs across calls and returns them again: inputs "
         "are new every call, so a replayed output is wrong (and its time is not the kernel's)",
         lambda n: isinstance(n, ast.Return) and n.value is not None and any(
             isinstance(x, ast.Name) and x.id in _SOURCE.kept for x in ast.walk(n.value))),
    Rule("hard-coded-shapes", FLAG, "returns a tensor made from constants or a file when an "
         "input has a given shape: an answer prepared for a known case, not computed",
         _shape_answer),
    Rule("counts-calls", FLAG, "counts its calls and branches on the count: the timed calls "
         "must do the same work as the checked ones", _counts_calls),
    Rule("cuda-graphs", FLAG, "captures and replays CUDA graphs: a replay reads the buffers "
         "captured, not this call's inputs, unless it copies them in first",
         _call_to("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables",
                  "cuda.CUDAGraph")),
    Rule("exits-process", FLAG, "ends the process directly", _call_to("os._exit", "os.kill",
                                                                      "os.abort")),
    Rule("signals", FLAG, "installs signal handlers", _imports("signal")),
    Rule("ctypes", INFO, "loads native code with ctypes", _imports("ctypes", "cffi")),
]


def screen(source: str) -> list[Finding]:
    """Every rule's matches in `source` (empty when the source does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    with _LOCK:  # the per-source facts (_SOURCE, aliases, taints) are module state
        return _screened(tree, source.splitlines())


_LOCK = threading.Lock()


def _screened(tree: ast.AST, lines: list[str]) -> list[Finding]:
    _taint(tree)
    _aliases(tree)
    _facts(tree)
    findings: list[Finding] = []
    seen: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        for rule in RULES:
            line = getattr(node, "lineno", 0)
            if (rule.name, line) in seen or not rule.match(node):
                continue
            seen.add((rule.name, line))
            excerpt = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            findings.append(Finding(rule.name, rule.severity, line, excerpt[:160], rule.explanation))
    findings.sort(key=lambda f: ([HARD, FLAG, INFO].index(f.severity), f.line))
    return findings


def worst(findings: list[Finding]) -> str | None:
    """The most severe severity among findings, or None."""
    for severity in (HARD, FLAG, INFO):
        if any(f.severity == severity for f in findings):
            return severity
    return None
