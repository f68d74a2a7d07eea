"""A small, frontend-neutral syntax tree of C/C++/CUDA functions.

Both CUDA frontends (tree-sitter and libclang) lower their parse trees to these classes, and
everything after them (kernel-body analysis, size folding, lowering to object histories) reads
only these.  That is what makes the two frontends agree: they differ in how they parse, never in
what an allocation, a launch or a use means.

The tree keeps just what the analyses need: statements with their nesting (blocks, loops,
branches, returns) and expressions with enough structure to see names, members, subscripts,
address-of, dereference, assignments, calls, kernel launches, casts, sizeof and literals.
Anything else becomes `Other`, which keeps its children so that no name is lost.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Union


class Span(NamedTuple):
    """Where a node is: byte offsets [start, end) and 1-based row/column of both ends.

    A named tuple rather than a frozen dataclass: frontends build hundreds of thousands of
    these, and tuple construction is several times cheaper.
    """

    start: int
    end: int
    row: int
    column: int
    end_row: int
    end_column: int

    def points(self) -> tuple[int, int, int, int]:
        """(row, column, end_row, end_column) in one call."""
        return self[2], self[3], self[4], self[5]


class Lines:
    """Where each line of a text starts: the rows and columns of byte offsets, for `OffsetSpan`s.
    Rows are split at `\\n` only, as tree-sitter's points are; columns count bytes from 1."""

    __slots__ = ("starts",)

    def __init__(self, text: bytes) -> None:
        lengths = [len(line) + 1 for line in text.split(b"\n")]  # each with its newline
        lengths.pop()  # the text after the last newline starts a line, ends none
        self.starts = list(accumulate(lengths, initial=0))

    def point(self, offset: int) -> tuple[int, int]:
        """(row, column) of a byte offset, both 1-based."""
        row = bisect_right(self.starts, offset)
        return row, offset - self.starts[row - 1] + 1


class OffsetSpan(Span):
    """A `Span` that holds its byte offsets and its text's `Lines`: the row and column of each end
    are computed when asked.  The tree-sitter frontend makes one per node, and most are never
    reported; asking a tree-sitter node for its two points cost about a microsecond a node (a
    quarter of building the tree).  Built with `tuple.__new__(OffsetSpan, (start, end, lines))`.
    Equal to another `OffsetSpan` of the same place in the same text, never to a plain `Span`."""

    __slots__ = ()

    def _point(self, offset: int) -> tuple[int, int]:
        lines: Lines = self[2]  # type: ignore[assignment]  # the third item of an OffsetSpan
        return lines.point(offset)

    @property
    def row(self) -> int:  # type: ignore[override]
        return self._point(self[0])[0]

    @property
    def column(self) -> int:  # type: ignore[override]
        return self._point(self[0])[1]

    @property
    def end_row(self) -> int:  # type: ignore[override]
        return self._point(self[1])[0]

    @property
    def end_column(self) -> int:  # type: ignore[override]
        return self._point(self[1])[1]

    def points(self) -> tuple[int, int, int, int]:
        return self._point(self[0]) + self._point(self[1])

    def plain(self) -> Span:
        """The same span with its rows and columns written out."""
        return Span(self[0], self[1], *self.points())

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce__(self):  # pickled (a result sent from a worker process) as a plain `Span`
        return Span, tuple(self.plain())

    def _asdict(self) -> dict[str, int]:
        return self.plain()._asdict()


# --------------------------------------------------------------------------- expressions


@dataclass(slots=True)
class Name:
    span: Span
    id: str


@dataclass(slots=True)
class Member:
    """`base.field` or `base->field`."""

    span: Span
    base: "Expr"
    field: str
    arrow: bool


@dataclass(slots=True)
class Index:
    """`base[index]`."""

    span: Span
    base: "Expr"
    index: "Expr"


@dataclass(slots=True)
class Unary:
    """Prefix or postfix operator: `*p`, `&x`, `-x`, `!x`, `~x`, `++i`, `i++`."""

    span: Span
    op: str
    operand: "Expr"
    postfix: bool = False


@dataclass(slots=True)
class Binary:
    span: Span
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(slots=True)
class Assign:
    """`target op value` with op one of `=`, `+=`, `-=`, `*=`, ... ."""

    span: Span
    op: str
    target: "Expr"
    value: "Expr"


@dataclass(slots=True)
class Call:
    """A call.  `launch` holds the `<<<...>>>` configuration of a kernel launch, else None.

    `callee` is usually a `Name` (`cudaMalloc`), a `Member` (`obj.method`) or a qualified
    name as a `Name` with `::` in its id (`std::swap`).  Template arguments are dropped from
    the callee name (`kernel<float><<<...>>>` has callee `Name("kernel")`).
    """

    span: Span
    callee: "Expr"
    args: list["Expr"]
    launch: list["Expr"] | None = None


@dataclass(slots=True)
class Cast:
    span: Span
    type: str
    operand: "Expr"


