"""The object model of a run, backed by columns: a `Timeline` and `ObjectHistory`s that hold
arrays and build an `Event` or a `Touch` only when something asks for that one.

A run of a million events has a million events and a few million touches; rules read a few of
them per finding (the first use, the last access, the launches shown as evidence).  Building
them all cost most of the analysis's time and memory.  Here each is built on first access and
kept (identity matters: rules compare events with `is`), and the questions rules ask about
all of an object's touches (its use spans, the gaps between them, its last read) are answered
from the arrays.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Iterator

import numpy as np

from gpulint.history import Access, Event, Gap, ObjectHistory, Timeline, Touch, UseSpan

# Touch access codes (what `Access` they stand for), built once.
ACCESS = {1: Access.READ, 2: Access.WRITE, 3: Access.READ | Access.WRITE, 6: Access.WRITE | Access.FULL}
READ_BIT = 1


class LazyList(Sequence):
    """`items[i]` is `make(keys[i])`, built on first access; slices are views."""

    def __init__(self, keys: np.ndarray | list[int], make: Callable[[int], Any]) -> None:
        self._keys, self._make = keys, make

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LazyList(self._keys[i], self._make)
        return self._make(int(self._keys[i]))

    def __iter__(self) -> Iterator[Any]:
        make = self._make
        return (make(k) for k in (self._keys.tolist() if isinstance(self._keys, np.ndarray) else self._keys))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class RunTimeline(Timeline):
    """A run's one timeline: its events (issue order within a Kahn timestamp) built on demand,
    its launches as a sorted array of times."""

    rows: "np.ndarray | None" = None  # the column rows of `events` (set by the run's builder)

    def setup(self, events: Sequence, launch_times: np.ndarray, launch_positions: np.ndarray, exit_event: Event) -> None:
        self.events = events  # type: ignore[assignment]
        self._launch_times = launch_times  # sorted Kahn times of the launches
        self._launch_times_list = launch_times.tolist()
        self._launch_events = LazyList(launch_positions, events.__getitem__)
        self._exit = exit_event

    def launches_between(self, start_t: float, end_t: float, *ends: Event) -> Gap:
        import bisect

        times = self._launch_times_list
        lo = bisect.bisect_right(times, start_t)
        hi = bisect.bisect_left(times, end_t)
        return Gap(self._launch_events, lo, hi, range(len(times) + 1))  # type: ignore[arg-type]

    def launch_counts(self, bounds) -> list[int]:
        if not len(bounds):
            return []
        pairs = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)
        return self.launch_counts_arrays(pairs[:, 0], pairs[:, 1]).tolist()

    def launch_counts_between(self, starts, ends) -> list[int]:
        return self.launch_counts_arrays(np.asarray(starts), np.asarray(ends)).tolist()

    def launch_counts_arrays(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Launches strictly inside each (start, end), for arrays of bounds."""
        lo = np.searchsorted(self._launch_times, starts, side="right")
        hi = np.searchsorted(self._launch_times, ends, side="left")
        return np.maximum(hi, lo) - lo

    @property
    def has_guards(self) -> bool:
        return False  # a run's events happened: none is under a branch

    def _exits(self) -> tuple[int, list[Event], list[int] | None]:
        return len(self.events), [self._exit], [self._exit.t]


class RunSpans(Sequence):
    """An object's use spans in a run: every use is a point in Kahn time, uses at one time are
    one span.  `starts`/`ends` are arrays; a `UseSpan` is built when asked for."""

    def __init__(self, times: np.ndarray, first: np.ndarray, last: np.ndarray, touch: Callable[[int], Touch]) -> None:
        self.starts = self.ends = times
        self._first, self._last, self._touch = first, last, touch
        self._built: dict[int, UseSpan] = {}

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        span = self._built.get(i)
        if span is None:
            t = int(self.starts[i])
            span = self._built[i] = UseSpan(t, t, self._touch(int(self._first[i])), self._touch(int(self._last[i])))
        return span


