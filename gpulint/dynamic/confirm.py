"""`gpulint check --confirm TRACE`: static findings marked by what a run showed.

A static finding and the run's objects meet at the allocation site (file and line; for GL103 the
copy's site).  Each static finding becomes

* **confirmed** — the run has the same finding at that site (its measured distance and the peak
  its fix saves are attached);
* **refuted** — the run executed that site but the pattern did not hold (say the buffer was used
  right away on every path the run took);
* **unobserved** — the run never executed that site.

GL101 also meets the run at a cache flush's site (`torch.cuda.empty_cache()`), and GL102 at
the transfer's: it holds when the tensor copied there was made on the host by a factory and
nothing else read it.  Findings only the run shows are added, marked `trace-only`.
"""
from __future__ import annotations

import os
from collections import defaultdict

from gpulint.dynamic.analyze import Analysis
from gpulint.findings import Finding
from gpulint.history import Op

# Rules a run can judge at the allocation site, and those judged at a transfer's site.
_AT_ALLOCATION = frozenset({"GL001", "GL002", "GL003", "GL004", "GL005", "GL006", "GL008", "GL101"})
_AT_TRANSFER = frozenset({"GL007", "GL102", "GL103"})


def _site(path: str, row: int) -> tuple[str, int]:
    return os.path.normcase(os.path.abspath(path)), row


def _short(path: str, row: int) -> tuple[str, int]:
    return os.path.basename(path), row


class _Index:
    """The run's objects, transfers and findings by source site (full path, and file name as a
    fallback for traces recorded in another folder)."""

    def __init__(self, analysis: Analysis) -> None:
        self.objects: dict[tuple, list] = defaultdict(list)
        self.transfers: dict[tuple, list] = defaultdict(list)
        self.findings: dict[tuple, list[Finding]] = defaultdict(list)
        self.flushes: dict[tuple, list] = defaultdict(list)
        for h in analysis.run.by_obj.values():
            loc = h.alloc.location
            for key in (_site(loc.path, loc.row), _short(loc.path, loc.row)):
                self.objects[key].append(h)
        for event in analysis.run.unit.timelines[0].events:
            table = self.transfers if event.op in (Op.COPY, Op.MEMSET) else self.flushes if event.op is Op.FLUSH \
                else None
            if table is not None:
                loc = event.location
                for key in (_site(loc.path, loc.row), _short(loc.path, loc.row)):
                    table[key].append(event)
        for f in analysis.findings + analysis.hidden:  # a small site still confirms a static finding
            loc = f.location
            for key in (_site(loc.path, loc.row), _short(loc.path, loc.row)):
                self.findings[key].append(f)

    def at(self, table: dict, path: str, row: int) -> list:
        return table.get(_site(path, row)) or table.get(_short(path, row)) or []


def confirm(static: list[Finding], analysis: Analysis) -> list[Finding]:
    """Mark `static` findings in place; return them plus the findings only the run shows."""
    index = _Index(analysis)
    matched: set[int] = set()
    for f in static:
        code, loc = f.code, f.location
        if code not in _AT_ALLOCATION and code not in _AT_TRANSFER:
            continue
        executed = index.at(index.objects if code in _AT_ALLOCATION else index.transfers, loc.path, loc.row)
        same = [d for d in index.at(index.findings, loc.path, loc.row) if d.code == code]
        for d in same:  # the run's own finding at this site is this one, not a trace-only extra
            matched.add(id(d))
        if code == "GL101":
            # An allocation site, or else a cache flush's (`torch.cuda.empty_cache()` in the loop).
            same, executed = _alloc_in_loop(executed or index.at(index.flushes, loc.path, loc.row))
        if code == "GL103":
            same, executed = _repeated_transfer(executed)
        if not executed:
            _mark(f, "unobserved", "the run never reached this line")
        elif same:
            for d in same:
                if isinstance(d, Finding):
                    matched.add(id(d))
            _mark(f, "confirmed", _confirmed_detail(same, executed), same)
        else:
            _mark(f, "refuted", f"the run executed it {len(executed)} time{'s' if len(executed) != 1 else ''} and the "
                                f"pattern did not hold")
    extra = [d for d in analysis.findings if id(d) not in matched]
    for d in extra:
        d.properties["confirmation"] = "trace-only"
        d.properties["confirmation_detail"] = "found by the run, not by static analysis"
    return static + extra


def _mark(f: Finding, mark: str, detail: str, same: list | None = None) -> None:
    f.properties["confirmation"] = mark
    f.properties["confirmation_detail"] = detail
    found = [d for d in same or () if isinstance(d, Finding)]
    if found:
        f.properties["measured_distance"] = max(d.properties.get("distance", 0) for d in found)
        f.properties["peak_saved_bytes"] = max(d.properties.get("peak_saved_bytes", 0) for d in found)
        f.properties["peak_saved_percent"] = max(d.properties.get("peak_saved_percent", 0) for d in found)
        f.properties["peak_bytes"] = found[0].properties.get("peak_bytes")


def _confirmed_detail(same: list, executed: list) -> str:
    found = [d for d in same if isinstance(d, Finding)]
    if not found:
        return f"seen {len(executed)} times"
    distances = [d.properties.get("distance") for d in found if d.properties.get("distance") is not None]
    flagged = sum(d.properties.get("objects", 1) for d in found)
    objects = f"{flagged} of {len(executed)} object{'s' if len(executed) != 1 else ''} allocated here"
    return objects + (f", measured distance up to {max(distances)} launches" if distances else "")


def _alloc_in_loop(objects: list) -> tuple[list, list]:
    """GL101 holds when the line allocated more than once (each one freed before the next)."""
    return (objects if len(objects) > 1 else []), objects


def _repeated_transfer(events: list) -> tuple[list, list]:
    """GL103 holds when the line copied the same host bytes to the device more than once (by
    their digests; any two copies where the trace has none)."""
    h2d = [e for e in events if e.op is Op.COPY and e.direction in ("h2d", "default")]
    digests = [e.content for e in h2d if e.content]
    if digests and len(set(digests)) == len(digests):
        return [], events  # every upload carried other bytes: the data changes each time
    return (h2d if len(h2d) > 1 else []), events
