"""Object histories: what static frontends and dynamic traces both produce and what rules read.

A *scope* (a function body statically, a whole run dynamically) is a `Timeline` of `Event`s in
order.  Each GPU object has an `ObjectHistory`: its allocation, the events that touch it
(`Touch`: read / write / full overwrite, and whether the event counts as a *use*), its frees and
its escapes.  Rules measure gaps in kernel launches on the timeline; they never look at syntax
trees or trace records.
"""
from __future__ import annotations

import bisect
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from gpulint.findings import Location

if TYPE_CHECKING:  # numpy arrives with a run's measurements, never with static analysis
    import numpy as np


class Op(str, enum.Enum):
    ALLOC = "alloc"
    FREE = "free"
    COPY = "copy"
    MEMSET = "memset"
    LAUNCH = "launch"
    CALL = "call"
    ESCAPE = "escape"
    EXIT = "exit"
    FLUSH = "flush"  # a cache flush: torch.cuda.empty_cache(), a pool's free_all_blocks()
    HOST = "host"  # host code dereferences managed memory (`m[i]` after cudaMallocManaged): an access


class Kind(str, enum.Enum):
    """What memory an object is: who frees it, and whether the GPU memory rules judge it."""

    DEVICE = "device"  # cudaMalloc, cuMemAlloc: freed explicitly
    MANAGED = "managed"  # cudaMallocManaged: unified memory, freed explicitly
    ASYNC = "async"  # cudaMallocAsync, a cudaMemPool: stream-ordered, served from a pool
    PINNED = "pinned"  # cudaMallocHost: page-locked host memory
    SEGMENT = "segment"  # a caching allocator's block, seen by a run: its lifetime is the allocator's
    TENSOR = "tensor"  # a framework array (torch, cupy), freed by reference counting
    RAW = "raw"  # a driver-level allocation freed by reference counting (Numba device_array, cupy.cuda.alloc)
    HOST = "host"  # a run's CPU tensor, in a program that also has device tensors

    @property
    def reference_counted(self) -> bool:
        """Freed when the last reference goes: no leak to report, no `free` to insert."""
        return self in (Kind.TENSOR, Kind.RAW, Kind.HOST)

    @property
    def host_memory(self) -> bool:
        """Memory of the host: not part of the device's peak."""
        return self in (Kind.PINNED, Kind.HOST)

    @property
    def allocator_owned(self) -> bool:
        """The allocator, not the program, decides when it lives and dies."""
        return self is Kind.SEGMENT

    @property
    def pooled(self) -> bool:
        """Served from a pool: allocating it again in a loop costs no driver call."""
        return self in (Kind.ASYNC, Kind.TENSOR, Kind.SEGMENT)

    @property
    def driver_level(self) -> bool:
        """Each allocation and free goes to the driver and is freed explicitly: one buffer reused
        saves both calls and the memory of the second."""
        return self in (Kind.DEVICE, Kind.MANAGED)


class Distance(str, enum.Enum):
    """What a timeline's `launches` count: kernel launches (CUDA, a run), or loops that launch
    work (static Python, where one line may launch any number of kernels)."""

    LAUNCHES = "kernel launch"
    LOOPS = "loop"


class SizeUnit(str, enum.Enum):
    BYTES = "bytes"  # cudaMalloc(&p, bytes), a run's measured sizes
    ELEMENTS = "elements"  # torch.empty(n), cupy.zeros(n): factories take shapes