@dataclass(slots=True)
class Sizeof:
    """`sizeof(type)` (type set, operand None) or `sizeof expr` (operand set)."""

    span: Span
    type: str | None
    operand: "Expr | None"


@dataclass(slots=True)
class Literal:
    """A number, character, string, `true`/`false`/`nullptr`/`NULL`.

    `value` is the integer (or float) value of numeric literals (suffixes such as `u`, `UL`,
    `f` stripped), None for the others.
    """

    span: Span
    text: str
    value: int | float | None = None


@dataclass(slots=True)
class Conditional:
    span: Span
    cond: "Expr"
    then: "Expr"
    orelse: "Expr"


@dataclass(slots=True)
class Other:
    """Any other expression (lambda, initializer list, new, comma, ...); keeps its sub-expressions."""

    span: Span
    kind: str
    children: list["Expr"] = field(default_factory=list)


Expr = Union[Name, Member, Index, Unary, Binary, Assign, Call, Cast, Sizeof, Literal, Conditional, Other]


# --------------------------------------------------------------------------- statements


@dataclass(slots=True)
class VarDecl:
    """One declared variable of a declaration statement."""

    span: Span
    name: str
    type: str  # the declared type as written, without the variable name (`float *`, `const int`)
    is_pointer: bool
    init: Expr | None = None
    is_const: bool = False
    is_constexpr: bool = False
    is_static: bool = False
    array_dims: list[Expr] = field(default_factory=list)


@dataclass(slots=True)
class Decl:
    span: Span
    vars: list[VarDecl]


@dataclass(slots=True)
class ExprStmt:
    span: Span
    expr: Expr


@dataclass(slots=True)
class Block:
    span: Span
    stmts: list["Stmt"]


@dataclass(slots=True)
class If:
    """`if`, and also each `case` of a `switch` (cond is then the switch value)."""

    span: Span
    cond: Expr | None
    then: "Stmt"
    orelse: "Stmt | None" = None


@dataclass(slots=True)
class Loop:
    """`for`, range-`for`, `while` and `do` loops.

    `init` holds the for-init statement (a Decl or ExprStmt) or, for a range-for, the loop
    variable's Decl; `cond` the condition; `step` the increment expression.
    """

    span: Span
    kind: str  # "for" | "range_for" | "while" | "do"
    body: "Stmt"
    init: "Stmt | None" = None
    cond: Expr | None = None
    step: Expr | None = None


@dataclass(slots=True)
class Return:
    span: Span
    value: Expr | None = None


@dataclass(slots=True)
class Jump:
    """`break`, `continue` or `goto`."""

    span: Span
    kind: str


@dataclass(slots=True)
class Unparsed:
    """A region the frontend could not make sense of (a parse error)."""

    span: Span
    text: str = ""


Stmt = Union[Decl, ExprStmt, Block, If, Loop, Return, Jump, Unparsed]


# --------------------------------------------------------------------------- top level


@dataclass(slots=True)
class Param:
    name: str
    type: str
    is_pointer: bool
    span: Span | None = None


@dataclass
class Function:
    """A function definition.  `qualname` includes class/namespace qualifiers when known."""

    span: Span
    name: str
    params: list[Param]
    body: Block
    is_kernel: bool = False  # __global__
    is_device: bool = False  # __device__ (without __host__)
    is_template: bool = False
    qualname: str = ""
    name_span: Span | None = None
    # True when the frontend saw a parse error inside this function: the body may miss events.
    has_errors: bool = False
    # True when the definition sits in an `#if`/`#ifdef` branch that may not be compiled (tree-sitter
    # sees every branch): calls of it are judged as calls of unknown code as well.
    in_conditional: bool = False
    # Names of the functions its body calls (not launches), when the frontend gathered them while
    # building the body; None: `callees()` walks the body.
    called: frozenset[str] | None = None
    # Whether its body holds an initializer list, a lambda, a `new` or a compound literal (the kinds
    # of `Other` the lowering follows pointers into, `cuda_api.AGGREGATES`), when the frontend
    # noted it while building the body; None: the lowering looks.
    aggregates: bool | None = None

    def callees(self) -> frozenset[str]:
        if self.called is None:
            self.called = frozenset(callee_name(n) for n in walk(self.body) if isinstance(n, Call) and n.launch is None)
        return self.called


@dataclass
class Macro:
    """An object-like `#define NAME value` (function-like macros are not folded)."""

    name: str
    text: str
    value: Expr | None
    span: Span


@dataclass
class TranslationUnit:
    path: str
    source: bytes
    functions: list[Function]
    macros: dict[str, Macro] = field(default_factory=dict)
    # File-scope (and namespace-scope) declarations: constants for size folding, globals.
    globals: list[Decl] = field(default_factory=list)
    # Struct/class members that are pointers, by struct name: {"Buffers": ["a", "b"]}.
    structs: dict[str, list[str]] = field(default_factory=dict)
    # Spans of regions the parser could not recover.
    errors: list[Span] = field(default_factory=list)
    frontend: str = ""
    # Statement kinds the frontend has no lowering for, skipped (how many of each): `-v` names them.
    unknown: dict[str, int] = field(default_factory=dict)
    # Byte ranges of the macro uses the preprocessor expanded (`gpulint.static.preprocess`): what
    # came from a macro body is reported at the use, and no fix may edit inside one.
    expanded: list[tuple[int, int]] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


