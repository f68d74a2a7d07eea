from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Edit, Finding, Fix, Related
from gpulint.fixes import placement
from gpulint.history import ObjectHistory, Op, Size, SizeUnit, Unit
from gpulint.rules.common import lifetime_candidates, make, what
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
    yield from _measured(unit)
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
        unit_name = size.unit.value
        shown = f"`{first.expr}`" if first.value is None else f"{first.value} {unit_name} (`{'`, `'.join(sorted(extent_names))}`)"
        accesses = "slice" if size.unit is SizeUnit.ELEMENTS else "copy and memset"
        message = (f"`{h.name}` is allocated with a compile-time maximum ({size.value} {unit_name}) but every "
                   f"{accesses} uses {shown}")
        related = [Related(f"{what(t.event)} uses {shown}", t.event.location) for t in extents[:3]]
        finding = make("GL008", h.alloc.location, message, h, related, runtime_size=first.expr, allocated=size.value)
        finding.defer_fix(_shrink, unit, h, first)
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


# Accessed fraction below which a measured object is over-allocated, and fragmentation above
# which its holes are too scattered to shrink (DrGPUM §3.2).
ACCESSED_LIMIT = 0.80
FRAGMENTATION_LIMIT = 0.80


def _measured(unit: Unit) -> Iterator[Finding]:
    """With a trace: objects of which the run touched less than 80%, in few large holes."""
    measured = [h for h in unit.histories if h.measured is not None and h.alloc is not None and not h.kind.allocator_owned]
    if not measured:
        return
    from gpulint.measures import coverage  # numpy only when a run measured something

    for h in measured:
        cov = coverage(h.measured)
        if cov is None or cov.accessed_fraction >= ACCESSED_LIMIT or cov.fragmentation >= FRAGMENTATION_LIMIT:
            continue
        untouched = sum(e - s for s, e in cov.untouched_ranges)
        shown = ", ".join(f"{s}-{e}" for s, e in cov.untouched_ranges[:3])
        more = f" and {len(cov.untouched_ranges) - 3} more" if len(cov.untouched_ranges) > 3 else ""
        message = (f"the run touched {cov.accessed_fraction:.0%} of `{h.name}` ({h.bytes} bytes); {untouched} bytes "
                   f"were never read or written (bytes {shown}{more}; fragmentation {cov.fragmentation:.2f})")
        yield make("GL008", h.alloc.location, message, h, [], accessed_percent=round(100 * cov.accessed_fraction, 2),
                   fragmentation=round(cov.fragmentation, 4), untouched_bytes=untouched,
                   untouched_ranges=[list(r) for r in cov.untouched_ranges[:20]])
