from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Finding, Fix, Related
from gpulint.fixes import placement
from gpulint.fixes.builders import disturbed, move_statements, real_frees
from gpulint.fixes.editor import editor_for
from gpulint.history import Event, ObjectHistory, Unit
from gpulint.rules.common import gap_distance, gap_related, launches_phrase, lifetime_candidates, line, make, what
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
    Unsafe. The free moves to just after the last *access* (a copy back to the host
    counts, not only kernels), staying in its own block; no fix when the pointer escapes or
    another free (an error path) lies in between. In Python, `del name` is inserted after the
    last use instead; a host-side alias may still keep the tensor alive.
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
            end_t, end_what = free.t, f"freed at {line(free.location, h.alloc.location)}"
            end_related = Related(f"`{h.name}` is freed here", free.location)
        elif not h.frees and not h.escaped and h.timeline.end is not None:
            end_t = h.timeline.end_t
            end_what = f"never freed before the end of `{h.timeline.name}` at {line(h.timeline.end, h.alloc.location)}"
            end_related = Related(f"`{h.timeline.name}` ends here", h.timeline.end)
        else:
            continue
        # The last ACCESS, not only the last launch: a copy back to the host or a host read of
        # managed memory after the last kernel needs the buffer until then (DESIGN §3, GL002).
        use = last.last.event
        start_t = last.end
        later = [t.event for t in h.touches_between(start_t, end_t)]
        if later:
            use = max(later, key=lambda event: event.t)
            start_t = use.t
        gap = h.timeline.launches_between(start_t, end_t, use, *([free] if free is not None else []))
        end = free if free is not None else next(iter(h.timeline.exits()), None)
        distance = gap_distance(h, gap, use, *([end] if end is not None else []))
        if distance < threshold:
            continue
        verb = "used" if use is last.last.event else "accessed"
        message = (f"`{h.name}` is last {verb} by {what(use)} at {line(use.location, h.alloc.location)} but {end_what}, "
                   f"after {launches_phrase(distance, h)}")
        related = [Related(f"last {'use' if verb == 'used' else 'access'} of `{h.name}`: {what(use)}", use.location),
                   end_related, *gap_related(h, gap)]
        finding = make("GL002", h.alloc.location, message, h, related, distance=distance)
        finding.defer_fix(_free_earlier, unit, h, free)
        yield finding


def _free_earlier(unit: Unit, h: ObjectHistory, free: Event | None) -> Fix | None:
    """Move the free up to just after the last access (copies back to the host included), or in
    Python insert `del name` there."""
    if unit.source is None or h.escaped:
        return None
    path, source = h.alloc.location.path, unit.source
    end_t = free.t if free is not None else h.timeline.end_t
    accesses = [t.event for t in h.touches if t.event.t < end_t]
    if not accesses:
        return None
    last = max(accesses, key=lambda e: e.t)
    if free is not None and free in real_frees(h):
        if any(f is not free and last.t < f.t < free.t for f in h.frees):
            return None  # another free on the way (an error path): moving this one would free twice
        dest = placement.after(source, path, free, last, h.timeline)
        if dest is None or disturbed(unit.histories, [free], last.t, free.t):
            return None
        edits = move_statements(path, source, [free], dest)
        if edits is None:
            return None
        return Fix(f"free `{h.name}` right after its last access", Applicability.UNSAFE, tuple(edits))
    release = editor_for(unit).release_after(path, source, h, last)
    if release is None:
        return None
    what_releases, edit = release
    return Fix(f"{what_releases} right after its last use", Applicability.UNSAFE, (edit,))