# The fields holding sub-nodes, per class, in source order.
CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    Name: (), Literal: (), Jump: (), Unparsed: (),
    Member: ("base",), Index: ("base", "index"), Unary: ("operand",), Binary: ("left", "right"),
    Assign: ("target", "value"), Call: ("callee", "launch", "args"), Cast: ("operand",), Sizeof: ("operand",),
    Conditional: ("cond", "then", "orelse"), Other: ("children",), VarDecl: ("array_dims", "init"),
    Decl: ("vars",), ExprStmt: ("expr",), Block: ("stmts",), If: ("cond", "then", "orelse"),
    Loop: ("init", "cond", "step", "body"), Return: ("value",),
}


def children(node: object) -> Iterator[object]:
    """Direct sub-nodes (expressions and statements) of a node, in source order."""
    for name in CHILD_FIELDS.get(type(node), ()):
        value = getattr(node, name)
        if value is None:
            continue
        if isinstance(value, list):
            yield from value
        else:
            yield value


def walk(node: object) -> Iterator[object]:
    """Pre-order walk over a node and all nodes below it."""
    fields = CHILD_FIELDS
    stack = [node]
    while stack:
        current = stack.pop()
        if current is None:
            continue
        yield current
        names = fields.get(type(current), ())
        if not names:
            continue
        kids: list[object] = []
        for name in names:
            value = getattr(current, name)
            if type(value) is list:
                kids.extend(value)
            elif value is not None:
                kids.append(value)
        kids.reverse()
        stack.extend(kids)


def callee_name(call: Call) -> str:
    """`cudaMalloc`, `std::swap`, `obj.method` -> the last component (`method`)."""
    callee = call.callee
    kind = type(callee)  # `type(x) is`: no syntax class has subclasses, and these run for every node
    if kind is Name:
        return callee.id.rsplit("::", 1)[-1]  # type: ignore[union-attr]
    if kind is Member:
        return callee.field  # type: ignore[union-attr]
    return ""


def strip_parens_and_casts(expr: Expr) -> Expr:
    """`(void**)&x` -> `&x`; `((p))` is already parenless in this tree."""
    while type(expr) is Cast:
        expr = expr.operand  # type: ignore[union-attr]
    return expr


def path_of(expr: Expr) -> str | None:
    """The access path an lvalue names: `d_a`, `s.buf`, `p->buf`, or None for anything else.

    Members are spelled with `.` whatever the operator, because the analyses track struct
    members by name (`s.buf` and `p->buf` of the same struct type are the same slot).
    """
    while type(expr) is Cast:
        expr = expr.operand  # type: ignore[union-attr]
    kind = type(expr)
    if kind is Name:
        return expr.id  # type: ignore[union-attr]
    if kind is Member:
        base = path_of(expr.base)  # type: ignore[union-attr]
        if base is None:
            return None
        return f"{base}.{expr.field}"  # type: ignore[union-attr]
    return None


# --------------------------------------------------------------------------- lexical helpers both frontends share

_INT_LITERAL = re.compile(r"^(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)[uUlLzZ]*$")


@lru_cache(maxsize=4096)  # the same few literals (0, 1, 256, 1024) recur all over a program
def parse_number(text: str) -> int | float | None:
    """The value of a C number literal (`0x10u`, `1'000`, `-1`, `2.5f`), suffixes stripped."""
    t = text.replace("'", "").strip()
    if t.startswith(("-", "+")):
        inner = parse_number(t[1:])
        return None if inner is None else (-inner if t[0] == "-" else inner)
    m = _INT_LITERAL.match(t)
    if m:
        digits = m.group(1)
        if digits.startswith(("0x", "0X")):
            return int(digits, 16)
        if digits.startswith(("0b", "0B")):
            return int(digits[2:], 2)
        if len(digits) > 1 and digits.startswith("0"):
            return int(digits, 8)
        return int(digits)
    try:
        return float(t.rstrip("fFlL"))
    except ValueError:
        return None


def strip_templates(text: str) -> str:
    """`ns::k<float, 4>` -> `ns::k` (spaces removed)."""
    if "<" not in text and ">" not in text:  # most names: no character-by-character walk
        return text.replace(" ", "")
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out).replace(" ", "")


def case_condition(value: Expr | None, labels: list[Expr | None], span: Span) -> Expr | None:
    """`switch (v) { case A: case B: ... }` -> `v == A || v == B`; `default` -> `v == default`."""
    if value is None:
        return None
    cond: Expr | None = None
    for label in labels:
        target = label if label is not None else Name(span, "default")
        test = Binary(span, "==", value, target)
        cond = test if cond is None else Binary(span, "||", cond, test)
    return cond
