"""What the preprocessor did to the main file, as the lowering needs to know it.

clang's AST shows what a macro expands to, not where it was used: `MacroUses` maps a node back to the
use it came from (one range per use, the outermost ones indexed), `MacroDefinitions` reads the
`sizeof(T)` types a macro's definition spells, `conditional_regions` finds the `#if` blocks of the text
and `parse_macro_value` reads an object-like macro's value as an expression.
"""
from __future__ import annotations

import bisect
import re
from typing import Callable

from gpulint.static import syntax as s


class MacroUse:
    """One macro use in the main file: the byte range its expansion replaces, and the macro."""

    __slots__ = ("start", "end", "name", "function_like")

    def __init__(self, start: int, end: int, name: str, function_like: bool) -> None:
        self.start = start
        self.end = end
        self.name = name
        self.function_like = function_like


class MacroUses:
    """The macro uses of the main file, by the offset where each starts.

    Filled by `add` from clang's MACRO_INSTANTIATION cursors, then `index_outermost` once, before
    anything asks `containing`."""

    def __init__(self) -> None:
        self._by_start: dict[int, MacroUse] = {}
        self._outermost: list[MacroUse] = []  # macro uses not inside another one, by position
        self._outermost_starts: list[int] = []

    def add(self, start: int, end: int, name: str, function_like: bool) -> None:
        """Record one use; of two that start at one offset the longer is kept."""
        prev = self._by_start.get(start)
        if prev is None or end > prev.end:
            self._by_start[start] = MacroUse(start, end, name, function_like)

    def index_outermost(self) -> None:
        last_end = -1
        for use in sorted(self._by_start.values(), key=lambda u: (u.start, -u.end)):
            if use.start >= last_end:
                self._outermost.append(use)
                last_end = use.end
        self._outermost_starts = [u.start for u in self._outermost]

    def starting_at(self, offset: int) -> MacroUse | None:
        return self._by_start.get(offset)

    def exact(self, r: tuple[int, int] | None) -> MacroUse | None:
        """The macro use whose expansion is exactly this range: the node comes from a macro body."""
        if r is None:
            return None
        use = self._by_start.get(r[0])
        if use is not None and use.end == r[1]:
            return use
        return None

    def containing(self, r: tuple[int, int]) -> MacroUse | None:
        """The outermost macro use whose expansion contains the range."""
        i = bisect.bisect_right(self._outermost_starts, r[0]) - 1
        if i >= 0:
            use = self._outermost[i]
            if use.start <= r[0] and r[1] <= use.end:
                return use
        return None


class MacroDefinitions:
    """Every macro definition clang saw, headers included, by name (MACRO_DEFINITION cursors)."""

    def __init__(self, function_like: Callable[[object], int]) -> None:
        self._function_like = function_like  # libclang's clang_Cursor_isMacroFunctionLike
        self._by_name: dict[str, object] = {}
        self._sizeof_cache: dict[str, list[str]] = {}

    def add(self, cursor) -> None:
        self._by_name[cursor.spelling] = cursor

    def sizeof_types(self, name: str, depth: int = 0) -> list[str]:
        """The `sizeof(T)` type texts in a macro's replacement list (nested macros followed)."""
        if name in self._sizeof_cache:
            return self._sizeof_cache[name]
        self._sizeof_cache[name] = []
        d = self._by_name.get(name)
        if d is None or depth > 8:
            return []
        toks = [t.spelling for t in d.get_tokens()]
        body = toks[1:]
        if self._function_like(d) and body and body[0] == "(":
            body = body[body.index(")") + 1:] if ")" in body else []
        out: list[str] = []
        i = 0
        while i < len(body):
            t = body[i]
            if t == "sizeof" and i + 1 < len(body) and body[i + 1] == "(":
                depth_p, j = 0, i + 1
                while j < len(body):
                    depth_p += {"(": 1, ")": -1}.get(body[j], 0)
                    if depth_p == 0:
                        break
                    j += 1
                inner = body[i + 2:j]
                if inner and not any(x in self._by_name for x in inner):
                    out.append(" ".join(inner).replace(" *", "*").replace("*", " *").strip())
                i = j + 1
                continue
            if t in self._by_name and t != name:
                out.extend(self.sizeof_types(t, depth + 1))
            i += 1
        self._sizeof_cache[name] = out
        return out


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(ifndef|ifdef|if|elifdef|elifndef|elif|else|endif|define)\b[ \t]*(\w*)", re.M)


def conditional_regions(source: bytes) -> list[tuple[int, int]]:
    """Byte ranges of `#if`/`#ifdef`/`#ifndef` ... `#endif` blocks, include guards left out.

    A function defined in one may not be compiled in the project's real configuration (tree-sitter's
    frontend marks those `in_conditional`; this is the same rule, read from the text)."""
    cleaned = re.sub(rb"/\*.*?\*/", lambda m: re.sub(rb"[^\n]", b" ", m.group()), source, flags=re.S)
    directives = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _DIRECTIVE.finditer(cleaned)]
    regions: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []
    for i, (start, end, word, name) in enumerate(directives):
        if word in (b"if", b"ifdef", b"ifndef"):
            guard = False
            if word == b"ifndef" and name and i + 1 < len(directives):
                nxt = directives[i + 1]
                between = cleaned[end:nxt[0]]
                guard = nxt[2] == b"define" and nxt[3] == name and not re.sub(rb"//[^\n]*", b"", between).strip()
            stack.append((start, guard))
        elif word == b"endif" and stack:
            begin, guard = stack.pop()
            if not guard:
                regions.append((begin, end))
    for begin, guard in stack:  # unterminated: to the end of the file
        if not guard:
            regions.append((begin, len(source)))
    return regions


def parse_macro_value(text: str) -> s.Expr | None:
    """An object-like macro's replacement text as an expression, read by the tree-sitter frontend's parser."""
    if not text:
        return None
    try:
        from gpulint.static.cuda_treesitter import parse_expression
    except Exception:  # the tree-sitter frontend (or tree-sitter itself) is not there
        return None
    try:
        return parse_expression(text)
    except Exception:
        return None
