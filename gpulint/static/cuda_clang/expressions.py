"""Lowering expressions: names, members, subscripts, operators (overloaded ones included), calls
and kernel launches, constructions, casts, sizeof, literals, `new` and lambdas.

Every expression is lowered through `expr`, which gives a node from a macro body the span of the
macro's use and folds an object-like constant macro to `Literal(<macro name>, <its value>)`.  Text
that clang does not keep (a cast's type as written, a member's name without template arguments) is
read from the source; inside a macro body, where there is no written text, from clang's spelling.
"""
from __future__ import annotations

from typing import Iterable

from gpulint.static import syntax as s
from gpulint.static.cuda_clang.core import LoweringCore
from gpulint.static.cuda_clang.preprocessor import MacroUse
from gpulint.static.cuda_clang.tokens import lex

# The configuration call inside a kernel launch's CUDAKernelCallExpr (see `call`).
_CONFIG_CALLS = {"cudaConfigureCall", "__cudaPushCallConfiguration"}


class ExpressionLowering(LoweringCore):
    """Expressions -> `syntax.Expr` nodes."""

    def expr(self, c) -> s.Expr:
        r = self.rng(c)
        sp = self.span(*r) if r is not None else self.span(0, 0)
        use = self.macro_uses.exact(r)
        if use is not None and not use.function_like and use.start not in self.expanding:
            collapsed = self._object_macro(c, use, sp)
            if collapsed is not None:
                return collapsed
        if use is not None and use.start not in self.expanding:
            self.expanding.add(use.start)
            try:
                return self._expr(c, r, sp, use)
            finally:
                self.expanding.discard(use.start)
        return self._expr(c, r, sp, use)

    def _expr(self, c, r, sp: s.Span, use: MacroUse | None) -> s.Expr:
        K = self.K
        k = c.kind
        if k in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            if use is not None or r is None:
                return s.Name(sp, c.spelling)
            return s.Name(sp, s.strip_templates(self.text(*r)) or c.spelling)
        if k == K.MEMBER_REF_EXPR:
            return self.member(c, r, sp, use is not None)
        if k == K.ARRAY_SUBSCRIPT_EXPR:
            kids = self.expr_children(c)
            base = self.sub_expr(kids[0], sp) if kids else s.Other(sp, "missing")
            index = self.sub_expr(kids[1], sp) if len(kids) > 1 else s.Other(sp, "missing")
            return s.Index(sp, base, index)
        if k == K.UNARY_OPERATOR:
            return self.unary(c, sp)
        if k in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR):
            return self.binary(c, sp)
        if k == K.CALL_EXPR:
            return self.call(c, r, sp, use is not None)
        if k == K.CSTYLE_CAST_EXPR:
            kids = self.expr_children(c)
            operand = self.sub_expr(kids[-1], sp) if kids else s.Other(sp, "missing")
            type_text = c.type.spelling
            if use is None and r is not None:
                close = self.match_close(r[0])
                if close is not None:
                    type_text = self.text(r[0] + 1, close - 1).strip()
            return s.Cast(sp, type_text, operand)
        if k in (K.CXX_STATIC_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_CONST_CAST_EXPR, K.CXX_DYNAMIC_CAST_EXPR):
            kids = self.expr_children(c)
            operand = self.sub_expr(kids[-1], sp) if kids else s.Other(sp, "missing")
            type_text = c.type.spelling
            if use is None and r is not None:
                lt = next((t for t in lex(self.src, r[0], r[1]) if t.text == "<"), None)
                close = self.match_close(lt.start) if lt is not None else None
                if close is not None:
                    type_text = self.text(lt.start + 1, close - 1)
            return s.Cast(sp, type_text, operand)
        if k == K.CXX_FUNCTIONAL_CAST_EXPR:
            return self.functional_cast(c, r, sp, use is not None)
        if k == K.CXX_UNARY_EXPR:
            return self.sizeof(c, r, sp, use is not None)
        if k in (K.INTEGER_LITERAL, K.FLOATING_LITERAL):
            if use is not None or r is None:
                value = self.evaluate(c)
                return s.Literal(sp, str(value) if value is not None else "", value)
            text = self.text(*r)
            return s.Literal(sp, text, s.parse_number(text))
        if k in (K.STRING_LITERAL, K.CHARACTER_LITERAL):
            if use is not None or r is None:
                return s.Literal(sp, c.spelling, None)
            return s.Literal(sp, self.text(*r), None)
        if k == K.CXX_BOOL_LITERAL_EXPR:
            if use is not None or r is None:
                return s.Literal(sp, "true" if self.evaluate(c) else "false", None)
            return s.Literal(sp, self.text(*r), None)
        if k in (K.CXX_NULL_PTR_LITERAL_EXPR, K.GNU_NULL_EXPR):
            return s.Literal(sp, self.text(*r) if r is not None else "nullptr", None)
        if k == K.CONDITIONAL_OPERATOR:
            kids = self.expr_children(c)
            if len(kids) == 3:
                return s.Conditional(sp, self.sub_expr(kids[0], sp), self.sub_expr(kids[1], sp), self.sub_expr(kids[2], sp))
            return s.Other(sp, "conditional_expression", [self.sub_expr(x, sp) for x in kids])
        if k == K.CXX_THIS_EXPR:
            return s.Name(sp, "this")
        if k == K.INIT_LIST_EXPR:
            return s.Other(sp, "initializer_list", self.sub_exprs(self.expr_children(c), sp))
        if k == K.CXX_NEW_EXPR:
            return self.new_expr(c, r, sp, use is not None)
        if k == K.CXX_DELETE_EXPR:
            return s.Other(sp, "delete_expression", self.sub_exprs(self.expr_children(c), sp))
        if k == K.LAMBDA_EXPR:
            return self.lambda_expr(c, sp)
        if k == K.CXX_THROW_EXPR:
            return s.Other(sp, "throw_expression", self.sub_exprs(self.expr_children(c), sp))
        if k == K.PAREN_EXPR or k == K.UNEXPOSED_EXPR:
            kids = self.expr_children(c)
            if len(kids) == 1:
                return self.sub_expr(kids[0], sp)
            return s.Other(sp, "unexposed", self.sub_exprs(kids, sp))
        return s.Other(sp, k.name.lower(), self.sub_exprs(self.expr_children(c), sp))

    def sub_expr(self, c, sp: s.Span) -> s.Expr:
        """A child lowered past what clang adds (`unwrap`); `Other("missing")` when nothing is written."""
        ue = self.unwrap(c)
        if ue is None:
            return s.Other(sp, "missing")
        return self.expr(ue)

    def sub_exprs(self, kids: Iterable, sp: s.Span) -> list[s.Expr]:
        """The children lowered past what clang adds (`unwrap`), leaving out those clang added outright."""
        out: list[s.Expr] = []
        for k in kids:
            ue = self.unwrap(k)
            if ue is not None:
                out.append(self.expr(ue))
        return out

    def _object_macro(self, c, use: MacroUse, sp: s.Span) -> s.Expr | None:
        """An expression that is exactly one object-like macro: `N` -> Literal('N', 1024)."""
        K = self.K
        name = self.text(use.start, use.end)
        if c.kind in (K.GNU_NULL_EXPR, K.CXX_NULL_PTR_LITERAL_EXPR):
            return s.Literal(sp, name, None)
        if self._has_side_effects(c):
            return None
        value = None
        if c.kind in (K.INTEGER_LITERAL, K.FLOATING_LITERAL) or not self.in_template:
            value = self.evaluate(c)
        if value is not None:
            return s.Literal(sp, name, value)
        return s.Name(sp, name)

    def _has_side_effects(self, c) -> bool:
        K = self.K
        stack = [c]
        while stack:
            cur = stack.pop()
            k = cur.kind
            if k == K.CALL_EXPR and not self.is_constructor(cur):
                return True
            if k in (K.COMPOUND_ASSIGNMENT_OPERATOR, K.CXX_NEW_EXPR, K.CXX_DELETE_EXPR, K.LAMBDA_EXPR, K.CXX_THROW_EXPR):
                return True
            if k == K.BINARY_OPERATOR and self.api.binop_kind(cur) == 22:
                return True
            if k == K.UNARY_OPERATOR and self.api.unop_kind(cur) in (1, 2, 3, 4):
                return True
            stack.extend(cur.get_children())
        return False

    def member(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        K = self.K
        kids = self.expr_children(c)
        field = c.spelling
        if not kids:
            return s.Name(sp, field)  # a member used through the implicit `this`
        base_c = kids[0]
        # `it->x` through an overloaded operator-> : the base is the object itself
        base_u = self.unwrap(base_c)
        if base_u is not None and base_u.kind == K.CXX_THIS_EXPR and self.rng(base_u) is None:
            return s.Name(sp, field)
        base = self.expr(base_u) if base_u is not None else s.Other(sp, "missing")
        arrow = False
        br = self.rng(base_c)
        if not in_macro and r is not None and br is not None and br[1] <= r[1]:
            between = self.src[br[1]:r[1]]
            arrow = b"->" in between
            if isinstance(base, s.Other) and base.kind == "implicit_this":
                return s.Name(sp, field)
        else:
            tk = self.api.ci.TypeKind
            arrow = base_c.type.get_canonical().kind == tk.POINTER
        if r is not None and not in_macro:
            # the field name as written (without template arguments)
            name_off = self.floc(c.location)[1]
            tok = next(lex(self.src, name_off, r[1] + 1), None)
            if tok is not None and tok.kind == "id" and tok.text != "template":
                field = tok.text
        return s.Member(sp, base, field, arrow)

    _UNARY_OPS = {1: "++", 2: "--", 3: "++", 4: "--", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~", 10: "!",
                  11: "__real", 12: "__imag", 13: "__extension__", 14: "co_await"}
    _BINARY_OPS = {1: ".*", 2: "->*", 3: "*", 4: "/", 5: "%", 6: "+", 7: "-", 8: "<<", 9: ">>", 10: "<=>",
                   11: "<", 12: ">", 13: "<=", 14: ">=", 15: "==", 16: "!=", 17: "&", 18: "^", 19: "|",
                   20: "&&", 21: "||", 22: "=", 23: "*=", 24: "/=", 25: "%=", 26: "+=", 27: "-=", 28: "<<=",
                   29: ">>=", 30: "&=", 31: "^=", 32: "|=", 33: ","}

    def unary(self, c, sp: s.Span) -> s.Expr:
        kind = self.api.unop_kind(c)
        kids = self.expr_children(c)
        operand = self.sub_expr(kids[0], sp) if kids else s.Other(sp, "missing")
        if kind == 13:
            return operand
        if kind in (7, 8) and isinstance(operand, s.Literal) and operand.value is not None \
                and operand.text[:1] in tuple("0123456789.") \
                and operand.span.start == sp.start + 1 and operand.span.end == sp.end \
                and self.src[sp.start:sp.start + 1] in (b"-", b"+"):
            # tree-sitter reads `-1` as one number literal
            text = self.text(sp.start, sp.end)
            return s.Literal(sp, text, -operand.value if kind == 8 else operand.value)
        op = self._UNARY_OPS.get(kind)
        if op is None:
            return s.Other(sp, "unary_expression", [operand])
        return s.Unary(sp, op, operand, kind in (1, 2))

    def binary(self, c, sp: s.Span) -> s.Expr:
        kind = self.api.binop_kind(c)
        kids = self.expr_children(c)
        left = self.sub_expr(kids[0], sp) if kids else s.Other(sp, "missing")
        right = self.sub_expr(kids[1], sp) if len(kids) > 1 else s.Other(sp, "missing")
        op = self._BINARY_OPS.get(kind)
        if op is None:
            op = self._op_from_source(c, kids)
        if op == ",":
            return s.Other(sp, "comma", [left, right])
        if op in ("=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|="):
            return s.Assign(sp, op, left, right)
        return s.Binary(sp, op or "?", left, right)

    def _op_from_source(self, c, kids: list) -> str | None:
        if len(kids) < 2:
            return None
        a = self.rng(kids[0])
        b = self.rng(kids[1])
        if a is None or b is None or a[1] > b[0]:
            return None
        tok = next(lex(self.src, a[1], b[0]), None)
        return tok.text if tok is not None else None

    def call(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        K = self.K
        every = [k for k in c.get_children() if self.is_expr(k)]
        kids = self.within(every, r)
        # a kernel launch: CUDAKernelCallExpr = callee, the configuration call, the arguments.  In a
        # launch a macro writes (`k<<<g, b>>>(__VA_ARGS__)`) the configuration is spelled in the
        # macro's body, outside the use's range: it is found among all the children.
        if len(every) >= 2:
            config = self.unwrap(every[1])
            if config is not None and config.kind == K.CALL_EXPR and config.spelling in _CONFIG_CALLS:
                callee = self._callee(every[0], sp)
                cfg_args = self.within([k for k in config.get_children() if self.is_expr(k)][1:], self.rng(config))
                launch = self.sub_exprs(self.within(cfg_args, r) if in_macro else cfg_args, sp)
                args = self.sub_exprs(self.within(every[2:], r), sp)
                return s.Call(sp, callee, args, launch)
        first = next(iter(c.get_children()), None)
        if self.is_constructor(c) or (first is not None and first.kind in (K.TYPE_REF, K.TEMPLATE_REF)):
            # `dim3(2, 2)`, `T(0)` in a template, `dim3{1, 2}`: a construction
            return self.construct(c, r, sp, in_macro, self.sub_exprs(kids, sp))
        op = self._operator_call(c, kids, r, in_macro)
        if op is not None:
            return op
        if not kids:
            return s.Call(sp, s.Name(sp, c.spelling), [])
        callee = self._callee(kids[0], sp)
        return s.Call(sp, callee, self.sub_exprs(kids[1:], sp))

    def construct(self, c, r, sp: s.Span, in_macro: bool, args: list[s.Expr]) -> s.Expr:
        """An explicit construction as tree-sitter sees it: `T(a)` a call of `T`, `T{a}` a compound literal."""
        type_text = c.spelling or c.type.spelling
        if r is None or in_macro:
            return s.Call(sp, s.Name(sp, s.strip_templates(type_text)), args)
        tok = next((t for t in lex(self.src, r[0], r[1]) if t.text in ("(", "{")), None)
        if tok is not None and tok.text == "{" and tok.start == r[0]:
            return s.Other(sp, "initializer_list", args)  # `dim3 g = {1, 2}`
        if tok is None:
            return s.Call(sp, s.Name(sp, s.strip_templates(type_text)), args)
        type_text = self.text(r[0], tok.start).strip() or type_text
        if tok.text == "{":
            close = self.match_close(tok.start) or r[1]
            return s.Other(sp, "compound_literal_expression", [s.Other(self.span(tok.start, close), "initializer_list", args)])
        name_sp = self.span(r[0], r[0] + len(type_text.encode()))
        return s.Call(sp, s.Name(name_sp, s.strip_templates(type_text)), args)

    def _callee(self, c, sp: s.Span) -> s.Expr:
        ue = self.unwrap(c)
        if ue is None:
            return s.Other(sp, "missing")
        return self.expr(ue)

    def _operator_call(self, c, kids: list, r, in_macro: bool) -> s.Expr | None:
        """`a[i]`, `a = b`, `x + y`, `*it`, `f(x)` on class types (CXXOperatorCallExpr)."""
        K = self.K
        name = c.spelling or ""
        if (name and not name.startswith("operator")) or not kids:
            return None
        op_index = None
        for i, k in enumerate(kids):
            u = k
            while u is not None and u.kind == K.UNEXPOSED_EXPR:
                inner = self.expr_children(u)
                u = inner[0] if len(inner) == 1 else None
            spelling = u.spelling if u is not None else ""
            if u is not None and u.kind == K.DECL_REF_EXPR and not spelling:
                # a dependent operator in a template: an unresolved lookup of `operator+=`
                ref = next((x for x in u.get_children() if x.kind == K.OVERLOADED_DECL_REF), None)
                spelling = ref.spelling if ref is not None else ""
            if u is not None and u.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) \
                    and (spelling or "").startswith("operator"):
                op_index = i
                name = name or spelling
                break
        if op_index is None:
            return None
        if op_index == 0 and r is not None and not in_macro and self.src[r[0]:r[0] + 8] == b"operator":
            return None  # `operator+(a, b)` written as a call
        sp = self.span(*r) if r is not None else self.span(0, 0)
        operands = [k for i, k in enumerate(kids) if i != op_index]
        op = name[len("operator"):].strip()
        vals = self.sub_exprs(operands, sp)
        if op == "[]" and len(vals) == 2:
            return s.Index(sp, vals[0], vals[1])
        if op == "()" and vals:
            return s.Call(sp, vals[0], vals[1:])
        if op == "->" and len(vals) == 1:
            return vals[0]
        if op == "," and len(vals) == 2:
            return s.Other(sp, "comma", vals)
        if op in ("=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=") and len(vals) == 2:
            return s.Assign(sp, op, vals[0], vals[1])
        if len(vals) == 1:
            postfix = op in ("++", "--") and op_index > 0
            return s.Unary(sp, op, vals[0], postfix)
        if len(vals) == 2:
            return s.Binary(sp, op, vals[0], vals[1])
        return s.Call(sp, s.Name(sp, name), vals)

    def functional_cast(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        kids = self.expr_children(c)
        type_text = c.type.spelling
        if r is not None and not in_macro:
            tok = next((t for t in lex(self.src, r[0], r[1]) if t.text in ("(", "{")), None)
            if tok is not None:
                type_text = self.text(r[0], tok.start).strip()
        tk = self.api.ci.TypeKind
        canonical = c.type.get_canonical().kind
        inner = self.unwrap(kids[0]) if len(kids) == 1 else None
        braces = False
        if r is not None and not in_macro:
            tok = next((t for t in lex(self.src, r[0], r[1]) if t.text in ("(", "{")), None)
            braces = tok is not None and tok.text == "{"
        if canonical in (tk.RECORD, tk.UNEXPOSED, tk.DEPENDENT) or braces or inner is None:
            # `dim3(n)`: a constructor call as tree-sitter sees it
            if inner is not None and inner.kind == self.K.CALL_EXPR and self.is_constructor(inner):
                args = self.sub_exprs(self.within(self.expr_children(inner), r), sp)
            elif inner is not None and inner.kind == self.K.INIT_LIST_EXPR:
                args = self.sub_exprs(self.expr_children(inner), sp)
            else:
                args = self.sub_exprs(kids, sp)
            return self.construct(c, r, sp, in_macro, args)
        operand = self.expr(inner)
        return s.Cast(sp, type_text, operand)

    def sizeof(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        kids = self.expr_children(c)
        if r is not None and not in_macro:
            toks = list(lex(self.src, r[0], r[1]))
            word = toks[0].text if toks else ""
        else:
            toks = []
            word = "sizeof"  # inside a macro body sizeof and alignof look alike; alignof is rare
        if word != "sizeof" or (len(toks) > 1 and toks[1].text == "..."):
            return s.Other(sp, (word or "unary") + "_expression", self.sub_exprs(kids, sp))
        if kids:
            return s.Sizeof(sp, None, self.sub_expr(kids[0], sp))
        if toks and len(toks) > 1 and toks[1].text == "(":
            close = self.match_close(toks[1].start)
            if close is not None:
                return s.Sizeof(sp, self.text(toks[1].end, close - 1).strip(), None)
        # inside a macro body: read the type from the macro's definition when it names only one
        use = self.macro_uses.containing(r) if r is not None else None
        types = set(self.macro_defs.sizeof_types(use.name)) if use is not None else set()
        return s.Sizeof(sp, types.pop() if len(types) == 1 else None, None)

    def new_expr(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        """`new T[n]` / `new T(a)`: tree-sitter's shape, Other('new_expression', [new_declarator | argument_list])."""
        kids = self.expr_children(c)
        if r is None or in_macro:
            return s.Other(sp, "new_expression", self.sub_exprs(kids, sp))
        out: list[s.Expr] = []
        groups: dict[int, tuple[int, str, list]] = {}
        depth = 0
        for tok in lex(self.src, r[0], r[1]):
            if tok.text in ("[", "(", "{") and depth == 0 and tok.start > r[0]:
                close = self.match_close(tok.start)
                if close is not None:
                    kind = {"[": "new_declarator", "(": "argument_list", "{": "initializer_list"}[tok.text]
                    groups[tok.start] = (close, kind, [])
        placed = []
        for k in kids:
            kr = self.rng(k)
            owner = None
            if kr is not None:
                for start, (close, _kind, members) in groups.items():
                    if start < kr[0] and kr[1] <= close:
                        owner = members
                        break
            ue = self.unwrap(k)
            if ue is None:
                continue
            e = self.expr(ue)
            if owner is not None:
                owner.append(e)
            else:
                placed.append(e)
        for start in sorted(groups):
            close, kind, members = groups[start]
            if members or kind != "argument_list":
                out.append(s.Other(self.span(start, close), kind, members))
        return s.Other(sp, "new_expression", out + placed)

    def lambda_expr(self, c, sp: s.Span) -> s.Expr:
        K = self.K
        children: list[s.Expr] = []
        for k in c.get_children():
            if k.kind == K.COMPOUND_STMT:
                body = self.block(k)
                children.extend(_stmt_exprs(body))
        return s.Other(sp, "lambda_expression", children)


def _stmt_exprs(stmt: object) -> list[s.Expr]:
    """The expressions of a statement tree, in order (a lambda body seen as one expression)."""
    out: list[s.Expr] = []
    if isinstance(stmt, s.ExprStmt):
        out.append(stmt.expr)
    elif isinstance(stmt, s.Return):
        if stmt.value is not None:
            out.append(stmt.value)
    elif isinstance(stmt, s.Decl):
        for v in stmt.vars:
            out.extend(v.array_dims)
            if v.init is not None:
                out.append(v.init)
    elif isinstance(stmt, s.Block):
        for st in stmt.stmts:
            out.extend(_stmt_exprs(st))
    elif isinstance(stmt, s.If):
        if stmt.cond is not None:
            out.append(stmt.cond)
        out.extend(_stmt_exprs(stmt.then))
        if stmt.orelse is not None:
            out.extend(_stmt_exprs(stmt.orelse))
    elif isinstance(stmt, s.Loop):
        if stmt.init is not None:
            out.extend(_stmt_exprs(stmt.init))
        if stmt.cond is not None:
            out.append(stmt.cond)
        if stmt.step is not None:
            out.append(stmt.step)
        out.extend(_stmt_exprs(stmt.body))
    return out
