"""`gpulint report --html FILE`: one self-contained page a person opens in a browser.

What a user of PyTorch's memory_viz looks for, drawn from the same analysis `report` prints: live
device memory over the run with the largest objects stacked and the every-finding-fixed curve
(zoomable), each finding as a marker that links to its source lines, the pool offset plan as boxes
(offset × time), and the findings sorted by the peak their fixes save.  The page needs no network:
the data, the script and the style are inlined, and the source lines each finding points at are
copied in (the page may be opened on a machine without the sources).
"""
from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gpulint.dynamic.analyze import Analysis
from gpulint.dynamic.report import host_clock, planning
from gpulint.dynamic.whatif import lifetimes
from gpulint.findings import Finding, Location, human_bytes
from gpulint.sourcetext import split_lines

# Enough points for any screen at full zoom-out and for zooming in a few times on a long run; a
# longer curve is thinned to the largest value per bucket, so no peak disappears.
MAX_POINTS = 20_000
# Boxes drawn in the offset plan: the largest objects (a browser draws tens of thousands of SVG
# rectangles slowly, and the small ones are below a pixel anyway).
MAX_BOXES = 10_000
STACKED = 8  # objects drawn as their own band; the rest is one band
CONTEXT = 3  # source lines shown above and below a finding's line


def write(analysis: Analysis, path: Path, *, stacked: int = STACKED) -> dict[str, Any]:
    """Write the page; returns the data embedded in it (the tests read the same)."""
    data = page_data(analysis, stacked=stacked)
    path.write_text(render(data), encoding="utf-8")
    return data


def render(data: dict[str, Any]) -> str:
    assets = resources.files("gpulint.dynamic") / "report_page"
    template = (assets / "page.html").read_text(encoding="utf-8")
    # `</` would end the <script> element early if a message or a source line held `</script>`.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (template.replace("{{title}}", html.escape(data["title"]))
            .replace("{{style}}", (assets / "page.css").read_text(encoding="utf-8"))
            .replace("{{script}}", (assets / "page.js").read_text(encoding="utf-8"))
            .replace("{{data}}", payload))


def page_data(analysis: Analysis, *, stacked: int = STACKED, max_points: int = MAX_POINTS,
              max_boxes: int = MAX_BOXES) -> dict[str, Any]:
    """Everything the page draws, as plain JSON-able values."""
    run = analysis.run
    peaks = analysis.peaks
    spans = lifetimes(run)
    pool_plan, simulation = planning(analysis)
    meta = run.trace.meta
    codes_of: dict[int, list[str]] = {}
    for f in analysis.findings:
        obj = f.properties.get("object_id")
        if obj is not None:
            codes_of.setdefault(obj, []).append(f.code)

    times, live, fixed = _curves(analysis, max_points)
    # Where every event has its host time, the page's time axis is real (microseconds since the
    # first event, as in the Perfetto export); otherwise it is the steps of the topological order.
    clock = host_clock(analysis)
    at = _real_time(clock) if clock is not None else (lambda step: step)
    largest = sorted(spans.items(), key=lambda kv: (-kv[1][2], kv[0]))
    layers = [_object(obj, run.by_obj[obj], span, pool_plan.best.offsets.get(obj), codes_of, at)
              for obj, span in largest[:stacked]]
    boxes = [_object(obj, run.by_obj[obj], span, pool_plan.best.offsets.get(obj), codes_of, at)
             for obj, span in largest[:max_boxes] if obj in pool_plan.best.offsets]
    sources = _SourceLines()
    findings = [_finding(i, f, spans, sources, at) for i, f in enumerate(analysis.findings)]
    argv = " ".join(meta.get("argv") or ["?"])
    return {
        "title": f"gpulint report: {argv}",
        "argv": argv,
        "device": meta.get("device") or "an unknown device",
        "collector": meta.get("collector", "?"),
        "peaks": {
            "actual": peaks.actual, "actual_at": peaks.actual_at, "all_fixed": peaks.all_fixed,
            "lower_bound": peaks.lower_bound, "pool": pool_plan.best.pool_bytes,
            "pool_strategy": pool_plan.best.strategy, "best_fit": simulation.pool_bytes,
        },
        "time": "steps" if clock is None else "real",
        "end_t": at(int(run.end_t)),
        "times": [at(t) for t in times], "live": live, "fixed": fixed,
        "thinned": len(times) < (0 if peaks.times is None else len(peaks.times)),
        "layers": layers,
        "boxes": boxes, "objects": len(spans),
        "findings": findings,
        "hidden": len(analysis.hidden),
        "warnings": list(analysis.warnings),
    }


