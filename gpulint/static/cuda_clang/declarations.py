"""Lowering declarations: the file's top level (namespaces, `extern "C"`, templates), structs and
their pointer members, function definitions with their parameters, `#define` constants, and variable
declarations, local or file-scope.

Types are spelled as tree-sitter's `type` field spells them: read from the written tokens before the
declarator's name, not from clang's printed type.  A function body is lowered by `block`
(statements.py), an initialiser by `expr` (expressions.py).
"""
from __future__ import annotations

import re

from gpulint.static import syntax as s
from gpulint.static.cuda_clang.core import LoweringCore
from gpulint.static.cuda_clang.preprocessor import parse_macro_value
from gpulint.static.cuda_clang.tokens import Tok, lex

# Decl-specifier words that are not part of the type as tree-sitter's `type` field spells it.
_SPEC_QUALIFIERS = {
    "const", "volatile", "static", "extern", "constexpr", "consteval", "constinit", "inline", "register",
    "thread_local", "mutable", "typedef", "friend", "virtual", "explicit", "__shared__", "__constant__",
    "__device__", "__managed__", "__host__", "__global__", "__forceinline__", "__inline__", "__noinline__",
    "__restrict__", "__restrict", "restrict", "__inline", "_Thread_local", "__thread", "__grid_constant__",
}
_SPEC_WITH_ARGS = {"__align__", "__launch_bounds__", "alignas", "__attribute__", "__declspec", "_Alignas",
                   "__builtin_align__"}
_DECLARATOR_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}


