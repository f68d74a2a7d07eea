from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Unit
from gpulint.rules.common import gap_related, launches_phrase, lifetime_candidates, make, what
from gpulint.rules.registry import RuleSettings, rule


@rule("GL002", "late-deallocation", "Object freed long after its last use", has_threshold=True,
      languages=("cuda", "python"))
def late_deallocation(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a GPU object whose last use is followed by one or more kernel launches (the
    threshold, default 1) before it is freed — or, when it is never freed and does not leave
    its scope, before the scope ends.

    ## Why is this bad?
    The buffer is dead but still holds device memory while later kernels run: DrGPUM's "late
    deallocation" pattern, often the single largest contributor to a program's peak.

    ## Example
    ```cuda
    phase1<<<grid, block>>>(d_a, d_b);   // last use of d_a
    phase2<<<grid, block>>>(d_b, d_c);
    cudaFree(d_a);
    ```

    ## Use instead
    ```cuda
    phase1<<<grid, block>>>(d_a, d_b);
    cudaFree(d_a);
    phase2<<<grid, block>>>(d_b, d_c);
    ```

    ## Fix safety
    Moving `cudaFree` up to just after the last use is safe when nothing between reads the
    pointer; gpulint offers it as unsafe because a host-side alias may still be used. In
    Python, `del name` after the last use is offered the same way.
    """
    threshold = settings.threshold("GL002")
    for h in lifetime_candidates(unit.histories):
        spans = h.use_spans()
        if not spans:
            continue
        last = spans[-1]
        free = h.first_free()
        if free is not None:
            if free.t < last.end:
                continue  # freed inside the loop that uses it: judged per iteration elsewhere
            end_t, end_what = free.t, f"freed at line {free.location.row}"
            end_related = Related(f"`{h.name}` is freed here", free.location)
        elif not h.frees and not h.escaped and h.timeline.end is not None:
            end_t = h.timeline.end_t
            end_what = f"never freed before the end of `{h.timeline.name}` at line {h.timeline.end.row}"
            end_related = Related(f"`{h.timeline.name}` ends here", h.timeline.end)
        else:
            continue
        gap = h.timeline.launches_between(last.end, end_t, last.last.event, *([free] if free is not None else []))
        distance = sum(e.launches for e in gap)
        if distance < threshold:
            continue
        use = last.last.event
        message = (f"`{h.name}` is last used by {what(use)} at line {use.location.row} but {end_what}, "
                   f"after {launches_phrase(distance, h)}")
        related = [Related(f"last use of `{h.name}`: {what(use)}", use.location), end_related, *gap_related(h, gap)]
        yield make("GL002", h.alloc.location, message, h, related, distance=distance)
