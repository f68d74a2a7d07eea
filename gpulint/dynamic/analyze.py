"""`gpulint analyze TRACE`: a run's findings (the same rules as static analysis, plus the ones
only a run can show), each with the peak bytes its fix would save, ranked by that saving."""
from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gpulint.config import Settings
from gpulint.dynamic.grouping import by_site
from gpulint.dynamic.histories import Run, build_run, without_line_warnings
from gpulint.dynamic.tracebin import read
from gpulint.dynamic.whatif import Peaks, annotate
from gpulint.findings import Finding
from gpulint.rules import RULES
from gpulint.rules.registry import RuleSettings

@dataclass
class Analysis:
    run: Run
    findings: list[Finding]  # one per site and rule, ranked by the peak their fixes save
    peaks: Peaks
    warnings: list[str]
    hidden: list[Finding] = field(default_factory=list)  # sites below `min-bytes`
    min_bytes: int = 0


def analyze(path: str | Path, settings: Settings, codes: list[str],
            progress: Callable[[str], None] | None = None) -> Analysis:
    """`progress`, when given, is told each stage as it starts (the CLI shows it on a terminal)."""
    # A run's histories are millions of small objects that all stay alive: the cyclic collector
    # would rescan them again and again (quadratic in the trace's length) for nothing to free.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _analyze(path, settings, codes, progress or (lambda _: None))
    finally:
        gc.freeze()  # what was built stays alive: keep later collections from rescanning it
        if enabled:
            gc.enable()


def _analyze(path: str | Path, settings: Settings, codes: list[str], progress: Callable[[str], None]) -> Analysis:
    bits = Path(str(path) + ".bits")
    if bits.is_file():  # the first reader of an access-level run moves its raw bitmaps into the sidecar
        progress(f"finishing the run's access bitmaps ({bits.stat().st_size / 2**20:,.0f} MiB) and reading "
                 f"{Path(path).name}")
    else:
        progress(f"reading {Path(path).name}")
    trace, columns = read(path)
    progress(f"ordering {len(columns):,} events")
    run = build_run(trace, columns)
    progress(f"checking {len(codes)} rules on {len(run.by_obj):,} objects")
    rule_settings = RuleSettings(thresholds=dict(settings.thresholds), reuse_tolerance=settings.reuse_tolerance)
    findings: list[Finding] = []
    for code in codes:
        if RULES[code].runs_on(run.unit):
            findings.extend(RULES[code].check(run.unit, rule_settings))
    progress(f"what-if peaks for {len(findings):,} findings")
    peaks, model = annotate(run, findings)
    for f in findings:
        f.properties["peak_bytes"] = peaks.actual
        if f.obj is not None and f.properties.get("object_id") in run.by_obj:
            f.properties.setdefault("bytes", run.by_obj[f.properties["object_id"]].bytes)
    progress("grouping by site")
    grouped = by_site(findings, model, settings.min_bytes)

    def rank(f: Finding) -> tuple:
        return -f.properties.get("peak_saved_bytes", 0), -(f.properties.get("total_bytes") or f.properties.get(
            "bytes") or 0), f.sort_key()

    return Analysis(run, sorted(grouped.shown, key=rank), peaks, list(trace.warnings) + without_line_warnings(run),
                    sorted(grouped.hidden, key=rank), settings.min_bytes)
