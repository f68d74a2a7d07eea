"""Findings as LSP types: diagnostics, code actions, hover text.  No server state: the wiring
hands in a buffer's text and its last findings, and gets protocol objects back.

Rows and columns: gpulint's are 1-based, columns in characters (code points), edits in bytes;
LSP's are 0-based, columns in the code units the client and server agreed on (UTF-16 unless the
client offered UTF-8 or UTF-32, as Neovim does).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from lsprotocol import types as lsp

from gpulint.add_ignore import with_ignore_comments
from gpulint.findings import Applicability, Finding
from gpulint.findings import Location as GlLocation
from gpulint.fixes.edits import allowed, apply, choose
from gpulint.fixloop import still_parses
from gpulint.output import level
from gpulint.rules import RULES
from gpulint.sourcetext import line_ending

SOURCE = "gpulint"
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.gpulint"
_LINE_END = re.compile(rb"\r\n|\r|\n")
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "note": lsp.DiagnosticSeverity.Information}


class Positions:
    """Where each line of a text starts, to turn gpulint's places into LSP positions."""

    def __init__(self, data: bytes, encoding: str = lsp.PositionEncodingKind.Utf16.value) -> None:
        self.data = data
        self.encoding = encoding
        self.starts = [0] + [m.end() for m in _LINE_END.finditer(data)]

    def line(self, row: int) -> str:
        """Row `row` (1-based) without its line ending."""
        if not 0 < row <= len(self.starts):
            return ""
        start = self.starts[row - 1]
        end = self.starts[row] if row < len(self.starts) else len(self.data)
        return self.data[start:end].rstrip(b"\r\n").decode("utf-8", "replace")

    def _units(self, text: str) -> int:
        if self.encoding == lsp.PositionEncodingKind.Utf8.value:
            return len(text.encode("utf-8"))
        if self.encoding == lsp.PositionEncodingKind.Utf32.value:
            return len(text)
        return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)

    def at(self, row: int, column: int) -> lsp.Position:
        """1-based row and character column."""
        return lsp.Position(max(row - 1, 0), self._units(self.line(row)[:max(column - 1, 0)]))

    def at_offset(self, offset: int) -> lsp.Position:
        """A byte offset."""
        row = _bisect(self.starts, offset)  # 1-based: starts[row - 1] <= offset
        start = self.starts[row - 1]
        return lsp.Position(row - 1, self._units(self.data[start:offset].decode("utf-8", "replace")))

    def range_of(self, location: GlLocation) -> lsp.Range:
        start = self.at(location.row, location.column)
        if location.end_row is None:  # a point: the rest of its line
            return lsp.Range(start, lsp.Position(start.line, self._units(self.line(location.row))))
        end_row, end_column = location.end
        return lsp.Range(start, self.at(end_row, end_column))

    def offset_of(self, position: lsp.Position) -> int:
        """The byte offset of an LSP position (clamped to the text)."""
        if position.line >= len(self.starts):
            return len(self.data)
        text = self.line(position.line + 1)
        units = 0
        for i, ch in enumerate(text):
            if units >= position.character:
                return self.starts[position.line] + len(text[:i].encode("utf-8"))
            units += self._units(ch)
        return self.starts[position.line] + len(text.encode("utf-8"))


def _bisect(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts)
    while low < high:
        middle = (low + high) // 2
        if starts[middle] <= offset:
            low = middle + 1
        else:
            high = middle
    return max(low, 1)


def uri_of(display: str) -> str:
    return Path(os.path.abspath(display)).as_uri()


class Places:
    """Positions of the buffer and of the other files a finding's evidence points into (read once)."""

    def __init__(self, display: str, buffer: Positions) -> None:
        self.display = display
        self.buffer = buffer
        self._files: dict[str, Positions] = {display: buffer}

    def of(self, path: str) -> Positions:
        if path not in self._files:
            try:
                data = Path(path).read_bytes()
            except OSError:
                data = b""
            self._files[path] = Positions(data, self.buffer.encoding)
        return self._files[path]


# ----------------------------------------------------------------------------- diagnostics


def diagnostic(finding: Finding, places: Places) -> lsp.Diagnostic:
    """One finding: its range, code (linking to the rule's page), severity, and its evidence (the
    allocation, free and use lines) as related information."""
    related = [lsp.DiagnosticRelatedInformation(
        lsp.Location(uri_of(r.location.path), places.of(r.location.path).range_of(r.location)), r.message)
        for r in finding.related if r.location.has_line]
    return lsp.Diagnostic(
        range=places.buffer.range_of(finding.location), message=finding.message,
        severity=_SEVERITY[level(finding.code)], code=finding.code,
        code_description=lsp.CodeDescription(href=finding.url), source=SOURCE,
        related_information=related or None)


def diagnostics(findings: list[Finding], places: Places) -> list[lsp.Diagnostic]:
    return [diagnostic(f, places) for f in findings if f.location.path == places.display and f.location.has_line]


