from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Unit
from gpulint.rules.common import make, what
from gpulint.rules.registry import RuleSettings, Source, rule


@rule("GL010", "structured-access", "Each launch touches its own disjoint slice of an object",
      languages=("cuda", "python"), source=Source.TRACE)
def structured_access(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    With a trace recorded at `--level access`: flags an object of which one kernel's
    successive launches (two or more) never touch a granule twice, so each launch works on a
    slice of its own, and those slices cover at least half of what the run touched. Judged per
    kernel: other kernels may touch the same slices (in Gram-Schmidt, all three kernels of an
    iteration touch row k of R).

    ## Why is this bad?
    The whole buffer is allocated up front although at any time only one slice is in use:
    DrGPUM's "structured access" pattern. Allocating per slice (or reusing one slice-sized
    buffer) divides the footprint by the number of slices.

    ## Example
    ```cuda
    cudaMalloc(&d_all, nchunks * chunk_bytes);
    for (int c = 0; c < nchunks; ++c)
        process<<<g, b>>>(d_all + c * chunk, chunk);
    ```

    ## Use instead
    ```cuda
    cudaMalloc(&d_chunk, chunk_bytes);
    for (int c = 0; c < nchunks; ++c)
        process<<<g, b>>>(d_chunk, chunk);
    ```

    ## Fix safety
    No fix: whether the slices' contents are needed later is for a person to decide.
    """
    measured = [h for h in unit.histories if h.measured is not None and h.measured.per_launch]
    if not measured:
        return
    from gpulint.measures import kernel_slices

    for h in measured:
        slices = kernel_slices(h.measured)
        if slices is None:
            continue
        largest = slices.largest_granules * h.measured.granularity
        message = (f"{len(slices.bits)} launches of `{slices.kernel}` each touch a disjoint slice of `{h.name}` "
                   f"({h.bytes} bytes; the largest slice is {min(largest, h.bytes or largest)} bytes): allocate per "
                   f"slice")
        related = [Related(f"{what(e)} touches its own slice", e.location) for e in slices.launches[:3]]
        yield make("GL010", h.alloc.location, message, h, related, slices=len(slices.bits), kernel=slices.kernel,
                   largest_slice_bytes=largest)
