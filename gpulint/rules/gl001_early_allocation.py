from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Finding, Fix, Related
from gpulint.fixes.builders import move_allocation_down
from gpulint.history import Event, ObjectHistory, Op, Unit
from gpulint.rules.common import (draws_random, gap_distance, gap_related, launches_phrase, lifetime_candidates, line,
                                  make, what)
from gpulint.rules.registry import RuleSettings, rule


@rule("GL001", "early-allocation", "Object allocated long before its first use", has_threshold=True,
      languages=("cuda", "python"))
def early_allocation(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a GPU allocation that is made one or more kernel launches (the threshold, default 1)
    before the first kernel that uses it.

    ## Why is this bad?
    The buffer occupies device memory while unrelated kernels run, raising the peak for
    nothing: DrGPUM's "early allocation" pattern. Copies and memsets that only initialise the
    buffer are not uses; they can move together with the allocation.

    ## Example
    ```cuda
    cudaMalloc(&d_b, bytes);
    cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice);
    phase1<<<grid, block>>>(d_a);          // d_b waits
    phase2<<<grid, block>>>(d_a, d_b);     // first use of d_b
    ```

    ## Use instead
    ```cuda
    phase1<<<grid, block>>>(d_a);
    cudaMalloc(&d_b, bytes);
    cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice);
    phase2<<<grid, block>>>(d_a, d_b);
    ```

    ## Fix safety
    Moving the allocation (and its initialising copies and memsets in the same block) down to
    just before the first thing that touches the buffer is unsafe: the host data a copy reads
    may change in between. A random factory (`torch.randn`) moved past anything that may draw
    from the same generator is display-only: the program would see other numbers. Nothing is
    offered when the first use is in a block the
    allocation cannot enter without running more or less often (another branch arm, a
    braceless `if`), or when something in between touches what the moved statements touch.
    """
    threshold = settings.threshold("GL001")
    for h in lifetime_candidates(unit.histories):
        spans = h.use_spans()
        if not spans:
            continue
        first = spans[0]
        gap = h.timeline.launches_between(h.alloc.t, first.start, first.first.event)
        distance = gap_distance(h, gap, h.alloc, first.first.event)
        if distance < threshold:
            continue
        use = first.first.event
        message = (f"`{h.name}` is allocated at {line(h.alloc.location, h.alloc.location)} but first used by "
                   f"{what(use)} at {line(use.location, h.alloc.location)}, after {launches_phrase(distance, h)}")
        related = [Related(f"first use of `{h.name}`: {what(use)}", use.location), *gap_related(h, gap)]
        finding = make("GL001", h.alloc.location, message, h, related, distance=distance)
        finding.defer_fix(_move_down, unit, h, use)
        yield finding


def _move_down(unit: Unit, h: ObjectHistory, use: Event) -> Fix | None:
    """Move the allocation and its initialising writes to just before the first use."""
    if unit.source is None:
        return None
    edits = move_allocation_down(unit.source, unit.histories, h, use)
    if edits is None:
        return None
    message = f"move the allocation of `{h.name}` down to just before its first use"
    # Only a random draw needs the scan of what the move passes (for every fix it was quadratic).
    if draws_random(h.alloc) and any(h.alloc.t < e.t < use.t and e.op in (Op.ALLOC, Op.CALL, Op.LAUNCH)
                                     for e in h.timeline.events):
        # Anything it moves past may draw from the same generator (a loop, a model's dropout), or
        # (a call of a module) change the state it computes with: the program would see other
        # numbers.  Shown, never applied.
        why = "it may compute other values" if h.alloc.opaque else "it would draw other random numbers"
        return Fix(f"{message} ({why})", Applicability.DISPLAY_ONLY, tuple(edits))
    return Fix(message, Applicability.UNSAFE, tuple(edits))
