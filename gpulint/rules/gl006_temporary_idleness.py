from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Pairs, Related
from gpulint.history import Unit
from gpulint.rules.common import gap_distance, gap_related, launches_phrase, lifetime_candidates, line, make, what
from gpulint.rules.registry import RuleSettings, rule


@rule("GL006", "temporary-idleness", "Object idle across kernel launches between two uses", has_threshold=True,
      languages=("cuda", "python"))
def temporary_idleness(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a GPU object with gaps of one or more kernel launches (the threshold, default 1)
    between consecutive uses. One finding per object: the longest gap is in the message, and
    every gap is listed as evidence (a run can have thousands).

    ## Why is this bad?
    During the gap the object holds memory it does not need. Large idle objects are
    candidates for offloading to host memory (or recomputation) across the gap, as vDNN does
    for activations; small ones are usually fine, so raise the threshold
    (`--threshold GL006=N`) to see only long gaps.

    ## Example
    ```cuda
    encode<<<g, b>>>(d_x, d_code);       // use of d_x
    step1<<<g, b>>>(d_code);
    step2<<<g, b>>>(d_code);             // d_x idle
    decode<<<g, b>>>(d_code, d_x);       // next use of d_x
    ```

    ## Use instead
    Copy `d_x` to host (or recompute it) across the gap when it is large, or reorder the
    launches so its uses are adjacent.

    ## Fix safety
    No automatic fix: this is guidance.
    """
    threshold = settings.threshold("GL006")
    for h in lifetime_candidates(unit.histories):
        if (h.escaped and not h.kind.reference_counted) or h.ambiguous_uses:
            # A CUDA pointer held by code gpulint cannot see, or used through a descriptor or an
            # ambiguous alias: its gaps are not known. (A Python object that escapes is still
            # used only where its name is.)
            continue
        # Consecutive use spans (by index) and the bounds of the gap between each pair: uses in
        # different arms of one branch are not consecutive on any path, and the host touching
        # managed memory moves its pages to the host, which is not device idleness.
        pairs, gap_starts, gap_ends = h.consecutive_use_gaps()
        if not pairs:
            continue
        spans = h.use_spans()
        if h.freed_by_statement:  # same-statement launches do not count
            counts = [gap_distance(h, h.timeline.launches_between(spans[i].end, spans[i + 1].start),
                                   spans[i].last.event, spans[i + 1].first.event) for i in pairs]
        elif h.timeline.has_guards and any(spans[i].last.event.guards or spans[i + 1].first.event.guards for i in pairs):
            counts = [h.timeline.launches_between(spans[i].end, spans[i + 1].start, spans[i].last.event,
                                                  spans[i + 1].first.event).distance for i in pairs]
        elif hasattr(h.timeline, "launch_counts_arrays"):  # a run: count all gaps in one go, as arrays
            counts = h.timeline.launch_counts_arrays(gap_starts, gap_ends)
        else:  # no branches
            counts = h.timeline.launch_counts_between(gap_starts, gap_ends)
        # The gaps at or above the threshold (positions in `pairs`), the first of the longest, and
        # up to three others to show.
        if isinstance(counts, list):
            kept = [k for k, n in enumerate(counts) if n >= threshold]
            if not kept:
                continue
            chosen = max(kept, key=counts.__getitem__)
        else:
            kept = counts.__ge__(threshold).nonzero()[0]
            if not len(kept):
                continue
            chosen = int(kept[counts[kept].argmax()])
        distance = int(counts[chosen])
        others = [int(k) for k in kept[:4] if k != chosen][:3]
        before, after = spans[pairs[chosen]], spans[pairs[chosen] + 1]
        a, b = before.last.event, after.first.event
        gap = h.timeline.launches_between(before.end, after.start, a, b)
        message = (f"`{h.name}` is idle for {launches_phrase(distance, h)} between its use by {what(a)} at "
                   f"{line(a.location, h.alloc.location)} and its next use by {what(b)} at "
                   f"{line(b.location, h.alloc.location)}")
        if len(kept) > 1:
            message += f" ({len(kept)} idle gaps in all)"
        related = [Related(f"use of `{h.name}`: {what(a)}", a.location),
                   Related(f"next use of `{h.name}`: {what(b)}", b.location), *gap_related(h, gap)]
        for k in others:
            other_before, other_after = spans[pairs[k]], spans[pairs[k] + 1]
            related.append(Related(f"`{h.name}` is also idle after {what(other_before.last.event)} until "
                                   f"{what(other_after.first.event)}", other_after.first.event.location))
        # A run knows when the gaps are: the what-if takes the object out for exactly those stretches.
        when = {"idle_between": Pairs(_values(gap_starts, kept), _values(gap_ends, kept))} if h.timeline.observed \
            else {}
        yield make("GL006", h.alloc.location, message, h, related, distance=distance, idle_gaps=len(kept), **when)


def _values(values, index: list[int]):
    """`values[i]` for each i of `index` (an array when a run's bounds are arrays)."""
    if hasattr(values, "tolist"):
        return values[index]
    return [values[i] for i in index]
