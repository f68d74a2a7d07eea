"""What checking files produces: one `FileResult` per file, one `Report` per run.

Its own module so that the engine, the cache and the outputs share these types without importing
each other."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpulint.findings import Finding

if TYPE_CHECKING:
    from gpulint.static.program import FileSummary


@dataclass
class FileResult:
    """What checking one file gave: findings, messages for the user, and the file's summary for
    the project pass."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)  # one line each, for stderr
    notes: list[str] = field(default_factory=list)  # shown with -v
    # gpulint's own failures (a bug, not the user's code): one line each; the run exits 2.
    errors: list[str] = field(default_factory=list)
    # Functions (scopes) skipped whole for parse errors: the summary counts them, -v names them.
    unanalysed: list[str] = field(default_factory=list)
    # What the file contributes to the program (a `static.program.FileSummary`; None for Python and
    # unreadable files), and a digest of the other files' summaries the analysis used.
    summary: FileSummary | None = None
    depends: str = ""
    cached: bool = False  # read from the cache, not analysed in this run
    allocation_sites: tuple[int, int] = (0, 0)  # (in functions analysed, in all), for --statistics


@dataclass
class Report:
    """What a whole `check` gave: the findings of every file and what stderr says about the run."""

    findings: list[Finding]
    diagnostics: list[str]
    notes: list[str]
    files: int
    errors: list[str] = field(default_factory=list)  # internal errors and unusable input: exit 2
    unanalysed: list[tuple[str, str]] = field(default_factory=list)  # (file, function) skipped for parse errors
    allocation_sites: tuple[int, int] = (0, 0)  # (in functions analysed, in all files' functions)

    def allocation_sites_line(self) -> str:
        """`allocation sites analysed: 412 of 420 (98.1%)`, or "" when no file has one."""
        analysed, total = self.allocation_sites
        if not total:
            return ""
        return f"allocation sites analysed: {analysed} of {total} ({100 * analysed / total:.1f}%)"

    def unanalysed_summary(self) -> str:
        """`3 functions in 2 files were not analysed (parse errors); -v lists them`, or ""."""
        if not self.unanalysed:
            return ""
        n, files = len(self.unanalysed), len({path for path, _ in self.unanalysed})
        return (f"{n} function{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''} "
                f"{'was' if n == 1 else 'were'} not analysed (parse errors); -v lists them.")


@dataclass
class ProjectResults:
    """What a run over a project knows beyond its report, by display path: each file's result (its
    summary for the other files) and the local files each includes.  The language server keeps
    these between edits, so that one edited file is analysed against the rest without reading the
    rest again."""

    results: dict[str, FileResult] = field(default_factory=dict)
    includes: dict[str, list[str]] = field(default_factory=dict)


def at_least(findings: list[Finding], min_bytes: int) -> tuple[list[Finding], int]:
    """The findings whose object's size is unknown or at least `min_bytes` (`min-bytes`), and how
    many were not."""
    kept = [f for f in findings if not isinstance(f.properties.get("size"), int) or f.properties["size"] >= min_bytes]
    return kept, len(findings) - len(kept)
