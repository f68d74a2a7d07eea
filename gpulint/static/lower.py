"""Lowering a CUDA translation unit (`syntax` tree) to object histories.

Walks each host function in program order and emits events (DESIGN §4, docs/static-semantics.md):
allocations, frees, copies, memsets, kernel launches, calls, escapes and exits, each with the
loops and branches around it.  Pointer names are bound to the objects they may point to, so
aliases and swaps are followed; struct members are tracked by member name across the file.
Functions are lowered callees first, so a call of a same-file function counts as the launches,
uses and frees inside it.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache

from gpulint.findings import Location
from gpulint.history import READ_WRITE, Access, Event, Guard, Kind, ObjectHistory, Op, Size, Timeline, Touch, Unit
from gpulint.sourcetext import char_column
from gpulint.static import cuda_api as api
from gpulint.static import syntax as s
from gpulint.static.kernels import KernelSummary, pointer_root, pointer_roots, summarize
from gpulint.static.program import RETURNED, FileSummary, HostSummary, MemberFacts, ProgramView
from gpulint.static.sizes import Folder
from gpulint.static.scope import Bindings, ScopeLowering


@dataclass
class _UnitContext:
    tu: s.TranslationUnit
    folder: Folder
    kernels: dict[str, list[KernelSummary]]
    hosts: dict[str, list[HostSummary]]
    host_defs: dict[str, list[s.Function]]
    ids: itertools.count
    # Struct member slots (by field name) and their objects, across functions.
    member_objects: dict[str, list[ObjectHistory]] = field(default_factory=dict)
    member_frees: dict[str, list[Event]] = field(default_factory=dict)
    member_uses: dict[str, list[Touch]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # The rest of the program (functions and kernels of other files), asked for names not defined here.
    view: ProgramView = field(default_factory=ProgramView)
    external_kernels: dict[str, list[KernelSummary]] = field(default_factory=dict)
    external_hosts: dict[str, list[HostSummary]] = field(default_factory=dict)
    # Member names that trade pointers (`t = p->a; p->a = p->b; p->b = t;`): each stands for the others.
    member_groups: dict[str, str] = field(default_factory=dict)

    def kernels_named(self, name: str) -> list[KernelSummary]:
        if name in self.kernels:
            return self.kernels[name]
        if name not in self.external_kernels:
            self.external_kernels[name] = self.view.kernels(name)
        return self.external_kernels[name]

    def hosts_named(self, name: str) -> list[HostSummary] | None:
        """Summaries of another file's host function `name` (None: not defined in the program)."""
        if name not in self.external_hosts:
            self.external_hosts[name] = self.view.hosts(name)
        return self.external_hosts[name] or None

    def group_of(self, slot: str) -> str:
        parent = self.member_groups.setdefault(slot, slot)
        if parent != slot:
            parent = self.member_groups[slot] = self.group_of(parent)
        return parent

    def trade(self, a: str, b: str) -> None:
        self.member_groups[self.group_of(a)] = self.group_of(b)


def lower(tu: s.TranslationUnit) -> tuple[Unit, list[str]]:
    """Histories of every object allocated in the file, and the functions skipped for parse errors."""
    unit, skipped, _ = lower_in_program(tu, ProgramView())
    return unit, skipped


def lower_in_program(tu: s.TranslationUnit, view: ProgramView) -> tuple[Unit, list[str], FileSummary]:
    """`lower`, with the functions, kernels and struct members of the rest of the program that
    `view` holds; also the file's own summary for the others (see `program`)."""
    ctx = _UnitContext(
        tu=tu,
        folder=Folder.for_unit(tu),
        kernels=summarize(tu.functions),
        hosts={},
        host_defs={},
        ids=itertools.count(),
        view=view,
    )
    host_functions = [f for f in tu.functions if not f.is_kernel and not f.is_device]
    for f in host_functions:
        ctx.host_defs.setdefault(f.name, []).append(f)
    histories: list[ObjectHistory] = []
    timelines: list[Timeline] = []
    done: set[int] = set()
    in_progress: set[int] = set()

    def lower_one(function: s.Function) -> None:
        lowering = _FunctionLowering(ctx, function)
        lowering.run()
        summary = lowering.summary()
        # A body with a parse error may do more than it shows: for other files, its calls may also
        # use any pointer passed (as for a definition under `#if`).
        summary.conditional |= function.has_errors
        ctx.hosts.setdefault(function.name, []).append(summary)
        if function.has_errors:
            ctx.skipped.append(function.qualname or function.name)
            for h in lowering.histories():
                h.incomplete = True
        histories.extend(lowering.histories())
        timelines.append(lowering.timeline)

    def targets(function: s.Function):
        return (target for callee in function.callees() for target in ctx.host_defs.get(callee, []))

    def visit(function: s.Function) -> None:
        """Lower `function` after the functions it calls (depth first, with a stack of our own: a
        chain of thousands of calls is no deeper for us than one)."""
        if id(function) in done or id(function) in in_progress:
            return
        in_progress.add(id(function))
        stack = [(function, targets(function))]
        while stack:
            current, pending = stack[-1]
            for target in pending:
                if id(target) not in done and id(target) not in in_progress:
                    in_progress.add(id(target))
                    stack.append((target, targets(target)))
                    break
            else:
                stack.pop()
                lower_one(current)
                in_progress.discard(id(current))
                done.add(id(current))

    for f in host_functions:
        visit(f)
    summary = FileSummary(tu.path, kernels=_exported_kernels(tu, ctx.kernels), hosts=ctx.hosts,
                          members=_member_facts(ctx))
    _follow_members(ctx)
    summary.refs = list(view.asked)
    unit = Unit(path=tu.path, histories=histories, timelines=timelines, source=tu.source, expanded=tu.expanded,
                allocation_sites=_allocation_sites(tu, histories))
    return unit, ctx.skipped, summary


def _exported_kernels(tu: s.TranslationUnit, kernels: dict[str, list[KernelSummary]]) -> dict[str, list[KernelSummary]]:
    """The kernel summaries other files may rely on: a kernel with a parse error in its body may
    dereference any of its pointers (its own file judges it as it parsed)."""
    broken = {id(f.params) for f in tu.functions if f.has_errors and (f.is_kernel or f.is_device)}
    if not broken:
        return kernels
    every = READ_WRITE
    return {name: [KernelSummary(k.name, k.params, [every] * len(k.params), k.is_kernel, k.stores) if id(k.params) in broken
                   else k for k in summaries] for name, summaries in kernels.items()}


def _follow_members(ctx: _UnitContext) -> None:
    """Struct members are tracked by name across the program: a free or use of `x->buf` anywhere
    (in this file, or in another file of the program) counts for every object allocated into a
    `buf` member, and for every member `buf` trades pointers with."""
    groups: dict[str, set[str]] = {}
    for slot in ctx.member_groups:
        groups.setdefault(ctx.group_of(slot), set()).add(slot)
    for slot, objects in ctx.member_objects.items():
        outside = ctx.view.slot(slot)
        names = set(groups.get(ctx.group_of(slot), {slot})) if slot in ctx.member_groups else {slot}
        if outside is not None:
            for other in outside.group:
                names |= groups.get(ctx.group_of(other), {other}) if other in ctx.member_groups else {other}
        names.add("*")
        frees = [event for name in sorted(names) for event in ctx.member_frees.get(name, [])]
        uses = [touch for name in sorted(names) for touch in ctx.member_uses.get(name, [])]
        if outside is not None:
            # Another file's free or use: an event of that file's, standing for what it does there.
            frees += [Event(-1, Op.FREE, f"a free in {where.path}", where) for where in outside.frees]
            uses += [Touch(Event(-1, Op.CALL, f"a use in {where.path}", where), access, use=True)
                     for access, where in outside.uses]
        for history in objects:
            known = {id(e) for e in history.frees}
            for event in frees:
                if id(event) not in known:
                    history.frees.append(event)
                    known.add(id(event))
            seen = {id(t.event) for t in history.touches}
            for touch in uses:
                if id(touch.event) not in seen:
                    history.touches.append(touch)
                    seen.add(id(touch.event))


