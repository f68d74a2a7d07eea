"""Fix builders shared by rules: they turn events (with their statement byte ranges) into edits."""
from __future__ import annotations

import re

from gpulint.findings import Edit
from gpulint.fixes.edits import line_bounds, remove_statement
from gpulint.history import Event

# A statement that is nothing but the call (optionally inside an error-check wrapper).
_LONE_CALL = re.compile(rb"^\s*(?:[A-Za-z_][\w:.]*\s*\(\s*)?[A-Za-z_][\w:.]*\s*\(.*\)\s*\)?\s*;?\s*$", re.S)
_EMPTY_FOR = {"zeros": "empty", "ones": "empty", "zeros_like": "empty_like", "ones_like": "empty_like",
              "new_zeros": "new_empty", "new_ones": "new_empty"}


def remove_call(path: str, source: bytes | None, event: Event) -> Edit | None:
    """Remove the statement of a call when the statement is only that call (`cudaMemset(...);`,
    `CHECK(cudaMemset(...));`, `x.zero_()`); None when removing it would lose anything else."""
    if source is None or event.stmt_start is None or event.stmt_end is None:
        return None
    text = source[event.stmt_start:event.stmt_end]
    if b"=" in text.split(b"(", 1)[0] or not _LONE_CALL.match(text) or event.api.split(".")[-1].strip("()`") \
            not in text.decode("utf-8", "replace"):
        return None
    return remove_statement(path, source, event.stmt_start, event.stmt_end)


def empty_instead_of_filled(path: str, source: bytes | None, event: Event) -> Edit | None:
    """`torch.zeros(...)` -> `torch.empty(...)` in the statement of `event` (the first such call)."""
    if source is None or event.stmt_start is None or event.stmt_end is None:
        return None
    factory = event.api.rsplit(".", 1)[-1].strip("()")
    replacement = _EMPTY_FOR.get(factory)
    if replacement is None:
        return None
    text = source[event.stmt_start:event.stmt_end]
    match = re.search(rb"\b" + re.escape(factory.encode()) + rb"\s*\(", text)
    if match is None:
        return None
    start = event.stmt_start + match.start()
    return Edit(path, start, start + len(factory), replacement)


def remove_comment(path: str, source: bytes, row: int, column: int) -> Edit:
    """Remove a comment starting at (row, column), and its line when nothing else is on it."""
    line_start = 0
    for _ in range(row - 1):
        line_start = source.index(b"\n", line_start) + 1
    start = line_start + len(source[line_start:].decode("utf-8", "replace")[: column - 1].encode("utf-8"))
    line_end = source.find(b"\n", start)
    line_end = len(source) if line_end == -1 else line_end
    s, e = line_bounds(source, start, line_end)
    if (s, e) == (start, line_end):
        # Code stays on the line: drop the comment and the spaces before it.
        while s > line_start and source[s - 1:s] in (b" ", b"\t"):
            s -= 1
    return Edit(path, s, e, "")