@dataclass(frozen=True)
class Size:
    """A size in bytes: `value` when it folds to a constant, and the expression it came from.

    `expr` is the normalised text after folding what can be folded (`n * 4` for
    `n * sizeof(float)`), so two symbolic sizes compare equal when their texts do.
    `constant_only` is True when the expression uses only compile-time names (macros,
    constexpr/const values, sizeof, literals).
    """

    value: int | None
    expr: str
    constant_only: bool = False
    # The names the expression was written with (before folding): `n`, `ntaps`, `MAX_N`.
    names: frozenset[str] = frozenset()
    # Byte range of the expression as written, when it is one expression in one unit (a fix
    # can then replace it); not part of what makes two sizes equal.
    span: tuple[int, int] | None = field(default=None, compare=False)
    # How many times each variable in the expression had been assigned when the size was taken:
    # `n * 4` before and after `n = 50;` are different sizes though their texts agree.
    versions: frozenset[tuple[str, int]] = frozenset()
    unit: SizeUnit = field(default=SizeUnit.BYTES, compare=False)

    def same_as(self, other: "Size", tolerance: float = 0.0) -> bool:
        if self.value is not None and other.value is not None:
            big = max(self.value, other.value)
            return big == 0 or abs(self.value - other.value) <= tolerance * big
        return self.expr == other.expr and self.versions == other.versions


@dataclass(frozen=True)
class Guard:
    """One branch of a conditional: `id` names the if/switch/?:, `branch` which arm."""

    id: int
    branch: int
    condition: str
    location: Location
    # Pointers this arm knows to be non-null (`if (p)`, `if (p != NULL)`): freeing one of them
    # here is as good as freeing it unconditionally.
    nonnull: frozenset[str] = frozenset()
    # Byte range of the whole if statement (None for a `case` arm: code cannot be placed
    # before it without leaving the switch's cases).
    stmt_start: int | None = None
    stmt_end: int | None = None

    def same_test(self, other: "Guard") -> bool:
        """The same condition tested again (`switch (mode)` twice, `if (use_ws)` twice): assuming
        the tested values did not change, one arm runs exactly when the other did."""
        return self.branch == other.branch and bool(self.condition) and self.condition == other.condition


def exclusive(a: Event, b: Event) -> bool:
    """The two events lie in different arms of the same branch: no run executes both."""
    if not a.guards or not b.guards:
        return False
    arms = {g.id: g.branch for g in a.guards}
    return any(g.id in arms and arms[g.id] != g.branch for g in b.guards)


def guards_within(guards: tuple[Guard, ...] | set[Guard], allowed: set[Guard]) -> bool:
    """Each guard is one of `allowed`, or the same test as one of them."""
    return all(g in allowed or any(g.same_test(a) for a in allowed) for g in guards)


@dataclass(frozen=True)
class Loop:
    """A loop of the host code: the span of times it covers and what its body changes."""

    id: int
    first_t: int  # first event inside the loop
    last_t: int  # last event inside the loop
    location: Location
    # Names whose value the loop changes (loop counter, assigned or incremented names, &name passed out).
    modified: frozenset[str] = frozenset()
    # Names whose pointed-to contents the loop may change (p[i] = ..., passed to a function, copy target).
    written: frozenset[str] = frozenset()
    # Byte range of the whole loop statement, for fixes that hoist out of it.
    stmt_start: int | None = None
    stmt_end: int | None = None


@dataclass(eq=False, slots=True)
class Event:
    """One API call or launch in a scope, in order.  Identity is by object (eq=False).

    Not frozen and with slots: a run's timeline has a million of these, and a frozen
    dataclass's `__init__` costs several times more.  Nothing mutates an event once built."""

    t: int
    op: Op
    api: str  # cudaMalloc, cudaMemcpy, the kernel name, the callee
    location: Location
    launches: int = 0  # kernel launch sites this event stands for
    loops: tuple[int, ...] = ()  # enclosing loops, outermost first
    guards: tuple[Guard, ...] = ()
    size: Size | None = None
    direction: str | None = None  # copies: h2d, d2h, d2d, h2h, default
    stream: int | None = None
    # Byte range of the whole statement the event is in (for fixes that move or remove it).
    stmt_start: int | None = None
    stmt_end: int | None = None
    detail: str = ""  # e.g. the object expression as written, the exit kind
    # Names the call's arguments read (allocations: the size's names), for loop-invariance.
    names: frozenset[str] = frozenset()
    # A run's host-to-device copy: a digest of the host bytes it read (equal digests, same data).
    content: str | None = None
    # Statically: a call of something no table knows (a module, a function of the program) made
    # it; that may draw random numbers or change the callee's state, so it cannot move freely.
    opaque: bool = False

    def __repr__(self) -> str:  # keep test failures readable
        return f"<{self.op.value} {self.api} t={self.t} line={self.location.row}>"


