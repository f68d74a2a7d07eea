"""What every part of the lowering stands on: the state of one translation unit, and reading clang
cursors against the main file's bytes.

`LoweringCore` answers where a cursor is (byte range, `Span`, text; a node from a macro body at its
macro use), where a bracket closes and a statement's `;` is, and which cursors are the expressions
written in the source (`unwrap` skips what clang adds: implicit casts, parentheses, temporaries,
implicit constructor calls).  It lowers nothing itself; the declaration, statement and expression
lowerings are built on it (see `lowering.py`).
"""
from __future__ import annotations

import bisect
import ctypes
import re
from collections import Counter
from typing import TYPE_CHECKING

from gpulint.static import syntax as s
from gpulint.static.cuda_clang.preprocessor import MacroDefinitions, MacroUses, conditional_regions
from gpulint.static.cuda_clang.tokens import lex

if TYPE_CHECKING:
    from gpulint.static.cuda_clang.libclang import Api


class LoweringCore:
    """One file's lowering state, and the questions about cursors that every lowering asks."""

    def __init__(self, api: Api, tu, path: str, filename: str, source: bytes, error_offsets: list[int]) -> None:
        self.api = api
        self.K = api.K
        self.tu = tu
        self.path = path
        self.src = source
        self.main = api.get_file(tu.obj if hasattr(tu, "obj") else tu, filename.encode()) or 0
        self.line_starts = [0] + [m.end() for m in re.finditer(rb"\n", source)]
        self.error_offsets = sorted(error_offsets)
        self.unknown: Counter = Counter()  # statement kinds skipped, for -v
        # what the lowering produces, read by `parse`
        self.functions: list[s.Function] = []
        self.macros: dict[str, s.Macro] = {}
        self.globals: list[s.Decl] = []
        self.structs: dict[str, list[str]] = {}
        self.error_spans: list[s.Span] = [self.span(o, o + 1) for o in self.error_offsets]
        self.macro_uses = MacroUses()  # filled (and indexed) by `Lowering.run` before anything is lowered
        self.macro_defs = MacroDefinitions(api.macro_function_like)
        self.conditional_regions: list[tuple[int, int]] = conditional_regions(source)
        # where the lowering is
        self.expanding: set[int] = set()  # macro uses whose expansion is being lowered
        self.in_template = False  # in a template's body only a macro that is a literal is evaluated
        self.pending_globals: list = []  # VAR_DECLs of one file-scope declaration
        self._rng_cache: dict[tuple, tuple[int, int] | None] = {}  # by cursor identity
        self._out_file = ctypes.c_void_p()
        self._out_line = ctypes.c_uint()
        self._out_col = ctypes.c_uint()
        self._out_off = ctypes.c_uint()

    # ------------------------------------------------------------------ locations
    def floc(self, loc) -> tuple[int, int]:
        """(file handle, byte offset) of a location, macro arguments at their spelling."""
        self.api.file_location(loc, ctypes.byref(self._out_file), ctypes.byref(self._out_line),
                               ctypes.byref(self._out_col), ctypes.byref(self._out_off))
        return (self._out_file.value or 0), self._out_off.value

    def in_main(self, cursor) -> bool:
        f, _ = self.floc(cursor.location)
        return f == self.main and f != 0

    def rng(self, cursor) -> tuple[int, int] | None:
        """[start, end) byte range of a cursor in the main file, or None."""
        key = (cursor._kind_id, cursor.xdata, cursor.data[0], cursor.data[1], cursor.data[2])
        if key in self._rng_cache:
            return self._rng_cache[key]
        r = self._rng(cursor)
        self._rng_cache[key] = r
        return r

    def _rng(self, cursor) -> tuple[int, int] | None:
        ext = cursor.extent
        fs, so = self.floc(ext.start)
        if fs != self.main or fs == 0:
            return None
        fe, eo = self.floc(ext.end)
        if fe != self.main:
            eo = so
        use = self.macro_uses.starting_at(so)
        if use is not None and eo < use.end:
            eo = use.end
        if eo <= so:
            eo = self.token_end(so)
        return so, eo

    def raw_range(self, cursor) -> tuple[int, int] | None:
        """A cursor's own extent in the main file, not widened to a macro use: for macro uses and
        definitions themselves, before the macro uses are known."""
        ext = cursor.extent
        fs, so = self.floc(ext.start)
        fe, eo = self.floc(ext.end)
        if fs != self.main or fs == 0 or fe != self.main:
            return None
        if eo <= so:
            eo = self.token_end(so)
        return so, eo

    def token_end(self, offset: int) -> int:
        for tok in lex(self.src, offset, offset + 4096):
            return tok.end
        return offset

    def span(self, start: int, end: int) -> s.Span:
        r0 = bisect.bisect_right(self.line_starts, start) - 1
        r1 = bisect.bisect_right(self.line_starts, end) - 1
        return s.Span(start, end, r0 + 1, start - self.line_starts[r0] + 1, r1 + 1, end - self.line_starts[r1] + 1)

    def cspan(self, cursor, fallback: tuple[int, int] | None = None) -> s.Span:
        r = self.rng(cursor) or fallback or (0, 0)
        return self.span(*r)

    def text(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "replace")

    def extend_semicolon(self, end: int) -> int:
        if end > 0 and self.src[end - 1:end] == b";":
            return end
        for tok in lex(self.src, end, end + 4096):
            return tok.end if tok.text == ";" else end
        return end

    def match_close(self, open_pos: int) -> int | None:
        """Offset just past the bracket closing the one at `open_pos` (`(`, `[`, `{` or `<`)."""
        pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
        depth = 0
        opener = None
        for tok in lex(self.src, open_pos):
            if opener is None:
                opener = tok.text
                if opener not in pairs:
                    return None
                closer = pairs[opener]
                depth = 1
                continue
            if opener == "<":
                if tok.text in ("(", "[", "{"):
                    inner = self.match_close(tok.start)
                    if inner is None:
                        return None
                    continue
                if tok.text == "<":
                    depth += 1
                elif tok.text == ">":
                    depth -= 1
                elif tok.text == ">>":
                    depth -= 2
                elif tok.text in (";", "{", "}"):
                    return None
                if depth <= 0:
                    return tok.end
                continue
            if tok.text == opener:
                depth += 1
            elif tok.text == closer:
                depth -= 1
                if depth == 0:
                    return tok.end
        return None

    def has_error_in(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.error_offsets, start)
        return i < len(self.error_offsets) and self.error_offsets[i] < end

    # ------------------------------------------------------------------ clang helpers
    def children(self, cursor) -> list:
        return list(cursor.get_children())

    def is_expr(self, cursor) -> bool:
        k = cursor.kind
        return k.is_expression() or k == self.K.OVERLOADED_DECL_REF

    def expr_children(self, cursor) -> list:
        return [c for c in cursor.get_children() if self.is_expr(c)]

    def evaluate(self, cursor) -> int | float | None:
        api = self.api
        res = api.evaluate(cursor)
        if not res:
            return None
        try:
            kind = api.eval_kind(res)
            if kind == 1:
                return int(api.eval_ull(res)) if api.eval_unsigned(res) else int(api.eval_ll(res))
            if kind == 2:
                return float(api.eval_double(res))
            return None
        finally:
            api.eval_dispose(res)

    def within(self, kids: list, r: tuple[int, int] | None) -> list:
        """Children written inside `r`: drops default arguments, which clang shows at their declaration."""
        if r is None:
            return [k for k in kids if self.rng(k) is not None]
        out = []
        for k in kids:
            kr = self.rng(k)
            if kr is not None and r[0] <= kr[0] and kr[1] <= r[1]:
                out.append(k)
        return out

    def unwrap(self, cursor):
        """Skip implicit casts, parentheses, temporaries and implicit constructor calls."""
        K = self.K
        while cursor is not None:
            k = cursor.kind
            if k == K.PAREN_EXPR or k == K.UNEXPOSED_EXPR:
                kids = self.expr_children(cursor)
                if len(kids) == 1:
                    cursor = kids[0]
                    continue
                if not kids and k == K.UNEXPOSED_EXPR and self.rng(cursor) is None:
                    return None
                return cursor
            if k == K.CALL_EXPR and self.is_constructor(cursor):
                kids = self.expr_children(cursor)
                r = self.rng(cursor)
                kids = self.within(kids, r)
                if len(kids) == 1 and r is not None and r == self.rng(kids[0]):
                    cursor = kids[0]  # a conversion or copy: `dim3` from `256`, a copy of `grid`
                    continue
                if not kids and not any(True for _ in cursor.get_children()):
                    ext_start, _ = self.floc(cursor.extent.start)
                    if r is None or ext_start == 0:
                        return None
                return cursor
            return cursor
        return None

    def is_constructor(self, cursor) -> bool:
        ref = cursor.referenced
        return ref is not None and ref.kind == self.K.CONSTRUCTOR
