"""JSON output: a list of findings with Ruff's field names plus `related`."""
from __future__ import annotations

import json
from typing import Any

from gpulint.findings import Finding, Fix, Location, plain


def _location(loc: Location) -> dict:
    # Row and column 0 with the function's symbol: a binary built without line information.
    return {"row": loc.row, "column": loc.column, **({"symbol": loc.symbol} if loc.symbol else {})}


def _end(loc: Location) -> dict[str, int]:
    row, column = loc.end
    return {"row": row, "column": column}


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [{"filename": e.path, "start": e.start, "end": e.end, "content": e.content} for e in fix.edits],
    }


def as_dict(f: Finding) -> dict[str, Any]:
    return {
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "filename": f.location.path,
        "location": _location(f.location),
        "end_location": _end(f.location),
        "fix": _fix(f.fix),
        "url": f.url,
        "object": f.obj,
        "related": [
            {"message": r.message, "filename": r.location.path, "location": _location(r.location)} for r in f.related
        ],
        "properties": {k: plain(v) for k, v in f.properties.items()},
    }


def render(findings: list[Finding], **_: Any) -> str:
    # One finding per line: as readable as an indented dump, and written by json's C encoder
    # (an indented dump goes through the pure-Python one, 3x slower on large reports).
    if not findings:
        return "[]\n"
    return "[\n" + ",\n".join("  " + json.dumps(as_dict(f), default=str) for f in findings) + "\n]\n"


def render_lines(findings: list[Finding], **_: Any) -> str:
    """`json-lines`: one finding per line, the same objects as `json` (for streaming consumers)."""
    return "".join(json.dumps(as_dict(f), default=str) + "\n" for f in findings)
