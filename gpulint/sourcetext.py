"""Source text as compilers see it: where lines end, whatever the platform wrote.

C, C++ and Python end a line at LF, CRLF or a lone CR and nowhere else.  `str.splitlines` also
splits at form feeds, vertical tabs, \\x1c-\\x1e, NEL and U+2028/U+2029, which all three languages
treat as ordinary characters inside a line: counting those would put every row after one out of
step with the parsers' rows (a suppression comment after a form feed was missed that way).
"""
from __future__ import annotations

import re

_LINE_END = re.compile(r"\r\n|\r|\n")
# What `\w` matches in a bytes pattern: for word-boundary tests made by hand, after a pattern that
# starts with a literal (a leading `\b` makes the regular expression engine try every byte).
WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_LONE_CR = re.compile(rb"\r(?!\n)")


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their endings, as a compiler numbers them (row = index + 1)."""
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the text ends with a line ending: no empty last line
    return lines


def as_parsed(data: bytes) -> bytes:
    """The bytes the parsers are given: each lone CR (classic Mac line ending) becomes LF.

    tree-sitter's grammars know only LF (a CR-only file is one long line to them, so no statement
    is seen); the replacement keeps every byte offset, so spans, rows and fix edits computed on the
    result are valid for the original file too."""
    return _LONE_CR.sub(b"\n", data) if b"\r" in data else data


def line_ending(data: bytes) -> bytes:
    """The line ending a file mostly uses (LF when it has none), for lines a fix inserts."""
    crlf = data.count(b"\r\n")
    cr = data.count(b"\r") - crlf
    lf = data.count(b"\n") - crlf
    best = max((lf, b"\n"), (crlf, b"\r\n"), (cr, b"\r"), key=lambda pair: pair[0])
    return best[1] if best[0] else b"\n"


def char_column(source: bytes, offset: int, byte_column: int) -> int:
    """The 1-based character (code point) column of byte `offset`, whose 1-based byte column is
    `byte_column`: what Ruff, editors and people count (parsers count bytes)."""
    line_start = offset - (byte_column - 1)
    return len(source[line_start:offset].decode("utf-8", "replace")) + 1


def utf16_column(line: str, column: int) -> int:
    """The 1-based UTF-16 code-unit column of 1-based character `column` of `line` (SARIF's
    `utf16CodeUnits`, what GitHub uses): characters outside the BMP count twice."""
    prefix = line[:column - 1]
    return column + sum(1 for ch in prefix if ord(ch) > 0xFFFF)
