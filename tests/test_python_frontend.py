"""The Python frontend: imports, device objects, events (docs/python-semantics.md)."""
from __future__ import annotations

from collections import Counter

import pytest

from gpulint.history import Access, Op
from gpulint.static.python import analyse


def histories(code: str):
    unit, skipped = analyse("t.py", code.encode())
    return {h.name: h for h in unit.histories}, unit


def findings(code: str, tmp_path, **settings) -> Counter:
    from conftest import run_file

    path = tmp_path / "t.py"
    path.write_text(code)
    return Counter((f.code, f.location.row) for f in run_file(path, **settings).findings)


def test_imports_resolved_whatever_the_alias() -> None:
    objs, _ = histories("""
import torch as T
from torch import zeros as Z
import cupy as cp
from numba import cuda as nc
from cuda.bindings import runtime as rt

def f(n, dev):
    a = T.empty(n, device=dev)
    b = Z(n, device="cuda:0")
    c = cp.ones(n)
    d = nc.device_array(n)
    err, e = rt.cudaMalloc(n)
    h = T.empty(n)              # host: not a device object
    return a, b, c, d, e
""")
    assert set(objs) == {"a", "b", "c", "d", "e"}
    assert objs["d"].kind == "raw" and objs["e"].kind == "device" and objs["a"].kind == "tensor"


def test_derived_values_and_host_results() -> None:
    objs, _ = histories("""
import torch
def f(x_host, device):
    x = x_host.to(device)
    y = x * 2
    z = y.sum()
    v = z.item()
    c = z.cpu()
    return v, c
""")
    assert {"x", "y", "z"} <= set(objs) and "v" not in objs and "c" not in objs


def test_initialising_factories_write_and_full_overwrites() -> None:
    objs, _ = histories("""
import torch
def f(n, device, src):
    a = torch.zeros(n, device=device)
    a.copy_(src)
    b = torch.empty(n, device=device)
    torch.add(src, 1, out=b)
    c = torch.ones(n, device=device)
    c += 1
    return a, b, c
""")
    a_ops = [(t.event.op, bool(t.access & Access.FULL), t.use) for t in objs["a"].touches]
    assert a_ops[0] == (Op.MEMSET, True, False) and a_ops[1] == (Op.COPY, True, False)
    assert objs["b"].touches[0].event.op is Op.COPY and not objs["b"].touches[0].use
    assert [t.use for t in objs["c"].touches][:2] == [False, True]  # the fill, then `+=`


def test_everyday_training_loop_is_clean(tmp_path) -> None:
    code = """
import torch
import torch.nn.functional as F

def train(model, loader, device, epochs):
    model.to(device)
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        total = torch.zeros(1, device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(epoch, total.item())
    return model
"""
    assert findings(code, tmp_path) == Counter()


def test_del_and_rebinding_end_lifetimes(tmp_path) -> None:
    code = """
import torch
def f(n, device, steps):
    a = torch.ones(n, device=device)
    b = a * 2
    del a
    for _ in range(steps):
        b = b * 2
    return b
"""
    # `a` is deleted before the loop; `b` is used in it: nothing to report.
    assert findings(code, tmp_path) == Counter()


def test_cuda_python_pointer_leak(tmp_path) -> None:
    code = """
from cuda.bindings import runtime as cudart
def f(n, kernel):
    err, ptr = cudart.cudaMalloc(n)
    kernel(ptr)
    return 0
def g(n, kernel):
    err, ptr = cudart.cudaMalloc(n)
    kernel(ptr)
    cudart.cudaFree(ptr)
"""
    assert findings(code, tmp_path) == Counter({("GL005", 4): 1})


def test_syntax_errors_mark_the_scope() -> None:
    unit, skipped = analyse("t.py", b"import torch\ndef f(d):\n    x = torch.zeros(3, device=d)\n    x +=\n")
    assert skipped == ["f"]


