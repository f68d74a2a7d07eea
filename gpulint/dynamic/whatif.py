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

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from gpulint.dynamic.columns import unique_sorted
from gpulint.dynamic.histories import Run
from gpulint.findings import Finding, Pairs
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


class RangeMax:
    """max(values[lo:hi]) for many ranges at once, in time independent of their lengths: blocks of
    `BLOCK` values, each value's maximum to its block's ends, and a sparse table over the blocks'
    maxima (a few megabytes for a million values, where a sparse table over the values would take
    twenty times their size)."""

    BLOCK = 16

    def __init__(self, values: np.ndarray) -> None:
        block = self.BLOCK
        n = len(values)
        blocks = max(-(-n // block), 1)
        low = np.iinfo(np.int64).min
        padded = np.full(blocks * block, low, dtype=np.int64)
        padded[:n] = values
        grid = padded.reshape(blocks, block)
        self.values = values
        self.to_end = np.maximum.accumulate(grid[:, ::-1], axis=1)[:, ::-1].ravel()  # max(values[i:end of block])
        self.from_start = np.maximum.accumulate(grid, axis=1).ravel()  # max(values[start of block:i + 1])
        levels = [grid.max(axis=1)]
        width = 1
        while width * 2 <= blocks:
            levels.append(np.maximum(levels[-1][:-width], levels[-1][width:]))
            width *= 2
        self.table = np.full((len(levels), blocks), low, dtype=np.int64)
        for k, level in enumerate(levels):
            self.table[k, :len(level)] = level

    def one(self, lo: int, hi: int) -> int:
        """max(values[lo:hi]), lo < hi."""
        block = self.BLOCK
        first, last = lo // block, (hi - 1) // block
        if first == last:
            return int(self.values[lo:hi].max())
        best = max(self.to_end[lo], self.from_start[hi - 1])
        if last - first > 1:
            k = (last - first - 1).bit_length() - 1
            best = max(best, self.table[k, first + 1], self.table[k, last - (1 << k)])
        return int(best)

    def many(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """max(values[lo[i]:hi[i]]) for each i, lo < hi."""
        block = self.BLOCK
        first, last = lo // block, (hi - 1) // block
        out = np.maximum(self.to_end[lo], self.from_start[hi - 1])
        inner = last - first - 1
        between = np.flatnonzero(inner > 0)
        if len(between):
            k = np.floor(np.log2(inner[between])).astype(np.int64)
            a, b = first[between] + 1, last[between] - (1 << k)
            out[between] = np.maximum(out[between], np.maximum(self.table[k, a], self.table[k, b]))
        same = np.flatnonzero(first == last)
        low, top, offsets = np.iinfo(np.int64).min, len(self.values) - 1, np.arange(block)
        for chunk in range(0, len(same), 1 << 15):  # ranges inside one block: read them, a chunk at a time
            rows = same[chunk:chunk + (1 << 15)]
            index = lo[rows, None] + offsets
            picked = self.values[np.minimum(index, top)]
            out[rows] = np.where(index < hi[rows, None], picked, low).max(axis=1)
        return out


# Changes with up to this many windows are computed with Python integers; more, with arrays.
_SMALL = 8


class Profile:
    """Live bytes over Kahn time, piecewise constant on segments [bounds[i], bounds[i+1])."""

    def __init__(self, intervals: dict[int, Interval] | tuple[np.ndarray, np.ndarray, np.ndarray],
                 extra_bounds: list[int] | np.ndarray) -> None:
        if isinstance(intervals, dict):
            values = list(intervals.values())
            starts = np.array([i[0] for i in values], dtype=np.int64)
            ends = np.array([i[1] for i in values], dtype=np.int64)
            sizes = np.array([i[2] for i in values], dtype=np.int64)
        else:
            starts, ends, sizes = intervals
        self.bounds = unique_sorted(np.concatenate([np.zeros(1, dtype=np.int64), starts, ends,
                                                np.asarray(extra_bounds, dtype=np.int64)]))
        delta = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        if len(starts):
            np.add.at(delta, np.searchsorted(self.bounds, starts), sizes)
            np.add.at(delta, np.searchsorted(self.bounds, ends), -sizes)
        self.live = np.cumsum(delta[:-1])
        self.prefix_max = np.maximum.accumulate(self.live) if len(self.live) else self.live
        self.suffix_max = np.maximum.accumulate(self.live[::-1])[::-1] if len(self.live) else self.live
        self._ranges: RangeMax | None = None
        self._bound_list: list[int] | None = None

    @property
    def peak(self) -> tuple[int, int]:
        if not len(self.live):
            return 0, 0
        i = int(np.argmax(self.live))
        return int(self.live[i]), int(self.bounds[i])

    @property
    def ranges(self) -> RangeMax:
        if self._ranges is None:
            self._ranges = RangeMax(self.live)
        return self._ranges

    def with_changes(self, changes: "Signed | list[tuple[Interval, int]]") -> np.ndarray:
        """The whole live-bytes curve with `changes` applied."""
        starts, ends, amounts = Signed.of(changes).arrays()
        delta = np.zeros(len(self.bounds) + 1, dtype=np.int64)
        if len(starts):
            np.add.at(delta, np.searchsorted(self.bounds, starts), amounts)
            np.add.at(delta, np.searchsorted(self.bounds, ends), -amounts)
        return self.live + np.cumsum(delta[:-1])

    def peak_with(self, changes: "Signed | list[tuple[Interval, int]]") -> int:
        """The peak after adding `amount` over each of the changes' windows of Kahn time (a
        removal's amount is negative)."""
        changes = Signed.of(changes)
        n = len(self.live)
        if not changes or not n:
            return self.peak[0]
        if changes.small is not None:
            return self._peak_small(changes.small)
        starts, ends, amounts = changes.arrays()
        a, b = np.searchsorted(self.bounds, starts), np.searchsorted(self.bounds, ends)
        keep = b > a
        if not keep.any():
            return self.peak[0]
        a, b, amounts = a[keep], b[keep], amounts[keep]
        points = unique_sorted(np.concatenate([a, b]))
        steps = np.zeros(len(points), dtype=np.int64)
        np.add.at(steps, np.searchsorted(points, a), amounts)
        np.add.at(steps, np.searchsorted(points, b), -amounts)
        lo, hi = int(points[0]), min(int(points[-1]), n)
        best = int(self.prefix_max[lo - 1]) if lo > 0 else 0
        if hi < n:
            best = max(best, int(self.suffix_max[hi]))
        p, q = points[:-1], np.minimum(points[1:], n)
        inside = q > p
        if inside.any():
            pieces = self.ranges.many(p[inside], q[inside]) + np.cumsum(steps)[:-1][inside]
            best = max(best, int(pieces.max()))
        return best

    def _peak_small(self, changes: list[tuple[int, int, int]]) -> int:
        n = len(self.live)
        steps: dict[int, int] = {}
        if self._bound_list is None:  # bisect on a list: a numpy search of one value costs ten times more
            self._bound_list = self.bounds.tolist()
        bounds = self._bound_list
        for start, end, amount in changes:
            a, b = bisect_left(bounds, start), bisect_left(bounds, end)
            if b > a:
                steps[a] = steps.get(a, 0) + amount
                steps[b] = steps.get(b, 0) - amount
        if not steps:
            return self.peak[0]
        points = sorted(steps)
        lo, hi = points[0], min(points[-1], n)
        best = int(self.prefix_max[lo - 1]) if lo > 0 else 0
        if hi < n:
            best = max(best, int(self.suffix_max[hi]))
        delta = 0
        ranges = self.ranges
        for p, q in zip(points, points[1:]):
            delta += steps[p]
            q = min(q, n)
            if q > p:
                best = max(best, ranges.one(p, q) + delta)
        return best


class Signed:
    """Windows of Kahn time [start, end) and the bytes each adds (negative: removes): a few as
    Python integers, many (an object idle in hundreds of gaps) as arrays."""

    def __init__(self, small: list[tuple[int, int, int]] | None = None,
                 arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        self.small = small
        self._arrays = arrays

    @staticmethod
    def of(changes: "Signed | list[tuple[Interval, int]]") -> "Signed":
        if isinstance(changes, Signed):
            return changes
        return Signed.join([(s, e, sign * size) for (s, e, size), sign in changes], [])

    @staticmethod
    def join(small: list[tuple[int, int, int]], arrays: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> "Signed":
        """Windows given as Python triples and as arrays, together."""
        if not arrays and len(small) <= _SMALL:
            return Signed(small=small)
        if small:
            arrays = [*arrays, tuple(np.array(column, dtype=np.int64) for column in zip(*small))]
        if len(arrays) == 1:
            return Signed(arrays=arrays[0])
        return Signed(arrays=tuple(np.concatenate(column) for column in zip(*arrays)))  # type: ignore[arg-type]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._arrays is None:
            small = self.small or []
            self._arrays = (np.array([c[0] for c in small], dtype=np.int64), np.array([c[1] for c in small], dtype=np.int64),
                            np.array([c[2] for c in small], dtype=np.int64))
        return self._arrays

    def __len__(self) -> int:
        return len(self.small) if self.small is not None else len(self.arrays()[0])


@dataclass
class Change:
    """What fixing one finding does to the intervals: windows of Kahn time in which the object
    is gone (`remove`, or `starts`/`ends` arrays when there are many), a smaller size, and extra
    live bytes elsewhere (the buffer a GL003 reuse extends)."""

    obj: int
    remove: list[tuple[int, int]]
    shrink_to: int | None = None
    extend: tuple[Interval, ...] = ()
    starts: np.ndarray | None = None
    ends: np.ndarray | None = None

    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        if self.starts is not None and self.ends is not None:
            return self.starts, self.ends
        return (np.array([w[0] for w in self.remove], dtype=np.int64),
                np.array([w[1] for w in self.remove], dtype=np.int64))


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
        gaps = finding.properties.get("idle_between") or ()
        if len(gaps) > _SMALL:
            starts, ends = _gap_arrays(gaps)
            starts = starts + 1
            keep = ends > starts
            if keep.any():
                return Change(obj, [], starts=starts[keep], ends=ends[keep])
        else:
            windows = [(a + 1, b) for a, b in gaps if b > a + 1]
            if windows:
                return Change(obj, windows)
    elif code == "GL008":
        shrunk = shrunk_bytes(run, obj)
        if shrunk is not None and shrunk < size:
            return Change(obj, [], shrink_to=shrunk)
    return None


def _gap_arrays(gaps) -> tuple[np.ndarray, np.ndarray]:
    """GL006's `idle_between` (`Pairs` from a run, or a list of pairs) as two arrays."""
    if isinstance(gaps, Pairs):
        return np.asarray(gaps.starts, dtype=np.int64), np.asarray(gaps.ends, dtype=np.int64)
    pairs = np.asarray(gaps, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _merged(starts: np.ndarray, ends: np.ndarray, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows clipped to [start, end), sorted, overlapping and touching ones merged."""
    starts, ends = np.maximum(starts, start), np.minimum(ends, end)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) < 2:
        return starts, ends
    order = np.lexsort((ends, starts))
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    first = np.ones(len(starts), dtype=bool)
    first[1:] = starts[1:] > reach[:-1]
    heads = np.flatnonzero(first)
    return starts[heads], np.maximum.reduceat(ends, heads)


def _merged_small(windows: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """`_merged` for a few windows given as pairs."""
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


def _signed_one(intervals: dict[int, Interval], change: Change) -> Signed:
    """One fix as signed windows: its windows removed (whole size), the rest shrunk, extensions
    added — without cutting the object into pieces."""
    start, end, size = intervals[change.obj]
    small: list[tuple[int, int, int]] = []
    arrays = []
    if change.starts is not None and change.ends is not None:
        starts, ends = _merged(change.starts, change.ends, start, end)
        arrays.append((starts, ends, np.full(len(starts), -size, dtype=np.int64)))
    else:
        small.extend((s, e, -size) for s, e in _merged_small(change.remove, start, end))
    if change.shrink_to is not None and change.shrink_to < size:
        small.append((start, end, change.shrink_to - size))  # no windows for a shrink
    small.extend((s, e, size_) for s, e, size_ in change.extend)
    return Signed.join(small, arrays)


def _signed(intervals: dict[int, Interval], changes: list[Change]) -> Signed:
    """The changes as windows to subtract and add, merged per object so two fixes of one object
    (GL002 and GL005 name the same tail) never remove its bytes twice: each object changed is
    removed whole and its pieces outside every window added back, at its smallest size."""
    by_obj: dict[int, list[Change]] = {}
    for change in changes:
        by_obj.setdefault(change.obj, []).append(change)
    small: list[tuple[int, int, int]] = []
    arrays = []
    for obj, group in by_obj.items():
        start, end, size = intervals[obj]
        size_left = min([size] + [c.shrink_to for c in group if c.shrink_to is not None])
        small.append((start, end, -size))
        if size_left > 0:
            if all(c.starts is None for c in group):
                windows = _merged_small([w for c in group for w in c.remove], start, end)
                cursor = start
                for s, e in windows:
                    if s > cursor:
                        small.append((cursor, s, size_left))
                    cursor = e
                if cursor < end:
                    small.append((cursor, end, size_left))
            else:
                parts = [c.windows() for c in group]
                starts, ends = _merged(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                                       start, end)
                piece_starts = np.concatenate([[start], ends])
                piece_ends = np.concatenate([starts, [end]])
                keep = piece_ends > piece_starts
                arrays.append((piece_starts[keep], piece_ends[keep],
                               np.full(int(keep.sum()), size_left, dtype=np.int64)))
        small.extend(extra for c in group for extra in c.extend)
    return Signed.join(small, arrays)


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
        self._changes: dict[int, Change | None] = {}
        bounds = [np.array(extra, dtype=np.int64)]
        for f in findings:
            gaps = f.properties.get("idle_between")
            if gaps:  # every gap's ends, kept or not, so the curve's segments do not depend on the fixes
                starts, ends = _gap_arrays(gaps)
                bounds.extend((starts + 1, ends))
        values = list(self.intervals.values())
        self.profile = Profile((np.array([i[0] for i in values], dtype=np.int64),
                                np.array([i[1] for i in values], dtype=np.int64),
                                np.array([i[2] for i in values], dtype=np.int64)), np.concatenate(bounds))
        self.actual, self.actual_at = self.profile.peak

    def change(self, finding: Finding) -> Change | None:
        key = id(finding)
        if key not in self._changes:
            self._changes[key] = _change(self.run, finding, self.intervals, self.spans)
        return self._changes[key]

    def peaks_without(self, changes: list[Change]) -> list[int | None]:
        """The peak with each change alone applied, for changes that only take their object out
        for many windows (GL006's gaps), all at once: every window of every change and every
        stretch between two windows of one change is one range-maximum query of a single
        vectorised batch.  None where a change's windows overlap (the caller computes those one
        by one)."""
        profile = self.profile
        n = len(profile.live)
        if not changes or not n:
            return [None] * len(changes)
        counts = np.array([len(c.starts) for c in changes], dtype=np.int64)  # type: ignore[arg-type]
        group = np.repeat(np.arange(len(changes)), counts)
        info = np.array([self.intervals[c.obj] for c in changes], dtype=np.int64).reshape(-1, 3)
        starts = np.maximum(np.concatenate([c.starts for c in changes]), info[group, 0])  # type: ignore[misc]
        ends = np.minimum(np.concatenate([c.ends for c in changes]), info[group, 1])  # type: ignore[misc]
        a, b = np.searchsorted(profile.bounds, starts), np.minimum(np.searchsorted(profile.bounds, ends), n)
        keep = b > a
        group, a, b = group[keep], a[keep], b[keep]
        out: list[int | None] = [None] * len(changes)
        if not len(group):
            return [profile.peak[0]] * len(changes)
        # Windows of one change must come sorted and apart (a rule's gaps between uses do).
        same = group[1:] == group[:-1]
        tangled = unique_sorted(group[1:][same & (a[1:] < b[:-1])])
        heads = np.flatnonzero(np.concatenate([[True], ~same]))
        tails = np.concatenate([heads[1:], [len(group)]]) - 1
        owners = group[heads]
        lo, hi = a[heads], b[tails]
        best = np.where(lo > 0, profile.prefix_max[np.maximum(lo - 1, 0)], 0)
        best = np.maximum(best, np.where(hi < n, profile.suffix_max[np.minimum(hi, n - 1)], 0))
        inside = profile.ranges.many(a, b) - info[group, 2]
        best = np.maximum(best, np.maximum.reduceat(inside, heads))
        between = np.flatnonzero(same & (a[1:] > b[:-1]))
        if len(between):
            gaps = profile.ranges.many(b[between], a[between + 1])
            per = np.full(len(changes), np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(per, group[between], gaps)
            best = np.maximum(best, per[owners])
        for owner, peak in zip(owners.tolist(), best.tolist()):
            out[owner] = peak
        for owner in tangled.tolist():
            out[owner] = None
        untouched = np.setdiff1d(np.arange(len(changes)), owners)
        for owner in untouched.tolist():  # every window outside the object's life
            out[owner] = profile.peak[0]
        return out

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
    changes = [model.change(f) for f in findings]
    windowed = [k for k, c in enumerate(changes) if c is not None and c.starts is not None and c.shrink_to is None
                and not c.extend]
    peaks_of = dict(zip(windowed, model.peaks_without([changes[k] for k in windowed])))  # type: ignore[misc]
    for k, (f, change) in enumerate(zip(findings, changes)):
        if change is None:
            saved = 0
        else:
            peak = peaks_of.get(k)
            saved = actual - (peak if peak is not None else profile.peak_with(_signed_one(intervals, change)))
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
