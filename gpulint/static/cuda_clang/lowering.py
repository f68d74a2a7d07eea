"""One translation unit's lowering: the macro uses first, then the file's top-level declarations.

`Lowering` is one object over three files because the three lowerings recurse into each other (a
function holds statements, a statement holds expressions and declarations, a lambda expression holds a
block again), as clang itself spreads one `Sema` over SemaDecl/SemaStmt/SemaExpr: each concern is its
own class over the shared `LoweringCore`, and a method one concern calls in another is public.
"""
from __future__ import annotations

import bisect

from gpulint.static.cuda_clang.declarations import DeclarationLowering
from gpulint.static.cuda_clang.expressions import ExpressionLowering
from gpulint.static.cuda_clang.statements import StatementLowering


class Lowering(DeclarationLowering, StatementLowering, ExpressionLowering):
    """The libclang AST of one file -> its `syntax` functions, globals, structs and macros."""

    def run(self) -> None:
        K = self.K
        root = self.tu.cursor
        top = list(root.get_children())
        # every node's range depends on the macro uses (a node from a macro body spans its use), so they
        # are all known before anything is lowered
        for c in top:
            if c.kind == K.MACRO_DEFINITION:
                self.macro_defs.add(c)
                continue
            if c.kind == K.MACRO_INSTANTIATION:
                r = self.raw_range(c)
                if r is None:
                    continue
                ref = c.referenced
                fl = bool(self.api.macro_function_like(ref)) if ref is not None and ref.kind == K.MACRO_DEFINITION else False
                self.macro_uses.add(r[0], r[1], c.spelling, fl)
        self.macro_uses.index_outermost()
        for c in top:
            if c.kind == K.MACRO_DEFINITION:
                if self.in_main(c):
                    self.macro(c)
                continue
            if c.kind in (K.MACRO_INSTANTIATION, K.INCLUSION_DIRECTIVE):
                continue
            if not self.in_main(c):
                continue
            self.top_level_one(c, (), False)
        self.flush_globals()
        # a `#define` inside a function body is not a file-scope constant (nor is it one for tree-sitter)
        bodies = sorted((f.body.span.start, f.body.span.end) for f in self.functions)
        for name, m in list(self.macros.items()):
            i = bisect.bisect_right(bodies, (m.span.start, len(self.src) + 1)) - 1
            if i >= 0 and bodies[i][0] <= m.span.start < bodies[i][1]:
                del self.macros[name]