# ----------------------------------------------------------------------------- code actions


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    def key(p: lsp.Position) -> tuple[int, int]:
        return (p.line, p.character)
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _fix_edits(findings: list[Finding], places: Places) -> list[lsp.TextEdit] | None:
    """The buffer's text edits of these findings' fixes (inserted lines ending as the buffer's
    do), or None when the result would not parse (a builder's bug: `gpulint fix` withholds it too)."""
    data = places.buffer.data
    ending = line_ending(data).decode()
    edits = [e for f in findings if f.fix is not None for e in f.fix.edits if e.path == places.display]
    if ending != "\n":
        from dataclasses import replace

        edits = [replace(e, content=e.content.replace("\r\n", "\n").replace("\n", ending)) for e in edits]
    path = Path(places.display)
    if still_parses(path, data) and not still_parses(path, apply(data, edits)):
        return None
    return [lsp.TextEdit(lsp.Range(places.buffer.at_offset(e.start), places.buffer.at_offset(e.end)), e.content)
            for e in sorted(edits, key=lambda e: (e.start, e.end))]


def _quick_fix(finding: Finding, diag: lsp.Diagnostic, uri: str, places: Places) -> lsp.CodeAction | None:
    """The finding's fix as a quick fix: a safe one preferred; an unsafe one offered under a name
    that says so and never preferred (`gpulint fix` needs --unsafe-fixes for it); a display-only
    one not offered (it is advice, not an edit to apply)."""
    fix = finding.fix
    if fix is None or not fix.edits or not allowed(fix, unsafe=True):
        return None
    edits = _fix_edits([finding], places)
    if edits is None:
        return None
    safe = fix.applicability is Applicability.SAFE
    title = f"gpulint {finding.code}: {fix.message}" + ("" if safe else " (unsafe fix: review it)")
    return lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=safe,
                          edit=lsp.WorkspaceEdit(changes={uri: edits}))


def _ignore(finding: Finding, diag: lsp.Diagnostic, uri: str, places: Places) -> lsp.CodeAction | None:
    """`gpulint: ignore[CODE]` on the finding's line, written where `check --add-ignore` writes it."""
    try:
        text = places.buffer.data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    python = Path(places.display).suffix.lower() in (".py", ".pyi")
    after = with_ignore_comments(text, {finding.location.row: {finding.code}}, python)
    if after == text:
        return None
    return lsp.CodeAction(title=f"gpulint: ignore[{finding.code}] on this line", kind=lsp.CodeActionKind.QuickFix,
                          diagnostics=[diag], edit=lsp.WorkspaceEdit(changes={uri: [_difference(text, after, places)]}))


def _difference(before: str, after: str, places: Places) -> lsp.TextEdit:
    """One edit that turns `before` (the buffer) into `after`: the span between their common
    beginning and end."""
    a, b = before.encode("utf-8"), after.encode("utf-8")
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    # Whole characters only: back off to a UTF-8 lead byte on both sides.
    while start > 0 and (a[start] if start < len(a) else 0x00) & 0xC0 == 0x80:
        start -= 1
    while end > 0 and a[len(a) - end] & 0xC0 == 0x80:
        end -= 1
    return lsp.TextEdit(lsp.Range(places.buffer.at_offset(start), places.buffer.at_offset(len(a) - end)),
                        b[start:len(b) - end].decode("utf-8"))


def code_actions(findings: list[Finding], uri: str, places: Places, requested: lsp.Range,
                 only: list[str] | None) -> list[lsp.CodeAction]:
    """Quick fixes and ignore comments for the findings under `requested`, then one
    `source.fixAll.gpulint` action applying the safe fixes that `gpulint fix` would apply together
    (one round: overlapping fixes wait for the next request)."""
    def wanted(kind: str) -> bool:
        return only is None or any(kind == k or kind.startswith(k + ".") for k in only)

    actions: list[lsp.CodeAction] = []
    mine = [f for f in findings if f.location.path == places.display and f.location.has_line]
    if wanted(lsp.CodeActionKind.QuickFix.value):
        for finding in mine:
            diag = diagnostic(finding, places)
            if not _overlaps(diag.range, requested):
                continue
            actions.extend(a for a in (_quick_fix(finding, diag, uri, places), _ignore(finding, diag, uri, places))
                           if a is not None)
    if wanted(FIX_ALL):
        chosen = {id(fix) for fix in choose(mine, unsafe=False)}
        safe = [f for f in mine if f.fix is not None and id(f.fix) in chosen]
        edits = _fix_edits(safe, places) if safe else None
        if edits:
            actions.append(lsp.CodeAction(title="gpulint: apply every safe fix", kind=FIX_ALL,
                                          edit=lsp.WorkspaceEdit(changes={uri: edits})))
    return actions


# ----------------------------------------------------------------------------- hover


def hover(findings: list[Finding], places: Places, position: lsp.Position) -> lsp.Hover | None:
    """On a flagged line: each finding's message and its rule's page (`gpulint rule CODE`)."""
    row = position.line + 1
    here = [f for f in findings if f.location.path == places.display and f.location.has_line
            and f.location.row <= row <= f.location.end[0]]
    if not here:
        return None
    parts: list[str] = []
    for code in dict.fromkeys(f.code for f in here):
        messages = "\n".join(f"- {f.message}" for f in here if f.code == code)
        rule = RULES.get(code)
        parts.append(f"**{code}**\n\n{messages}\n\n{rule.manual if rule else ''}".rstrip())
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n---\n\n".join(parts)))
