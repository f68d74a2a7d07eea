from __future__ import annotations

from collections import Counter
from typing import Iterator


from gpulint.findings import Applicability, Finding, Fix, Location, Related, human_bytes
from gpulint.fixes.builders import around_loop, directly_in, hoistable_names, move_statements
from gpulint.fixes.editor import editor_for
from gpulint.history import Access, Event, Kind, Loop, ObjectHistory, Op, Unit
from gpulint.rules.common import make, what
from gpulint.rules.registry import RuleSettings, rule


@rule("GL103", "loop-invariant-transfer", "Host-to-device copy of unchanged data inside a loop",
      languages=("cuda", "python"))
def loop_invariant_transfer(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a host-to-device copy inside a loop when nothing in the loop changes the host data,
    the size, or the destination pointer, and nothing in the loop writes the destination.
    From a trace alone: a site that copied identical host bytes to the device more than once
    (the collectors record a digest of each upload's source bytes, sampled above 64 KiB).

    ## Why is this bad?
    The same bytes cross PCIe on every iteration; the copy could run once before the loop.

    ## Example
    ```cuda
    for (int it = 0; it < iters; ++it) {
        cudaMemcpy(d_w, h_w, bytes, cudaMemcpyHostToDevice);
        apply<<<g, b>>>(d_w, d_x);
    }
    ```

    ## Use instead
    ```cuda
    cudaMemcpy(d_w, h_w, bytes, cudaMemcpyHostToDevice);
    for (int it = 0; it < iters; ++it) {
        apply<<<g, b>>>(d_w, d_x);
    }
    ```

    ## Fix safety
    Hoisting the copy before the loop is unsafe: gpulint cannot see writes to the host buffer
    through pointers it does not track. Nothing is offered when the copy is under a branch in
    the loop or uses a name that only exists inside it.
    """
    for h in unit.histories:
        if h.alloc is None or h.kind is Kind.PINNED or h.incomplete or not h.timeline.loops:
            continue  # no loops in its scope (a run's timeline has none): nothing is inside one
        for touch in h.touches:
            event = touch.event
            if event.op is not Op.COPY or event.direction != "h2d" or not event.loops or not touch.definite:
                continue
            loop = h.timeline.loops.get(event.loops[-1])
            # A transfer that allocates its destination (`w = h_w.to(dev)`) is one statement; any
            # other destination allocated in the loop is a fresh buffer each pass.
            transfer_alloc = h.alloc.stmt_start == event.stmt_start
            if loop is None or (loop.id in h.alloc.loops and not transfer_alloc):
                continue
            roots = {n.split(".", 1)[0] for n in event.names}
            if roots & loop.modified or set(event.names) & loop.modified or (roots - {event.detail}) & loop.written:
                continue
            if any(loop.id in e.loops for e in h.escapes):
                continue  # kept each iteration (`copies.append(cp.array(x))`): one copy per pass is the point
            writers = [t for t in h.touches if t is not touch and not t.by_alloc and loop.id in t.event.loops
                       and t.access & Access.WRITE]
            if writers:
                continue
            message = (f"{what(event)} into `{h.name}` inside the loop at line {loop.location.row} copies the same host "
                       f"data every iteration; nothing in the loop changes its source, size or destination")
            related = [Related("loop", loop.location)]
            readers = [t.event for t in h.touches if t.use and loop.id in t.event.loops]
            related += [Related(f"{what(e)} only reads `{h.name}`", e.location) for e in readers[:2]]
            finding = make("GL103", event.location, message, h, related)
            finding.defer_fix(_hoist_copy, unit, h, event, loop)
            yield finding
    yield from _run_repeated_uploads(unit)


def _run_repeated_uploads(unit: Unit) -> Iterator[Finding]:
    """A run: one site uploading host bytes it already uploaded (an equal digest and size)."""
    by_site: dict[Location, list[tuple[Event, ObjectHistory]]] = {}
    for h in unit.histories:
        if not h.timeline.observed or h.kind.host_memory:
            continue
        for touch in h.content_copies():
            event = touch.event
            if event.op is Op.COPY and event.direction == "h2d" and event.content and touch.access & Access.WRITE:
                by_site.setdefault(event.location, []).append((event, h))
    for location, uploads in by_site.items():
        contents = Counter((e.content, e.size.value if e.size else None) for e, _ in uploads)
        again = len(uploads) - len(contents)
        if again < 1:
            continue
        uploads.sort(key=lambda pair: pair[0].t)
        (content, nbytes), times = contents.most_common(1)[0]
        event, h = next(pair for pair in uploads if pair[0].content == content)
        amount = human_bytes(nbytes) if isinstance(nbytes, int) else "data"
        message = (f"{what(event)} here made {len(uploads)} uploads carrying only {len(contents)} distinct contents: "
                   f"{again} of them sent host bytes already on the device (the same {amount} {times} times); "
                   f"copy each once and keep the device copy")
        repeated = sum((n - 1) * (b or 0) for (_, b), n in contents.items())
        yield make("GL103", location, message, h, [Related(f"`{h.name}` is allocated here", h.alloc.location)],
                   uploads=len(uploads), distinct=len(contents), repeated_uploads=again, total_bytes=repeated)


def _hoist_copy(unit: Unit, h: ObjectHistory, copy: Event, loop: Loop) -> Fix | None:
    source, path = unit.source, copy.location.path
    if source is None:
        return None
    edges = around_loop(path, source, loop)
    if edges is None or not directly_in(source, path, copy, loop, h.timeline):
        return None
    names = editor_for(unit).hoisted_copy_names(source, h, copy, loop)
    if names is None or not hoistable_names(source, h.timeline, names, loop):
        return None
    edits = move_statements(path, source, [copy], edges[0])
    if edits is None:
        return None
    return Fix("copy once, before the loop", Applicability.UNSAFE, tuple(edits))