class DeclarationLowering(LoweringCore):
    """Declarations -> `syntax.Function`, `Param`, `Decl`/`VarDecl`, `Macro` and struct members."""

    # ------------------------------------------------------------------ top level
    def top_level(self, cursor, scope: tuple[str, ...], template: bool) -> None:
        for c in cursor.get_children():
            if not self.in_main(c):
                continue
            self.top_level_one(c, scope, template)
        self.flush_globals()

    def top_level_one(self, c, scope: tuple[str, ...], template: bool) -> None:
        K = self.K
        k = c.kind
        if k != K.VAR_DECL:
            self.flush_globals()
        if k in (K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION):
            if c.is_definition():
                self.function(c, scope, template)
        elif k == K.FUNCTION_TEMPLATE:
            if c.is_definition():
                self.function(c, scope, True)
        elif k == K.VAR_DECL:
            self._global_var(c)
        elif k == K.NAMESPACE:
            self.top_level(c, scope + ((c.spelling,) if c.spelling else ()), template)
        elif k in (K.LINKAGE_SPEC, K.UNEXPOSED_DECL):
            self.top_level(c, scope, template)
        elif k in (K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL):
            self.struct(c, scope, template or self._written_as_template(c))  # `template <> class A<int>`
        elif k in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            self.struct(c, scope, True)

    def _written_as_template(self, c) -> bool:
        r = self.rng(c)
        first = next(lex(self.src, r[0], r[1]), None) if r is not None else None
        return first is not None and first.text == "template"

    # File-scope declarations: consecutive VAR_DECLs of one declaration share their start.
    def _global_var(self, c) -> None:
        r = self.rng(c)
        if r is None:
            return
        if self.pending_globals and self.rng(self.pending_globals[0])[0] != r[0]:
            self.flush_globals()
        self.pending_globals.append(c)

    def flush_globals(self) -> None:
        pending = self.pending_globals
        if not pending:
            return
        self.pending_globals = []
        decl = self.decl_from_vars(pending)
        if decl is not None:
            self.globals.append(decl)

    def macro(self, c) -> None:
        if self.api.macro_function_like(c):
            return
        name = c.spelling
        r = self.raw_range(c)
        if r is None or not name:
            return
        start = self.src.rfind(b"#", 0, r[0])
        if start < 0:
            start = r[0]
        # The logical line: up to the newline that is not escaped by a backslash.
        end = r[0]
        while True:
            nl = self.src.find(b"\n", end)
            if nl < 0:
                end = len(self.src)
                break
            if self.src[nl - 1:nl] == b"\\" or self.src[nl - 2:nl] == b"\\\r":
                end = nl + 1
                continue
            end = nl + 1
            break
        value_toks = [t for t in lex(self.src, r[0], end)]
        # the first token is the name
        value_toks = value_toks[1:]
        text = self.text(value_toks[0].start, value_toks[-1].end).strip() if value_toks else ""
        self.macros[name] = s.Macro(name=name, text=text, value=parse_macro_value(text), span=self.span(start, end))

    def struct(self, c, scope: tuple[str, ...], template: bool) -> None:
        K = self.K
        if not c.is_definition():
            return
        name = c.spelling
        if not name or "(unnamed" in name or "(anonymous" in name:
            name = "<anonymous>"
        members: list[str] = []
        for ch in c.get_children():
            if not self.in_main(ch):
                continue
            k = ch.kind
            if k == K.FIELD_DECL:
                if self._field_is_pointer(ch):
                    members.append(ch.spelling)
            elif k in (K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION, K.FUNCTION_DECL):
                if ch.is_definition():
                    self.function(ch, scope + (name,), template)
            elif k == K.FUNCTION_TEMPLATE:
                if ch.is_definition():
                    self.function(ch, scope + (name,), True)
            elif k in (K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL):
                self.struct(ch, scope + (name,), template)
            elif k in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                self.struct(ch, scope + (name,), True)
        self.structs.setdefault(name, []).extend(members)

    def _field_is_pointer(self, c) -> bool:
        r = self.rng(c)
        if r is None:
            return False
        name_off = self.floc(c.location)[1]
        toks = list(lex(self.src, r[0], name_off))
        _, run = split_declarator(toks)
        return any(t.text == "*" for t in run) or c.type.get_canonical().kind == self.api.ci.TypeKind.POINTER and self.macro_uses.exact(r) is not None

    # ------------------------------------------------------------------ functions
    def function(self, c, scope: tuple[str, ...], template: bool) -> None:
        K = self.K
        r = self.rng(c)
        if r is None:
            return
        kids = self.children(c)
        body = next((k for k in reversed(kids) if k.kind == K.COMPOUND_STMT), None)
        if body is None:
            try_stmt = next((k for k in reversed(kids) if k.kind == K.CXX_TRY_STMT), None)
            if try_stmt is None:
                return
            body = next((k for k in try_stmt.get_children() if k.kind == K.COMPOUND_STMT), None)
            if body is None:
                return
        start = self._function_start(r[0], r[1])
        # under a `template <...>` header (an explicit specialisation `template <>` too, as tree-sitter
        # sees it), or a member of a class template
        first = next(lex(self.src, r[0], r[1]), None)
        template = template or (first is not None and first.text == "template") or self._in_class_template(c)
        end = r[1]
        attrs = {k.kind for k in kids if k.kind in (K.CUDAGLOBAL_ATTR, K.CUDADEVICE_ATTR, K.CUDAHOST_ATTR)
                 and (self.rng(k) or (-1, -1))[0] >= start}
        is_kernel = K.CUDAGLOBAL_ATTR in attrs
        is_device = K.CUDADEVICE_ATTR in attrs and K.CUDAHOST_ATTR not in attrs
        # A class template's constructor is spelled `View<T>` by clang, `View` in the source (and by
        # tree-sitter): the name as written.
        name = c.spelling.split("<", 1)[0] if c.kind == K.CONSTRUCTOR else c.spelling
        name_span = self._name_span(c, start)
        qualname = "::".join(self._qualifiers(c) + [name])
        params = [self.param(p) for p in kids if p.kind == K.PARM_DECL]
        saved = self.in_template
        self.in_template = template
        try:
            block = self.block(body)
        finally:
            self.in_template = saved
        self.functions.append(
            s.Function(
                span=self.span(start, end),
                name=name,
                params=params,
                body=block,
                is_kernel=is_kernel,
                is_device=is_device,
                is_template=template,
                qualname=qualname,
                name_span=name_span,
                has_errors=self.has_error_in(start, end),
                in_conditional=any(a <= start < b for a, b in self.conditional_regions),
            )
        )

    def _in_class_template(self, c) -> bool:
        K = self.K
        parent = c.semantic_parent
        while parent is not None and parent.kind != K.TRANSLATION_UNIT:
            if parent.kind in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.FUNCTION_TEMPLATE):
                return True
            parent = parent.semantic_parent
        return False

    def _qualifiers(self, c) -> list[str]:
        K = self.K
        out: list[str] = []
        parent = c.semantic_parent
        while parent is not None and parent.kind not in (K.TRANSLATION_UNIT,):
            if parent.kind in (K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.CLASS_TEMPLATE,
                               K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                if parent.spelling and "(unnamed" not in parent.spelling and "(anonymous" not in parent.spelling:
                    out.append(parent.spelling)
                elif parent.kind != K.NAMESPACE:
                    out.append("<anonymous>")
            parent = parent.semantic_parent
        return list(reversed(out))

    def _function_start(self, start: int, end: int) -> int:
        """Where tree-sitter's function_definition starts: after `template <...>` and `extern "C"`."""
        pos = start
        while True:
            toks = lex(self.src, pos, end)
            first = next(toks, None)
            if first is None:
                return pos
            if first.text == "template":
                lt = next(toks, None)
                if lt is None or lt.text != "<":
                    return first.start
                close = self.match_close(lt.start)
                if close is None:
                    return first.start
                pos = close
                continue
            if first.text == "extern":
                lit = next(toks, None)
                if lit is not None and lit.kind == "str":
                    pos = lit.end
                    continue
            return first.start

    def _name_span(self, c, start: int) -> s.Span | None:
        f, name_off = self.floc(c.location)
        if f != self.main or self.macro_uses.exact((name_off, self.token_end(name_off))) is not None:
            return None
        toks = list(lex(self.src, name_off, name_off + 512))
        if not toks:
            return None
        end = toks[0].end
        if toks[0].text == "operator":
            # up to the `(` of the parameter list (`operator()` has its own `()` first)
            i = 1
            if i < len(toks) and toks[i].text == "(" and i + 1 < len(toks) and toks[i + 1].text == ")":
                i += 2
            while i < len(toks) and toks[i].text != "(":
                i += 1
            end = toks[i - 1].end if i - 1 >= 0 else end
        elif toks[0].text == "~" and len(toks) > 1:
            end = toks[1].end
        elif len(toks) > 1 and toks[1].text == "<":
            close = self.match_close(toks[1].start)
            if close is not None:
                end = close
        # qualifiers written before the name: `A::`, `ns::A<T>::`
        qstart = name_off
        before = self.src[max(start, name_off - 512):name_off]
        m = re.search(rb"((?:[A-Za-z_]\w*\s*(?:<[^;{}()]*?>)?\s*::\s*)+)$", before)
        if m:
            qstart = name_off - len(before) + m.start(1)
        return self.span(qstart, end)

    def param(self, p) -> s.Param:
        r = self.rng(p)
        name = p.spelling or ""
        if r is None:
            return s.Param(name=name, type=p.type.spelling, is_pointer=self.type_is_pointer(p.type), span=None)
        if self.macro_uses.exact(r) is not None:
            return s.Param(name=name, type=p.type.spelling, is_pointer=self.type_is_pointer(p.type), span=self.span(*r))
        if name:
            name_off = self.floc(p.location)[1]
            toks = list(lex(self.src, r[0], name_off))
            after = name_off + len(name.encode())
        else:
            toks = list(lex(self.src, r[0], r[1]))
            after = r[1]
        spec, run = split_declarator(toks)
        dims = self._bracket_ranges(after, r[1] + 1) if name else []
        base = self.type_text(spec)
        prefix = _prefix(run) + "[]" * len(dims)
        if not name and any(t.text == "[" for t in toks):
            prefix += "[]"
        is_pointer = any(t.text == "*" for t in run) or bool(dims) or (not name and any(t.text == "[" for t in toks))
        return s.Param(name=name, type=(base + " " + prefix).strip(), is_pointer=is_pointer, span=self.span(*r))

    def type_is_pointer(self, t) -> bool:
        tk = self.api.ci.TypeKind
        return t.kind in (tk.POINTER, tk.CONSTANTARRAY, tk.INCOMPLETEARRAY, tk.VARIABLEARRAY, tk.DEPENDENTSIZEDARRAY)

    def type_text(self, spec: list[Tok]) -> str:
        kept: list[Tok] = []
        i = 0
        while i < len(spec):
            t = spec[i]
            if t.text in _SPEC_WITH_ARGS and i + 1 < len(spec) and spec[i + 1].text == "(":
                close = self.match_close(spec[i + 1].start)
                i += 1
                while i < len(spec) and (close is None or spec[i].start < close):
                    i += 1
                continue
            if t.text == "[" and i + 1 < len(spec) and spec[i + 1].text == "[":  # [[attribute]]
                depth = 0
                while i < len(spec):
                    depth += {"[": 1, "]": -1}.get(spec[i].text, 0)
                    i += 1
                    if depth == 0:
                        break
                continue
            if t.text in _SPEC_QUALIFIERS:
                i += 1
                continue
            kept.append(t)
            i += 1
        if not kept:
            return ""
        return self.text(kept[0].start, kept[-1].end)

    def _bracket_ranges(self, pos: int, limit: int) -> list[tuple[int, int]]:
        """`[...]` groups that directly follow `pos` (array dimensions after a declarator name)."""
        out: list[tuple[int, int]] = []
        while True:
            tok = next(lex(self.src, pos, limit + 4096), None)
            if tok is None or tok.text != "[":
                return out
            close = self.match_close(tok.start)
            if close is None:
                return out
            out.append((tok.start, close))
            pos = close

    # ------------------------------------------------------------------ variable declarations
    def decl_from_vars(self, vars_: list, stmt_range: tuple[int, int] | None = None) -> s.Decl | None:
        if not vars_:
            return None
        first = self.rng(vars_[0])
        if first is None:
            return None
        macro = self.macro_uses.exact(first)
        if stmt_range is None:
            last = self.rng(vars_[-1]) or first
            end = self._var_end(vars_[-1], last)
            stmt_range = (first[0], self.extend_semicolon(end))
        out: list[s.VarDecl] = []
        prev_end = None
        spec_toks: list[Tok] | None = None
        for v in vars_:
            vd, prev_end, spec_toks = self.var_decl(v, first[0], prev_end, spec_toks, macro is not None)
            if vd is not None:
                out.append(vd)
        return s.Decl(self.span(*stmt_range), out)

    def _var_end(self, v, r: tuple[int, int]) -> int:
        """clang's VarDecl extent may stop before a closing `)` of a direct initializer."""
        name_off = self.floc(v.location)[1]
        if self.macro_uses.exact(r) is not None:
            return r[1]
        pos = name_off + len(v.spelling.encode())
        for _, b in self._bracket_ranges(pos, r[1]):
            pos = b
        tok = next(lex(self.src, pos, pos + 4096), None)
        if tok is not None and tok.text in ("(", "{") and tok.start < r[1] + 1:
            close = self.match_close(tok.start)
            if close is not None:
                return max(r[1], close)
        return r[1]

    def var_decl(self, v, decl_start: int, prev_end: int | None, spec_toks: list[Tok] | None, in_macro: bool):
        r = self.rng(v)
        name = v.spelling
        if r is None:
            return None, prev_end, spec_toks
        kids = self.children(v)
        exprs = [k for k in kids if self.is_expr(k)]
        if in_macro or self.macro_uses.exact(r) is not None:
            init = None
            if exprs:
                init_c = self.unwrap(exprs[-1])
                init = self.expr(init_c) if init_c is not None else None
            return (
                s.VarDecl(self.span(*r), name, v.type.spelling, self.type_is_pointer(v.type), init),
                r[1],
                spec_toks,
            )
        name_off = self.floc(v.location)[1]
        name_end = name_off + len(name.encode())
        if prev_end is None:
            toks = list(lex(self.src, decl_start, name_off))
            spec, run = split_declarator(toks)
            spec_toks = spec
        else:
            toks = list(lex(self.src, prev_end, name_off))
            if toks and toks[0].text == ",":
                toks = toks[1:]
            _, run = split_declarator(toks)
            run = toks if all(t.text in ("*", "&", "&&", "(") or t.text in _DECLARATOR_QUALIFIERS for t in toks) else run
        spec = spec_toks or []
        spec_words = {t.text for t in spec}
        dims_ranges = self._bracket_ranges(name_end, r[1])
        after_dims = dims_ranges[-1][1] if dims_ranges else name_end
        dims: list[s.Expr] = []
        init: s.Expr | None = None
        rest: list = []
        dim_cursors = []
        for e in exprs:
            er = self.rng(e)
            if er is not None and any(a <= er[0] < b for a, b in dims_ranges):
                dim_cursors.append((er[0], e))
            else:
                rest.append(e)
        for _, e in sorted(dim_cursors, key=lambda x: x[0]):
            ue = self.unwrap(e)
            if ue is not None:
                dims.append(self.expr(ue))
        nxt = next(lex(self.src, after_dims, after_dims + 4096), None)
        end = self._var_end(v, r)
        if nxt is not None and rest:
            init_c = rest[-1]
            if nxt.text == "=":
                ue = self.unwrap(init_c)
                init = self.expr(ue) if ue is not None else None
            elif nxt.text in ("(", "{"):
                kind = "argument_list" if nxt.text == "(" else "initializer_list"
                args = self._construct_args(init_c)
                close = self.match_close(nxt.start) or end
                init = s.Other(self.span(nxt.start, close), kind, args)
        declarator_start = run[0].start if run else name_off
        type_text = self.type_text(spec)
        prefix = _prefix(run) + "[]" * len(dims_ranges)
        is_pointer = (any(t.text == "*" for t in run) or bool(dims_ranges)) and not dims
        vd = s.VarDecl(
            span=self.span(declarator_start, end),
            name=name,
            type=(type_text + " " + prefix).strip(),
            is_pointer=is_pointer,
            init=init,
            is_const="const" in spec_words,
            is_constexpr="constexpr" in spec_words,
            is_static="static" in spec_words,
            array_dims=dims,
        )
        return vd, end, spec_toks

    def _construct_args(self, c) -> list[s.Expr]:
        """The arguments of a direct initialisation `T x(a, b)` / `T x{a, b}`."""
        K = self.K
        cur = c
        while cur is not None and cur.kind == K.UNEXPOSED_EXPR:
            kids = self.expr_children(cur)
            if len(kids) != 1:
                break
            cur = kids[0]
        if cur is None:
            return []
        if (cur.kind == K.CALL_EXPR and self.is_constructor(cur)) or cur.kind in (K.INIT_LIST_EXPR, K.PAREN_EXPR):
            if cur.kind == K.PAREN_EXPR:
                pass
            else:
                kids = self.within(self.expr_children(cur), self.rng(c))
                return [self.expr(x) for x in (self.unwrap(k) for k in kids) if x is not None]
        ue = self.unwrap(cur)
        return [self.expr(ue)] if ue is not None else []


def split_declarator(toks: list[Tok]) -> tuple[list[Tok], list[Tok]]:
    """Split the tokens before a declarator's name into decl-specifiers and the `*`/`&` run."""
    i = len(toks)
    while i > 0 and (toks[i - 1].text in ("*", "&", "&&", "(") or toks[i - 1].text in _DECLARATOR_QUALIFIERS):
        i -= 1
    run = toks[i:]
    spec = toks[:i]
    # a declarator cannot start with a qualifier: those belong to the specifiers (`int const x`)
    while run and run[0].text in _DECLARATOR_QUALIFIERS:
        spec.append(run.pop(0))
    return spec, run


def _prefix(run: list[Tok]) -> str:
    """The `*`/`&` run as the type suffix tree-sitter spells: `int **p` -> `**`, `T &&r` -> `&`."""
    out = []
    for t in run:
        if t.text == "*":
            out.append("*")
        elif t.text in ("&", "&&"):
            out.append("&")
    return "".join(out)