def test_unbound_transfers_wrapped_pointers_and_host_only_loops(tmp_path) -> None:
    code = """
import torch
import torch.nn.functional as F
from cuda.bindings import runtime as cudart


def weighted(model, loader, class_weights, device):
    for x, y in loader:
        out = model(x.to(device))
        loss = F.cross_entropy(out, y.to(device), weight=class_weights.to(device))
        loss.backward()


def frames(n, kernel, count, check):
    for i in range(count):
        ptr = check(cudart.cudaMalloc(n))
        kernel(ptr)
        check(cudart.cudaFree(ptr))


def histogram(data, device, nbins):
    edges = torch.linspace(0, 1, nbins + 1, device=device)
    names = []
    for i in range(nbins):
        names.append(str(i))
    counts = [((data >= lo) & (data < hi)).sum() for lo, hi in zip(edges[:-1], edges[1:])]
    for lo, hi in zip(edges[:-1], edges[1:]):
        print(lo, hi)
    return counts, names
"""
    # class_weights.to(device) is the same every batch (GL103, line 10); the cudaMalloc wrapped in
    # an error check is still a driver allocation per frame (GL101, line 16). The loop that only
    # appends names launches nothing, and the last loop reads `edges` while it runs: no GL001/GL002.
    assert findings(code, tmp_path) == Counter({("GL103", 10): 1, ("GL101", 16): 1})


def test_per_device_copies_are_not_loop_invariant(tmp_path) -> None:
    code = """
import cupy
import torch


def replicate(host, gpus):
    copies = []
    for gpu_id in gpus:
        with cupy.cuda.Device(gpu_id):
            copies.append(cupy.array(host))
    return copies


def spread(x, devices):
    out = []
    for d in devices:
        y = x.to(d)
        out.append(y)
    return out
"""
    assert findings(code, tmp_path) == Counter()


def test_aliases_and_swaps_make_no_objects() -> None:
    objs, unit = histories("""
import cupy as cp

def f(h_a, steps):
    a = cp.asarray(h_a)
    b = cp.empty_like(a)
    c = a
    for _ in range(steps):
        cp.multiply(a, 0.5, out=b)
        a, b = b, a
    return cp.asnumpy(c), cp.asarray(b)
""")
    assert set(objs) == {"a", "b"}  # `c = a`, the swap and `cp.asarray(b)` name the same two objects
    assert not any(h.frees for h in objs.values())  # the swap frees neither
    # `a` (first bound to b's object by the swap) reads it in the next iteration.
    assert "next iteration" in [t.event.api for t in objs["b"].uses]


def test_conversions_of_parameters_and_copy_false() -> None:
    objs, _ = histories("""
import cupy as cp
import numpy as np
from numba import cuda

def f(x, frames: np.ndarray, h_out, y):
    a = cp.asarray(x)           # maybe the caller's device array: no object
    m = a.mean()                # computed on the device: an object
    s = cp.asarray(frames)      # a host array, as annotated: an upload
    d = cuda.to_device(h_out, copy=False)
    u = cuda.to_device(y)       # Numba code uploads host arrays: an upload
    return m, s, d, u
""")
    assert set(objs) == {"m", "s", "d", "u"}
    assert [t.event.op for t in objs["d"].touches if not t.use] == []  # nothing copied in


def test_closures_and_kernels_use_what_they_read_where_called() -> None:
    objs, _ = histories("""
import torch
from numba import cuda

table = cuda.to_device(LUT)

@cuda.jit
def k(out):
    out[0] = table[0]

def f(dev, xs):
    w = torch.ones(4, device=dev)
    g = lambda v: v @ w
    for x in xs:
        g(x)
    return 1

k[1, 32](OUT)
""")
    assert [t.event.api for t in objs["w"].uses] == ["g"]  # the call in the loop, not the definition
    assert [t.event.location.row for t in objs["table"].uses] == [18]  # the launch
    assert objs["table"].escapes  # read by the module's kernel: importers may launch it


def test_a_use_through_a_conditional_expression_carries_its_test() -> None:
    objs, _ = histories("""
import torch

def f(x, need, dev):
    buf = torch.empty(4, device=dev)
    src = buf if need else x
    return torch.relu(src).sum().item()
""")
    (use,) = objs["buf"].uses
    assert [(g.condition, g.branch) for g in use.event.guards] == [("need", 0)]


