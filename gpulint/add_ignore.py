"""`gpulint check --add-ignore`: a `gpulint: ignore[CODES]` comment for every current finding, as
Ruff's `--add-noqa` does, so a large code base adopts gpulint with its existing findings marked
and only new ones reported.

Each flagged line gets one comment naming its codes, at the end of the line: `// ...` in C, C++
and CUDA, `# ...` in Python.  A line that already has a `gpulint: ignore[...]` gets the missing
codes added to it.  A C/C++ line that continues a macro (it ends with `\\`) gets
`/* gpulint: ignore[...] */` before the backslash; a Python line that ends with `\\` gets a
comment line of its own above it, as does a line holding an `ignore-file` comment (a line holds one
suppression).  Files are written through a temporary file and a rename, and
left alone if they changed since gpulint read them."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from gpulint.discovery import is_python_source
from gpulint.findings import Finding
from gpulint.fixloop import FixedFile, write_atomically
from gpulint.sourcetext import line_ending
from gpulint.suppressions import SUPPRESSION


@dataclass
class Added:
    comments: int = 0
    files: int = 0
    without_line: int = 0  # findings in binaries without line tables: nothing to write a comment on
    problems: list[str] = field(default_factory=list)


def add_ignores(findings: list[Finding]) -> Added:
    """Write the comments; returns what was done and what could not be."""
    by_file: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    added = Added()
    for finding in findings:
        if not finding.location.has_line:
            added.without_line += 1
            continue
        by_file[finding.location.path][finding.location.row].add(finding.code)
    for display, rows in sorted(by_file.items()):
        path = Path(display)
        try:
            before = path.read_bytes()
            text = before.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            added.problems.append(f"{display}: cannot read it: {getattr(exc, 'strerror', None) or exc}; no comments added")
            continue
        after, count = _with_comments(text, rows, python=is_python_source(path))
        if not count:
            continue
        why = write_atomically(FixedFile(path, display, before, after.encode("utf-8"), count, []))
        if why is not None:
            added.problems.append(f"{display}: {why}")
            continue
        added.comments += count
        added.files += 1
    return added


def with_ignore_comments(text: str, rows: dict[int, set[str]], python: bool) -> str:
    """`text` with the comments for `rows` (row -> codes) written in, as `add_ignores` writes them
    (the language server's "ignore" action edits an unsaved buffer with it)."""
    return _with_comments(text, rows, python)[0]


def _with_comments(text: str, rows: dict[int, set[str]], python: bool) -> tuple[str, int]:
    ending = line_ending(text.encode("utf-8")).decode()
    lines = text.splitlines(keepends=True)
    count = 0
    for row in sorted(rows, reverse=True):  # bottom up: inserted lines do not move the rows above
        if not 0 < row <= len(lines):
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        newline = line[len(body):]
        updated = _merge(body, rows[row])
        if updated is None:  # every code already ignored there
            continue
        codes = ",".join(sorted(rows[row]))
        if updated != body:
            lines[row - 1] = updated + newline
        else:
            # A comment line above when an end-of-line comment would break the line or be unseen
            # (a line holds one suppression: an `ignore-file` there already takes the place).
            if python and body.rstrip().endswith("\\") or SUPPRESSION.search(body):
                indent = body[: len(body) - len(body.lstrip())]
                lines.insert(row - 1, f"{indent}{'#' if python else '//'} gpulint: ignore[{codes}]{ending}")
            elif body.rstrip().endswith("\\"):
                # inside a macro: a block comment keeps the continuation
                cut = body.rstrip()[:-1].rstrip()
                lines[row - 1] = f"{cut} /* gpulint: ignore[{codes}] */ \\{newline}"
            else:
                marker = "#" if python else "//"
                lines[row - 1] = f"{body.rstrip()}  {marker} gpulint: ignore[{codes}]{newline}"
        count += 1
    return "".join(lines), count


def _merge(body: str, codes: set[str]) -> str | None:
    """`body` with `codes` added to the `gpulint: ignore[...]` it has; `body` itself when it has
    none; None when its comment already ignores them all (or every code)."""
    match = SUPPRESSION.search(body)
    if match is None or match.group("file"):
        return body
    listed = match.group("codes")
    if listed is None:
        return None  # a bare `ignore` covers every code
    present = {c.strip().upper() for c in listed.split(",") if c.strip()}
    if codes <= present:
        return None
    merged = ",".join(sorted(present | codes))
    return body[: match.start("codes")] + merged + body[match.end("codes"):]
