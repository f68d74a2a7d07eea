from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import ObjectHistory, Unit, UseSpan
from gpulint.rules.common import lifetime_candidates, make, what
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
    return free.t > later.alloc.t


@rule("GL003", "redundant-allocation", "New allocation could reuse an earlier buffer", languages=("cuda",))
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
        if h.escaped or h.size is None or h.kind not in ("device", "managed"):
            continue
        if h.use_spans():
            by_scope[id(h.timeline)].append(h)
    for objects in by_scope.values():
        yield from _one_pass(objects, tolerance)


def _one_pass(objects: list[ObjectHistory], tolerance: float) -> Iterator[Finding]:
    spans: dict[int, tuple[UseSpan, UseSpan]] = {}
    entries: list[tuple[int, int, int, ObjectHistory]] = []
    for h in objects:
        s = h.use_spans()
        spans[id(h)] = (s[0], s[-1])
        entries.append((s[0].start, 0, h.alloc.t, h))  # its first use
        entries.append((s[-1].end, 1, h.alloc.t, h))  # its last use; on ties a "last" sorts after a "first"
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    state = {id(h): "initial" for h in objects}
    reused: set[int] = set()
    for index in range(len(entries) - 1, -1, -1):
        t, kind, _, h = entries[index]
        if kind == 1:
            state[id(h)] = "in use"
            continue
        state[id(h)] = "done"
        # The nearest object to the left whose last use precedes this first use.
        for j in range(index - 1, -1, -1):
            tj, kj, _, other = entries[j]
            if kj != 1 or state[id(other)] != "initial" or id(other) in reused or other is h:
                continue
            if tj >= t:
                continue
            if not h.size.same_as(other.size, tolerance) or not _still_allocated(other, h):
                continue
            reused.add(id(other))
            first_use = spans[id(h)][0].first.event
            last_use = spans[id(other)][1].last.event
            free = other.first_free()
            freed = f"freed at line {free.location.row}" if free is not None else "never freed"
            message = (f"`{h.name}` ({_size_text(h)}) could reuse `{other.name}`'s buffer: `{other.name}` is last used by "
                       f"{what(last_use)} at line {last_use.location.row}, before the first use of `{h.name}` by "
                       f"{what(first_use)} at line {first_use.location.row}, and is still allocated ({freed})")
            related = [
                Related(f"`{other.name}` is allocated here", other.alloc.location),
                Related(f"last use of `{other.name}`: {what(last_use)}", last_use.location),
                Related(f"first use of `{h.name}`: {what(first_use)}", first_use.location),
            ]
            extra = {"reuses_object_id": other.obj_id} if other.obj_id is not None else {}
            yield make("GL003", h.alloc.location, message, h, related, reuses=other.name, **extra)
            break
