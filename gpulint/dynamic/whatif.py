"""What-if peak: the run's actual peak of live device bytes, the peak if only one finding were
fixed, the peak with every finding fixed, and the tight-liveness lower bound.

Every object is an interval of Kahn time [alloc, free) (the end of the run when never freed)
with a size.  A fix changes one interval: GL001 starts it at the first use, GL002/GL005 end it
after the last access, GL004 removes it, GL003 folds it into the buffer it can reuse, GL006
takes it out for its idle gap (offload and bring back), GL008 shrinks it to the extent the run
touched.  The live-bytes profile is piecewise constant between interval ends, so each what-if
is a vectorised max over the segments the change touches.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulint.dynamic.histories import Run
from gpulint.findings import Finding
from gpulint.history import ObjectHistory

Interval = tuple[int, int, int]  # start, end (exclusive), bytes


@dataclass
class Peaks:
    actual: int
    actual_at: int  # Kahn time of the peak
    all_fixed: int
    lower_bound: int  # tight liveness: every object live exactly from its first to its last access
    # Live bytes over time (segment starts), as run and with every finding fixed: for plots.
    times: np.ndarray | None = None
    live: np.ndarray | None = None
    live_fixed: np.ndarray | None = None


def lifetimes(run: Run) -> dict[int, Interval]:
    out: dict[int, Interval] = {}
    for obj, h in run.by_obj.items():
        if h.kind.host_memory:
            continue  # host memory: not part of the device peak
        end = min((f.t for f in h.frees), default=run.end_t)
        out[obj] = (h.alloc.t, max(end, h.alloc.t + 1), h.bytes or 0)
    return out


def accessed_span(h: ObjectHistory) -> tuple[int, int] | None:
    """First and last Kahn time anything touched the object (copies included)."""
    return h.accessed_span()  # type: ignore[attr-defined]


def shrunk_bytes(run: Run, obj: int) -> int | None:
    """The bytes up to the last granule anything touched, launches, copies and memsets alike (a
    shrink keeps offsets)."""
    from gpulint.measures import touched

    info = run.access.get(obj)
    if info is None or not info.per_launch:
        return None
    union = touched(info)
    hit = np.flatnonzero(union) if union is not None else np.array([], dtype=np.int64)
    return min(info.size, (int(hit[-1]) + 1) * info.granularity) if hit.size else 0


class Profile:
    """Live bytes over Kahn time, piecewise constant on segments [bounds[i], bounds[i+1])."""

    def __init__(self, intervals: dict[int, Interval], extra_bounds: list[int]) -> None:
        points = {0}
        for start, end, _ in intervals.values():
            points.add(start)
            points.add(end)
        points.update(extra_bounds)
        self.bounds = np.array(sorted(points), dtype=np.int64)
        delta = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        if intervals:
            starts = np.array([i[0] for i in intervals.values()], dtype=np.int64)
            ends = np.array([i[1] for i in intervals.values()], dtype=np.int64)
            sizes = np.array([i[2] for i in intervals.values()], dtype=np.int64)
            np.add.at(delta, np.searchsorted(self.bounds, starts), sizes)
            np.add.at(delta, np.searchsorted(self.bounds, ends), -sizes)
        self.live = np.cumsum(delta[:-1])
        self.prefix_max = np.maximum.accumulate(self.live) if len(self.live) else self.live
        self.suffix_max = np.maximum.accumulate(self.live[::-1])[::-1] if len(self.live) else self.live
        self._table: list[np.ndarray] | None = None

    @property
    def peak(self) -> tuple[int, int]:
        if not len(self.live):
            return 0, 0
        i = int(np.argmax(self.live))
        return int(self.live[i]), int(self.bounds[i])

    def with_changes(self, changes: list[tuple[Interval, int]]) -> np.ndarray:
        """The whole live-bytes curve with `changes` applied."""
        delta = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        if changes:
            starts = np.searchsorted(self.bounds, np.array([c[0][0] for c in changes], dtype=np.int64))
            ends = np.searchsorted(self.bounds, np.array([c[0][1] for c in changes], dtype=np.int64))
            amounts = np.array([sign * size for (_, _, size), sign in changes], dtype=np.int64)
            np.add.at(delta, starts, amounts)
            np.add.at(delta, ends, -amounts)
        return self.live + np.cumsum(delta[:-1])

    def _range_max(self, lo: int, hi: int) -> int:
        """max(live[lo:hi]) through a sparse table built on first use: O(1) per query, so a
        what-if per finding costs the same however long the object lived."""
        if self._table is None:
            table = [self.live]
            width = 1
            while width * 2 <= len(self.live):
                previous = table[-1]
                table.append(np.maximum(previous[:-width], previous[width:]))
                width *= 2
            self._table = table
        level = (hi - lo).bit_length() - 1
        row = self._table[level]
        return int(max(row[lo], row[hi - (1 << level)]))

    def peak_with(self, changes: list[tuple[Interval, int]]) -> int:
        """The peak after adding `sign * bytes` over each interval (remove: -1, add: +1)."""
        if not changes or not len(self.live):
            return self.peak[0]
        starts = np.searchsorted(self.bounds, np.array([c[0][0] for c in changes], dtype=np.int64))
        ends = np.searchsorted(self.bounds, np.array([c[0][1] for c in changes], dtype=np.int64))
        steps: dict[int, int] = {}
        for (interval, sign), a, b in zip(changes, starts.tolist(), ends.tolist()):
            if b > a:
                amount = sign * interval[2]
                steps[a] = steps.get(a, 0) + amount
                steps[b] = steps.get(b, 0) - amount
        if not steps:
            return self.peak[0]
        points = sorted(steps)
        lo, hi = points[0], min(points[-1], len(self.live))
        best = int(self.prefix_max[lo - 1]) if lo > 0 else 0
        if hi < len(self.live):
            best = max(best, int(self.suffix_max[hi]))
        if len(points) > 64:  # many windows (an object idle in hundreds of gaps): one vectorised pass
            delta = np.zeros(hi - lo + 1, dtype=np.int64)
            where = np.array(points, dtype=np.int64)
            keep = where <= hi
            delta[where[keep] - lo] = np.array([steps[p] for p in points], dtype=np.int64)[keep]
            window = self.live[lo:hi] + np.cumsum(delta)[:-1]
            return max(best, int(window.max())) if len(window) else best
        delta = 0
        for p, q in zip(points, points[1:]):
            delta += steps[p]
            q = min(q, len(self.live))
            if q > p:
                best = max(best, self._range_max(p, q) + delta)
        return best


@dataclass
class Change:
    """What fixing one finding does to the intervals: windows of Kahn time in which the object
    is gone, a smaller size, and extra live bytes elsewhere (the buffer a GL003 reuse extends)."""

    obj: int
    remove: list[tuple[int, int]]
    shrink_to: int | None = None
    extend: tuple[Interval, ...] = ()


def _change(run: Run, finding: Finding, intervals: dict[int, Interval],
            spans: dict[int, tuple[int, int] | None]) -> Change | None:
    obj = finding.properties.get("object_id")
    if obj not in intervals:
        return None
    h = run.by_obj[obj]
    start, end, size = intervals[obj]
    span = spans.get(obj)
    code = finding.code
    if code == "GL001":
        first_use = h.first_use_t()  # type: ignore[attr-defined]
        if first_use is not None and first_use > start:
            return Change(obj, [(start, first_use)])
    elif code in ("GL002", "GL005"):
        if span is not None and span[1] + 1 < end:
            return Change(obj, [(span[1] + 1, end)])
    elif code == "GL004":
        return Change(obj, [(start, end)])
    elif code == "GL003":
        other = finding.properties.get("reuses_object_id")
        if other in intervals:
            o_start, o_end, o_size = intervals[other]
            # The new object takes the earlier buffer: its own bytes go; the earlier buffer lives
            # on to the new object's end (and grows if the new object is larger).
            extend = []
            if end > o_end:
                extend.append((o_end, end, o_size))
            if size > o_size:
                extend.append((o_start, max(end, o_end), size - o_size))
            return Change(obj, [(start, end)], extend=tuple(extend))
    elif code == "GL006":
        windows = [(a + 1, b) for a, b in finding.properties.get("idle_between") or () if b > a + 1]
        if windows:
            return Change(obj, windows)
    elif code == "GL008":
        shrunk = shrunk_bytes(run, obj)
        if shrunk is not None and shrunk < size:
            return Change(obj, [], shrink_to=shrunk)
    return None


def _pieces(interval: Interval, remove: list[tuple[int, int]], size: int) -> list[Interval]:
    """`interval` less the union of `remove` windows, at `size` bytes."""
    start, end, _ = interval
    pieces = []
    cursor = start
    for s, e in sorted(remove):
        if s > cursor:
            pieces.append((cursor, min(s, end), size))
        cursor = max(cursor, e)
        if cursor >= end:
            break
    if cursor < end:
        pieces.append((cursor, end, size))
    return [p for p in pieces if p[1] > p[0] and p[2] > 0]


def _merged(windows: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """Windows clipped to [start, end), sorted, overlapping ones merged."""
    out: list[list[int]] = []
    for s, e in sorted(windows):
        s, e = max(s, start), min(e, end)
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _signed_one(intervals: dict[int, Interval], change: Change) -> list[tuple[Interval, int]]:
    """One fix as signed intervals: its windows removed (whole size), the rest shrunk, extensions
    added — without cutting the object into pieces."""
    start, end, size = intervals[change.obj]
    windows = _merged(change.remove, start, end)
    out = [((s, e, size), -1) for s, e in windows]
    if change.shrink_to is not None and change.shrink_to < size:
        out.append(((start, end, size - change.shrink_to), -1))  # no windows for a shrink
    out.extend((extra, +1) for extra in change.extend)
    return out


def _signed(intervals: dict[int, Interval], changes: list[Change]) -> list[tuple[Interval, int]]:
    """The changes as intervals to subtract (-1) and add (+1), merged per object so two fixes of
    one object (GL002 and GL005 name the same tail) never remove its bytes twice."""
    by_obj: dict[int, list[Change]] = {}
    for change in changes:
        by_obj.setdefault(change.obj, []).append(change)
    out: list[tuple[Interval, int]] = []
    for obj, group in by_obj.items():
        interval = intervals[obj]
        size = min([interval[2]] + [c.shrink_to for c in group if c.shrink_to is not None])
        out.append((interval, -1))
        out.extend((piece, +1) for piece in _pieces(interval, [w for c in group for w in c.remove], size))
        out.extend((extra, +1) for c in group for extra in c.extend)
    return out


class WhatIf:
    """The run's live-bytes profile, and what fixing some findings together does to its peak."""

    def __init__(self, run: Run, findings: list[Finding]) -> None:
        self.run = run
        self.intervals = lifetimes(run)
        self.spans = {obj: accessed_span(h) for obj, h in run.by_obj.items()}
        extra: list[int] = []
        for obj, h in run.by_obj.items():
            if self.spans[obj] is not None:
                extra.extend((self.spans[obj][0], self.spans[obj][1] + 1))
            first_use = h.first_use_t()  # type: ignore[attr-defined]
            if first_use is not None:
                extra.append(first_use)
        for f in findings:
            for a, b in f.properties.get("idle_between") or ():
                extra.extend((a + 1, b))
        self.profile = Profile(self.intervals, extra)
        self.actual, self.actual_at = self.profile.peak

    def change(self, finding: Finding) -> Change | None:
        return _change(self.run, finding, self.intervals, self.spans)

    def saving(self, findings: list[Finding]) -> int:
        """Peak bytes saved by fixing all of `findings` together."""
        changes = [c for c in map(self.change, findings) if c is not None]
        if not changes:
            return 0
        signed = _signed_one(self.intervals, changes[0]) if len(changes) == 1 else _signed(self.intervals, changes)
        return max(self.actual - self.profile.peak_with(signed), 0)