def _member_facts(ctx: _UnitContext) -> MemberFacts:
    """What this file does to struct members, for the other files of the program."""
    facts = MemberFacts(allocated=set(ctx.member_objects))
    for slot, events in ctx.member_frees.items():
        if events:
            first = min(events, key=lambda e: (e.location.row, e.location.column))
            facts.frees[slot] = (first.location.row, first.location.column)
    for slot, touches in ctx.member_uses.items():
        if touches:
            access = Access.NONE
            for touch in touches:
                access |= touch.access
            first = min((t.event for t in touches), key=lambda e: (e.location.row, e.location.column))
            facts.uses[slot] = (access.value, first.location.row, first.location.column)
    groups: dict[str, list[str]] = {}
    for slot in sorted(ctx.member_groups):
        groups.setdefault(ctx.group_of(slot), []).append(slot)
    facts.groups = [g for g in groups.values() if len(g) > 1]
    return facts


def _member_path(expr: s.Expr) -> str | None:
    """`p->a` as `p.a` (a member access path), else None."""
    path = s.path_of(s.strip_parens_and_casts(expr))
    return path if path is not None and "." in path else None


_ALLOCATION_CALL = re.compile(rb"\b(?:" + b"|".join(re.escape(name.encode()) for name in api.ALLOC) + rb")\s*\(")


def _allocation_sites(tu: s.TranslationUnit, histories: list[ObjectHistory]) -> tuple[int, int]:
    """(allocation sites in functions analysed, in all functions).  A function with a parse error
    counts the allocation calls its text spells, as its tree may have lost some."""
    sites = {(h.alloc.location.row, h.alloc.location.column) for h in histories
             if h.alloc is not None and not h.incomplete}
    lost = 0
    for function in tu.functions:
        if function.has_errors:
            lost += len(_ALLOCATION_CALL.findall(tu.source, function.span.start, function.span.end))
    return len(sites), len(sites) + lost


# The nodes that may change a variable (see `_FunctionLowering.effect_nodes`).
_EFFECT_TYPES = frozenset({s.Assign, s.Unary, s.VarDecl, s.Call, s.ExprStmt})

# Methods that do not change the object they are called on (for loop-invariance).
_CONST_METHODS = {"data", "size", "c_str", "begin", "end", "cbegin", "cend", "empty", "length", "capacity",
                  "front", "back", "get", "at", "count", "find"}


def _roots(expr: s.Expr) -> set[str]:
    """Variables a pointer expression points into, as access paths' first names."""
    roots = pointer_roots(expr)
    stripped = s.strip_parens_and_casts(expr)
    if isinstance(stripped, s.Call) and isinstance(stripped.callee, s.Member):
        roots |= _roots(stripped.callee.base)  # `h_x.data()` points into h_x
    path = s.path_of(stripped)
    if path is not None:
        roots.add(path.split(".", 1)[0])
    return roots


def _condition_text(folder: Folder, cond: s.Expr | None) -> str:
    """A branch condition as text that is equal for equal tests (`v == A || v == B` for a case)."""
    if cond is None:
        return ""
    if isinstance(cond, s.Binary) and cond.op in ("==", "||", "&&", "!=", "<", ">", "<=", ">="):
        return f"{_condition_text(folder, cond.left)} {cond.op} {_condition_text(folder, cond.right)}"
    return folder.render(cond)


def _ends_program(stmt: s.Stmt | None) -> bool:
    """`exit(0);` as the last statement: the end of the function is never reached."""
    if isinstance(stmt, s.ExprStmt) and isinstance(stmt.expr, s.Call):
        callee = stmt.expr.callee
        return isinstance(callee, s.Name) and callee.id in api.PROGRAM_EXIT
    return False


def _names(*exprs: s.Expr | None) -> frozenset[str]:
    """Every variable (and member path) an expression reads.  Its own walk, in no particular order
    (a set comes out): asked for every declaration, assignment and event, it is the lowering's most
    frequent walk, and `syntax.walk`'s generator and ordering cost twice as much."""
    names: set[str] = set()
    fields = s.CHILD_FIELDS
    stack = list(exprs)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is s.Name:
            names.add(node.id)  # type: ignore[union-attr]
            continue
        if kind is s.Literal or node is None:
            continue
        if kind is s.Member:
            path = s.path_of(node)  # type: ignore[arg-type]
            if path is not None:
                names.add(path)
        for name in fields.get(kind, ()):
            value = getattr(node, name)
            if type(value) is list:
                stack.extend(value)
            elif value is not None:
                stack.append(value)
    return frozenset(names)


def _writes_through(param: s.Param, source: bytes) -> bool:
    """A parameter through which the callee may assign the caller's variable: `int &`, `Config *`
    (not `const int &`, `const float *`). Its text as written: the frontends' types drop `const`."""
    text = source[param.span.start:param.span.end].decode("utf-8", "replace") if param.span is not None else ""
    if not param.name or not text.endswith(param.name):
        text = param.type  # not this file's text (a function of another file), or unnamed
    marker = max(text.rfind("*"), text.rfind("&"))
    return marker >= 0 and re.search(r"\bconst\b", text[:marker]) is None


def _assigned_path(expr: s.Expr | None) -> str | None:
    """What an assignment to `expr` changes, as sizes name it: `n`, `cfg.bytes` (`p->n`: `p.n`), `dims`
    for `dims[0]`, `p` for `*p`."""
    while expr is not None:
        expr = s.strip_parens_and_casts(expr)
        path = s.path_of(expr)
        if path is not None:
            return path
        if isinstance(expr, s.Member):
            expr = expr.base  # `nodes[i].n`: the array
        elif isinstance(expr, s.Index):
            expr = expr.base
        elif isinstance(expr, s.Unary) and expr.op == "*":
            root = pointer_root(expr.operand)
            return root
        else:
            return None
    return None


def _extracted(expr: s.Expr) -> list[s.Expr]:
    """`std::cin >> n >> m;` as a statement (a shift whose value is dropped reads a stream): n, m."""
    targets = []
    while isinstance(expr, s.Binary) and expr.op == ">>":
        targets.append(expr.right)
        expr = expr.left
    return targets


def _nonnull_tests(cond: s.Expr | None) -> frozenset[str]:
    """Pointers a condition requires to be non-null: `p`, `p != NULL`, `nullptr != p`, `a && p`."""
    if cond is None:
        return frozenset()
    cond = s.strip_parens_and_casts(cond)
    if isinstance(cond, s.Other) and cond.kind == "paren" and len(cond.children) == 1:
        return _nonnull_tests(cond.children[0])
    path = s.path_of(cond)
    if path is not None:
        return frozenset({path})
    if isinstance(cond, s.Binary):
        if cond.op == "&&":
            return _nonnull_tests(cond.left) | _nonnull_tests(cond.right)
        if cond.op == "!=":
            for a, b in ((cond.left, cond.right), (cond.right, cond.left)):
                b = s.strip_parens_and_casts(b)
                if isinstance(b, s.Literal) and (b.value == 0 or b.text in ("NULL", "nullptr")) or (
                        isinstance(b, s.Name) and b.id in ("NULL", "nullptr")):
                    p = s.path_of(a)
                    if p is not None:
                        return frozenset({p})
    return frozenset()


def _condition_names(expr: s.Expr | None) -> frozenset[str]:
    """The variables and member paths a condition reads (as `_names`)."""
    return _names(expr) if expr is not None else frozenset()


class _Bindings(Bindings):
    """Pointer name -> the objects it may point to.  Struct members: the names under `s.` are
    found through an index by first name, not by a scan of every binding for each struct passed
    whole."""

    def __init__(self) -> None:
        super().__init__()
        self._members: dict[str, dict[str, None]] = {}  # `s` -> {`s.a`, `s.b.c`} (insertion-ordered)

    def _changed(self, name: str, old: set[int] | None, new: set[int] | None) -> None:
        if "." not in name or (old is None) == (new is None):
            return
        if new is not None:
            self._members.setdefault(name.split(".", 1)[0], {})[name] = None
        else:
            del self._members[name.split(".", 1)[0]][name]

    def under(self, name: str) -> list[str]:
        """Bound names that start with `name.` (the members of a struct variable)."""
        prefix = name + "."
        return [key for key in self._members.get(name.split(".", 1)[0], ()) if key.startswith(prefix)]


# Parameter types that are values, never structs carrying pointers.
_SCALAR_TYPES = re.compile(r"^(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|float|double|char|short|long|long long|bool|"
                           r"size_t|ptrdiff_t|u?int(?:8|16|32|64)_t|half|__half|dim3|float[234]|int[234])$")


@lru_cache(maxsize=1024)  # asked for every declaration; a program writes a few dozen types
def _is_scalar(type_text: str) -> bool:
    return _SCALAR_TYPES.match(type_text.strip()) is not None