def test_the_survey_finds_every_block_and_import_a_query_finds() -> None:
    """The frontend finds suites and imports in a walk that skips expressions; tree-sitter's own
    query over every node is the reference, also where syntax errors put statements anywhere."""
    from tree_sitter import Query, QueryCursor

    from gpulint.static.python import _language, _parser, _survey

    query = Query(_language(), "(block) @block (import_statement) @import (import_from_statement) @import")
    sources = [
        "import a\nfrom b import c as d\n\ndef f():\n    import e\n    for i in x:\n        if i:\n            pass\n"
        "        else:\n            import g\n",
        "match x:\n    case 1:\n        import h\n    case _:\n        pass\n"
        "try:\n    pass\nexcept* E:\n    pass\nfinally:\n    import i\n",
        "class C:\n    @dec\n    def m(self):\n        with a as b:\n            while c:\n                import j\n",
        "x = f(\ndef g():\n    import k\n    y = [\n        for z in w:\n            import m\n",
        "lambda: (import_this\nif x:\n  import n\n  )(\n    import o\n",
        "print(1 +\nif x:\n    import p\n    for q in r:\n        pass\n",
    ]
    for source in sources:
        root = _parser().parse(source.encode()).root_node
        blocks, imports = _survey(root)[:2]
        found = QueryCursor(query).captures(root)

        def spans(nodes):
            return sorted((n.start_byte, n.end_byte, n.type) for n in nodes)

        assert spans(blocks) == spans(found.get("block", [])), source
        assert spans(imports) == spans(found.get("import", [])), source


def test_only_scopes_that_may_make_a_device_object_are_lowered() -> None:
    # A comment or a line continuation between a maker's name and its `(`, an aliased maker:
    # each scope holding one is lowered; a scope with none keeps an empty timeline.
    objs, unit = histories("""
import torch
from torch import zeros as Z

def host_only(n):
    total = 0
    for i in range(n):
        total += i
    return total

def spaced(n):
    a = (torch.empty   # a comment between the name and its call
         (n, device="cuda"))
    b = Z \\
        (n, device="cuda")
    c = n . \\
        cuda ()
    return a, b, c
""")
    assert set(objs) == {"a", "b", "c"}
    timelines = {t.name: t for t in unit.timelines}
    assert not timelines["host_only"].events and not timelines["host_only"].loops
    assert Op.LAUNCH not in {e.op for e in timelines["<module>"].events}
    assert {Op.ALLOC, Op.ESCAPE} <= {e.op for e in timelines["spaced"].events}


def test_scope_names_finds_bindings_inside_expressions() -> None:
    # The walk for a scope's names skips expressions with no `:=` and no `for` in their text.
    from gpulint.static.python import _Module, _parser, _survey
    from gpulint.static.python_names import Names

    source = b"""def f(a):
    print(g(a), (b := a.cuda()))
    total = sum([x * 2 for x in range(3)])
    n = len(a)
    h(lambda: (c := 1))
    forward(format(transforms(a)), [1for w in range(3)], {k: 0 for k in a})
"""
    module = _Module("t.py", source, _parser().parse(source).root_node)
    module.collect_imports(_survey(module.root)[1])
    fn = module.root.named_children[0]
    bound, host = Names(module.root, source, module.text, module.qualify).scope_names(fn)
    # `for` is a word of its own (a digit may come right before it); not in `format`, `forward`.
    assert {"a", "b", "x", "total", "n", "c", "w", "k"} <= bound
    assert "b" not in host and {"n", "x"} <= host


def test_host_factories_and_conversions_leave_a_scope_unlowered() -> None:
    # Only a call that may make a device value where none exists lowers its scope: a factory with
    # a CUDA `device=`, `.to()` a CUDA device, `.cuda()`; not a host factory, not `.to(dtype)`.
    _, unit = histories("""
import torch

def host(n, x):
    a = torch.zeros(n)
    for i in range(n):
        b = x.to(torch.float16) + torch.tensor([i])
    return a, b

def moved(n, x, device):
    for i in range(n):
        b = x.to(device)
    return b

def made(n):
    for i in range(n):
        b = torch.zeros(n, device="cuda:0")
    return b
""")
    timelines = {t.name: t for t in unit.timelines}
    assert not timelines["host"].loops and not timelines["host"].events
    assert timelines["moved"].loops and timelines["made"].loops


def test_a_match_statement_lowers_its_scope_without_any_maker() -> None:
    # `match` is a statement the lowering counts as unknown: its scope is lowered to count it.
    from gpulint.static.unknown import UnknownSyntax

    with pytest.raises(UnknownSyntax, match="`match_statement` at line 3"):
        analyse("t.py", b"def pick(mode):\n    y = 0\n    match mode:\n        case 1:\n            y = 1\n    return y\n")