def annotate(run: Run, findings: list[Finding]) -> tuple[Peaks, WhatIf]:
    """Set each finding's `peak_saved_bytes` / `peak_saved_percent`; return the run's peaks and
    the what-if model (for savings of several fixes together)."""
    model = WhatIf(run, findings)
    intervals, profile, actual = model.intervals, model.profile, model.actual
    every: list[Change] = []
    for f in findings:
        change = model.change(f)
        saved = actual - profile.peak_with(_signed_one(intervals, change)) if change is not None else 0
        f.properties["peak_saved_bytes"] = int(max(saved, 0))
        f.properties["peak_saved_percent"] = round(100.0 * max(saved, 0) / actual, 2) if actual else 0.0
        if change is not None:
            every.append(change)
    merged = _signed(intervals, every) if every else []
    fixed_curve = profile.with_changes(merged) if every else profile.live
    all_fixed = int(fixed_curve.max()) if len(fixed_curve) else actual
    tight = {}
    for obj, (_start, _end, size) in intervals.items():
        span = model.spans[obj]
        if span is not None:
            tight[obj] = (span[0], span[1] + 1, size)
    lower = Profile(tight, []).peak[0]
    peaks = Peaks(actual, model.actual_at, min(all_fixed, actual), min(lower, actual), profile.bounds, profile.live,
                  fixed_curve)
    return peaks, model
