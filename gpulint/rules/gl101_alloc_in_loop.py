from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Finding, Fix, Related, human_bytes
from gpulint.fixes import placement
from gpulint.fixes.builders import (around_loop, directly_in, hoistable_names, move_statements,
                                    real_frees, remove_call)
from gpulint.fixes.editor import editor_for
from gpulint.history import Loop, ObjectHistory, Op, Unit
from gpulint.rules.common import make
from gpulint.rules.registry import RuleSettings, rule


@rule("GL101", "alloc-in-loop", "Driver-level allocation inside a loop with a loop-invariant size",
      languages=("cuda", "python"))
def alloc_in_loop(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags `cudaMalloc` (also managed, pitched and pinned host allocations) inside a loop when
    the size does not change from one iteration to the next and the pointer goes to the same
    variable each time. From a trace alone: a site that allocated the same size three times or
    more, each freed before the next one was made. In Python: raw allocations (Numba `cuda.device_array`, cuda-python
    `cudaMalloc`, `cupy.cuda.alloc`) and cache flushes (`torch.cuda.empty_cache()`) in loops;
    framework factories are not flagged because caching allocators absorb them.

    ## Why is this bad?
    `cudaMalloc` and `cudaFree` go to the driver, synchronise the device and cost time that
    grows with the size; a loop pays that on every iteration for a buffer that could be
    allocated once.

    ## Example
    ```cuda
    for (int it = 0; it < iters; ++it) {
        cudaMalloc(&d_tmp, bytes);
        step<<<g, b>>>(d_tmp);
        cudaFree(d_tmp);
    }
    ```

    ## Use instead
    ```cuda
    cudaMalloc(&d_tmp, bytes);
    for (int it = 0; it < iters; ++it) {
        step<<<g, b>>>(d_tmp);
    }
    cudaFree(d_tmp);
    ```
    or `cudaMallocAsync` / `cudaFreeAsync` from a stream-ordered pool.

    ## Fix safety
    Hoisting the allocation before the loop and its free after it is unsafe: the loop body
    may rely on a fresh (or differently placed) buffer each iteration. A pointer declared
    alone in the loop body (`float* tmp;`) moves out with it; nothing is offered when the
    allocation is under a branch inside the loop or its size uses names made in the loop.
    Dropping a cache flush is unsafe too: it never changes results, but it may have been
    there to hand memory to another process.
    """
    for timeline in unit.timelines:
        if not timeline.loops:
            continue  # no loop (a run's timeline): no flush in one
        for event in timeline.events:
            if event.op is Op.FLUSH and event.loops:
                loop = timeline.loops.get(event.loops[-1])
                if loop is None:
                    continue
                message = (f"`{event.api}()` inside the loop at line {loop.location.row} empties the allocator's cache "
                           f"every iteration, so the next allocations go back to the driver")
                finding = make("GL101", event.location, message, None, [Related("loop", loop.location)])
                edit = remove_call(event.location.path, unit.source, event)
                if edit is not None:
                    finding.fix = Fix(f"drop `{event.api}()`", Applicability.UNSAFE, (edit,))
                yield finding
    for h in unit.histories:
        alloc = h.alloc
        if alloc is None or not alloc.loops or h.kind.pooled or h.incomplete:
            continue  # caching allocators absorb framework factories
        if "[" in h.name or h.name.startswith("*"):
            continue  # a different slot each iteration: nothing to hoist
        loop = h.timeline.loops.get(alloc.loops[-1])
        if loop is None:
            continue
        root = h.name.split(".", 1)[0].split("->", 1)[0]
        if any(loop.id in e.loops for e in h.escapes if e is not alloc):
            continue  # stored somewhere each iteration (`ptrs.push_back(ptr)`): a new buffer per pass
        changing = set(alloc.names) & loop.modified
        if changing or (h.member and root in loop.modified and root != h.name):
            continue
        size = "size" if h.size is None else (f"{h.size.value} {h.size.unit.value}" if h.size.value is not None
                                              else f"`{h.size.expr}` {h.size.unit.value}")
        frees = [f for f in h.frees if loop.id in f.loops]
        message = (f"`{alloc.api}` of `{h.name}` inside the loop at line {loop.location.row} allocates the same {size} "
                   f"every iteration")
        if frees:
            message += f" and `{frees[0].api}` at line {frees[0].location.row} frees it again"
        related = [Related("loop", loop.location), *(Related(f"`{f.api}` of `{h.name}` in the same loop", f.location) for f in frees[:1])]
        finding = make("GL101", alloc.location, message, h, related)
        finding.defer_fix(_hoist, unit, h, loop, frees)
        yield finding
    yield from _run_reallocations(unit)


# A run's site must allocate this often (each freed before the next) to be "again and again".
RUN_MIN_ALLOCATIONS = 3


def _run_reallocations(unit: Unit) -> Iterator[Finding]:
    """A run: the same site allocating the same size again and again, each buffer freed before
    the next one is made (a loop's `cudaMalloc`/`cudaFree` pair, seen without its source)."""
    by_site: dict[tuple, list[ObjectHistory]] = {}
    for h in unit.histories:
        if not h.timeline.observed or h.alloc is None or h.kind.pooled or h.kind.host_memory \
                or h.incomplete or not h.bytes:
            continue  # caching allocators and stream-ordered pools absorb repeated allocations
        by_site.setdefault((h.alloc.location, h.bytes, h.alloc.api), []).append(h)
    for (location, nbytes, api), objects in by_site.items():
        if len(objects) < RUN_MIN_ALLOCATIONS:
            continue
        objects.sort(key=lambda h: h.alloc.t)
        freed_first = [a for a, b in zip(objects, objects[1:]) if a.frees and min(f.t for f in a.frees) < b.alloc.t]
        if len(freed_first) < RUN_MIN_ALLOCATIONS - 1:
            continue
        free = min(freed_first[0].frees, key=lambda f: f.t)
        message = (f"`{api}` here allocated {human_bytes(nbytes)} {len(objects)} times in the run, each freed "
                   f"(`{free.api}`) before the next: allocate it once and reuse it")
        yield make("GL101", location, message, objects[0], [Related(f"`{free.api}` frees each one", free.location)],
                   allocations=len(objects), total_bytes=nbytes * len(objects))


def _hoist(unit: Unit, h: ObjectHistory, loop: Loop, frees) -> Fix | None:
    """Allocate before the loop and free after it."""
    source, path, alloc = unit.source, h.alloc.location.path, h.alloc
    if source is None:
        return None
    edges = around_loop(path, source, loop)
    frees = [f for f in frees if f in real_frees(h)]
    if edges is None or not directly_in(source, path, alloc, loop, h.timeline) or len(frees) != len(real_frees(h)):
        return None
    editor = editor_for(unit)
    if not frees and not editor.drops_on_rebinding:
        return None  # a C loop that never frees: each pass may keep its buffer on purpose
    if len(frees) > 1 or (frees and not directly_in(source, path, frees[0], loop, h.timeline)):
        return None
    size_text = source[h.size.span[0]:h.size.span[1]].decode("utf-8", "replace") if h.size and h.size.span else None
    names = placement.names_in(size_text) if size_text is not None else set(alloc.names)
    # `float* d_tmp;` in the loop body moves out with the allocation.
    declaration = editor.hoisted_declaration(source, h.timeline, loop, h, alloc.stmt_start)
    if declaration is None:
        return None
    if not hoistable_names(source, h.timeline, names, loop):
        return None
    edits = move_statements(path, source, [alloc], edges[0], declaration)
    if edits is None:
        return None
    if frees:
        free_edits = move_statements(path, source, frees, edges[1])
        if free_edits is None:
            return None
        edits += free_edits
    return Fix(f"allocate `{h.name}` once before the loop" + (" and free it after" if frees else ""),
               Applicability.UNSAFE, tuple(edits))
