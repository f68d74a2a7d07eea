"""Kernel-body analysis: which pointer parameters a `__global__` / `__device__` function
dereferences, and whether it reads or writes through them.

A launch uses an object only through a parameter the kernel dereferences (DESIGN §4), so this
decides what a `kernel<<<...>>>(a, b)` uses.  Local pointers derived from a parameter
(`float *row = a + i * n;`) are followed; calls of other device functions of the same file use
their summaries; calls of unknown device functions and atomics read and write.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpulint.history import READ_WRITE, Access
from gpulint.static import syntax as s

# Device-side calls that only read through a pointer argument.
_READ_ONLY_CALLS = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv", "printf", "tex1Dfetch"}
# Device-side calls that take pointers but never dereference them.
_NO_ACCESS_CALLS = {"__syncthreads", "__threadfence", "__isGlobal", "__cvta_generic_to_shared", "sizeof"}
# Device-side calls that store a value into memory: (value argument, destination argument).
_STORE_CALLS = {"atomicExch": (1, 0), "atomicCAS": (2, 0)}
# Where a stored pointer goes when it is not memory a parameter points to: a `__device__` global.
GLOBAL = -1


@dataclass
class KernelSummary:
    name: str
    params: list[s.Param]
    access: list[Access] = field(default_factory=list)  # per parameter index
    is_kernel: bool = True
    # Pointer parameters whose value the body stores into memory (`table[i] = buf;`,
    # `nodes[i].next = p;`): parameter index -> the parameters whose memory receives it (GLOBAL: a
    # global). The object passed for it can be reached later through that memory: it escapes.
    stores: dict[int, set[int]] = field(default_factory=dict)

    def uses(self, index: int) -> Access:
        if index < len(self.access):
            return self.access[index]
        # Variadic or default arguments past the known parameters: be conservative.
        return READ_WRITE


def pointer_roots(expr: s.Expr | None) -> set[str]:
    """Every variable a pointer-valued expression may point into (`c ? a : b` -> {a, b})."""
    if type(expr) is s.Name:  # most pointers: a name
        return {expr.id}  # type: ignore[union-attr]
    if expr is None:
        return set()
    while isinstance(expr, s.Cast) or (isinstance(expr, s.Other) and expr.kind == "paren" and len(expr.children) == 1):
        expr = expr.operand if isinstance(expr, s.Cast) else expr.children[0]
    if isinstance(expr, s.Conditional):
        return pointer_roots(expr.then) | pointer_roots(expr.orelse)
    if isinstance(expr, s.Binary) and expr.op in ("+", "-"):
        return pointer_roots(expr.left) | pointer_roots(expr.right)
    if isinstance(expr, s.Unary) and expr.op == "&" and isinstance(expr.operand, s.Index):
        return pointer_roots(expr.operand.base)
    if isinstance(expr, s.Unary) and expr.op == "&" and isinstance(expr.operand, s.Member) and expr.operand.arrow:
        return pointer_roots(expr.operand.base)  # `&p->f` points into *p
    root = pointer_root(expr)
    return {root} if root is not None else set()


def pointer_root(expr: s.Expr | None) -> str | None:
    """The variable a pointer-valued expression points into: `a + i` -> a, `&a[i]` -> a."""
    while expr is not None:
        if isinstance(expr, s.Name):
            return expr.id
        if isinstance(expr, s.Cast):
            expr = expr.operand
        elif isinstance(expr, s.Binary) and expr.op in ("+", "-"):
            left = pointer_root(expr.left)
            return left if left is not None else pointer_root(expr.right)
        elif isinstance(expr, s.Unary) and expr.op == "&" and isinstance(expr.operand, s.Index):
            expr = expr.operand.base
        elif isinstance(expr, s.Unary) and expr.op in ("++", "--"):
            expr = expr.operand
        elif isinstance(expr, s.Conditional):
            return pointer_root(expr.then) or pointer_root(expr.orelse)
        elif isinstance(expr, s.Other) and expr.kind == "paren" and len(expr.children) == 1:
            expr = expr.children[0]
        else:
            return None
    return None


class _BodyScan:
    def __init__(self, function: s.Function, summaries: dict[str, list[KernelSummary]]) -> None:
        self.summaries = summaries
        self.index = {p.name: i for i, p in enumerate(function.params) if p.name}
        self.params = function.params
        self.aliases: dict[str, set[int]] = {}  # local pointer -> parameter indices
        self.access = [Access.NONE for _ in function.params]
        self.pointer_params = {i for i, p in enumerate(function.params) if p.is_pointer or "&" in p.type}
        self.stores: dict[int, set[int]] = {}
        self.locals: set[str] = set(self.index)
        self.looked_up: set[str] = set()  # callee names whose summaries the scan read

    def param_of(self, expr: s.Expr | None) -> set[int]:
        """Parameters a pointer expression may point into (directly or through local aliases)."""
        params: set[int] = set()
        for root in pointer_roots(expr):
            if root in self.aliases:
                params |= self.aliases[root]
            elif root in self.index:
                params.add(self.index[root])
        return params

    def record(self, params: set[int], access: Access) -> None:
        for param in params:
            self.access[param] |= access

    def stmt(self, node: object) -> None:
        if isinstance(node, s.Decl):
            for var in node.vars:
                self.locals.add(var.name)
                for dim in var.array_dims:
                    self.expr(dim, Access.READ)
                if var.init is None:
                    continue
                param = self.param_of(var.init)
                if param and (var.is_pointer or "*" in var.type or "auto" in var.type):
                    self.aliases[var.name] = param
                elif param and "&" in var.type:
                    # `float &x = a[i];` would be an Index; `T &r = *p;` reads and may write.
                    self.record(param, READ_WRITE)
                elif isinstance(var.init, s.Index) and "&" in var.type:
                    self.record(self.param_of(var.init.base), READ_WRITE)
                    self.expr(var.init.index, Access.READ)
                else:
                    if isinstance(var.init, s.Other) and var.init.kind in ("argument_list", "initializer_list"):
                        # `Stack<T> st(buf, tid);`: the object keeps the pointer, its methods may use it.
                        for arg in var.init.children:
                            self.record(self.param_of(arg) & self.pointer_params, READ_WRITE)
                    self.expr(var.init, Access.READ)
            return
        if isinstance(node, s.ExprStmt):
            self.expr(node.expr, Access.READ)
            return
        if isinstance(node, s.Return):
            if node.value is not None:
                self.expr(node.value, Access.READ)
            return
        for child in s.children(node):
            if isinstance(child, (s.Decl, s.ExprStmt, s.Block, s.If, s.Loop, s.Return, s.Jump, s.Unparsed)):
                self.stmt(child)
            else:
                self.expr(child, Access.READ)  # conditions, loop steps

    def expr(self, node: s.Expr | None, ctx: Access) -> None:
        kind = type(node)
        if kind is s.Name or kind is s.Literal or node is None:
            return  # a name alone is no access: its use (`p[i]`, `*p`, a call) is judged above it
        if isinstance(node, s.Assign):
            if node.op == "=":
                self.store(node.value, node.target)
            if isinstance(node.target, s.Name) and node.target.id not in self.index:
                param = self.param_of(node.value)
                if param:
                    self.aliases[node.target.id] = self.aliases.get(node.target.id, set()) | param
                    return
            self.expr(node.target, Access.WRITE if node.op == "=" else READ_WRITE)
            self.expr(node.value, Access.READ)
            return
        if isinstance(node, s.Index):
            param = self.param_of(node.base)
            if param:
                self.record(param, ctx)
            else:
                self.expr(node.base, ctx if isinstance(node.base, (s.Index, s.Member)) else Access.READ)
            self.expr(node.index, Access.READ)
            return
        if isinstance(node, s.Unary):
            if node.op == "*":
                param = self.param_of(node.operand)
                if param:
                    self.record(param, ctx)
                    return
                self.expr(node.operand, Access.READ)
                return
            if node.op in ("++", "--"):
                self.expr(node.operand, READ_WRITE)
                return
            if node.op == "&":
                # Taking an address is not an access; what is done with it is judged where it goes.
                inner = node.operand
                if isinstance(inner, s.Index):
                    self.expr(inner.index, Access.READ)
                    if not isinstance(inner.base, s.Name):
                        self.expr(inner.base, Access.READ)  # `&p->data[i]` loads `p->data` through p
                    return
                self.expr(inner, Access.NONE)
                return
            self.expr(node.operand, Access.READ)
            return
        if isinstance(node, s.Member):
            if node.arrow:
                param = self.param_of(node.base)
                if param:
                    self.record(param, ctx)
                    return
            self.expr(node.base, ctx)
            return
        if isinstance(node, s.Call):
            self.call(node)
            return
        for name in s.CHILD_FIELDS.get(type(node), ()):
            value = getattr(node, name)
            if type(value) is list:
                for child in value:
                    self.expr(child, Access.READ)
            elif value is not None:
                self.expr(value, Access.READ)

    def place(self, target: s.Expr) -> set[int]:
        """Where a store to `target` lands beyond this call: the parameters whose memory it writes
        (`table[i]`, `*slot`, `t->p`, `nodes[i].next`), GLOBAL for a global; empty for a local."""
        target = s.strip_parens_and_casts(target)
        while isinstance(target, s.Member) and not target.arrow:
            target = s.strip_parens_and_casts(target.base)  # `nodes[i].next` lands in `nodes[i]`
        if isinstance(target, s.Name):
            return set() if target.id in self.locals else {GLOBAL}
        if isinstance(target, s.Index):
            base = target.base
        elif isinstance(target, s.Member) or isinstance(target, s.Unary) and target.op == "*":
            base = target.base if isinstance(target, s.Member) else target.operand
        else:
            return set()
        params = self.param_of(base)
        if params:
            return params
        root = pointer_root(base)
        return set() if root is None or root in self.locals else {GLOBAL}

    def store(self, value: s.Expr | None, target: s.Expr) -> None:
        """`table[i] = buf`: a pointer parameter's value kept in memory that outlives the call."""
        stored = {p for p in self.param_of(value) if self.params[p].is_pointer}
        if not stored:
            return
        places = self.place(target)
        if not places:
            return
        for param in stored - places:  # `nodes[i].next = &nodes[j]` links a buffer to itself
            self.stores.setdefault(param, set()).update(places)
            # The body may reach the object through that memory: it may read and write it.
            self.access[param] |= READ_WRITE

    def call(self, node: s.Call) -> None:
        name = s.callee_name(node)
        self.looked_up.add(name)
        targets = [t for t in self.summaries.get(name, []) if len(t.params) >= len(node.args) or not t.params]
        if name in _STORE_CALLS and len(node.args) > max(_STORE_CALLS[name]):
            value, dest = _STORE_CALLS[name]
            self.store(node.args[value], s.Unary(node.args[dest].span, "*", node.args[dest]))
        for target in targets:
            for index, places in target.stores.items():
                if index < len(node.args):
                    for place in places:
                        if place == GLOBAL:
                            self.store(node.args[index], s.Name(node.span, "::"))  # not a local
                        elif place < len(node.args):
                            self.store(node.args[index], s.Unary(node.args[place].span, "*", node.args[place]))
        if not isinstance(node.callee, s.Name):
            self.expr(node.callee, Access.READ)
        elif node.callee.id in self.index and self.index[node.callee.id] in self.pointer_params:
            # A pointer parameter "called": a function-like macro indexing it (`#define RF(q) RF[q]`).
            self.record({self.index[node.callee.id]}, READ_WRITE)
        for i, arg in enumerate(node.args):
            param = self.param_of(arg) & self.pointer_params
            if param:
                if name in _NO_ACCESS_CALLS:
                    pass
                elif name in _READ_ONLY_CALLS:
                    self.record(param, Access.READ)
                elif targets:
                    for target in targets:
                        self.record(param, target.uses(i))
                else:
                    # atomics and unknown device functions: read and write.
                    self.record(param, READ_WRITE)
            if isinstance(arg, s.Unary) and arg.op == "&" and isinstance(arg.operand, s.Index):
                self.expr(arg.operand.index, Access.READ)
                if not isinstance(arg.operand.base, s.Name):
                    self.expr(arg.operand.base, Access.READ)  # `&p->data[i]` loads `p->data` through p
            elif param:
                self.offsets(arg)
            else:
                self.expr(arg, Access.READ)

    def offsets(self, pointer: s.Expr) -> None:
        """What a pointer expression reads besides the pointer it starts from: `base + idx[i]`
        reads `idx`."""
        if isinstance(pointer, s.Binary) and pointer.op in ("+", "-"):
            for side in (pointer.left, pointer.right):
                if pointer_roots(side):
                    self.offsets(side)
                else:
                    self.expr(side, Access.READ)
        elif isinstance(pointer, s.Cast):
            self.offsets(pointer.operand)
        elif isinstance(pointer, s.Other) and pointer.kind == "paren" and len(pointer.children) == 1:
            self.offsets(pointer.children[0])
        elif isinstance(pointer, s.Conditional):
            self.expr(pointer.cond, Access.READ)
            self.offsets(pointer.then)
            self.offsets(pointer.orelse)


def summarize(functions: list[s.Function]) -> dict[str, list[KernelSummary]]:
    """Summaries of every kernel and device function, by (unqualified) name.

    Device functions may call each other, so summaries are recomputed until they settle: after the
    first round, only the functions that read a summary the last round changed.
    """
    device = [f for f in functions if f.is_kernel or f.is_device]
    summaries: dict[str, list[KernelSummary]] = {}
    for f in device:
        summaries.setdefault(f.name, []).append(KernelSummary(f.name, f.params, [Access.NONE] * len(f.params), f.is_kernel))
    looked_up: dict[int, set[str]] = {}
    pending = device
    for _ in range(8):
        changed: set[str] = set()
        for f in pending:
            scan = _BodyScan(f, summaries)
            scan.stmt(f.body)
            looked_up[id(f)] = scan.looked_up
            for summary in summaries[f.name]:
                if summary.params is f.params and (summary.access != scan.access or summary.stores != scan.stores):
                    summary.access = scan.access
                    summary.stores = scan.stores
                    changed.add(f.name)
        if not changed:
            break
        pending = [f for f in device if not looked_up[id(f)].isdisjoint(changed)]
    return summaries
