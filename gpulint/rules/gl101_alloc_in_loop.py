from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Op, Unit
from gpulint.rules.common import make, size_unit
from gpulint.rules.registry import RuleSettings, rule


@rule("GL101", "alloc-in-loop", "Driver-level allocation inside a loop with a loop-invariant size",
      languages=("cuda", "python"))
def alloc_in_loop(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags `cudaMalloc` (also managed, pitched and pinned host allocations) inside a loop when
    the size does not change from one iteration to the next and the pointer goes to the same
    variable each time. In Python: raw allocations (Numba `cuda.device_array`, cuda-python
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
    Hoisting the allocation and its free out of the loop is unsafe: the loop body may rely on
    a fresh (or differently placed) buffer each iteration.
    """
    for timeline in unit.timelines:
        for event in timeline.events:
            if event.op is Op.FLUSH and event.loops:
                loop = timeline.loops.get(event.loops[-1])
                if loop is None:
                    continue
                message = (f"`{event.api}()` inside the loop at line {loop.location.row} empties the allocator's cache "
                           f"every iteration, so the next allocations go back to the driver")
                yield make("GL101", event.location, message, None, [Related("loop", loop.location)])
    for h in unit.histories:
        alloc = h.alloc
        if alloc is None or not alloc.loops or h.kind in ("async", "tensor") or h.incomplete:
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
        unit_name = size_unit(h)
        size = "size" if h.size is None else (
            f"{h.size.value} {unit_name}" if h.size.value is not None else f"`{h.size.expr}` {unit_name}")
        frees = [f for f in h.frees if loop.id in f.loops]
        message = (f"`{alloc.api}` of `{h.name}` inside the loop at line {loop.location.row} allocates the same {size} "
                   f"every iteration")
        if frees:
            message += f" and `{frees[0].api}` at line {frees[0].location.row} frees it again"
        related = [Related("loop", loop.location), *(Related(f"`{f.api}` of `{h.name}` in the same loop", f.location) for f in frees[:1])]
        yield make("GL101", alloc.location, message, h, related)
