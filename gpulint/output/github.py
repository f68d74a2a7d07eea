"""GitHub Actions workflow commands: one `::warning file=…,line=…::…` annotation per finding."""
from __future__ import annotations

from typing import Any

from gpulint.findings import Finding, measured_notes

_LEVEL = {"GL900": "error", "GL901": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: list[Finding], **_: Any) -> str:
    lines = []
    for f in findings:
        loc = f.location
        end_row, end_column = loc.end
        props = [f"file={_property(loc.path)}"] + ([f"line={loc.row}", f"col={loc.column}"] if loc.has_line else [])
        if loc.has_line and end_row != loc.row:
            props.append(f"endLine={end_row}")
        elif loc.has_line and end_column > loc.column:
            props.append(f"endColumn={end_column}")
        props.append(f"title={_property(f'{f.code} {f.name}')}")
        message = "\n".join([f.message, *measured_notes(f)])
        lines.append(f"::{_LEVEL.get(f.code, 'warning')} {','.join(props)}::{_data(message)}")
    return "".join(line + "\n" for line in lines)