class Access(enum.Flag):
    NONE = 0
    READ = enum.auto()
    WRITE = enum.auto()
    # The write replaces every byte of the object (or the `size` it names, from the start).
    FULL = enum.auto()


READ_WRITE = Access.READ | Access.WRITE  # built once: a Flag's `|` is a Python call each time

@dataclass(frozen=True, slots=True)
class Touch:
    """An event's effect on one object."""

    event: Event
    access: Access
    use: bool  # a kernel launch (or a library call) that accesses the object
    size: Size | None = None  # bytes written/read, for copies and memsets
    offset_zero: bool = True  # the access starts at the object's first byte
    # False when the event may touch one of several objects (a pointer that was swapped).
    definite: bool = True
    # The write the allocation itself makes (`torch.zeros` fills what it allocates).
    by_alloc: bool = False


@dataclass
class Timeline:
    """All events of one scope, in order (static: program order; dynamic: Kahn timestamps)."""

    events: list[Event] = field(default_factory=list)
    loops: dict[int, Loop] = field(default_factory=dict)
    name: str = ""  # the function, or the program
    end: Location | None = None  # where the scope ends (closing brace / end of program)
    end_t: int = 0
    # Byte offsets of the scope's text: where it starts, and its closing brace (CUDA), for
    # fixes that check what is in scope or insert code before the scope ends.
    start_byte: int | None = None
    end_byte: int | None = None
    distance: Distance = Distance.LAUNCHES
    # Byte ranges [start, end) of the scope's blocks (`{ ... }` from its brace; a Python suite from
    # its first statement), in the order the frontend met them: where a fix may put a statement is
    # span arithmetic over these.
    blocks: list[tuple[int, int]] = field(default_factory=list)
    # A recorded run: every event happened, in this order, at these (Kahn) times; a static
    # scope's events are what may happen, in program order.
    observed: bool = False

    def launches_between(self, start_t: float, end_t: float, *ends: Event) -> "Gap":
        """Events standing for kernel launches strictly between two positions.

        Launches in a branch arm that excludes one of `ends` (the events bounding the gap) do
        not run on the same path as it, so they are not in the gap.
        """
        index = self._index()
        lo = bisect.bisect_right(index.times, start_t)
        hi = bisect.bisect_left(index.times, end_t)
        if not index.branched or not any(end.guards for end in ends):
            return Gap(index.launches, lo, hi, index.prefix)
        # Static scopes with branches: filter the (small) stretch.
        kept = [e for e in index.launches[lo:hi] if not any(exclusive(e, end) for end in ends)]
        return Gap(kept, 0, len(kept))

    def launch_counts(self, bounds: list[tuple[float, float]]) -> list[int]:
        """Launches strictly inside each (start, end): `launches_between(...).distance` for many
        gaps at once, without branches (callers check those) and without building views."""
        index = self._index()
        times, prefix = index.times, index.prefix
        right, left = bisect.bisect_right, bisect.bisect_left
        return [prefix[max(left(times, end), lo)] - prefix[lo] for lo, end in
                ((right(times, start), end) for start, end in bounds)]

    @property
    def has_guards(self) -> bool:
        """Some event of the scope is under a branch (never in a run)."""
        return any(e.guards for e in self.events)

    def launch_counts_between(self, starts: Sequence[float], ends: Sequence[float]) -> list[int]:
        """`launch_counts` for bounds given as two sequences (a run gives arrays)."""
        return self.launch_counts(list(zip(starts, ends)))

    def _index(self) -> "_LaunchIndex":
        """Launch events sorted by time, with prefix sums of the launches they stand for (a run's
        timeline has a million events; rules ask for thousands of gaps)."""
        cached = getattr(self, "_cached_index", None)
        if cached is None or cached.size != len(self.events):
            launches = sorted((e for e in self.events if e.launches > 0), key=lambda e: e.t)
            prefix = [0]
            for e in launches:
                prefix.append(prefix[-1] + e.launches)
            cached = _LaunchIndex(len(self.events), [e.t for e in launches], launches, prefix,
                                  any(e.guards for e in launches))
            self._cached_index = cached
        return cached

    def exits(self) -> list[Event]:
        return self._exits()[1]

    def _exits(self) -> tuple[int, list[Event], list[int] | None]:
        """The exits, and their times when they are in order (always, for a static scope)."""
        cached = getattr(self, "_cached_exits", None)
        if cached is None or cached[0] != len(self.events):
            exits = [e for e in self.events if e.op is Op.EXIT]
            times = [e.t for e in exits]
            in_order = all(a <= b for a, b in zip(times, times[1:]))
            cached = (len(self.events), exits, times if in_order else None)
            self._cached_exits = cached
        return cached

    def exits_between(self, after_t: float, before_t: float) -> list[Event]:
        """The exits strictly between two positions, in the order of `exits()` (a bisection, not a
        scan: a function with thousands of allocations and early returns asks once per allocation)."""
        _, exits, times = self._exits()
        if times is None:
            return [e for e in exits if after_t < e.t < before_t]
        return exits[bisect.bisect_right(times, after_t):bisect.bisect_left(times, before_t)]

    def statement_events(self, stmt_start: int | None) -> list[Event]:
        """The events whose statement starts at byte `stmt_start`, in order."""
        cached = getattr(self, "_cached_statements", None)
        if cached is None or cached[0] != len(self.events):
            by_start: dict[int | None, list[Event]] = {}
            for e in self.events:
                by_start.setdefault(e.stmt_start, []).append(e)
            cached = (len(self.events), by_start)
            self._cached_statements = cached
        return cached[1].get(stmt_start, [])

    def first_from(self, offset: int, after_t: float) -> int:
        """The order number of the first event after `after_t` whose statement starts at or after
        byte `offset`; `end_t` when there is none.

        Fix builders ask this once per fix; a scan of the scope each time made a function with
        thousands of fixes quadratic.  Events in order of `t` with tables of maxima of their
        statement starts over runs of 1, 2, 4, ... events: the search climbs from the first event
        after `after_t` to the shortest run that holds a start at or after `offset`, then skips
        the runs that do not, so it costs the logarithm of the distance to the answer (usually a
        few events: the next statement), and only the tables of the runs searched are built."""
        cached = getattr(self, "_cached_starts", None)
        if cached is None or cached[0] != len(self.events):
            ordered = sorted(self.events, key=lambda e: e.t)
            starts = [_NO_START if e.stmt_start is None else e.stmt_start for e in ordered]
            cached = (len(self.events), [e.t for e in ordered], [starts])
            self._cached_starts = cached
        _, times, maxima = cached
        i = bisect.bisect_right(times, after_t)
        level = 0
        while True:  # up: the shortest run from i that holds the answer, or runs past the end
            row = maxima[level]
            if i >= len(row) or row[i] >= offset:
                top = level - 1  # the answer, if any, is within this run or the events left
                break
            if not _extend_maxima(maxima, level + 1):
                top = level  # no longer runs: what this run and the events after it hold
                break
            level += 1
        for level in range(top, -1, -1):  # down: skip the runs that start nowhere at or after offset
            row = maxima[level]
            if i < len(row) and row[i] < offset:
                i += 1 << level
        if i < len(times) and maxima[0][i] >= offset:
            return times[i]
        return self.end_t


