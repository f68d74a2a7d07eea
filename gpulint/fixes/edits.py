"""Byte-range edits: build them from statement ranges, and apply the non-overlapping ones."""
from __future__ import annotations

from gpulint.findings import Applicability, Edit, Fix, Finding


def line_bounds(source: bytes, start: int, end: int) -> tuple[int, int]:
    """Extend [start, end) to whole lines when nothing else shares them."""
    line_start = source.rfind(b"\n", 0, start) + 1
    line_end = source.find(b"\n", end)
    line_end = len(source) if line_end == -1 else line_end + 1
    if source[line_start:start].strip() or source[end:line_end].strip():
        return start, end
    return line_start, line_end


def remove_statement(path: str, source: bytes, start: int, end: int) -> Edit:
    """Delete a statement; its whole line(s) when it stands alone, trailing comment included."""
    stop = end
    rest = source[end:source.find(b"\n", end) if source.find(b"\n", end) != -1 else len(source)]
    if rest.strip().startswith((b"//", b"#")):
        stop = end + len(rest)  # its own trailing comment goes with it
    s, e = line_bounds(source, start, stop)
    return Edit(path, s, e, "")


def touches_macro_uses(fix: Fix, expanded: list[tuple[int, int]]) -> bool:
    """Whether an edit of `fix` touches a macro use the preprocessor expanded, its two ends
    included.  The text there is the macro's name and arguments, not the statements the fix was
    built from; and a statement from the macro's body spans the whole use, so an insertion before
    it (a free before a `return` in the body) cannot be told from one before the whole use."""
    return any(start <= edit.end and edit.start <= end for edit in fix.edits for start, end in expanded)


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    if fix is None:
        return False
    if fix.applicability is Applicability.SAFE:
        return True
    return unsafe and fix.applicability is Applicability.UNSAFE


def choose(findings: list[Finding], unsafe: bool) -> list[Fix]:
    """Fixes to apply together in one round.  Two fixes are never applied together when their
    extents (first to last byte they edit, inclusive) meet, or when they are about the same object:
    each was built against the file as it was, and a statement one moves may be what the other's
    edit relies on (a GL001 move of `y = feats.sum()` past the `del feats` GL002 inserts).  The
    loser waits for the next round, where it is rebuilt from a fresh analysis."""
    chosen: list[Fix] = []
    reach: dict[str, int] = {}  # path -> the furthest byte a chosen fix edits
    objects: set[tuple[str, str, int]] = set()
    candidates = [f for f in findings if allowed(f.fix, unsafe) and f.fix.edits]
    for finding in sorted(candidates, key=lambda f: (f.location.path, min(e.start for e in f.fix.edits))):
        fix = finding.fix
        paths = {e.path for e in fix.edits}
        start = min(e.start for e in fix.edits)
        end = max(e.end for e in fix.edits)
        if len(paths) != 1:
            continue  # gpulint's fixes edit one file; anything else is not ours to combine
        path = next(iter(paths))
        # The object: its name where the finding points (its allocation, for the lifetime rules);
        # a name alone would tie together every `d_a` of every function in the file.
        owner = (path, finding.obj, finding.location.row) if finding.obj else None
        # Candidates come sorted by start, so an extent meets a chosen one iff it starts at or
        # before the furthest end chosen so far.
        if start <= reach.get(path, -1) or owner in objects:
            continue
        chosen.append(fix)
        reach[path] = max(reach.get(path, -1), end)
        if owner is not None:
            objects.add(owner)
    return chosen


def apply(source: bytes, edits: list[Edit]) -> bytes:
    """Apply non-overlapping edits of one file, last first so offsets stay valid."""
    out = source
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[:edit.start] + edit.content.encode("utf-8") + out[edit.end:]
    return out