def test_an_outer_loop_has_the_names_of_the_loops_inside_it() -> None:
    # A loop inside another is walked once for its names; the outer loop has them too.
    _, unit = histories("""
def f(n, x, out):
    for i in range(n):
        for j in range(n):
            y = x.cuda()
            out.append(y + j)
        while n:
            n -= 1
""")
    (timeline,) = [t for t in unit.timelines if t.name == "f"]
    outer, inner, second = sorted(timeline.loops.values(), key=lambda loop: loop.location.row)
    assert outer.modified == {"i", "j", "y", "n"} and outer.written == {"out"}
    assert inner.modified == {"j", "y"} and inner.written == {"out"} and second.modified == {"n"}


def test_a_files_objects_are_freed_with_its_unit() -> None:
    # No reference cycle keeps a file's histories for the cyclic collector (which would walk them
    # all at each collection while they wait).
    import gc

    source = b"import torch\ndef f(n):\n    x = torch.zeros(n, device='cuda')\n    for i in range(n):\n" \
             b"        x.add_(i)\n    return x.sum().item()\n"
    gc.collect()
    gc.disable()
    try:
        unit, _ = analyse("t.py", source)
        assert unit.histories
        del unit
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_survey_finds_the_function_scopes_in_the_order_of_a_walk_of_statements() -> None:
    """The function scopes come from the survey's walk: the same functions, in the same order, as a
    walk of the statements the lowering takes as a scope's own (function and class bodies, the
    statements `if`, `for`, `while`, `try`, `with` hold; not `match`, not what a syntax error hides)."""
    from gpulint.static.python import _parser, _survey

    def reference(root):
        found, stack = [], list(root.named_children)
        while stack:
            node = stack.pop()
            if node.type == "decorated_definition":
                node = node.child_by_field_name("definition") or node
            if node.type == "function_definition":
                found.append(node)
                stack.extend(node.child_by_field_name("body").named_children)
            elif node.type == "class_definition":
                stack.extend(node.child_by_field_name("body").named_children)
            elif node.type in ("if_statement", "try_statement", "with_statement", "block", "else_clause",
                               "elif_clause", "except_clause", "finally_clause", "for_statement", "while_statement"):
                stack.extend(node.named_children)
        return [(n.start_byte, n.end_byte) for n in found]

    sources = [
        "def a():\n    def b():\n        pass\n    class C:\n        @d\n        def m(self):\n            def n():\n"
        "                pass\n    if x:\n        def e():\n            pass\n    else:\n        for i in y:\n"
        "            def f():\n                pass\n\ndef g():\n    pass\n",
        "match x:\n    case 1:\n        def h():\n            pass\ntry:\n    def i():\n        pass\n"
        "except* E:\n    def j():\n        pass\nfinally:\n    def k():\n        pass\n",
        "x = f(\ndef g():\n    def h():\n        pass\n",
        "with a as b:\n    while c:\n        @dec(1)\n        class D:\n            def m(self, x=lambda: 0):\n"
        "                pass\nprint(1 +\ndef p():\n    pass\n",
        "def q(a, b=(\n    def r(): pass\n",
    ]
    for source in sources:
        root = _parser().parse(source.encode()).root_node
        assert [(n.start_byte, n.end_byte) for n in _survey(root).functions] == reference(root), source


def test_the_lowering_screen_knows_every_role_handler() -> None:
    # `_Module.may_make_objects` decides which calls may make a device object from nothing by the
    # roles the lowering handles; a new handler must be placed there too (or a scope could go
    # unlowered that now makes objects).
    from gpulint.models.api import Role
    from gpulint.static.python import _Scope

    assert set(_Scope.FUNCTION_ROLES) == {Role.RETAINING, Role.FACTORY, Role.RAW_ALLOC, Role.TRANSFER, Role.FREE,
                                          Role.FLUSH, Role.FULL_WRITE}
    assert set(_Scope.METHOD_ROLES) == {Role.FULL_WRITE, Role.TRANSFER, Role.FACTORY}


