"""Lowering statements: blocks, `if`, the four loops, `switch` as a Block of `If`s, jumps, returns,
declaration statements and expression statements.

A statement that a macro use stands for spans the use and its `;` (where tree-sitter sees the use),
and a `do { ... } while (0)` is a Block, not a loop.  The parts of a statement are told apart by
where they are written (inside the keyword's parentheses or after them); inside a macro body, where
every child has the macro use's span, by clang's child order.
"""
from __future__ import annotations

import bisect

from gpulint.static import syntax as s
from gpulint.static import unknown
from gpulint.static.cuda_clang.core import LoweringCore
from gpulint.static.cuda_clang.declarations import split_declarator
from gpulint.static.cuda_clang.tokens import lex


class StatementLowering(LoweringCore):
    """Statements -> `syntax.Block`, `If`, `Loop`, `Jump`, `Return`, `Decl` and `ExprStmt`."""

    def macro_statement(self, st: s.Stmt | None, c, parent: tuple[int, int] | None) -> s.Stmt | None:
        """A statement that a macro use stands for spans the use and its `;` (`CK(cudaFree(p));`)."""
        if st is None:
            return st
        r = self.rng(c)
        if r is None:
            return st
        use = self.macro_uses.containing(r)
        if use is None or (parent is not None and use.start <= parent[0] and parent[1] <= use.end):
            return st
        if not (st.span.start == use.start and st.span.end >= use.end):
            st.span = self.span(use.start, self.extend_semicolon(use.end))
        return st

    def block(self, c) -> s.Block:
        stmts: list[s.Stmt] = []
        r = self.rng(c)
        for ch in c.get_children():
            st = self.macro_statement(self.stmt(ch), ch, r)
            if st is not None:
                stmts.append(st)
        return s.Block(self.span(*r) if r is not None else self.span(0, 0), stmts)

    def stmt_span(self, c, r: tuple[int, int] | None = None) -> s.Span:
        r = r or self.rng(c) or (0, 0)
        return self.span(r[0], self.extend_semicolon(r[1]))

    def body(self, c, parent_range: tuple[int, int]) -> s.Stmt:
        if c is None:
            return s.Block(self.span(*parent_range), [])
        st = self.macro_statement(self.stmt(c), c, parent_range)
        if st is None:
            return s.Block(self.cspan(c, parent_range), [])
        return st

    def stmt(self, c) -> s.Stmt | None:
        K = self.K
        k = c.kind
        if k == K.COMPOUND_STMT:
            return self.block(c)
        if k == K.DECL_STMT:
            return self.decl_stmt(c)
        if k == K.IF_STMT:
            return self.if_stmt(c)
        if k == K.FOR_STMT:
            return self.for_stmt(c)
        if k == K.CXX_FOR_RANGE_STMT:
            return self.range_for(c)
        if k == K.WHILE_STMT:
            return self.while_stmt(c)
        if k == K.DO_STMT:
            return self.do_stmt(c)
        if k == K.SWITCH_STMT:
            return self.switch_stmt(c)
        if k == K.RETURN_STMT:
            kids = [x for x in (self.unwrap(e) for e in self.expr_children(c)) if x is not None]
            return s.Return(self.stmt_span(c), self.expr(kids[0]) if kids else None)
        if k in (K.BREAK_STMT, K.CONTINUE_STMT, K.GOTO_STMT, K.INDIRECT_GOTO_STMT):
            kind = {K.BREAK_STMT: "break", K.CONTINUE_STMT: "continue"}.get(k, "goto")
            return s.Jump(self.stmt_span(c), kind)
        if k in (K.LABEL_STMT, K.CASE_STMT, K.DEFAULT_STMT):
            kids = [x for x in c.get_children() if x.kind.is_statement() or self.is_expr(x)]
            return self.stmt(kids[-1]) if kids else None
        if k == K.CXX_TRY_STMT:
            inner = next((x for x in c.get_children() if x.kind == K.COMPOUND_STMT), None)
            return self.block(inner) if inner is not None else None
        if k == K.NULL_STMT:
            return None
        if k == K.CXX_THROW_EXPR:  # an exit neither frontend lowers yet
            unknown.skipped(self.unknown, "clang", "throw", self._row(c))
            return None
        if self.is_expr(c):
            r = self.rng(c)
            if r is None:
                return None
            ue = self.unwrap(c)
            if ue is None:
                return None
            return s.ExprStmt(self.stmt_span(c, r), self.expr(ue))
        if k in (K.ASM_STMT, K.MS_ASM_STMT):
            r = self.rng(c)
            if r is None:
                return None
            sp = self.stmt_span(c, r)
            return s.ExprStmt(sp, s.Other(self.span(*r), "gnu_asm_expression", self.sub_exprs(self.expr_children(c), sp)))
        if k.is_statement():
            # an attributed statement (`#pragma unroll` / `[[likely]]` before a loop) and the like:
            # the statement it wraps
            inner = [x for x in (self.stmt(ch) for ch in c.get_children()) if x is not None]
            if len(inner) == 1:
                return inner[0]
            if inner:
                return s.Block(self.cspan(c), inner)
            return None
        unknown.skipped(self.unknown, "clang", k.name, self._row(c))
        return None

    def _row(self, c) -> int:
        r = self.rng(c)
        return bisect.bisect_right(self.line_starts, r[0]) if r is not None else 0

    def decl_stmt(self, c) -> s.Stmt | None:
        K = self.K
        kids = self.children(c)
        vars_ = [k for k in kids if k.kind == K.VAR_DECL]
        r = self.rng(c)
        if r is None:
            return None
        span_range = (r[0], self.extend_semicolon(r[1]))
        if not vars_:
            if any(k.kind == K.FUNCTION_DECL for k in kids):
                return s.Decl(self.span(*span_range), [])
            return None
        return self.decl_from_vars(vars_, span_range)

    def _paren_region(self, c, r: tuple[int, int], keyword: str) -> tuple[int, int] | None:
        """The `( ... )` after a statement keyword (`if`, `while`, `for`, `switch`)."""
        if self.macro_uses.exact(r) is not None:
            return None
        toks = lex(self.src, r[0], r[1])
        first = next(toks, None)
        if first is None or first.text != keyword:
            return None
        nxt = next(toks, None)
        if nxt is not None and nxt.text == "constexpr":
            nxt = next(toks, None)
        if nxt is None or nxt.text != "(":
            return None
        close = self.match_close(nxt.start)
        if close is None:
            return None
        return nxt.start, close

    def _condition(self, parts: list, region: tuple[int, int] | None) -> s.Expr | None:
        """tree-sitter's condition: a declared variable's value, `init; cond` as Other('condition')."""
        K = self.K
        if not parts:
            return None
        var = next((p for p in parts if p.kind == K.VAR_DECL), None)
        if var is not None:
            exprs = [e for e in var.get_children() if self.is_expr(e)]
            ue = self.unwrap(exprs[-1]) if exprs else None
            return self.expr(ue) if ue is not None else None
        if len(parts) > 1:
            exprs: list[s.Expr] = []
            for p in parts:
                if p.kind == K.DECL_STMT:
                    for v in p.get_children():
                        if v.kind == K.VAR_DECL:
                            ve = [e for e in v.get_children() if self.is_expr(e)]
                            if ve:
                                ue = self.unwrap(ve[-1])
                                if ue is not None:
                                    exprs.append(self.expr(ue))
                else:
                    ue = self.unwrap(p)
                    if ue is not None:
                        exprs.append(self.expr(ue))
            sp = self.span(*region) if region else self.cspan(parts[0])
            return s.Other(sp, "condition", exprs)
        ue = self.unwrap(parts[0])
        return self.expr(ue) if ue is not None else None

    def _split_by_region(self, kids: list, region: tuple[int, int] | None, n_after: int) -> tuple[list, list]:
        """Children inside the keyword's parentheses, and those after (the bodies)."""
        if region is not None:
            inside, after = [], []
            for k in kids:
                kr = self.rng(k)
                (inside if kr is not None and kr[0] < region[1] else after).append(k)
            return inside, after
        # Inside a macro body every child has the same span: fall back to clang's child order.
        if len(kids) <= n_after:
            return kids[:1], kids[1:]
        return kids[: len(kids) - n_after], kids[len(kids) - n_after:]

    def if_stmt(self, c) -> s.Stmt:
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        region = self._paren_region(c, r, "if")
        if region is None:
            # then (and maybe else) are the last children; a condition variable comes first
            n_stmt = 2 if len(kids) >= 3 and kids[0].kind != self.K.VAR_DECL or len(kids) >= 4 else 1
            inside, after = self._split_by_region(kids, None, n_stmt)
        else:
            inside, after = self._split_by_region(kids, region, 0)
        cond = self._condition(inside, region)
        then_c = after[0] if after else None
        else_c = after[1] if len(after) > 1 else None
        then = self.body(then_c, r)
        orelse = self.stmt(else_c) if else_c is not None else None
        return s.If(self._span_over(r, then, orelse), cond, then, orelse)

    def while_stmt(self, c) -> s.Stmt:
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        region = self._paren_region(c, r, "while")
        inside, after = self._split_by_region(kids, region, 1)
        body = self.body(after[-1] if after else None, r)
        return s.Loop(self._span_over(r, body), "while", body, None, self._condition(inside, region), None)

    def do_stmt(self, c) -> s.Stmt:
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        body_c = kids[0] if kids else None
        cond_c = self.unwrap(kids[1]) if len(kids) > 1 else None
        cond = self.expr(cond_c) if cond_c is not None else None
        sp = self.span(r[0], self.extend_semicolon(r[1]))
        body = self.body(body_c, r)
        if isinstance(cond, s.Literal) and (cond.value == 0 or cond.text == "false"):
            # `do { ... } while (0)`: a statement-shaped macro body, not a loop
            return s.Block(sp, [body])
        return s.Loop(sp, "do", body, None, cond, None)

    def for_stmt(self, c) -> s.Stmt:
        K = self.K
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        init_c = cond_c = step_c = body_c = None
        region = self._paren_region(c, r, "for")
        semis: list[int] = []
        if region is not None:
            depth = 0
            for tok in lex(self.src, region[0] + 1, region[1] - 1):
                if tok.text in ("(", "[", "{"):
                    depth += 1
                elif tok.text in (")", "]", "}"):
                    depth -= 1
                elif tok.text == ";" and depth == 0:
                    semis.append(tok.end)
        if region is not None and len(semis) == 2:
            for k in kids:
                kr = self.rng(k)
                at = kr[0] if kr is not None else region[1]
                if at >= region[1]:
                    body_c = k
                elif at < semis[0]:
                    init_c = k
                elif at < semis[1]:
                    cond_c = k
                else:
                    step_c = k
        else:
            rest = list(kids)
            body_c = rest.pop() if rest else None
            if rest and rest[0].kind == K.DECL_STMT or len(rest) == 3:
                init_c = rest.pop(0)
            if rest:
                cond_c = rest.pop(0)
            if rest:
                step_c = rest.pop(0)
        init: s.Stmt | None = None
        if init_c is not None:
            if init_c.kind == K.DECL_STMT:
                init = self.decl_stmt(init_c)
            else:
                ue = self.unwrap(init_c)
                if ue is not None:
                    init = s.ExprStmt(self.cspan(init_c), self.expr(ue))
        cond = None
        if cond_c is not None:
            cond = self._condition([cond_c], None)
        step = None
        if step_c is not None:
            ue = self.unwrap(step_c)
            step = self.expr(ue) if ue is not None else None
        body = self.body(body_c, r)
        return s.Loop(self._span_over(r, body), "for", body, init, cond, step)

    def range_for(self, c) -> s.Stmt:
        K = self.K
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        var = next((k for k in kids if k.kind == K.VAR_DECL), None)
        body_c = kids[-1] if kids else None
        range_c = None
        for k in kids:
            if k is var or k is body_c:
                continue
            if self.is_expr(k):
                range_c = k
        ue = self.unwrap(range_c) if range_c is not None else None
        range_e = self.expr(ue) if ue is not None else None
        init: s.Stmt | None = None
        if var is not None:
            vr = self.rng(var)
            if vr is not None:
                name_off = self.floc(var.location)[1]
                if self.macro_uses.exact(vr) is None:
                    toks = list(lex(self.src, vr[0], name_off))
                    spec, run = split_declarator(toks)
                    dstart = run[0].start if run else name_off
                    dsp = self.span(dstart, name_off + len(var.spelling.encode()))
                    tname = self.type_text(spec)
                    is_ptr = any(t.text == "*" for t in run)
                else:
                    dsp = self.span(*vr)
                    tname = var.type.spelling
                    is_ptr = self.type_is_pointer(var.type)
                init = s.Decl(dsp, [s.VarDecl(dsp, var.spelling, tname, is_ptr, range_e)])
        body = self.body(body_c, r)
        return s.Loop(self._span_over(r, body), "range_for", body, init, range_e, None)

    def switch_stmt(self, c) -> s.Stmt:
        """One `If` per case that has statements; its condition is `v == A || v == B` over the labels of
        the empty cases falling through to it (`default` is the name `default`), as tree-sitter's."""
        K = self.K
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        region = self._paren_region(c, r, "switch")
        inside, after = self._split_by_region(kids, region, 1)
        cond = self._condition(inside, region)
        body_c = after[-1] if after else None
        cases: list[s.Stmt] = []
        if body_c is None:
            return s.Block(self.span(*r), cases)
        items = list(body_c.get_children()) if body_c.kind == K.COMPOUND_STMT else [body_c]
        labels: list[s.Expr | None] = []
        current: list | None = None  # [start, end, statements] of the case being filled

        def close() -> None:
            nonlocal current, labels
            if current is not None and current[2]:
                sp = self.span(current[0], current[1])
                cases.append(s.If(sp, s.case_condition(cond, labels, sp), s.Block(sp, current[2]), None))
                labels = []
            current = None

        for item in items:
            node = item
            while node is not None and node.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                close()
                nr = self.rng(node) or r
                sub = list(node.get_children())
                if node.kind == K.CASE_STMT:
                    value = next((x for x in sub if self.is_expr(x)), None)
                    uv = self.unwrap(value) if value is not None else None
                    labels.append(self.expr(uv) if uv is not None else None)
                    inner = sub[-1] if len(sub) > 1 else None
                else:
                    labels.append(None)
                    inner = sub[-1] if sub else None
                if inner is not None and inner.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                    node = inner  # `case 1: case 2: ...`
                    continue
                current = [nr[0], nr[1], []]
                st = self.stmt(inner) if inner is not None else None
                if st is not None:
                    current[2].append(st)
                    current[1] = max(current[1], st.span.end)
                node = None
            if item.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                continue
            st = self.stmt(item)
            if st is None:
                continue
            if current is None:
                close()
                cases.append(st)
            else:
                current[2].append(st)
                current[1] = max(current[1], st.span.end)
        close()
        if body_c.kind == K.COMPOUND_STMT:  # the braces hold the cases
            return s.Block(self.span(*r), [s.Block(self.cspan(body_c), cases)])
        return s.Block(self.span(*r), cases)

    def _span_over(self, r: tuple[int, int], *parts) -> s.Span:
        """A compound statement's span reaches the `;` of its last sub-statement."""
        end = r[1]
        for p in parts:
            if p is not None and p.span.end > end and p.span.start >= r[0]:
                end = p.span.end
        return self.span(r[0], end)