def _temporary_struct(arg: s.Expr, summaries: list, index: int) -> bool:
    """`arg` builds a struct by value (`View<float>(a, n)`) for a kernel parameter that is one."""
    arg = s.strip_parens_and_casts(arg)
    if not isinstance(arg, s.Call) or arg.launch is not None or not summaries:
        return False
    params = [k.params[index] for k in summaries if index < len(k.params)]
    return bool(params) and all(not p.is_pointer and "&" not in p.type and not _is_scalar(p.type)
                                for p in params)


class _FunctionLowering(ScopeLowering):
    bindings: _Bindings

    def __init__(self, ctx: _UnitContext, function: s.Function) -> None:
        super().__init__(function.qualname or function.name, _Bindings())
        self.ctx = ctx
        self.function = function
        self.path = ctx.tu.path
        self.source = ctx.tu.source
        self.ascii = self.source.isascii()  # columns need converting only when it is not
        self.folder = Folder(ctx.folder.macros, ctx.folder.constants)
        self.timeline.start_byte = function.span.start
        self.timeline.end_byte = function.body.span.end - 1
        self.param_objects: dict[int, int] = {}  # parameter index -> pseudo-object
        self.status_vars: dict[str, set[int]] = {}
        self.locals: set[str] = set()
        self.reference_params: set[str] = set()
        self.stmt_span: s.Span | None = None
        self.incomplete = False
        # Variables that hold objects opaquely (a library descriptor: cusparseCreateDnVec(&vec, n, d_x,
        # ...); an argument array: void *args[] = {&d_x}): a later call that receives the holder may
        # use its objects.
        self.holders: dict[str, set[int]] = {}
        self.capturing = False
        self.slot_objects: dict[str, list[int]] = {}  # member name -> member objects allocated here
        # What each local was computed from (`size_t bytes = n * sizeof(float)` -> {n}), so a size
        # written with `bytes` is known to be the extent a kernel receives as `n`.
        self.derived_from: dict[str, set[str]] = {}
        self.assignments: dict[str, int] = {}  # variable -> assignments so far (see `assigned`)
        self.value_structs: set[str] = set()  # locals that hold a struct by value (`SimulationData sd;`)
        self.member_loads: dict[str, str] = {}  # local pointer -> the member it was read from (`t = p->a`)
        self.param_index = {p.name: i for i, p in enumerate(function.params) if p.name}
        self.by_value = {p.name for p in function.params if p.name and not p.is_pointer and "&" not in p.type}
        self.locals_shadowing: set[str] = set()  # locals declared with a parameter's name
        self.param_members: dict[str, int] = {}  # `p.buf` -> the object standing for the caller's member
        # Members of a parameter's struct (index, member) allocated here and not freed: the caller's now.
        self.member_allocs: dict[tuple[int, str], int] = {}
        self.return_allocs: dict[str, int] = {}  # `return sd;`: member -> object allocated into it here
        # Objects a call of a function of the program allocated into a returned struct, by call.
        self.call_returns: dict[int, dict[str, int]] = {}
        self.mutable_globals: list[str] | None = None  # the file's non-const globals, when a call asks
        self.effects: dict[int, list[object]] = {}  # id of a loop or loop body -> `effect_nodes` of it
        for i, param in enumerate(function.params):
            if not param.name:
                continue
            self.locals.add(param.name)
            if "&" in param.type and "*" in param.type:
                self.reference_params.add(param.name)
            if param.is_pointer or "&" in param.type:
                oid = next(ctx.ids)
                self.objects[oid] = ObjectHistory(name=param.name, timeline=self.timeline, alloc=None)
                self.param_objects[i] = oid
                self.bindings[param.name] = {oid}

    # ------------------------------------------------------------------ results
    def histories(self) -> list[ObjectHistory]:
        params = set(self.param_objects.values())
        return [h for oid, h in self.objects.items() if oid not in params and h.alloc is not None]

    def summary(self) -> HostSummary:
        result = HostSummary(launches=sum(e.launches for e in self.timeline.events), nparams=len(self.function.params),
                             conditional=self.function.in_conditional)
        for index, oid in self.param_objects.items():
            history = self.objects[oid]
            access = Access.NONE
            for touch in history.touches:
                if touch.use:
                    access |= touch.access
            if access:
                result.access[index] = access
                if all(t.event.op is Op.HOST for t in history.touches if t.use):
                    result.host.add(index)
            if history.frees:
                result.frees.add(index)
            if history.escapes:
                result.escapes.add(index)
        # A parameter of a type not followed here (`CUdeviceptr d`, a struct by value whose members
        # it never names): what the function does with it is unknown, so calls may use what is passed.
        named = {path.partition(".")[0] for path in self.param_members}
        for index, param in enumerate(self.function.params):
            if param.name and index not in self.param_objects and param.name not in named \
                    and not _is_scalar(param.type):
                result.access[index] = READ_WRITE
        self.summarise_members(result)
        return result

    def summarise_members(self, result: HostSummary) -> None:
        """What the function does to members of its parameters' structs (and of a struct it returns)."""
        for path, oid in self.param_members.items():
            root, _, member = path.partition(".")
            key = (self.param_index[root], member)
            history = self.objects[oid]
            access = Access.NONE
            for touch in history.uses:
                access |= touch.access
            if access:
                result.member_access[key] = access
            if history.frees:
                result.member_frees.add(key)
        allocated = [(key, oid) for key, oid in self.member_allocs.items()] + \
                    [((RETURNED, member), oid) for member, oid in self.return_allocs.items()]
        for key, oid in allocated:
            history = self.objects[oid]
            if history.frees or history.alloc is None or history.alloc.guards or history.alloc.loops:
                # Freed before the function returns (a temporary), or allocated only on some calls
                # (`if (!p->buf) cudaMalloc(&p->buf, ...)`): not the caller's object from each call on.
                continue
            result.member_allocs[key] = history.alloc.api
            access = Access.NONE
            for touch in history.uses:
                access |= touch.access
            if access:
                result.member_access[key] = result.member_access.get(key, Access.NONE) | access
        # Members left holding what other members held (a swap): the caller's members trade too.
        owner = {oid: path for path, oid in self.param_members.items()}
        paths = dict.fromkeys(self.param_members)
        for root in self.param_index:
            paths.update(dict.fromkeys(self.bindings.under(root)))
        for path in paths:
            root, _, member = path.partition(".")
            if root not in self.param_index or root in self.by_value or root in self.locals_shadowing:
                continue
            bound = self.bindings.get(path)
            if bound is None:
                continue
            sources = {owner[o].partition(".")[2] for o in bound if o in owner and owner[o].partition(".")[0] == root}
            if sources - {member}:
                result.member_moves[(self.param_index[root], member)] = sources

    def size_of(self, *factors: s.Expr, element: int = 1) -> Size:
        """A folded size whose `names` include what its locals were computed from."""
        size = self.folder.product(*factors) if len(factors) > 1 else self.folder.fold(factors[0])
        if element != 1:
            size = Size(size.value * element if size.value is not None else None,
                        f"{size.expr}*{element}" if size.value is None else str(size.value * element),
                        size.constant_only, size.names)
        names = set(size.names)
        pending = list(names)
        while pending:
            for source in self.derived_from.get(pending.pop(), ()):
                if source not in names:
                    names.add(source)
                    pending.append(source)
        # Only a size written as one expression in bytes can be replaced as written.
        span = (factors[0].span.start, factors[0].span.end) if len(factors) == 1 and element == 1 else None
        # Versions by access path too: `cfg.bytes = ...` changes `cfg.bytes`, not `cfg.n`.
        paths = names | {p for p in _names(*factors) if "." in p}
        for path in [p for p in paths if "." in p]:
            paths.update(path.rsplit(".", k)[0] for k in range(1, path.count(".") + 1))  # `a.b` of `a.b.c`
        versions = frozenset((name, self.assignments[name]) for name in paths if name in self.assignments)
        return Size(size.value, size.expr, size.constant_only, frozenset(names), span, versions)

    def host_access(self, pointers: list[s.Expr], span: s.Span, api: str | None = None, params: bool = True) -> None:
        """`m[i]`, `*m`, `m->x`, `memcpy(h, m, n)` in host code: managed memory is read or written right
        here, a use like a kernel's (it must be allocated from the first such access to the last).
        A parameter dereferenced here makes calls of this function uses of what they pass for it
        (not through `p->x`: a host struct's pointer, most often)."""
        pointed = {oid for pointer in pointers for oid in self.refs(pointer)}
        if not pointed:
            return  # a host array: the common case
        params = set(self.param_objects.values()) if params else set()
        managed = {oid for oid in pointed if self.objects[oid].kind is Kind.MANAGED or oid in params}
        if managed:
            event = self.event(Op.HOST, api or self.text(span), span)
            self.touch(managed, Touch(event, READ_WRITE, use=True, definite=len(managed) == 1))

    def assigned(self, expr: s.Expr | None) -> None:
        """Count an assignment to a variable (`n = ...`, `n += ...`, `n++`, `&n` handed to a call) or to
        a part of one (`cfg.bytes = ...`, `dims[0] = ...`, `p->n = ...`): sizes computed from it before
        and after differ (`Size.versions`)."""
        path = _assigned_path(expr)
        if path:
            self.assignments[path] = self.assignments.get(path, 0) + 1

    def bump(self, *names: str) -> None:
        for name in names:
            self.assignments[name] = self.assignments.get(name, 0) + 1

    def call_assigns(self, call: s.Call) -> list[str]:
        """What a call of a function of this file may assign: an argument passed to a non-const reference
        or pointer parameter (`read_size(n)` with `int &n`, `setup(cfg)` with `Config *cfg`), and the
        file's globals (`configure(1)` sets `g_n`)."""
        defs = self.ctx.host_defs.get(s.callee_name(call), [])
        if not defs or call.launch is not None:
            return []
        if self.mutable_globals is None:
            self.mutable_globals = [v.name for d in self.ctx.tu.globals for v in d.vars
                                    if not (v.is_const or v.is_constexpr) and v.name not in self.locals]
        paths = list(self.mutable_globals)
        for f in defs:
            for param, arg in zip(f.params, call.args):
                path = _assigned_path(arg) if _writes_through(param, self.source) else None
                if path is not None:
                    paths.append(path)
        return paths

    def assigned_by(self, node: object, paths: set[str | None]) -> None:
        """What `node` may assign, into `paths` (as `assigned` and `call_assigns` count assignments)."""
        if isinstance(node, s.Assign):
            paths.add(_assigned_path(node.target))
        elif isinstance(node, s.Unary) and node.op in ("++", "--"):
            paths.add(_assigned_path(node.operand))
        elif isinstance(node, s.VarDecl):
            paths.add(node.name)
        elif isinstance(node, s.Call):
            paths.update(_assigned_path(a.operand) for a in node.args if isinstance(a, s.Unary) and a.op == "&")
            paths.update(self.call_assigns(node))
        elif isinstance(node, s.ExprStmt):
            paths.update(_assigned_path(e) for e in _extracted(node.expr))

    def location(self, span: s.Span) -> Location:
        row, column, end_row, end_column = span.points()
        if self.ascii:  # byte columns are character columns
            return Location(self.path, row, column, end_row, end_column)
        return Location(self.path, row, char_column(self.source, span.start, column), end_row,
                        char_column(self.source, span.end, end_column))

    def text(self, span: s.Span) -> str:
        return self.source[span.start:span.end].decode("utf-8", "replace")

    # ------------------------------------------------------------------ events
    def location_of(self, span: s.Span) -> Location:
        return self.location(span)

    def statement_of(self, span: s.Span) -> tuple[int, int]:
        stmt = self.stmt_span or span
        return stmt.start, stmt.end

    def touch(self, oids: set[int], touch: Touch) -> None:
        for oid in oids:
            history = self.objects[oid]
            history.touches.append(touch)
            if self.capturing:
                # Captured into a graph: it runs at the graph's launches, not here.
                history.incomplete = True

    # ------------------------------------------------------------------ resolving names
    def refs(self, expr: s.Expr | None) -> set[int]:
        """Objects a (pointer-valued) expression may point into."""
        kind = type(expr)  # one test per class (no syntax class has subclasses): asked for every argument
        while kind is s.Cast:
            expr = expr.operand  # type: ignore[union-attr]
            kind = type(expr)
        if kind is s.Name:
            path: str | None = expr.id  # type: ignore[union-attr]
        elif kind is s.Member:
            path = s.path_of(expr)  # type: ignore[arg-type]
        elif kind is s.Other:
            if expr.kind == "paren" and len(expr.children) == 1:  # type: ignore[union-attr]
                return self.refs(expr.children[0])  # type: ignore[union-attr]
            return set()
        elif kind is s.Binary:
            if expr.op in ("+", "-"):  # type: ignore[union-attr]
                return self.refs(expr.left) | self.refs(expr.right)  # type: ignore[union-attr]
            return set()
        elif kind is s.Unary:
            if expr.op == "&" and type(expr.operand) is s.Index:  # type: ignore[union-attr]
                return self.refs(expr.operand.base)  # type: ignore[union-attr]
            if expr.op in ("++", "--"):  # type: ignore[union-attr]
                return self.refs(expr.operand)  # type: ignore[union-attr]
            return set()
        elif kind is s.Conditional:
            return self.refs(expr.then) | self.refs(expr.orelse)  # type: ignore[union-attr]
        else:
            return set()  # None, a literal, a call, an index, ...: no path
        if path is None:
            return set()
        found = set(self.current(path))
        if not found and isinstance(expr, s.Name):
            # A struct passed whole: it carries the objects in its members.
            for key in self.bindings.under(path):
                found |= self.bindings.get(key)
        if "." in path:
            found.update(self.slot_objects.get(path.rsplit(".", 1)[1], ()))
        return found

    def current(self, path: str) -> set[int]:
        """What a name or access path may point to now; a member of a parameter's struct
        (`p->buf`) not yet assigned here holds what the caller put there (an object standing for
        it, so the summary can say what the function does to the caller's member)."""
        bound = self.bindings.get(path)
        if bound is not None:
            return bound
        root, dot, rest = path.partition(".")
        if not dot or root not in self.param_index or root in self.locals_shadowing:
            return set()
        oid = self.param_members.get(path)
        if oid is None:
            oid = next(self.ctx.ids)
            self.objects[oid] = ObjectHistory(name=path, timeline=self.timeline, alloc=None)
            self.param_members[path] = oid
        return {oid}

    def returned_by_value(self, value: s.Expr) -> set[int]:
        """`return sd;` of a local struct: the caller gets a copy of its members' pointers, which
        are followed by member name like any member (they do not escape)."""
        value = s.strip_parens_and_casts(value)
        if not isinstance(value, s.Name) or value.id not in self.value_structs or self.bindings.get(value.id):
            return set()
        return {oid for key in self.bindings.under(value.id) for oid in self.bindings.get(key, set())
                if self.objects[oid].member}

    def member_slot(self, expr: s.Expr) -> str | None:
        path = s.path_of(expr)
        if path is not None and "." in path:
            return path.rsplit(".", 1)[1]
        return None

    # ------------------------------------------------------------------ driving
    def run(self) -> None:
        self.block(self.function.body)
        last = self.function.body.stmts[-1] if self.function.body.stmts else None
        body_span = self.function.body.span
        end = s.Span(body_span.end - 1, body_span.end, body_span.end_row, max(1, body_span.end_column - 1),
                     body_span.end_row, body_span.end_column)
        self.builder.finish(self.location(end), not isinstance(last, s.Return) and not _ends_program(last),
                            "end of function")
        if self.incomplete:
            for h in self.objects.values():
                h.incomplete = True

    def block(self, block: s.Stmt | None) -> None:
        if block is None:
            return
        if isinstance(block, s.Block):
            if self.source[block.span.start:block.span.start + 1] == b"{":
                self.timeline.blocks.append((block.span.start, block.span.end))
            for stmt in block.stmts:
                self.stmt(stmt)
        else:
            self.stmt(block)

    def stmt(self, stmt: s.Stmt) -> None:
        kind = type(stmt)
        if kind is s.ExprStmt:
            self.stmt_span = stmt.span
            self.expr(stmt.expr)
            for target in _extracted(stmt.expr):
                self.assigned(target)
        elif kind is s.Decl:
            self.stmt_span = stmt.span
            self.decl(stmt)
        elif kind is s.Block:
            self.block(stmt)
        elif kind is s.If:
            self.if_(stmt)
        elif kind is s.Loop:
            self.loop(stmt)
        elif kind is s.Return:
            self.stmt_span = stmt.span
            if stmt.value is not None:
                self.expr(stmt.value)
                returned = self.returned_by_value(stmt.value)
                self.escape(self.refs(stmt.value) - returned, stmt.value.span, "returned")
                name = s.path_of(s.strip_parens_and_casts(stmt.value))
                for oid in returned:
                    history = self.objects[oid]
                    if history.alloc is not None and name and history.name.startswith(name + "."):
                        self.return_allocs[history.name[len(name) + 1:]] = oid
            self.event(Op.EXIT, "return", stmt.span, detail="return")
        elif isinstance(stmt, s.Unparsed):
            self.incomplete = True

    def decl(self, decl: s.Decl) -> None:
        for var in decl.vars:
            for oid in self.bindings.get(var.name, set()):  # a declaration shadowing the name
                self.objects[oid].overwritten.append(self.builder.t)
            if var.name in self.param_index:
                self.locals_shadowing.add(var.name)
            self.locals.add(var.name)
            if not var.is_pointer and "&" not in var.type and "*" not in var.type and "[" not in var.type \
                    and not var.array_dims and not _is_scalar(var.type):
                self.value_structs.add(var.name)
            else:
                self.value_structs.discard(var.name)
            self.assignments[var.name] = self.assignments.get(var.name, 0) + 1
            if var.init is None:
                self.bindings.pop(var.name, None)
                self.folder.forget(var.name)
                continue
            created = self.expr(var.init)
            if isinstance(var.init, s.Call) and created:
                self.status_vars[var.name] = created
            self.bind_returned(var.name, var.init)
            self.trade(var.name, var.init)
            self.hold(var.name, self.aggregate_objects(var.init) | self.held_by([var.init]))
            self.derived_from[var.name] = set(_names(var.init))
            oids = self.refs(var.init)
            if oids:
                self.bindings[var.name] = oids
            else:
                self.bindings.pop(var.name, None)
            if (var.is_const or var.is_constexpr) and not var.is_pointer:
                self.folder.with_constant(var.name, var.init)
            else:
                self.folder.forget(var.name)

    def if_(self, stmt: s.If) -> None:
        self.stmt_span = stmt.cond.span if stmt.cond is not None else stmt.span
        created = self.expr(stmt.cond) if stmt.cond is not None else set()
        guard_id = next(self.guard_ids)
        cond_text = _condition_text(self.folder, stmt.cond)
        # A branch that tests an allocation's own result is its failure path.
        checked = set(created)
        for name in _condition_names(stmt.cond):
            checked |= self.status_vars.get(name, set())
            if isinstance(stmt.cond, (s.Unary, s.Binary, s.Name)):
                checked |= {o for o in self.bindings.get(name, set()) if self.objects[o].alloc is not None}
        for oid in checked:
            history = self.objects[oid]
            history.checked_by = history.checked_by | {guard_id}
        mark = self.bindings.checkpoint()
        loc = self.location(stmt.cond.span if stmt.cond is not None else stmt.span)
        # A `case` arm is lowered to an If too; nothing may be placed before its label.
        is_case = self.source[stmt.span.start:stmt.span.start + 7].startswith((b"case", b"default"))
        span = (None, None) if is_case else (stmt.span.start, stmt.span.end)
        # Each arm's events carry its guard (what `ScopeLowering.guarded` does, without a context
        # manager's generator for every branch).
        guards = self.guard_stack
        guards.append(Guard(guard_id, 0, cond_text, loc, _nonnull_tests(stmt.cond), *span))
        self.stmt(stmt.then)
        guards.pop()
        arms = [self.bindings.undo(mark)]
        if stmt.orelse is not None:
            guards.append(Guard(guard_id, 1, cond_text, loc, frozenset(), *span))
            self.stmt(stmt.orelse)
            guards.pop()
            arms.append(self.bindings.undo(mark))
        # After the branch a name may point to what either arm left in it.
        self.bindings.join(arms, exhaustive=stmt.orelse is not None)
        self.bindings.release()

    def loop(self, stmt: s.Loop) -> None:
        if stmt.init is not None:
            self.stmt(stmt.init)
        values, contents, changed = self.modified_in(stmt)
        self.merge_swapped(stmt)
        # What the loop assigns has another value in each iteration and after the loop: a new version
        # on entry (sizes before the change in the body differ from those before the loop) and on exit.
        self.bump(*changed)
        with self.looping(self.location(stmt.span), values, contents, (stmt.span.start, stmt.span.end)):
            if stmt.kind != "do" and stmt.cond is not None:
                self.stmt_span = stmt.cond.span
                self.expr(stmt.cond)
            self.stmt(stmt.body)
            if stmt.step is not None:
                self.stmt_span = stmt.step.span
                self.expr(stmt.step)
            if stmt.kind == "do" and stmt.cond is not None:
                self.stmt_span = stmt.cond.span
                self.expr(stmt.cond)
        self.bump(*changed)

    def modified_in(self, loop: s.Loop) -> tuple[set[str], set[str], set[str]]:
        """Names whose value the loop may change, names whose pointed-to contents it may change, and
        everything it may assign (sizes written with those take a new version), in one walk."""
        values: set[str] = set()
        contents: set[str] = set()
        assigned: set[str | None] = set()
        for node in self.effect_nodes(loop):
            self.assigned_by(node, assigned)
            if isinstance(node, s.Assign):
                target = s.strip_parens_and_casts(node.target)
                path = s.path_of(target)
                if path is not None:
                    values.add(path)
                    if "." in path:
                        contents.add(path.split(".", 1)[0])
                elif isinstance(target, s.Index):
                    contents |= _roots(target.base)
                elif isinstance(target, s.Unary) and target.op == "*":
                    contents |= _roots(target.operand)
            elif isinstance(node, s.Unary) and node.op in ("++", "--"):
                operand = s.strip_parens_and_casts(node.operand)
                path = s.path_of(operand)
                if path is not None:
                    values.add(path)
                elif isinstance(operand, s.Index):
                    contents |= _roots(operand.base)
            elif isinstance(node, s.VarDecl):
                values.add(node.name)
            elif isinstance(node, s.Call):
                self._call_effects(node, values, contents)
        assigned.discard(None)
        return values, contents, assigned  # type: ignore[return-value]

    def _call_effects(self, call: s.Call, values: set[str], contents: set[str]) -> None:
        name = self.qualified(call)
        short = s.callee_name(call)
        if isinstance(call.callee, s.Member) and short not in _CONST_METHODS:
            contents |= _roots(call.callee.base)  # `v.push_back(x)`, `buf.fill(0)`
        if name in api.SWAP:
            for arg in call.args:
                path = s.path_of(arg)
                if path is not None:
                    values.add(path)
            return
        copy = api.COPY.get(short)
        memset = api.MEMSET.get(short)
        for i, arg in enumerate(call.args):
            stripped = s.strip_parens_and_casts(arg)
            if isinstance(stripped, s.Unary) and stripped.op == "&" and not isinstance(stripped.operand, s.Index):
                path = s.path_of(stripped.operand)
                read_only = (copy is not None and i != copy.dst) or short in api.FREE or call.launch is not None
                if path is not None and not read_only:
                    values.add(path)  # an out-parameter
                continue
            if call.launch is not None or name in api.NO_ACCESS or short in api.FREE or short in api.ALLOC:
                continue  # kernels cannot write host variables; frees write nothing we compare
            if copy is not None:
                if i == copy.dst:
                    contents |= _roots(arg)
                continue
            if memset is not None:
                if i == memset.dst:
                    contents |= _roots(arg)
                continue
            if api.is_runtime_api(short) and short not in self.ctx.host_defs:
                continue
            # A compile-time constant (`const int n = 1 << 20`) passed by value changes nothing.
            contents |= {root for root in _roots(arg) if root not in self.folder.constants}

    def effect_nodes(self, node: s.Stmt) -> list[object]:
        """The assignments, increments, declarations, calls and expression statements under `node`
        (a loop or a loop's body), in `syntax.walk` order.  Each loop asks about itself and its body;
        kept per node, so nested loops are walked once, not once per enclosing loop."""
        found = self.effects.get(id(node))
        if found is not None:
            return found
        found = []
        if type(node) is s.Loop:
            for part in (node.init, node.cond, node.step):
                if part is not None:
                    found.extend(n for n in s.walk(part) if type(n) in _EFFECT_TYPES)
            found.extend(self.effect_nodes(node.body))
        else:
            fields = s.CHILD_FIELDS
            stack: list[object] = [node]
            while stack:
                current = stack.pop()
                kind = type(current)
                if kind is s.Loop and current is not node:
                    found.extend(self.effect_nodes(current))  # type: ignore[arg-type]
                    continue
                if kind in _EFFECT_TYPES:
                    found.append(current)
                kids: list[object] = []
                for name in fields.get(kind, ()):
                    value = getattr(current, name)
                    if type(value) is list:
                        kids.extend(value)
                    elif value is not None:
                        kids.append(value)
                kids.reverse()
                stack.extend(kids)
        self.effects[id(node)] = found
        return found

    def merge_swapped(self, loop: s.Loop) -> None:
        """Names that trade pointers inside a loop may each point to any of their objects."""
        groups: list[set[str]] = []
        for node in self.effect_nodes(loop.body):
            pair: tuple[str, str] | None = None
            if isinstance(node, s.Call) and self.qualified(node) in api.SWAP and len(node.args) == 2:
                a, b = (s.path_of(x) for x in node.args)
                if a and b:
                    pair = (a, b)
            elif isinstance(node, s.Assign) and node.op == "=":
                a, b = s.path_of(node.target), pointer_root(node.value) or _member_path(node.value)
                if a and b and (self.current(b) or any(b in g for g in groups)):
                    pair = (a, b)
            elif isinstance(node, s.VarDecl) and node.init is not None:
                b = pointer_root(node.init) or _member_path(node.init)
                if b and self.current(b):
                    pair = (node.name, b)
            if pair is None:
                continue
            merged = {pair[0], pair[1]}
            for g in [g for g in groups if g & merged]:
                merged |= g
                groups.remove(g)
            groups.append(merged)
        for group in groups:
            union: set[int] = set()
            for name in group:
                union |= self.current(name)
            if union:
                for name in group:
                    self.bindings[name] = set(union)

    # ------------------------------------------------------------------ expressions
    def expr(self, expr: s.Expr | None) -> set[int]:
        """Emit the events of an expression (inner calls first); returns objects it allocated."""
        kind = type(expr)
        if kind is s.Name or kind is s.Literal or expr is None:
            return set()  # the leaves, most of every tree: nothing to emit
        if kind is s.Call:
            created: set[int] = set()
            for arg in expr.args:
                leaf = type(arg)
                if leaf is s.Name or leaf is s.Literal:
                    continue  # most arguments: nothing to emit, not worth a call
                created |= self.expr(arg)
                if type(arg) is s.Unary and arg.op == "&":
                    self.assigned(arg.operand)  # `scanf("%d", &n)`, `cudaMemcpyFromSymbol(&n, ...)`
            for cfg in expr.launch or []:
                if type(cfg) is not s.Name and type(cfg) is not s.Literal:
                    self.expr(cfg)
            self.bump(*self.call_assigns(expr))
            return created | self.call(expr)
        # The node's class decides (`type(...) is`: no syntax class has subclasses), each tested once.
        if kind is s.Assign:
            created = self.expr(expr.value)
            if not isinstance(s.strip_parens_and_casts(expr.target), s.Name):
                self.expr(expr.target)  # `m[i] = v`: the host writes managed memory
            self.assigned(expr.target)
            self.assign(expr, created)
            return created
        if kind is s.Unary:
            op = expr.op
            if op in ("++", "--"):
                self.assigned(expr.operand)
            elif op == "&":
                operand = expr.operand
                if type(operand) is s.Index:
                    return self.expr(operand.base) | self.expr(operand.index)  # `&m[i]` reads nothing
                if type(operand) is s.Member and operand.arrow:
                    return self.expr(operand.base)  # nor does `&m->x`
            elif op == "*":
                self.host_access([expr.operand], expr.span)
        elif kind is s.Sizeof:
            return set()  # not evaluated
        elif kind is s.Index:
            self.host_access([expr.base], expr.span)
        elif kind is s.Member:
            if expr.arrow:
                self.host_access([expr.base], expr.span, params=False)
        elif kind is s.Other and expr.kind in api.AGGREGATES:
            self.aggregate(expr)
        created = set()
        for name in s.CHILD_FIELDS.get(kind, ()):
            value = getattr(expr, name)
            if type(value) is list:
                for child in value:
                    if type(child) is not s.Name and type(child) is not s.Literal:
                        created |= self.expr(child)
            elif value is not None and type(value) is not s.Name and type(value) is not s.Literal:
                created |= self.expr(value)
        return created

    def member_loaded(self, value: s.Expr | None) -> str | None:
        """The member a pointer value was read from: `p->a`, or a local loaded from one (`t = p->a`)."""
        if value is None:
            return None
        path = s.path_of(s.strip_parens_and_casts(value))
        if path is None:
            return None
        return path.rsplit(".", 1)[1] if "." in path else self.member_loads.get(path)

    def trade(self, target: str | None, value: s.Expr | None) -> None:
        """`p->a = p->b` (or `= t` with `t = p->b`): members `a` and `b` trade pointers (see
        `_UnitContext.trade`); `t = p->a` remembers where `t` came from."""
        if target is None:
            return
        source = self.member_loaded(value)
        if "." in target:
            member = target.rsplit(".", 1)[1]
            if source is not None and source != member:
                self.ctx.trade(member, source)
        elif source is not None:
            self.member_loads[target] = source
        else:
            self.member_loads.pop(target, None)

    def assign(self, node: s.Assign, created: set[int]) -> None:
        target = s.strip_parens_and_casts(node.target)
        path = s.path_of(target)
        if node.op != "=":
            return  # `p += n` keeps pointing into the same object
        self.trade(path, node.value)
        oids = self.refs(node.value)
        if isinstance(target, s.Name) and isinstance(node.value, s.Call) and created:
            self.status_vars[target.id] = created
        if path is not None:
            self.bind_returned(path, node.value)
        if path is not None:
            self.hold(path.split(".", 1)[0], self.aggregate_objects(node.value) | self.held_by([node.value]))
        if path is not None and "." not in path and path in self.locals and path not in self.reference_params:
            for oid in self.bindings.get(path, set()) - oids:
                self.objects[oid].overwritten.append(self.builder.t)
            self.derived_from.setdefault(path, set()).update(_names(node.value))
            if oids:
                self.bindings[path] = oids
            else:
                self.bindings.pop(path, None)
            self.folder.forget(path)
            return
        if path is not None:
            # A member, a global or a reference parameter: the pointer now lives outside this scope.
            self.escape(oids, node.span, "stored")
            if oids:
                self.bindings[path] = oids
            return
        self.escape(oids, node.span, "stored")

    def aggregate_objects(self, expr: s.Expr) -> set[int]:
        """Objects named inside initializer lists, lambdas and `new` expressions within `expr`."""
        oids: set[int] = set()
        if self.function.aggregates is False:  # the frontend saw none in the function: no walk
            return oids
        for node in s.walk(expr):
            if isinstance(node, s.Other) and node.kind in api.AGGREGATES:
                for inner in s.walk(node):
                    if isinstance(inner, (s.Name, s.Member)):
                        oids |= self.refs(inner)
        return oids

    def aggregate(self, expr: s.Other) -> None:
        """`void *args[] = {&d_a, &n}`, a lambda capture: the pointer is kept where we cannot follow."""
        self.escape(self.aggregate_objects(expr), expr.span, "initializer")

    def held_by(self, args: list[s.Expr]) -> set[int]:
        """Objects held by holders passed as (or inside) these arguments."""
        if not self.holders:
            return set()
        oids: set[int] = set()
        stack: list[object] = list(args)
        while stack:
            node = stack.pop()
            if isinstance(node, s.Call):
                continue  # a nested call is judged on its own (`CHECK(cuLaunchKernel(..., args))`)
            stack.extend(s.children(node))
            if isinstance(node, (s.Name, s.Member)):
                path = s.path_of(node)
                if path is not None:
                    oids |= self.holders.get(path, set()) | self.holders.get(path.split(".", 1)[0], set())
        return oids

    def touch_held(self, event: Event, args: list[s.Expr]) -> None:
        held = {oid for oid in self.held_by(args) if not self.objects[oid].frees}
        if held:
            self.touch(held, Touch(event, READ_WRITE, use=True, definite=False))

    def hold(self, holder: str | None, oids: set[int]) -> None:
        if holder is not None and oids:
            self.holders.setdefault(holder, set()).update(oids)

    def qualified(self, call: s.Call) -> str:
        if isinstance(call.callee, s.Name):
            return call.callee.id
        return s.callee_name(call)

    def call(self, call: s.Call) -> set[int]:
        name = self.qualified(call)
        short = s.callee_name(call)
        args = call.args
        if call.launch is not None:
            self.launch(call, short)
            return set()
        if short in api.ALLOC:
            return self.alloc(call, short, api.ALLOC[short])
        if short in api.FREE:
            self.free(call, short, api.FREE[short])
            return set()
        if short in api.COPY:
            self.copy(call, short, api.COPY[short])
            return set()
        if short in api.MEMSET:
            self.memset(call, short, api.MEMSET[short])
            return set()
        if name in api.SWAP and len(args) == 2:
            a, b = (s.path_of(x) for x in args)
            if a and b:
                self.bindings[a], self.bindings[b] = self.bindings.get(b, set()), self.bindings.get(a, set())
                self.trade(a, args[1])
            return set()
        if name in api.HOST_MEMORY:
            self.host_access(args, call.span, name)
            return set()
        if name in api.NO_ACCESS or name in api.PROGRAM_EXIT:
            return set()
        if short in api.LAUNCH:
            event = self.event(Op.LAUNCH, short, call.span, launches=1)
            for arg in args:
                oids = self.refs(arg)
                self.touch(oids, Touch(event, READ_WRITE, use=True))
            self.touch_held(event, args)
            return set()
        if short in api.CAPTURE_BEGIN or short in api.CAPTURE_END:
            self.capturing = short in api.CAPTURE_BEGIN
            return set()
        if short in api.GRAPH_LAUNCH:
            # The graph may read and write any object it captured: every object live here.
            event = self.event(Op.LAUNCH, short, call.span, launches=1)
            live = {oid for oid, h in self.objects.items() if h.alloc is None or not h.frees}
            self.touch(live, Touch(event, READ_WRITE, use=True))
            return set()
        if short in api.TEXTURE_BIND:
            self.unknown_call(call, name)
            return set()
        candidates = [h for h in self.ctx.hosts.get(short, []) if h.nparams == len(args)]
        if api.is_runtime_api(short) and not api.is_library_call(name) and short not in self.ctx.host_defs:
            return set()
        if short not in self.ctx.host_defs and not isinstance(call.callee, s.Member):
            # Defined in another file of the program (or in a file this one includes)?
            candidates = [h for h in self.ctx.hosts_named(short) or [] if h.nparams == len(args)]
            if candidates:
                self.known_call(call, short, candidates)
            else:
                self.unknown_call(call, name)
        elif short in self.ctx.host_defs and candidates and not isinstance(call.callee, s.Member):
            self.known_call(call, short, candidates)
        else:
            self.unknown_call(call, name)
        return set()

    def alloc(self, call: s.Call, name: str, spec: api.AllocApi) -> set[int]:
        if len(call.args) <= max(spec.target, *spec.size):
            return set()
        size = self.size_of(*(call.args[i] for i in spec.size))
        target = s.strip_parens_and_casts(call.args[spec.target])
        event = self.event(Op.ALLOC, name, call.span, size=size,
                           names=_names(*(call.args[i] for i in spec.size)))
        oid = next(self.ctx.ids)
        if isinstance(target, s.Unary) and target.op == "&":
            lvalue = target.operand
            path = s.path_of(lvalue)
            display = path if path is not None else self.text(lvalue.span)
        else:
            lvalue, path, display = None, None, "*" + self.text(target.span)
        history = ObjectHistory(name=self.text(lvalue.span) if lvalue is not None else display,
                                timeline=self.timeline, alloc=event, size=size, kind=spec.kind)
        self.objects[oid] = history
        if path is None:
            # `cudaMalloc(p, n)` with `float **p`, or `&bufs[i]`: the pointer is stored elsewhere.
            history.escapes.append(event)
            return {oid}
        root = path.split(".", 1)[0]
        if "." in path:
            history.member = True
            if root in self.param_index and root not in self.by_value and root not in self.locals_shadowing:
                self.member_allocs[(self.param_index[root], path.split(".", 1)[1])] = oid
            slot = path.rsplit(".", 1)[1]
            self.slot_objects.setdefault(slot, []).append(oid)
            self.ctx.member_objects.setdefault(slot, []).append(history)
        elif root in self.reference_params or (root not in self.locals):
            history.escapes.append(event)  # a reference parameter or a global keeps it
        # The old object in that variable (if any) is no longer reachable through it.
        self.bindings[path] = {oid}
        return {oid}

    def free(self, call: s.Call, name: str, index: int) -> None:
        if len(call.args) <= index:
            return
        arg = call.args[index]
        oids = self.refs(arg)
        # `if (p) cudaFree(p);` frees p whenever there is something to free.
        path = s.path_of(s.strip_parens_and_casts(arg))
        guards = tuple(g for g in self.guard_stack if path is None or path not in g.nonnull)
        event = self.event(Op.FREE, name, call.span, guards=guards)
        for oid in oids:
            self.objects[oid].frees.append(event)
        slot = self.member_slot(s.strip_parens_and_casts(arg))
        if slot is not None:
            self.ctx.member_frees.setdefault(slot, []).append(event)

    def copy(self, call: s.Call, name: str, spec: api.CopyApi) -> None:
        args = call.args
        if any(i is not None and i >= len(args) for i in (spec.dst, spec.src, *spec.size)):
            return
        size = self.size_of(*(args[i] for i in spec.size))
        direction = spec.direction
        if direction is None and spec.kind_arg is not None and spec.kind_arg < len(args):
            kind = s.strip_parens_and_casts(args[spec.kind_arg])
            kind_text = kind.id.rsplit("::", 1)[-1] if isinstance(kind, s.Name) else self.text(kind.span)
            direction = api.MEMCPY_KINDS.get(kind_text, "default")
        dst = self.refs(args[spec.dst]) if spec.dst is not None else set()
        src = self.refs(args[spec.src]) if spec.src is not None else set()
        dst_path = s.path_of(s.strip_parens_and_casts(args[spec.dst])) if spec.dst is not None else None
        event = self.event(Op.COPY, name, call.span, size=size, direction=direction, names=_names(*args),
                           detail=dst_path or "")
        if dst:
            offset_zero = isinstance(s.strip_parens_and_casts(args[spec.dst]), (s.Name, s.Member))
            self.touch(dst, Touch(event, Access.WRITE, use=False, size=size, offset_zero=offset_zero,
                                  definite=len(dst) == 1))
        if src:
            self.touch(src, Touch(event, Access.READ, use=False, size=size, definite=len(src) == 1))

    def memset(self, call: s.Call, name: str, spec: api.MemsetApi) -> None:
        args = call.args
        if any(i >= len(args) for i in (spec.dst, *spec.size)):
            return
        size = self.size_of(*(args[i] for i in spec.size), element=spec.element)
        dst = self.refs(args[spec.dst])
        event = self.event(Op.MEMSET, name, call.span, size=size, names=_names(*args))
        offset_zero = isinstance(s.strip_parens_and_casts(args[spec.dst]), (s.Name, s.Member))
        self.touch(dst, Touch(event, Access.WRITE, use=False, size=size, offset_zero=offset_zero,
                              definite=len(dst) == 1))

    def launch(self, call: s.Call, kernel: str) -> None:
        known = self.ctx.kernels_named(kernel)
        summaries = [k for k in known if k.is_kernel and len(k.params) == len(call.args)]
        summaries = summaries or [k for k in known if k.is_kernel]
        event = self.event(Op.LAUNCH, kernel, call.span, launches=1, detail="<<<>>>",
                           names=_names(*call.args, *(call.launch or [])))
        self.touch_held(event, call.args)
        for i, arg in enumerate(call.args):
            oids = self.refs(arg)
            access = Access.NONE
            if summaries:
                for summary in summaries:
                    access |= summary.uses(i)
            else:
                access = READ_WRITE
            if oids and access:
                self.touch(oids, Touch(event, access, use=True))
            elif _temporary_struct(arg, summaries, i):
                # `k<<<g, b>>>(View<float>(a, n))`: a temporary built from `a` carries it into the kernel,
                # which may use it through any member (as an aggregate `Pair{a, b}` does).
                carried = set().union(*(self.refs(a) for a in s.strip_parens_and_casts(arg).args))
                if carried:
                    self.touch(carried, Touch(event, READ_WRITE, use=True, definite=False))
            self.note_member_use(arg, event, access)
            self.kernel_stores(call.args, i, oids, [summary.stores.get(i, set()) for summary in summaries])

    def kernel_stores(self, args: list[s.Expr], index: int, oids: set[int], places: list[set[int]]) -> None:
        """`table[i] = buf;` in the kernel: the object passed for `buf` escapes, and a later call or launch
        that receives what was passed for `table` may use it (it holds the pointer, as a descriptor does)."""
        if not oids or not any(places):
            return
        self.escape(oids, args[index].span, "stored by the kernel")
        for place in set().union(*places):
            if 0 <= place < len(args) and place != index:
                self.hold(pointer_root(args[place]), oids)

    def note_member_use(self, arg: s.Expr, event: Event, access: Access) -> None:
        """Record a use of a member slot (or of a whole struct) for objects allocated elsewhere."""
        if not access:
            return
        arg = s.strip_parens_and_casts(arg)
        slot = self.member_slot(arg)
        if slot is not None:
            self.ctx.member_uses.setdefault(slot, []).append(Touch(event, access, use=True))
        elif isinstance(arg, (s.Name, s.Unary)) and not self.refs(arg):
            # A struct (or a pointer to one) may carry member buffers into the callee.
            if isinstance(arg, s.Unary) or not self.bindings.get(s.path_of(arg) or ""):
                self.ctx.member_uses.setdefault("*", []).append(Touch(event, access, use=True))

    def known_call(self, call: s.Call, name: str, candidates: list[HostSummary]) -> None:
        launches = max(c.launches for c in candidates)
        event = self.event(Op.CALL, name, call.span, launches=launches, names=_names(*call.args))
        host_event: Event | None = None
        self.touch_held(event, call.args)
        self.callee_members(call, name, event, candidates)
        for i, arg in enumerate(call.args):
            oids = self.refs(arg)
            access = Access.NONE
            frees = escapes = False
            for c in candidates:
                access |= c.access.get(i, Access.NONE)
                if c.conditional:
                    access |= READ_WRITE
                frees |= i in c.frees
                escapes |= i in c.escapes
            if oids and access and all(i in c.host and not c.conditional for c in candidates):
                # Only the host dereferences it in there (`checksum(m, n)`): a host access, as `m[i]` here is.
                host_event = host_event or self.event(Op.HOST, f"{name}()", call.span)
                self.touch(oids, Touch(host_event, access, use=True))
            elif oids and access:
                self.touch(oids, Touch(event, access, use=True))
            if frees:
                for oid in oids:
                    self.objects[oid].frees.append(event)
                slot = self.member_slot(s.strip_parens_and_casts(arg))
                if slot is not None:
                    self.ctx.member_frees.setdefault(slot, []).append(event)
            if escapes:
                for oid in oids:
                    self.objects[oid].escapes.append(event)
            self.note_member_use(arg, event, access)
            if not oids and isinstance(arg, (s.Name, s.Unary)):
                # A struct passed to a helper that frees its members frees them here.
                self.note_struct_frees(arg, event, candidates, i)

    def callee_members(self, call: s.Call, name: str, event: Event, candidates: list[HostSummary]) -> None:
        """Members of the caller's structs that the callee allocates, uses, frees or swaps
        (`setup(&d)` allocating `d.buf`): objects of the caller from the call on.  Their leaks and
        uses are judged where they are allocated (by member name); here they are escaped objects
        whose distances (GL001, GL002 up to a free) the caller's launches measure."""
        bases: dict[int, str] = {}
        for i, arg in enumerate(call.args):
            stripped = s.strip_parens_and_casts(arg)
            if isinstance(stripped, s.Unary) and stripped.op == "&":
                stripped = s.strip_parens_and_casts(stripped.operand)
            path = s.path_of(stripped)
            if path is not None:
                bases[i] = path
        before = {}
        for c in candidates:
            for (i, member), sources in c.member_moves.items():
                if i in bases:
                    for source in sources | {member}:
                        before[(i, source)] = self.current(f"{bases[i]}.{source}")
        made: dict[tuple[int, str], int] = {}
        for c in candidates:
            for (i, member), allocator in c.member_allocs.items():
                if (i, member) in made or (i != RETURNED and i not in bases) or self.loop_stack:
                    continue  # a call in a loop would stand for a new object each iteration
                path = f"{bases[i]}.{member}" if i != RETURNED else member
                oid = next(self.ctx.ids)
                spec = api.ALLOC.get(allocator.rsplit("::", 1)[-1])
                self.objects[oid] = ObjectHistory(name=path if i != RETURNED else f"{name}().{member}",
                                                  timeline=self.timeline, alloc=event,
                                                  kind=spec.kind if spec is not None else Kind.DEVICE)
                made[(i, member)] = oid
                if i == RETURNED:
                    continue
                self.bindings[path] = {oid}
                root = path.split(".", 1)[0]
                if root in self.param_index and root not in self.by_value and root not in self.locals_shadowing:
                    self.member_allocs[(self.param_index[root], path.split(".", 1)[1])] = oid
        if made:
            self.escape(set(made.values()), call.span, f"allocated by `{name}`")
        returned = {member: oid for (i, member), oid in made.items() if i == RETURNED}
        if returned:
            self.call_returns[id(call)] = returned
        for c in candidates:
            for (i, member), access in c.member_access.items():
                oids = {made[(i, member)]} if (i, member) in made else (
                    self.current(f"{bases[i]}.{member}") if i in bases else set())
                if oids and access:
                    self.touch(oids, Touch(event, access, use=True))
            for i, member in c.member_frees:
                if i in bases:
                    for oid in self.current(f"{bases[i]}.{member}"):
                        self.objects[oid].frees.append(event)
            for (i, member), sources in c.member_moves.items():
                if i in bases:
                    path = f"{bases[i]}.{member}"
                    moved = set().union(*(before.get((i, source), set()) for source in sources | {member}))
                    if moved:
                        self.bindings[path] = moved

    def bind_returned(self, name: str, value: s.Expr | None) -> None:
        """`SimulationData gsd = move_to_device(sd);`: `gsd`'s members hold what the callee allocated."""
        if not self.call_returns:
            return
        value = s.strip_parens_and_casts(value) if value is not None else None
        if isinstance(value, s.Call):
            for member, oid in self.call_returns.pop(id(value), {}).items():
                path = f"{name}.{member}"
                self.objects[oid].name = path
                self.bindings[path] = {oid}

    def note_struct_frees(self, arg: s.Expr, event: Event, candidates: list[HostSummary], index: int) -> None:
        if any(index in c.frees for c in candidates):
            stripped = s.strip_parens_and_casts(arg)
            # `release(&s->buf)` frees the member it points to; `release(s)`, a struct's members.
            slot = self.member_slot(s.strip_parens_and_casts(stripped.operand)) \
                if isinstance(stripped, s.Unary) and stripped.op == "&" else None
            self.ctx.member_frees.setdefault(slot or "*", []).append(event)

    def unknown_call(self, call: s.Call, name: str) -> None:
        library = api.is_library_call(name)
        touched: list[tuple[set[int], s.Expr, bool]] = []
        for arg in call.args:
            stripped = s.strip_parens_and_casts(arg)
            address_of = isinstance(stripped, s.Unary) and stripped.op == "&" and not isinstance(stripped.operand, s.Index)
            oids = self.refs(stripped.operand) if address_of else self.refs(arg)
            if oids or self.member_slot(stripped) is not None or isinstance(stripped, (s.Name, s.Unary)):
                touched.append((oids, arg, address_of))
        held = self.held_by(call.args)
        if not touched and not held:
            return
        event = self.event(Op.CALL, name, call.span)
        keeps = api.keeps_pointer(name)
        kept: set[int] = set()
        for oids, arg, address_of in touched:
            if oids:
                self.touch(oids, Touch(event, READ_WRITE, use=True))
                if address_of or not library or keeps:
                    for oid in oids:
                        self.objects[oid].escapes.append(event)
                if keeps and not address_of:
                    kept |= oids
            self.note_member_use(arg, event, READ_WRITE)
        if kept:
            for _, arg, address_of in touched:
                stripped = s.strip_parens_and_casts(arg)
                if address_of and isinstance(stripped, s.Unary):
                    self.hold(s.path_of(stripped.operand), kept)
        self.touch_held(event, call.args)