def _extend_maxima(maxima: list[list[float]], level: int) -> bool:
    """Make sure `maxima[level]` (maxima of runs of 2**level starts) exists; False when runs that
    long do not fit in the events."""
    while len(maxima) <= level:
        width = 1 << (len(maxima) - 1)
        previous = maxima[-1]
        if 2 * width > len(maxima[0]):
            return False
        maxima.append(list(map(max, previous[:len(previous) - width], previous[width:])))
    return True


_NO_START = float("-inf")  # an event with no statement starts nowhere


@dataclass
class _LaunchIndex:
    """A timeline's launch events sorted by time, with prefix sums of the launches each stands for."""

    size: int  # len(timeline.events) when built
    times: list[int]
    launches: list[Event]
    prefix: list[int]
    branched: bool  # some launch is under a branch (static scopes)


class Gap(Sequence):
    """The launch events in a gap (a view, not a copy) and `distance`, the launches they stand for."""

    def __init__(self, events: list[Event], lo: int, hi: int, prefix: list[int] | None = None) -> None:
        self._events, self._lo, self._hi = events, lo, max(lo, hi)
        self._prefix = prefix

    def __len__(self) -> int:
        return self._hi - self._lo

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._events[self._lo + k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._events[self._lo + i]

    def __iter__(self):
        return (self._events[k] for k in range(self._lo, self._hi))

    @property
    def distance(self) -> int:
        if self._prefix is not None:
            return self._prefix[self._hi] - self._prefix[self._lo]
        return sum(e.launches for e in self)


class TimelineBuilder:
    """Appends a scope's events in order, numbering them and keeping the bounds of its loops.

    Both static frontends (CUDA and Python) build their timelines through this, so events and
    loops mean the same thing whichever lowering made them.
    """

    def __init__(self, name: str, distance: Distance = Distance.LAUNCHES) -> None:
        self.timeline = Timeline(name=name, distance=distance)
        self.t = 0
        self._loops: dict[int, list] = {}

    def open_loop(self, loop_id: int, location: Location, modified: set[str], written: set[str],
                  span: tuple[int, int] | None = None) -> None:
        self._loops[loop_id] = [None, None, location, frozenset(modified), frozenset(written), span or (None, None)]

    def append(self, op: Op, api: str, location: Location, loops: tuple[int, ...], guards: tuple[Guard, ...],
               stmt_start: int | None, stmt_end: int | None, **kwargs) -> Event:
        self.t += 1
        event = Event(t=self.t, op=op, api=api, location=location, loops=loops, guards=guards,
                      stmt_start=stmt_start, stmt_end=stmt_end, **kwargs)
        self.timeline.events.append(event)
        for loop_id in loops:
            bounds = self._loops[loop_id]
            if bounds[0] is None:
                bounds[0] = self.t
            bounds[1] = self.t
        return event

    def finish(self, end: Location, reachable_end: bool, end_api: str) -> Timeline:
        """Close the scope at `end`; an exit event there unless the end cannot be reached."""
        self.timeline.end = end
        if reachable_end:
            self.append(Op.EXIT, end_api, end, (), (), None, None, detail="end")
        self.timeline.end_t = self.t + 1
        for loop_id, (first, last, location, modified, written, span) in self._loops.items():
            if first is not None:  # a loop with no events in it needs no bounds
                self.timeline.loops[loop_id] = Loop(loop_id, first, last, location, modified, written, *span)
        return self.timeline


class LaunchBits(NamedTuple):
    """The granules of an object one launch read and wrote (bool arrays; None: none of that kind)."""

    launch: Event
    read: np.ndarray | None
    write: np.ndarray | None


class LaunchCounts(NamedTuple):
    """DrGPUM's per-GPU-API access frequency: the coefficient of variation of the access counts of
    the elements one launch touched (counts start at zero at each launch), and how many it touched."""

    launch: Event
    variation: float
    accessed: int


@dataclass
class AccessInfo:
    """What a run measured inside one object: granules touched per launch (bitmaps) and
    per-element access counts.  `gpulint.measures` computes the metrics rules ask for."""

    granularity: int  # bytes per bitmap granule
    size: int  # bytes of the object
    per_launch: list[LaunchBits] = field(default_factory=list)
    counts: np.ndarray | None = None  # per-element access counts (uint32) over the run, when sampled
    count_granularity: int = 4  # bytes per counted element
    # Byte ranges [start, end) that copies and memsets read or wrote: a buffer a 256 MiB copy
    # fills is used that far, whatever its kernels touch.
    extents: list[tuple[int, int]] = field(default_factory=list)
    launch_counts: list[LaunchCounts] = field(default_factory=list)


@dataclass(frozen=True)
class PoolSample:
    """A memory pool's state at one moment of a run (a caching allocator's, a `cudaMemPool`)."""

    t: int
    pool: str
    reserved: int  # bytes the pool holds from the driver
    allocated: int  # bytes live in it
    allocated_peak: int = 0  # the allocator's own peak of live bytes so far, when it reports one


@dataclass
class ObjectHistory:
    """Everything known about one GPU object, in order."""

    name: str  # as the user wrote it: `d_a`, `s.buf`, a tensor's variable
    timeline: Timeline
    alloc: Event | None
    touches: list[Touch] = field(default_factory=list)
    frees: list[Event] = field(default_factory=list)
    escapes: list[Event] = field(default_factory=list)
    # Statically: when the variable holding it was assigned something else (`p = nullptr;`), as the
    # `t` of the last event before the assignment.  After that, the name no longer reaches it.
    overwritten: list[int] = field(default_factory=list)
    size: Size | None = None
    kind: Kind = Kind.DEVICE
    member: bool = False  # a struct member slot tracked by name across functions
    # Statically: the alloc call's failure is tested by a branch with this id (failed-alloc path).
    checked_by: frozenset[int] = frozenset()
    # Set by the frontend when some evidence may be missing (parse errors in the scope).
    incomplete: bool = False
    # Bytes measured in a run (dynamic histories).
    bytes: int | None = None
    # Dynamic histories: the trace's object id, and what the run measured inside the object.
    obj_id: int | None = None
    measured: AccessInfo | None = None
    # A framework tensor seen in a run: made by the statement that creates it and freed when the
    # statement that drops its last reference ends, so launches of those same statements belong to
    # its lifetime whatever the code says.
    freed_by_statement: bool = False

    @property
    def origin(self) -> str:
        """`static` or `dynamic`, as findings report it."""
        return "dynamic" if self.timeline.observed else "static"

    @property
    def uses(self) -> list[Touch]:
        return [t for t in self.touches if t.use]

    @property
    def escaped(self) -> bool:
        return bool(self.escapes)

    def use_span(self, touch: Touch) -> tuple[int, int]:
        """The stretch of the timeline a use stands for.

        A use inside a loop that does not contain the allocation stands for the whole loop:
        the object must live across all of its iterations.
        """
        event = touch.event
        if not event.loops:
            return event.t, event.t
        alloc_loops = set(self.alloc.loops) if self.alloc is not None else set()
        for loop_id in event.loops:  # outermost first
            if loop_id not in alloc_loops:
                loop = self.timeline.loops[loop_id]
                return loop.first_t, loop.last_t
        return event.t, event.t

    def use_spans(self) -> list["UseSpan"]:
        """Use spans in order, overlapping ones merged (computed once per set of touches: several
        rules ask, and a run's objects have thousands of uses)."""
        cached = getattr(self, "_cached_spans", None)
        if cached is not None and cached[0] == len(self.touches):
            return cached[1]
        uses = [t for t in self.touches if t.use]
        if not any(t.event.loops for t in uses):
            # No loops (every dynamic history): each use is a point; merge equal times only.
            uses.sort(key=lambda t: t.event.t)
            points: list[UseSpan] = []
            for touch in uses:
                t = touch.event.t
                if points and t <= points[-1].end:
                    points[-1].last = touch
                else:
                    points.append(UseSpan(t, t, touch, touch))
            self._cached_spans = (len(self.touches), points)
            return points
        spans = sorted(((*self.use_span(t), t) for t in self.uses), key=lambda x: (x[0], x[1], x[2].event.t))
        merged: list[UseSpan] = []
        for start, end, touch in spans:
            if merged and start <= merged[-1].end:
                last = merged[-1]
                last.end = max(last.end, end)
                if touch.event.t > last.last.event.t:
                    last.last = touch
            else:
                merged.append(UseSpan(start, end, touch, touch))
        self._cached_spans = (len(self.touches), merged)
        return merged

    # Questions rules ask about all of an object's touches.  A run's histories
    # (`gpulint.dynamic.runmodel.RunHistory`) answer them from arrays without building a
    # `Touch` per access; these are the plain versions, over the lists.

    @property
    def ambiguous_uses(self) -> bool:
        """Some use may be of another object (a pointer swapped, a descriptor)."""
        return any(not t.definite for t in self.uses)

    def consecutive_use_gaps(self) -> tuple[list[int], Sequence[int], Sequence[int]]:
        """The indices i of consecutive use spans (i, i + 1) that follow each other on some path
        (not in different arms of one branch, neither a host access of managed memory), with the
        bounds of each gap: the end of span i and the start of span i + 1."""
        spans = self.use_spans()
        index = [i for i, (before, after) in enumerate(zip(spans, spans[1:]))
                 if not exclusive(before.last.event, after.first.event)
                 and Op.HOST not in (before.last.event.op, after.first.event.op)]
        return index, [spans[i].end for i in index], [spans[i + 1].start for i in index]

    def touches_between(self, start_t: float, end_t: float) -> list[Touch]:
        """The touches strictly between two positions, in order."""
        return [t for t in self.touches if start_t < t.event.t < end_t]

    def latest_read(self) -> tuple[int, Touch] | None:
        """The read (not the allocation's own write) whose use span ends last, the first such in
        order, with that end; None when nothing reads the object."""
        best: tuple[int, Touch] | None = None
        for touch in self.touches:
            if touch.access & Access.READ and not touch.by_alloc:
                end = self.use_span(touch)[1]
                if best is None or end > best[0]:
                    best = (end, touch)
        return best

    def consecutive_touches(self, ops: tuple[Op, ...]) -> Iterator[tuple[Touch, Touch]]:
        """Pairs of touches next to each other in time order whose events are both of `ops`."""
        touches = sorted(self.touches, key=lambda t: t.event.t)
        for first, later in zip(touches, touches[1:]):
            if first.event.op in ops and later.event.op in ops:
                yield first, later

    def content_copies(self) -> list[Touch]:
        """Touches by events that carry a digest of the host bytes they copied."""
        return [t for t in self.touches if t.event.content]

    def first_free(self) -> Event | None:
        """The first free that runs whenever the allocation does (not under an extra branch)."""
        alloc_guards = set(self.alloc.guards) if self.alloc is not None else set()
        for free in sorted(self.frees, key=lambda e: e.t):
            if guards_within(free.guards, alloc_guards):
                return free
        return None


@dataclass
class UseSpan:
    """A stretch of uses: `first`/`last` are the touches that open and close it."""

    start: int
    end: int
    first: Touch
    last: Touch


@dataclass
class Unit:
    """What rules receive: the histories of one file (static) or one run (dynamic)."""

    path: str
    histories: list[ObjectHistory]
    timelines: list[Timeline]
    source: bytes | None = None
    language: str = "cuda"  # cuda | python: rules run on the units of the languages they declare
    # A run's memory pools over time (GL104).
    pools: list[PoolSample] = field(default_factory=list)
    # Byte ranges of macro uses the preprocessor expanded: no fix edits inside one.
    expanded: list[tuple[int, int]] = field(default_factory=list)
    # A parsed file's allocation sites: (in functions analysed, in all), for `--statistics`.
    allocation_sites: tuple[int, int] = (0, 0)

    @property
    def observed(self) -> bool:
        """A recorded run (its one timeline was observed), not a parse."""
        return any(t.observed for t in self.timelines)