class RunHistory(ObjectHistory):
    """An object of a run: `touches` is built on first access; use spans, gaps, last reads and
    touches in a window come from `TouchTable`'s arrays for rows [lo, hi)."""

    _touches: list[Touch] | None = None

    def attach(self, table: "TouchTable", lo: int, hi: int) -> None:
        self._table, self._lo, self._hi = table, lo, hi
        self._touches = None
        self._spans: RunSpans | None = None

    @property  # type: ignore[override]
    def touches(self) -> list[Touch]:
        if self._touches is None:
            self._touches = [self._table.touch(k) for k in range(self._lo, self._hi)]
        return self._touches

    @touches.setter
    def touches(self, value: list[Touch]) -> None:
        self._touches = value

    @property
    def uses(self) -> Sequence[Touch]:  # type: ignore[override]
        rows = np.flatnonzero(self._table.use[self._lo:self._hi]) + self._lo
        return LazyList(rows, self._table.touch)

    @property
    def ambiguous_uses(self) -> bool:
        return False  # a run's accesses are what happened, to this object

    def use_spans(self) -> RunSpans:  # type: ignore[override]
        if self._spans is None:
            table, lo, hi = self._table, self._lo, self._hi
            rows = np.flatnonzero(table.use[lo:hi]) + lo
            times = table.t[rows]
            if len(times):
                new = np.empty(len(times), dtype=bool)
                new[0] = True
                np.not_equal(times[1:], times[:-1], out=new[1:])
                firsts = np.flatnonzero(new)
                lasts = np.append(firsts[1:] - 1, len(times) - 1)
                self._spans = RunSpans(times[firsts], rows[firsts], rows[lasts], table.touch)
            else:
                self._spans = RunSpans(times, rows, rows, table.touch)
        return self._spans

    def accessed_span(self) -> tuple[int, int] | None:
        """First and last Kahn time anything touched the object (copies included)."""
        if self._hi <= self._lo:
            return None
        return int(self._table.t[self._lo]), int(self._table.t[self._hi - 1])

    def first_use_t(self) -> int | None:
        spans = self.use_spans()
        return int(spans.starts[0]) if len(spans) else None

    def consecutive_use_gaps(self) -> tuple[list[int], np.ndarray, np.ndarray]:  # type: ignore[override]
        spans = self.use_spans()
        index = np.arange(len(spans) - 1) if len(spans) > 1 else np.zeros(0, dtype=np.int64)
        return index.tolist(), spans.ends[:-1], spans.starts[1:]

    def touches_between(self, start_t: float, end_t: float) -> list[Touch]:
        times = self._table.t[self._lo:self._hi]
        lo = int(np.searchsorted(times, start_t, side="right"))
        hi = int(np.searchsorted(times, end_t, side="left"))
        return [self._table.touch(self._lo + k) for k in range(lo, max(lo, hi))]

    def latest_read(self) -> tuple[int, Touch] | None:
        table, lo, hi = self._table, self._lo, self._hi
        reads = np.flatnonzero(table.access[lo:hi] & READ_BIT)
        if not len(reads):
            return None
        times = table.t[lo:hi][reads]
        first_of_latest = int(reads[int(np.argmax(times))])  # argmax: the first of the maxima
        return int(times.max()), table.touch(lo + first_of_latest)

    def consecutive_touches(self, ops: tuple) -> Iterator[tuple[Touch, Touch]]:
        table, lo, hi = self._table, self._lo, self._hi
        if hi - lo < 2:
            return
        codes = table.op_mask(ops)[table.op[lo:hi]]
        for k in np.flatnonzero(codes[:-1] & codes[1:]).tolist():
            yield table.touch(lo + k), table.touch(lo + k + 1)

    def content_copies(self) -> list[Touch]:
        table, lo, hi = self._table, self._lo, self._hi
        return [table.touch(lo + k) for k in np.flatnonzero(table.has_content[lo:hi]).tolist()]


class TouchTable:
    """Every touch of a run, sorted by object then (Kahn time, issue order): parallel arrays,
    and the `Touch` of a row built on first access."""

    def __init__(self, row: np.ndarray, t: np.ndarray, access: np.ndarray, use: np.ndarray, size: np.ndarray,
                 offset_zero: np.ndarray, op: np.ndarray, has_content: np.ndarray, op_code: dict,
                 event: Callable[[int], Event], size_of: Callable[[int], Any]) -> None:
        self.row, self.t, self.access, self.use, self.size = row, t, access, use, size
        self.offset_zero, self.op, self.has_content, self.op_code = offset_zero, op, has_content, op_code
        self._event, self._size_of = event, size_of
        self._built: dict[int, Touch] = {}
        self._masks: dict[tuple, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.row)

    def op_mask(self, ops: tuple) -> np.ndarray:
        """A lookup table over row kinds: True for the kinds of `ops` (cheaper than `np.isin` on
        each object's few touches)."""
        found = self._masks.get(ops)
        if found is None:
            found = self._masks[ops] = np.zeros(256, dtype=bool)
            found[[code for op in ops for code in self.op_code.get(op, ())]] = True
        return found

    def touch(self, k: int) -> Touch:
        found = self._built.get(k)
        if found is None:
            found = self._built[k] = Touch(self._event(self.row.item(k)), ACCESS[self.access.item(k)],
                                           self.use.item(k), self._size_of(self.size.item(k)),
                                           self.offset_zero.item(k))
        return found