def _curves(analysis: Analysis, max_points: int) -> tuple[list[int], list[int], list[int]]:
    """The live-bytes step curve and the all-fixed one at their change points, thinned to at most
    `max_points` by keeping, in each bucket, the point where live bytes are highest."""
    peaks = analysis.peaks
    if peaks.times is None or peaks.live is None or not len(peaks.times):
        return [0], [0], [0]
    times = np.asarray(peaks.times, dtype=np.int64)
    live = np.asarray(peaks.live, dtype=np.int64)
    fixed = np.asarray(peaks.live_fixed if peaks.live_fixed is not None else peaks.live, dtype=np.int64)
    if len(times) > max_points:
        bucket = np.arange(len(times)) * max_points // len(times)
        order = np.lexsort((-live, bucket))  # by bucket, the highest live bytes first in each
        first = np.ones(len(order), dtype=bool)
        first[1:] = bucket[order][1:] != bucket[order][:-1]
        index = np.sort(order[first])
        times, live, fixed = times[index], live[index], fixed[index]
    return times.tolist(), live.tolist(), fixed.tolist()


def _real_time(clock: np.ndarray) -> Callable[[int], float]:
    """A step's host time in microseconds (to the nanosecond) from `host_clock`'s table."""
    last = len(clock) - 1

    def at(step: int) -> float:
        return round(float(clock[min(step, last)]), 3)
    return at


def _object(obj: int, history: Any, span: tuple[int, int, int], offset: int | None,
            codes_of: dict[int, list[str]], at: Callable[[int], float]) -> dict[str, Any]:
    start, end, size = span
    return {"obj": obj, "name": history.name, "bytes": size, "size": human_bytes(size), "start": at(start),
            "end": at(end), "offset": offset, "at": history.alloc.location.where,
            "codes": sorted(set(codes_of.get(obj, [])))}


def _finding(index: int, finding: Finding, spans: dict, sources: _SourceLines,
             at: Callable[[int], float]) -> dict[str, Any]:
    obj = finding.properties.get("object_id")
    start, end, _ = spans.get(obj, (None, None, 0))
    if start is not None:
        start, end = at(start), at(end)
    saved = int(finding.properties.get("peak_saved_bytes", 0) or 0)
    return {
        "id": index, "code": finding.code, "name": finding.name, "message": finding.message,
        "where": finding.location.where, "object": finding.obj or "", "object_id": obj,
        "start": start, "end": end, "saved": saved, "saved_text": human_bytes(saved) if saved else "",
        "saved_percent": finding.properties.get("peak_saved_percent", 0) if saved else 0,
        "confirmation": finding.properties.get("confirmation"),
        "lines": sources.around(finding.location),
        "related": [{"message": r.message, "where": r.location.where, "lines": sources.around(r.location)}
                    for r in finding.related],
    }


class _SourceLines:
    """The lines around a location, read once per file (paths as findings give them: relative to
    where gpulint runs, as the text output reads them)."""

    def __init__(self) -> None:
        self.files: dict[str, list[str] | None] = {}

    def around(self, location: Location) -> dict[str, Any] | None:
        if not location.row:
            return None
        if location.path not in self.files:
            try:
                text = Path(location.path).read_text(encoding="utf-8", errors="replace")
            except (OSError, ValueError):
                self.files[location.path] = None
            else:
                self.files[location.path] = split_lines(text)
        lines = self.files[location.path]
        if lines is None or location.row > len(lines):
            return None
        first = max(1, location.row - CONTEXT)
        last = min(len(lines), (location.end_row or location.row) + CONTEXT)
        return {"first": first, "row": location.row, "end_row": location.end_row or location.row,
                "text": lines[first - 1:last]}
