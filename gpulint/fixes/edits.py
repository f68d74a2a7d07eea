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


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    if fix is None:
        return False
    if fix.applicability is Applicability.SAFE:
        return True
    return unsafe and fix.applicability is Applicability.UNSAFE


def choose(findings: list[Finding], unsafe: bool) -> list[Fix]:
    """Fixes to apply together: each fix whole, none overlapping an earlier chosen one."""
    chosen: list[Fix] = []
    taken: list[tuple[str, int, int]] = []
    for finding in sorted(findings, key=lambda f: (f.location.path, min((e.start for e in f.fix.edits), default=0))
                          if f.fix else (f.location.path, 0)):
        fix = finding.fix
        if not allowed(fix, unsafe) or not fix.edits:
            continue
        spans = [(e.path, e.start, e.end) for e in fix.edits]
        if any(p == q and s < e2 and s2 < e for p, s, e in spans for q, s2, e2 in taken) or any(
                p == q and s == e == s2 == e2 for p, s, e in spans for q, s2, e2 in taken):
            continue
        chosen.append(fix)
        taken.extend(spans)
    return chosen


def apply(source: bytes, edits: list[Edit]) -> bytes:
    """Apply non-overlapping edits of one file, last first so offsets stay valid."""
    out = source
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[:edit.start] + edit.content.encode("utf-8") + out[edit.end:]
    return out
