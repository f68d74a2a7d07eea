from __future__ import annotations

import bisect

from collections import defaultdict
from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Event, ObjectHistory, Unit
from gpulint.rules.common import lifetime_candidates, line, make, what
from gpulint.rules.registry import RuleSettings, rule


def _size_text(h: ObjectHistory) -> str:
    if h.size is None:
        return "?"
    return f"{h.size.value} bytes" if h.size.value is not None else f"`{h.size.expr}` bytes"


def _still_allocated(earlier: ObjectHistory, later: ObjectHistory) -> bool:
    """`earlier` was allocated before `later` and is not freed before `later` is allocated."""
    if earlier.alloc.t >= later.alloc.t:
        return False
    free = earlier.first_free()
    if free is None:
        return not earlier.frees  # only conditionally freed: do not guess
    if later.freed_by_statement and free.location == later.alloc.location:
        # `x = torch.tanh(x @ x)`: the old `x` dies with the statement that makes the new one;
        # only an in-place op could share the buffer, and the caching allocator reuses it next.
        return False
    return free.t > later.alloc.t


@rule("GL003", "redundant-allocation", "New allocation could reuse an earlier buffer", languages=("cuda", "python"))
def redundant_allocation(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags an allocation whose object could live in an earlier object's buffer: the earlier
    object has (within 10%) the same size, its last kernel use comes before the new object's
    first use, and it is still allocated when the new object is allocated. Pairs are chosen
    with DrGPUM's one-pass algorithm, so each earlier buffer is offered to one object only.

    ## Why is this bad?
    Both buffers are live at once although their uses never overlap; one of them is enough,
    and the peak drops by its size.

    ## Example
    ```cuda
    cudaMalloc(&d_tmp1, bytes); cudaMalloc(&d_tmp2, bytes);
    stage1<<<g, b>>>(d_in, d_tmp1);
    stage2<<<g, b>>>(d_tmp1, d_mid);     // last use of d_tmp1
    stage3<<<g, b>>>(d_mid, d_tmp2);     // first use of d_tmp2
    ```

    ## Use instead
    ```cuda
    cudaMalloc(&d_tmp1, bytes);
    float *d_tmp2 = d_tmp1;              // reuse the dead buffer
    ```

    ## Fix safety
    Reusing a buffer is unsafe: the code between may still read the old contents through an
    alias that gpulint cannot see.
    """
    tolerance = settings.reuse_tolerance
    by_scope: dict[int, list[ObjectHistory]] = defaultdict(list)
    for h in lifetime_candidates(unit.histories):
        # A run's tensors too: a caching allocator reuses freed blocks, never one still alive.
        reusable = h.kind.driver_level or h.freed_by_statement
        if h.escaped or h.size is None or not reusable:
            continue
        if h.use_spans():
            by_scope[id(h.timeline)].append(h)
    for objects in by_scope.values():
        yield from _one_pass(objects, tolerance)


def _release_time(h: ObjectHistory) -> float:
    """When the buffer is released: the first free that always runs, never for none."""
    free = h.first_free()
    if free is not None:
        return float(free.t)
    return float("inf") if not h.frees else -1.0  # only conditionally freed: do not guess


class _MaxTree:
    """Maxima over positions, with point updates and "rightmost position < end whose value is
    above a threshold" queries."""

    def __init__(self, values: list[float]) -> None:
        size = 1
        while size < max(1, len(values)):
            size *= 2
        self.size = size
        self.tree = [-1.0] * (2 * size)
        self.tree[size:size + len(values)] = values
        for i in range(size - 1, 0, -1):
            self.tree[i] = max(self.tree[2 * i], self.tree[2 * i + 1])

    def set(self, i: int, value: float) -> None:
        i += self.size
        self.tree[i] = value
        i //= 2
        while i:
            self.tree[i] = max(self.tree[2 * i], self.tree[2 * i + 1])
            i //= 2

    def rightmost_above(self, end: int, threshold: float) -> int:
        """The largest position < `end` whose value is > `threshold`, or -1.  Searched from the
        leaf before `end` upwards, then down: the cost grows with the logarithm of the distance
        to the answer, not of the tree (the answer is usually the nearest object: a search from
        the root made one function of 12,500 allocations cost twice as much per object)."""
        if end <= 0:
            return -1
        tree = self.tree
        node = min(end, self.size) - 1 + self.size
        while tree[node] <= threshold:
            # To the subtree just left of this one: climb while this is a left child.
            while not node & 1:
                node >>= 1
            if node == 1:
                return -1
            node -= 1
        while node < self.size:  # down to the rightmost leaf above the threshold
            node = 2 * node + 1 if tree[2 * node + 1] > threshold else 2 * node
        return node - self.size


def _size_key(h: ObjectHistory) -> tuple:
    return ("bytes", h.size.value) if h.size.value is not None else ("expr", h.size.expr)


def _compatible_keys(keys: list[tuple], objects: list[ObjectHistory], tolerance: float) -> dict[tuple, list[tuple]]:
    """For each size, the sizes within the tolerance of it (symbolic sizes: only themselves)."""
    sizes = {_size_key(h): h.size for h in objects}
    return {a: [b for b in keys if b == a or (a[0] == b[0] == "bytes" and sizes[a].same_as(sizes[b], tolerance))]
            for a in sizes}


def _live(h: ObjectHistory) -> tuple[tuple[int, Event], tuple[int, Event]]:
    """When `h`'s contents start and stop mattering, with the events that say so: its first use (the
    writes that initialise it move down with its allocation), and its last use or read (a copy back
    to the host after the last launch still needs the data: reusing the buffer before it would
    overwrite what the host is about to read)."""
    spans = h.use_spans()
    first = (spans[0].start, spans[0].first.event)
    last = (spans[-1].end, spans[-1].last.event)
    read = h.latest_read()
    if read is not None and read[0] > last[0]:
        last = (read[0], read[1].event)
    return first, last


def _one_pass(objects: list[ObjectHistory], tolerance: float) -> Iterator[Finding]:
    spans: dict[int, tuple[tuple[int, Event], tuple[int, Event]]] = {}
    entries: list[tuple[int, int, int, ObjectHistory]] = []
    for h in objects:
        first, last = spans[id(h)] = _live(h)
        entries.append((first[0], 0, h.alloc.t, h))  # its first access
        entries.append((last[0], 1, h.alloc.t, h))  # its last use or read; on ties a "last" sorts after a "first"
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    # Walking from the tail, the objects still Initial are exactly those whose "last" entry lies
    # left of the current position; they are kept per size (sorted positions), so the nearest
    # candidate of a compatible size is a bisection away instead of a scan over every object.
    buckets: dict[tuple, list[int]] = defaultdict(list)
    for position, (_, kind, _, h) in enumerate(entries):
        if kind == 1:
            buckets[_size_key(h)].append(position)
    # Per bucket, the time each object's buffer is released (a segment tree of maxima), so the
    # nearest candidate still allocated when the new object is allocated is found in O(log n).
    released = {key: _MaxTree([_release_time(entries[p][3]) for p in positions])
                for key, positions in buckets.items()}
    compatible = _compatible_keys(list(buckets), objects, tolerance)
    for index in range(len(entries) - 1, -1, -1):
        t, kind, _, h = entries[index]
        if kind == 1:
            continue
        choice = None
        for key in compatible[_size_key(h)]:
            positions, tree = buckets[key], released[key]
            j = bisect.bisect_left(positions, index)
            while True:
                j = tree.rightmost_above(j, h.alloc.t)
                if j < 0:
                    break
                other = entries[positions[j]][3]
                if other is not h and h.size.same_as(other.size, tolerance) and _still_allocated(other, h):
                    break
            if j >= 0 and (choice is None or positions[j] > choice[0]):
                choice = (positions[j], key, j)
        if choice is None:
            continue
        position, key, j = choice
        released[key].set(j, -1.0)  # chosen for reuse: never again
        other = entries[position][3]
        first_use = spans[id(h)][0][1]
        last_use = spans[id(other)][1][1]
        free = other.first_free()
        here = h.alloc.location
        freed = f"freed at {line(free.location, here)}" if free is not None else "never freed"
        message = (f"`{h.name}` ({_size_text(h)}) could reuse `{other.name}`'s buffer: `{other.name}` is last used by "
                   f"{what(last_use)} at {line(last_use.location, here)}, before the first use of `{h.name}` by "
                   f"{what(first_use)} at {line(first_use.location, here)}, and is still allocated ({freed})")
        related = [
            Related(f"`{other.name}` is allocated here", other.alloc.location),
            Related(f"last use of `{other.name}`: {what(last_use)}", last_use.location),
            Related(f"first use of `{h.name}`: {what(first_use)}", first_use.location),
        ]
        extra = {"reuses_object_id": other.obj_id} if other.obj_id is not None else {}
        yield make("GL003", h.alloc.location, message, h, related, reuses=other.name, **extra)
