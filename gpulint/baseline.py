"""A baseline: the findings a code base had when it adopted gpulint, so that only new ones fail a
run (`gpulint check --baseline FILE`; `--update-baseline` writes it).

A finding is matched by a fingerprint that survives lines moving: its code, its file, the text of
its line without whitespace, and which occurrence of that text in the file it is.  Editing the
flagged line, or adding an identical line above it, makes it new again; moving it does not.  A
finding without a line (a binary without line tables) is matched by its function and message.
The file is JSON, sorted, one entry per finding, so that it diffs well in review."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from gpulint.findings import Finding
from gpulint.sourcetext import split_lines

VERSION = 1


class BaselineError(Exception):
    """A baseline that cannot be read; the message says which and why."""


def line_identity(lines: list[str], row: int, occurrences: list[int] | None = None) -> str:
    """`<hash of the row's text without whitespace>:<its occurrence among rows of that text>`: the
    identity of a flagged line, for baselines and SARIF's `partialFingerprints`.  `occurrences`
    (from `row_occurrences`) saves recounting per finding."""
    text = "".join(lines[row - 1].split()) if 0 < row <= len(lines) else ""
    if occurrences is not None and 0 < row <= len(lines):
        occurrence = occurrences[row - 1]
    else:
        occurrence = sum(1 for line in lines[: max(row - 1, 0)] if "".join(line.split()) == text)
    return f"{hashlib.sha256(text.encode()).hexdigest()[:16]}:{occurrence + 1}"


def row_occurrences(lines: list[str]) -> list[int]:
    """For each row, how many earlier rows have the same text (whitespace-insensitive)."""
    seen: dict[str, int] = {}
    counts = []
    for line in lines:
        key = "".join(line.split())
        counts.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    return counts


class Fingerprints:
    """Fingerprints of findings, reading each file once."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[list[str], list[int]]] = {}

    def _lines(self, path: str) -> tuple[list[str], list[int]]:
        if path not in self._files:
            try:
                lines = split_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                lines = []
            self._files[path] = (lines, row_occurrences(lines))
        return self._files[path]

    def of(self, finding: Finding) -> str:
        loc = finding.location
        if not loc.has_line:
            where = hashlib.sha256(f"{loc.symbol}\n{finding.message}".encode()).hexdigest()[:16]
            return f"{finding.code}:{loc.path}:{where}"
        lines, occurrences = self._lines(loc.path)
        return f"{finding.code}:{loc.path}:{line_identity(lines, loc.row, occurrences)}"


def write(path: str | Path, findings: list[Finding]) -> int:
    """Write the findings' baseline to `path` (through a temporary file); returns the entries."""
    prints = Fingerprints()
    entries = sorted(({"fingerprint": prints.of(f), "code": f.code, "path": f.location.path, "line": f.location.row,
                       "message": f.message} for f in findings), key=lambda e: (e["path"], e["line"], e["code"],
                                                                                 e["fingerprint"], e["message"]))
    data = json.dumps({"gpulint_baseline": VERSION, "findings": entries}, indent=1, ensure_ascii=False) + "\n"
    target = Path(path)
    temp = target.with_name(f".{target.name}.tmp")
    try:
        temp.write_text(data, encoding="utf-8")
        temp.replace(target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return len(entries)


def load(path: str | Path) -> Counter:
    """The baseline's fingerprints, each with how many findings it stands for."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline (write it with --update-baseline)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: not a gpulint baseline (not JSON: {exc})") from None
    if not isinstance(data, dict) or "gpulint_baseline" not in data or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{path}: not a gpulint baseline (no \"gpulint_baseline\" and \"findings\")")
    if data["gpulint_baseline"] != VERSION:
        raise BaselineError(f"{path}: baseline version {data['gpulint_baseline']!r} is not supported "
                            f"(this gpulint reads version {VERSION})")
    prints = [e.get("fingerprint") for e in data["findings"] if isinstance(e, dict)]
    if len(prints) != len(data["findings"]) or not all(isinstance(p, str) for p in prints):
        raise BaselineError(f"{path}: every entry of \"findings\" needs a \"fingerprint\" string")
    return Counter(prints)


def new_findings(findings: list[Finding], baseline: Counter) -> tuple[list[Finding], int]:
    """The findings the baseline does not hold, and how many it held: each baseline entry stands
    for one finding, so a second copy of a known finding is new."""
    left = Counter(baseline)
    prints = Fingerprints()
    new = []
    known = 0
    for finding in sorted(findings, key=Finding.sort_key):
        key = prints.of(finding)
        if left[key] > 0:
            left[key] -= 1
            known += 1
        else:
            new.append(finding)
    return new, known
