"""SARIF 2.1.0 for GitHub code scanning, built with the sarif-om classes.

sarif-om has no serialiser: objects are dumped by their attrs fields' `schema_property_name`
metadata, leaving out None and default values. Locations are repo-relative URIs under
`%SRCROOT%` (lines 1-based; columns 1-based UTF-16 code units, `columnKind: utf16CodeUnits`, as GitHub
counts them), each result carries `partialFingerprints.
primaryLocationLineHash` (GitHub's upload API does not compute it), and suppressed findings are
simply not in the list (GitHub ignores `suppressions`).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import attr
import sarif_om as om

from gpulint import __version__
from gpulint.findings import Finding, Fix, Location, Pairs
from gpulint.rules import RULES
from gpulint.baseline import line_identity, row_occurrences
from gpulint.sourcetext import split_lines, utf16_column

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/gpulint/gpulint"
SRCROOT = "%SRCROOT%"

# How sure a rule is, in GitHub's terms, and how loudly it speaks.
_PRECISION = {"GL005": "high", "GL007": "high", "GL101": "high", "GL102": "high", "GL103": "high", "GL900": "very-high",
              "GL901": "very-high"}
_LEVEL = {"GL900": "error", "GL901": "note"}
_SEVERITY = {"error": "error", "warning": "warning", "note": "recommendation"}


def to_json(obj: Any) -> Any:
    """A sarif-om object (or list/dict of them) as plain JSON, by schema property names."""
    if attr.has(type(obj)):
        out: dict[str, Any] = {}
        for field in attr.fields(type(obj)):
            value = getattr(obj, field.name)
            default = field.default
            if isinstance(default, attr.Factory):  # type: ignore[arg-type]
                default = default.factory()
            # `level` is written even at its default: readers should not have to know defaults.
            if value is None or (default is not attr.NOTHING and value == default and field.name != "level"):
                continue
            dumped = to_json(value)
            if dumped == {}:
                continue
            out[field.metadata.get("schema_property_name", field.name)] = dumped
        return out
    if isinstance(obj, Pairs):
        return obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj


def _level(code: str) -> str:
    return _LEVEL.get(code, "warning")


def _descriptor(code: str) -> om.ReportingDescriptor:
    rule = RULES[code]
    level = _level(code)
    markdown = rule.doc
    text = markdown.replace("## ", "").replace("```cuda", "").replace("```python", "").replace("```", "")
    return om.ReportingDescriptor(
        id=code,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=f"{rule.summary}."),
        full_description=om.MultiformatMessageString(text=_first_paragraph(rule.doc)),
        help=om.MultiformatMessageString(text=text, markdown=markdown),
        help_uri=f"https://gpulint.dev/rules/{code}",
        default_configuration=om.ReportingConfiguration(level=level),
        properties={
            "tags": ["gpu", "memory", "efficiency", *rule.languages],
            "precision": _PRECISION.get(code, "medium"),
            "problem.severity": _SEVERITY[level],
        },
    )


def _first_paragraph(doc: str) -> str:
    body = doc.split("## What it does", 1)[-1].split("##", 1)[0]
    return " ".join(body.split()) or doc.strip()


class _Locator:
    """Repo-relative URIs and line hashes, reading each file once."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.lines: dict[str, list[str]] = {}
        self.occurrences: dict[str, list[int]] = {}  # per row: earlier rows with the same text
        self.data: dict[str, bytes | None] = {}

    def uri(self, path: str) -> tuple[str, str | None]:
        absolute = Path(os.path.abspath(path))
        try:
            return absolute.relative_to(self.root).as_posix(), SRCROOT
        except ValueError:
            return absolute.as_uri(), None

    def source_lines(self, path: str) -> list[str]:
        if path not in self.lines:
            try:
                self.lines[path] = split_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                self.lines[path] = []
        return self.lines[path]

    def utf16(self, path: str, row: int, column: int) -> int:
        """A character column as GitHub counts it (UTF-16 code units, the run's `columnKind`);
        the character column itself when the line cannot be read."""
        lines = self.source_lines(path)
        return utf16_column(lines[row - 1], column) if 0 < row <= len(lines) else column

    def physical(self, loc: Location) -> om.PhysicalLocation:
        uri, base = self.uri(loc.path)
        end_row, end_column = loc.end
        if not loc.has_line:  # a binary without line information: the file alone (the function is logical)
            return om.PhysicalLocation(artifact_location=om.ArtifactLocation(uri=uri, uri_base_id=base))
        region = om.Region(start_line=loc.row, start_column=self.utf16(loc.path, loc.row, loc.column))
        if (end_row, end_column) != (loc.row, loc.column):
            region.end_line = end_row
            region.end_column = max(self.utf16(loc.path, end_row, end_column), 1)
        return om.PhysicalLocation(artifact_location=om.ArtifactLocation(uri=uri, uri_base_id=base), region=region)

    def line_hash(self, loc: Location) -> str:
        """A hash of the flagged line's text (whitespace-insensitive) and which occurrence it is,
        so a finding keeps its identity when unrelated lines move (the baseline's too)."""
        if not loc.has_line:
            return f"{hashlib.sha256((loc.symbol or '').encode()).hexdigest()[:16]}:1"
        return line_identity(self.source_lines(loc.path), loc.row, self.row_occurrences(loc.path))

    def row_occurrences(self, path: str) -> list[int]:
        """For each row, how many earlier rows have the same text: counted once per file."""
        if path not in self.occurrences:
            self.occurrences[path] = row_occurrences(self.source_lines(path))
        return self.occurrences[path]

    def read_bytes(self, path: str) -> bytes | None:
        if path not in self.data:
            try:
                self.data[path] = Path(path).read_bytes()
            except OSError:
                self.data[path] = None
        return self.data[path]


