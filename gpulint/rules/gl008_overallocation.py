from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Edit, Finding, Fix, Related
from gpulint.fixes import placement
from gpulint.history import ObjectHistory, Op, Size, Unit
from gpulint.rules.common import lifetime_candidates, make, size_unit, what
from gpulint.rules.registry import RuleSettings, rule


@rule("GL008", "overallocation", "Buffer sized by a compile-time maximum but used with a smaller extent",
      languages=("cuda", "python"))
def overallocation(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Statically: flags an allocation whose size is built only from compile-time constants
    (a `MAX_N` macro, a `constexpr`) while every copy and memset on the object uses one
    smaller size, usually a runtime count, and every kernel that uses the object is passed
    that smaller extent (a name of it appears among the launch arguments). With a trace: flags an object of which fewer than
    80% of the elements were ever touched, with DrGPUM's fragmentation metric.

    ## Why is this bad?
    The difference between the maximum and the size the program actually uses is reserved
    for nothing on every run.

    ## Example
    ```cuda
    #define MAX_N (1 << 24)
    cudaMalloc(&d_x, MAX_N * sizeof(float));
    cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice);
    ```

    ## Use instead
    ```cuda
    cudaMalloc(&d_x, n * sizeof(float));
    ```

    ## Fix safety
    Shrinking the size to the runtime extent is unsafe (a kernel may index past it) and is
    offered only when every name in the new size is in scope at the allocation; otherwise
    the fix is display-only.
    """
    for h in lifetime_candidates(unit.histories):
        size = h.size
        if size is None or size.value is None or not size.constant_only:
            continue
        touches = [t for t in h.touches if not t.by_alloc]
        # Copies and memsets (CUDA) and slice uses `x[:n]` (Python) carry the extent they touch.
        extents = [t for t in touches if t.event.op in (Op.COPY, Op.MEMSET) or (t.use and t.size is not None)]
        if not extents or any(t.size is None or not t.offset_zero for t in extents):
            continue
        first = extents[0].size
        if not all(t.size.same_as(first) for t in extents):
            continue
        if first.value is not None and first.value >= size.value:
            continue
        # The kernels must be told the smaller extent too: each use receives a name of it
        # (`fir<<<...>>>(d_taps, ntaps)`); otherwise a kernel may fill the rest of the buffer.
        extent_names = first.names - size.names
        uses = [t for t in touches if t.use]
        if not extent_names or not uses or not all(extent_names & t.event.names for t in uses):
            continue
        unit_name = size_unit(h)
        shown = f"`{first.expr}`" if first.value is None else f"{first.value} {unit_name} (`{'`, `'.join(sorted(extent_names))}`)"
        accesses = "slice" if unit_name == "elements" else "copy and memset"
        message = (f"`{h.name}` is allocated with a compile-time maximum ({size.value} {unit_name}) but every "
                   f"{accesses} uses {shown}")
        related = [Related(f"{what(t.event)} uses {shown}", t.event.location) for t in extents[:3]]
        finding = make("GL008", h.alloc.location, message, h, related, runtime_size=first.expr, allocated=size.value)
        finding.fix = _shrink(unit, h, first)
        yield finding


def _shrink(unit: Unit, h: ObjectHistory, extent: Size) -> Fix | None:
    """Allocate the extent every access uses, written as the accesses write it."""
    source = unit.source
    if source is None or h.size is None or h.size.span is None or extent.span is None:
        return None
    written = source[extent.span[0]:extent.span[1]].decode("utf-8", "replace")
    edit = Edit(h.alloc.location.path, h.size.span[0], h.size.span[1], written)
    in_scope = all(placement.defined_before(source, h.timeline, name, h.alloc.stmt_start)
                   for name in placement.names_in(written)) and h.alloc.stmt_start is not None
    # Names that only exist after the allocation: show the change, let a person move things.
    applicability = Applicability.UNSAFE if in_scope else Applicability.DISPLAY_ONLY
    return Fix(f"allocate `{written}` instead of the maximum", applicability, (edit,))
