"""Human output: `path:row:col: CODE message`, the source line with a caret, related evidence
indented, and a summary line. Colour only when writing to a terminal."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click

from gpulint.findings import Finding, measured_notes
from gpulint.sourcetext import split_lines


class _Lines:
    def __init__(self) -> None:
        self.cache: dict[str, list[str]] = {}

    def get(self, path: str, row: int) -> str | None:
        if path not in self.cache:
            try:
                self.cache[path] = split_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                self.cache[path] = []
        lines = self.cache[path]
        return lines[row - 1] if 0 < row <= len(lines) else None


def render(findings: list[Finding], *, color: bool = False, files: int = 0, errors: int = 0, hidden: str = "",
           concise: bool = False, **_: Any) -> str:
    """Each finding with its source line, evidence and fix; `concise`: its first line and what a
    run measured (a run's report of many sites stays on one screen)."""
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    lines = _Lines()
    out: list[str] = []
    for f in findings:
        loc = f.location
        place = f"{loc.row}:{loc.column}" if loc.has_line else f" in {loc.symbol or 'an unknown function'}"
        out.append(f"{style(loc.path, bold=True)}:{place}: {style(f.code, fg='red', bold=True)} {f.message}")
        if concise:
            out.extend(f"    {style('=', fg='blue')} {note}" for note in measured_notes(f)[:2] if "histogram" not in note
                       and not note.startswith("  "))
            continue
        source = lines.get(loc.path, loc.row)
        if source is not None:
            gutter = len(str(loc.row))
            expanded = source.expandtabs(4)
            caret_start = len(source[: loc.column - 1].expandtabs(4))
            end_row, end_col = loc.end
            width = max(1, (end_col - loc.column) if end_row == loc.row else len(source.rstrip()) - loc.column + 1)
            out.append(f"{' ' * gutter} {style('|', fg='blue')}")
            out.append(f"{style(str(loc.row), fg='blue')} {style('|', fg='blue')} {expanded}")
            out.append(f"{' ' * gutter} {style('|', fg='blue')} {' ' * caret_start}{style('^' * width, fg='red')}")
        for r in f.related:
            at = f"{r.location.path}:{r.location.row}:{r.location.column}" if r.location.has_line else r.location.where
            out.append(f"    {style('=', fg='blue')} {r.message} at {at}")
        for note in measured_notes(f):
            out.append(f"    {style('=', fg='blue')} {note}")
        if f.fix is not None:
            out.append(f"    {style('help', fg='cyan')}: {f.fix.message} ({f.fix.applicability.value} fix)")
        out.append("")
    out.append(summary(findings, style, files, errors, hidden))
    return "\n".join(out) + "\n"


def render_grouped(findings: list[Finding], *, color: bool = False, files: int = 0, errors: int = 0,
                   hidden: str = "", **_: Any) -> str:
    """Ruff's `grouped`: each file's name once, its findings under it, one line each."""
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    out: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.location.path, []).append(f)
    for path, group in by_file.items():
        out.append(style(path, bold=True, underline=True))
        places = [f"{f.location.row}:{f.location.column}" if f.location.has_line
                  else f"in {f.location.symbol or 'an unknown function'}" for f in group]
        width = max(len(p) for p in places)
        for place, f in zip(places, group):
            out.append(f"  {place.ljust(width)}  {style(f.code, fg='red', bold=True)} {f.message}")
        out.append("")
    out.append(summary(findings, style, files, errors, hidden))
    return "\n".join(out) + "\n"


def summary(findings: list[Finding], style, files: int, errors: int, hidden: str) -> str:
    """The last line: what was found in how many files, never "All checks passed" after an error."""
    out: list[str] = []
    counts = Counter(f.code for f in findings)
    checked = f" in {files} file{'s' if files != 1 else ''}" if files else ""
    # Never "All checks passed" when something was not checked (`errors`: gpulint's own failures).
    incomplete = f" {errors} error{'s' if errors != 1 else ''} (above): the results are incomplete." if errors else ""
    if findings:
        by_code = ", ".join(f"{code} ×{n}" for code, n in sorted(counts.items()))
        noun = "finding" if len(findings) == 1 else "findings"
        out.append(style(f"Found {len(findings)} {noun}{checked} ({by_code}).{incomplete}", bold=True))
    elif errors:
        out.append(style(f"No findings{checked}, but{incomplete}", fg="red", bold=True))
    elif not files:
        out.append(style("No files checked.", fg="yellow", bold=True))
    else:
        out.append(style(f"All checks passed{checked}.", fg="green", bold=True))
    if hidden:  # a run's small sites (`--min-bytes`): say they exist and how to see them
        out[-1] += " " + hidden
    return out[-1]