_INERT_PROGRAM = """
import torch

def staged(n, w, make):
    scale = torch.ones(n)                  # inert: a host factory, remembered for GL102
    w = w.to(torch.float16)                # inert: the parameter rebound, no longer the caller's array
    pick = lambda t: t * 2                 # inert: a lambda, whose reads happen where it is called
    a, b = torch.zeros(n), make(n)         # inert: two bindings
    print("for", n, [i for i in range(n)])
    x = scale.cuda()
    y = torch.as_tensor(w, device="cuda")
    z = pick(x)
    return x, y, z
"""


def _fields(value):
    """Every field of an event, a touch, a guard, as plain data (their reprs show only a few)."""
    from dataclasses import fields, is_dataclass

    if is_dataclass(value):
        return (type(value).__name__, *(_fields(getattr(value, f.name)) for f in fields(value)))
    if isinstance(value, (list, tuple)):
        return tuple(_fields(v) for v in value)
    return value


def _lowered(source: bytes) -> tuple:
    unit, skipped = analyse("t.py", source)
    events = [_fields(t.events) for t in unit.timelines]
    objects = [(h.name, _fields(h.alloc), _fields(h.touches), _fields(h.frees), _fields(h.escapes), h.size, h.kind)
               for h in unit.histories]
    return events, objects, skipped


def test_inert_statements_lower_as_the_full_lowering_does(monkeypatch) -> None:
    # A statement with no maker call and no name holding an object or a function skips the
    # evaluation of its parts (`_Scope.inert`): the histories and events must be what evaluating
    # every part gives, on this program and on every Python program of the tests.
    from pathlib import Path

    from gpulint.static import python

    tests = Path(__file__).parent
    sources = [_INERT_PROGRAM.encode()] + [p.read_bytes() for folder in ("fixtures/python", "python_loop_programs",
                                                                          "torch_programs")
                                            for p in sorted((tests / folder).rglob("*.py"))]
    inert_calls = Counter()
    real_inert = python._Scope.inert

    def counted(self, node):
        answer = real_inert(self, node)
        inert_calls[answer] += 1
        return answer

    monkeypatch.setattr(python._Scope, "inert", counted)
    unit, _ = analyse("t.py", _INERT_PROGRAM.encode())
    assert inert_calls[True] == 5  # the shortcut is taken
    copies = {e.detail for t in unit.timelines for e in t.events if e.op is Op.COPY}
    assert copies == {"host-factory:torch.ones"}  # `scale` is still known as torch.ones's
    # `w` rebound: no longer the caller's array, so `as_tensor` copies it into an object of its own.
    assert {h.name for h in unit.histories} == {"x", "y", "z"}
    fast = [_lowered(source) for source in sources]
    monkeypatch.setattr(python._Scope, "inert", lambda self, node: False)
    assert fast == [_lowered(source) for source in sources]


_LOOP_PROGRAM = """
import torch

def train(model, loader, device, steps):
    buf = torch.zeros(8, device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        n = len(y)
        loss = model(x + buf)
        buf = buf * 2
    while steps > 0:
        h = torch.ones(4)
        steps = steps - 1
    for batch in loader:
        batch = batch.cuda()
        out = model(batch)
    return buf
"""


def test_a_loop_asks_each_part_whether_it_launches_once(monkeypatch) -> None:
    # `rebound_first` finds which leading parts of a loop launch nothing; `loop_body` does not ask
    # those again (unbinding names never makes a part launch).  Asking every part again must give
    # the same events, on this program and on every Python program of the tests.
    from pathlib import Path

    from gpulint.static import python

    tests = Path(__file__).parent
    sources = [_LOOP_PROGRAM.encode()] + [p.read_bytes() for folder in ("fixtures/python", "python_loop_programs",
                                                                        "torch_programs")
                                          for p in sorted((tests / folder).rglob("*.py"))]
    quiet_parts = Counter()
    real = python._Scope.rebound_first

    def counted(self, loop, body, cond):
        first, quiet = real(self, loop, body, cond)
        quiet_parts[quiet > 0] += 1
        return first, quiet

    monkeypatch.setattr(python._Scope, "rebound_first", counted)
    fast = [_lowered(source) for source in sources]
    assert quiet_parts[True] >= 3  # the shortcut is taken
    monkeypatch.setattr(python._Scope, "rebound_first", lambda self, loop, body, cond: (real(self, loop, body, cond)[0], 0))
    assert fast == [_lowered(source) for source in sources]
