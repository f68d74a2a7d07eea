from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Unit
from gpulint.rules.common import make, what
from gpulint.rules.registry import RuleSettings, rule


@rule("GL010", "structured-access", "Each launch touches its own disjoint slice of an object",
      languages=("cuda", "python"), needs_trace=True)
def structured_access(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    With a trace recorded at `--level access`: flags an object that two or more launches
    touch where no granule is touched by more than one launch, so each launch works on a
    slice of its own.

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
    measured = [h for h in unit.histories if h.measured is not None and getattr(h.measured, "per_launch", None)]
    if not measured:
        return
    from gpulint.dynamic.bitmaps import disjoint_launches, launch_bits

    for h in measured:
        if not disjoint_launches(h.measured):
            continue
        launches = [launch for launch, _, _ in h.measured.per_launch]
        largest = max(int(b.sum()) for b in launch_bits(h.measured)) * h.measured.granularity
        message = (f"{len(launches)} launches each touch a disjoint slice of `{h.name}` ({h.bytes} bytes; the largest "
                   f"slice is {min(largest, h.bytes or largest)} bytes): allocate per slice")
        related = [Related(f"{what(e)} touches its own slice", e.location) for e in launches[:3]]
        yield make("GL010", h.alloc.location, message, h, related, slices=len(launches), largest_slice_bytes=largest)
