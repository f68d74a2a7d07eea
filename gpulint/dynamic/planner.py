"""Pool planning (Occamy) and allocator fragmentation (vDNN++).

`plan` places every object at an offset in one pool so that objects whose lifetimes overlap never
overlap in memory, with four greedy orders — first-fit (program order), best-fit (smallest
hole), bigger-first, longer-first — and keeps the smallest pool; the lower bound is the peak of
live bytes.  `best_fit_pool` simulates a best-fit allocator over the alloc/free sequence, growing
the pool by (request − largest free block) and restarting whenever a request fails; the final
size minus the aggregate peak is the fragmentation overhead.  It is not monotone: A1(5) A2(2)
A3(1) D2 A4(1) D1 D3 A5(8) fits best-fit in 9 units and not in 11.
"""
from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field

import numpy as np

Lifetime = tuple[int, int, int]  # start, end (exclusive), bytes


@dataclass
class Plan:
    strategy: str
    pool_bytes: int
    offsets: dict[object, int] = field(default_factory=dict)


@dataclass
class Planning:
    best: Plan
    all: list[Plan]
    lower_bound: int  # the peak of live bytes: no plan can be smaller


def live_peak(lifetimes: dict[object, Lifetime]) -> int:
    events = sorted([(s, size) for s, _, size in lifetimes.values()] + [(e, -size) for _, e, size in lifetimes.values()],
                    key=lambda x: (x[0], x[1]))  # frees before allocations at the same time
    live = peak = 0
    for _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def _place(order: list[object], lifetimes: dict[object, Lifetime], smallest_hole: bool) -> Plan:
    """Place objects in `order` (any order), each at the lowest offset (or in the smallest hole)
    free of the placed objects whose lifetimes overlap its own."""
    keys = list(order)
    n = len(keys)
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    offs = np.empty(n, dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    offsets: dict[object, int] = {}
    pool = 0
    for i, key in enumerate(keys):
        start, end, size = lifetimes[key]
        # The placed objects alive at the same time: their [offset, offset+size) ranges are taken.
        mask = (starts[:i] < end) & (ends[:i] > start)
        taken = sorted(zip(offs[:i][mask].tolist(), (offs[:i][mask] + sizes[:i][mask]).tolist()))
        offset = _choose(taken, size, smallest_hole)
        starts[i], ends[i], offs[i], sizes[i] = start, end, offset, size
        offsets[key] = offset
        pool = max(pool, offset + size)
    return Plan("", pool, offsets)


def _place_by_start(order: list[object], lifetimes: dict[object, Lifetime], smallest_hole: bool) -> Plan:
    """`_place` for an order by start time, in one sweep: every object placed before this one
    started no later, so those whose lifetimes overlap it are exactly those still alive at its
    start.  Their ranges are kept sorted by offset (they never overlap each other), and expire
    from a heap by end time: O(n log n) plus, per object, the length of the scan of the live ranges
    up to the hole it takes (the whole live set for the smallest hole)."""
    live: list[tuple[int, int]] = []  # (offset, offset + size) of the placed objects alive now
    ending: list[tuple[int, int, int]] = []  # heap of (end time, offset, offset + size)
    offsets: dict[object, int] = {}
    pool = 0
    for key in order:
        start, end, size = lifetimes[key]
        while ending and ending[0][0] <= start:
            _, lo, hi = heapq.heappop(ending)
            del live[bisect.bisect_left(live, (lo, hi))]
        offset = _choose(live, size, smallest_hole)
        bisect.insort(live, (offset, offset + size))
        heapq.heappush(ending, (end, offset, offset + size))
        offsets[key] = offset
        pool = max(pool, offset + size)
    return Plan("", pool, offsets)


def _choose(taken: list[tuple[int, int]], size: int, smallest_hole: bool) -> int:
    """The lowest offset where `size` bytes fit between taken ranges (or the smallest such hole)."""
    best: tuple[int, int] | None = None  # (hole size, offset)
    cursor = 0
    for lo, hi in taken:
        if lo - cursor >= size:
            if not smallest_hole:
                return cursor
            hole = lo - cursor
            if best is None or hole < best[0]:
                best = (hole, cursor)
        cursor = max(cursor, hi)
    if best is not None:
        return best[1]
    return cursor


# Above this many objects only the two orders by start time run (one sweep each); the orders by
# size and by length look at every placed object that overlaps each new one, which grows with the
# square of the objects (4,000 objects took 50 s).
ALL_ORDERS_UP_TO = 5_000


def plan(lifetimes: dict[object, Lifetime]) -> Planning:
    """Offsets for all objects in one pool, the best of four greedy orders (two for more than
    `ALL_ORDERS_UP_TO` objects)."""
    items = [k for k, (s, e, size) in lifetimes.items() if size > 0 and e > s]
    lifetimes = {k: lifetimes[k] for k in items}
    by_start = sorted(items, key=lambda k: (lifetimes[k][0], -lifetimes[k][2]))
    orders = {
        "first-fit": (by_start, False),
        "best-fit": (by_start, True),
    }
    if len(items) <= ALL_ORDERS_UP_TO:
        orders["bigger-first"] = (sorted(items, key=lambda k: (-lifetimes[k][2], lifetimes[k][0])), False)
        orders["longer-first"] = (sorted(items, key=lambda k: (-(lifetimes[k][1] - lifetimes[k][0]), lifetimes[k][0])),
                                  False)
    plans = []
    for name, (order, smallest) in orders.items():
        place = _place_by_start if order is by_start else _place
        result = place(order, lifetimes, smallest)
        result.strategy = name
        plans.append(result)
    best = min(plans, key=lambda p: (p.pool_bytes, [*orders].index(p.strategy)))
    return Planning(best, plans, live_peak(lifetimes))


def alloc_free_sequence(lifetimes: dict[object, Lifetime]) -> list[tuple[str, object, int]]:
    """Lifetimes as the allocator saw them: allocations and frees in time order (frees first at
    equal times)."""
    points = [(s, 1, k, size) for k, (s, e, size) in lifetimes.items()] + \
             [(e, 0, k, 0) for k, (s, e, size) in lifetimes.items()]
    points.sort(key=lambda p: (p[0], p[1]))
    return [("alloc" if kind else "free", key, size) for _, kind, key, size in points]


@dataclass
class Simulation:
    pool_bytes: int  # the pool best-fit needed
    aggregate_peak: int  # the peak of live bytes
    restarts: int

    @property
    def overhead(self) -> int:
        return self.pool_bytes - self.aggregate_peak


def best_fit_pool(sequence: list[tuple[str, object, int]], max_restarts: int = 10_000) -> Simulation:
    """Simulate a best-fit allocator over `sequence` of ("alloc", key, bytes) / ("free", key, 0).

    Starts from the aggregate peak; when a request fails, grows the pool by (request − largest
    free block) and starts over.

    Starting over from the first request made this quadratic (a 10,000-object run restarted 257
    times).  A larger pool differs from a smaller one only in its last free block (the one ending
    at the pool's end), so the runs make the same choices until the first request for which that
    block's size matters: one that a larger last block would serve while a block of another size
    is taken now, or that takes the last block now while a larger one would lose to another block.
    Each run records, per request, the pool size from which its choice would change, and keeps
    snapshots of the free blocks; the next run resumes from the last snapshot before the first
    request whose choice changes, its last block grown by the pool's growth.  The result is that of
    starting over (the tests compare both on random sequences).
    """
    sizes = {key: size for op, key, size in sequence if op == "alloc"}
    live = peak = 0
    for op, key, size in sequence:
        live += size if op == "alloc" else -sizes.get(key, 0)
        peak = max(peak, live)
    pool = peak
    runs = _ResumableBestFit(sequence)
    for restart in range(max_restarts):
        failed = runs.run(pool)
        if failed is None:
            return Simulation(pool, peak, restart)
        request, largest = failed
        pool += max(1, request - largest)
    return Simulation(pool, peak, max_restarts)


_NEVER = float("inf")


class _ResumableBestFit:
    """Best-fit runs over one sequence with growing pools, each resumed where the last one's
    choices stop holding (see `best_fit_pool`)."""

    def __init__(self, sequence: list[tuple[str, object, int]]) -> None:
        self.sequence = sequence
        # Per step: the pool size from which its choice differs (numpy: searched once per run).
        self.changes_at = np.full(len(sequence), _NEVER)
        self.every = max(256, len(sequence) // 64)
        self.snapshots: list[tuple[int, int, list, dict, dict, dict]] = []  # (step, pool, by_size, at, ending, placed)
        self.failed_at: int | None = None  # the step the last run failed at (None before the first run)

    def _resume_point(self, pool: int) -> int:
        if self.failed_at is None:
            return 0
        changed = np.flatnonzero(self.changes_at[:self.failed_at] <= pool)  # choices a pool this large changes
        return int(changed[0]) if len(changed) else self.failed_at

    def run(self, pool: int) -> tuple[int, int] | None:
        """Run (or resume) best-fit in a pool of `pool` bytes; (request, largest free block) of the
        first failure, or None."""
        diverges = self._resume_point(pool)
        while self.snapshots and self.snapshots[-1][0] > diverges:
            self.snapshots.pop()
        free = _FreeBlocks(0)
        if self.snapshots:
            first, then, by_size, at, ending, placed = self.snapshots[-1]
            free.by_size, free.at, free.ending, placed = list(by_size), dict(at), dict(ending), dict(placed)
            last = free.ending.get(then)
            if last is None:
                free.add(then, pool - then)
            else:
                free.add(last, free.remove(last) + pool - then)
        else:
            first, placed = 0, {}
            if pool > 0:
                free.add(0, pool)
        sequence, changes_at = self.sequence, self.changes_at
        for step in range(first, len(sequence)):
            if step % self.every == 0 and (not self.snapshots or self.snapshots[-1][0] < step):
                self.snapshots.append((step, pool, list(free.by_size), dict(free.at), dict(free.ending), dict(placed)))
            op, key, size = sequence[step]
            changes_at[step] = _NEVER
            if op == "alloc":
                if size <= 0:
                    continue
                i = bisect.bisect_left(free.by_size, (size, -1))
                if i == len(free.by_size):
                    self.failed_at = step
                    return size, (free.by_size[-1][0] if free.by_size else 0)
                block, offset = free.by_size[i]
                last = free.ending.get(pool)
                tail = free.at[last] if last is not None else 0
                if offset == last:
                    # The last block serves it: a larger one loses to the next block by size (a block
                    # of the same size sorts before it, having a lower offset).
                    if i + 1 < len(free.by_size):
                        changes_at[step] = pool + free.by_size[i + 1][0] - tail
                elif tail < size < block:
                    changes_at[step] = pool + size - tail  # a last block this large would serve it
                free.remove(offset)
                if block > size:
                    free.add(offset + size, block - size)
                placed[key] = (offset, size)
            elif key in placed:
                free.release(*placed.pop(key))
        self.failed_at = len(sequence)
        return None


class _FreeBlocks:
    """Free blocks of a pool, by size (for best fit) and by both ends (for coalescing)."""

    def __init__(self, pool: int) -> None:
        self.by_size: list[tuple[int, int]] = []  # sorted (size, offset)
        self.at: dict[int, int] = {}  # offset -> size
        self.ending: dict[int, int] = {}  # end -> offset
        if pool > 0:
            self.add(0, pool)

    def add(self, offset: int, size: int) -> None:
        bisect.insort(self.by_size, (size, offset))
        self.at[offset] = size
        self.ending[offset + size] = offset

    def remove(self, offset: int) -> int:
        size = self.at.pop(offset)
        del self.ending[offset + size]
        del self.by_size[bisect.bisect_left(self.by_size, (size, offset))]
        return size

    def release(self, offset: int, size: int) -> None:
        if offset + size in self.at:
            size += self.remove(offset + size)
        if offset in self.ending:
            left = self.ending[offset]
            size += self.remove(left)
            offset = left
        self.add(offset, size)


def _simulate(sequence: list[tuple[str, object, int]], pool: int) -> tuple[int, int] | None:
    """Run best-fit in a pool of `pool` bytes; (request, largest free block) of the first failure."""
    free = _FreeBlocks(pool)
    placed: dict[object, tuple[int, int]] = {}
    for op, key, size in sequence:
        if op == "alloc":
            if size <= 0:
                continue
            i = bisect.bisect_left(free.by_size, (size, -1))
            if i == len(free.by_size):
                return size, (free.by_size[-1][0] if free.by_size else 0)
            block, offset = free.by_size[i]
            free.remove(offset)
            if block > size:
                free.add(offset + size, block - size)
            placed[key] = (offset, size)
        elif key in placed:
            free.release(*placed.pop(key))
    return None
