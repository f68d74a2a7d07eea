"""A C/C++ lexer over the main file's bytes, for what the clang AST does not keep.

clang's cursors give extents, not the tokens written inside them: where a declarator's `*` run starts,
which bracket closes a template argument list, whether a cast was `(T)x` or `T(x)`.  The lowering reads
those from the source with `lex`, which skips comments and whitespace and never fails (any byte is a
token).
"""
from __future__ import annotations

import re
from typing import Iterator

_TOKEN_RE = re.compile(
    rb"""
    (?P<ws>\s+|\\\n)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<str>(?:u8|u|U|L)?R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"
           |(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*"?
           |(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*'?)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.']|'[0-9A-Za-z])*)
  | (?P<punct><<=|>>=|<=>|->\*|\.\.\.|::|->|&&|\|\||<<|>>|<=|>=|==|!=|\+\+|--|[-+*/%&|^]=|.)
    """,
    re.S | re.X,
)


class Tok:
    """One token: its text, its [start, end) byte offsets and its kind (`id`, `num`, `str` or `punct`)."""

    __slots__ = ("text", "start", "end", "kind")

    def __init__(self, text: str, start: int, end: int, kind: str) -> None:
        self.text = text
        self.start = start
        self.end = end
        self.kind = kind

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.text!r}, {self.start}, {self.end})"


def lex(src: bytes, start: int, end: int | None = None) -> Iterator[Tok]:
    """Tokens of src[start:end] (comments and whitespace skipped)."""
    limit = len(src) if end is None else min(end, len(src))
    pos = max(0, start)
    while pos < limit:
        m = _TOKEN_RE.match(src, pos, limit)
        if m is None:  # pragma: no cover - the pattern matches any character
            pos += 1
            continue
        kind = m.lastgroup or "punct"
        if kind == "delim":
            kind = "str"
        if kind not in ("ws", "comment"):
            yield Tok(m.group().decode("utf-8", "replace"), m.start(), m.end(), kind)
        pos = m.end()