def _fix(fix: Fix, locator: _Locator) -> om.Fix:
    changes: dict[str, list[om.Replacement]] = {}
    for edit in fix.edits:
        # The deleted text goes along as a snippet, so `fix --from-sarif` can tell whether the
        # file still says what it said when the SARIF was made.
        data = locator.read_bytes(edit.path)  # once per file, not once per edit
        try:
            deleted = data[edit.start:edit.end].decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            deleted = None
        region = om.Region(byte_offset=edit.start, byte_length=edit.end - edit.start,
                           snippet=om.ArtifactContent(text=deleted) if deleted is not None else None)
        changes.setdefault(edit.path, []).append(om.Replacement(
            deleted_region=region, inserted_content=om.ArtifactContent(text=edit.content)))
    artifact_changes = []
    for path, replacements in changes.items():
        uri, base = locator.uri(path)
        artifact_changes.append(om.ArtifactChange(artifact_location=om.ArtifactLocation(uri=uri, uri_base_id=base),
                                                  replacements=replacements))
    # Applicability rides along so `gpulint fix --from-sarif` applies what `gpulint fix` would.
    return om.Fix(description=om.Message(text=fix.message), artifact_changes=artifact_changes,
                  properties={"applicability": fix.applicability.value})


def build(findings: list[Finding], rules: list[str], root: Path) -> om.SarifLog:
    codes = sorted(set(rules) | {f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    locator = _Locator(root)
    results = []
    for f in findings:
        result = om.Result(
            rule_id=f.code,
            rule_index=index[f.code],
            level=_level(f.code),
            message=om.Message(text=f.message),
            locations=[_location(locator, f.location)],
            partial_fingerprints={"primaryLocationLineHash": locator.line_hash(f.location)},
        )
        if f.related:
            result.related_locations = [
                om.Location(id=i, physical_location=locator.physical(r.location), message=om.Message(text=r.message))
                for i, r in enumerate(f.related)
            ]
        if f.fix is not None:
            result.fixes = [_fix(f.fix, locator)]
        properties = {k: v for k, v in f.properties.items() if v is not None}
        if f.obj:
            properties["object"] = f.obj
        if properties:
            result.properties = properties
        results.append(result)
    run = om.Run(
        tool=om.Tool(driver=om.ToolComponent(name="gpulint", version=__version__, semantic_version=__version__,
                                             information_uri=INFORMATION_URI,
                                             rules=[_descriptor(code) for code in codes])),
        results=results,
        original_uri_base_ids={SRCROOT: om.ArtifactLocation(uri=locator.root.as_uri() + "/")},
        automation_details=om.RunAutomationDetails(id="gpulint/"),
        column_kind="utf16CodeUnits",  # what GitHub code scanning counts
    )
    return om.SarifLog(runs=[run], version="2.1.0", schema_uri=SCHEMA_URI)


def render(findings: list[Finding], *, rules: list[str] | None = None, root: Path | None = None, **_: Any) -> str:
    log = build(findings, list(rules or []), root or Path.cwd())
    return json.dumps(to_json(log), indent=2) + "\n"


def _location(locator, loc: Location) -> om.Location:
    location = om.Location(physical_location=locator.physical(loc))
    if loc.symbol:
        location.logical_locations = [om.LogicalLocation(fully_qualified_name=loc.symbol, kind="function")]
    return location
