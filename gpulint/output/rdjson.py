"""reviewdog's Diagnostic Format (`reviewdog -f=rdjson`): the findings as diagnostics with
ranges, severities, the rule's code and URL, related locations, and each safe or unsafe fix as
suggestions (reviewdog posts them as suggested changes in a pull request)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpulint.findings import Finding, Location
from gpulint.output import level

_SEVERITY = {"error": "ERROR", "warning": "WARNING", "note": "INFO"}


def _range(loc: Location) -> dict:
    end_row, end_column = loc.end
    return {"start": {"line": loc.row, "column": loc.column}, "end": {"line": end_row, "column": end_column}}


def _position(text: bytes, offset: int) -> dict:
    """A byte offset as reviewdog's 1-based line and column (columns counted in UTF-8 bytes + 1)."""
    before = text[:offset]
    return {"line": before.count(b"\n") + 1, "column": offset - (before.rfind(b"\n") + 1) + 1}


def _suggestions(f: Finding, sources: dict[str, bytes | None]) -> list[dict]:
    if f.fix is None:
        return []
    out = []
    for edit in f.fix.edits:
        if edit.path not in sources:
            try:
                sources[edit.path] = Path(edit.path).read_bytes()
            except OSError:
                sources[edit.path] = None
        text = sources[edit.path]
        if text is None or edit.path != f.location.path:
            return []  # reviewdog suggests changes in the diagnostic's own file only
        out.append({"range": {"start": _position(text, edit.start), "end": _position(text, edit.end)},
                    "text": edit.content})
    return out


def render(findings: list[Finding], **_: Any) -> str:
    sources: dict[str, bytes | None] = {}
    diagnostics = []
    for f in findings:
        diagnostic: dict[str, Any] = {
            "message": f.message,
            "location": {"path": f.location.path, **({"range": _range(f.location)} if f.location.has_line else {})},
            "severity": _SEVERITY[level(f.code)],
            "code": {"value": f.code, "url": f.url},
        }
        suggestions = _suggestions(f, sources)
        if suggestions:
            diagnostic["suggestions"] = suggestions
        related = [{"message": r.message, "location": {"path": r.location.path, "range": _range(r.location)}}
                   for r in f.related if r.location.has_line]
        if related:
            diagnostic["related_locations"] = related
        diagnostics.append(diagnostic)
    return json.dumps({"source": {"name": "gpulint", "url": "https://gpulint.dev"}, "severity": "WARNING",
                       "diagnostics": diagnostics}, indent=1) + "\n"
