"""Suppression comments: `// gpulint: ignore[GL002]` on a finding's line or the line above,
`# gpulint: ignore-file[...]` anywhere in the file.  Which findings they silence is decided here;
which of them silence nothing is GL901's to say."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpulint.findings import Finding
from gpulint.sourcetext import split_lines

SUPPRESSION = re.compile(
    r"(?://|/\*|#)\s*gpulint:\s*ignore(?P<file>-file)?(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


@dataclass
class Suppression:
    """A `gpulint: ignore[...]` comment: where it is, the codes it silences, the codes it did silence."""

    row: int
    column: int
    codes: frozenset[str] | None  # None: every code
    used: set[str] = field(default_factory=set)
    covers_next_line: bool = False
    whole_file: bool = False  # `gpulint: ignore-file[...]`


def find_suppressions(source: bytes) -> dict[int, Suppression]:
    found: dict[int, Suppression] = {}
    if b"gpulint" not in source:  # most files: no line to look at
        return found
    text = source.decode("utf-8", "replace")
    for row, line in enumerate(split_lines(text), start=1):
        if "gpulint" not in line:
            continue
        match = SUPPRESSION.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        parsed = None if codes is None else frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
        comment_only = line[: match.start()].strip() == ""
        found[row] = Suppression(row, match.start() + 1, parsed, covers_next_line=comment_only,
                                 whole_file=match.group("file") is not None)
    return found


def suppress(findings: list[Finding], suppressions: dict[int, Suppression]) -> list[Finding]:
    """The findings no suppression covers; each suppression records the codes it silenced."""
    file_wide = [s for s in suppressions.values() if s.whole_file]
    kept: list[Finding] = []
    for finding in findings:
        row = finding.location.row
        line_sup = suppressions.get(row)
        candidates = [line_sup if line_sup is not None and not line_sup.whole_file else None]
        above = suppressions.get(row - 1)
        if above is not None and above.covers_next_line and not above.whole_file:
            candidates.append(above)
        candidates.extend(file_wide)
        hit = next((s for s in candidates if s is not None and (s.codes is None or finding.code in s.codes)), None)
        if hit is None:
            kept.append(finding)
        else:
            hit.used.add(finding.code)
    return kept
