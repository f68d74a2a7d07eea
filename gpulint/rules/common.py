"""Small helpers rules share to phrase evidence: how to name an event and build a Finding."""
from __future__ import annotations

from gpulint.findings import Finding, Location, Related
from gpulint.history import Distance, Event, ObjectHistory, Op
from gpulint.models import torch as torch_models
from gpulint.rules.registry import RULES


def line(place: Location, anchor: Location) -> str:
    """`line 12` in the finding's own file; `scan.cu:91` in another (a run spans files); the
    function where a binary has no line information."""
    if not place.has_line:
        return f"in `{place.symbol}`"
    if place.path == anchor.path:
        return f"line {place.row}"
    return f"{place.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{place.row}"


def what(event: Event) -> str:
    """`phase1<<<>>>`, `helper()`, `cudaMemcpy` — how a message names an event."""
    if event.op is Op.LAUNCH and event.detail == "loop":
        return f"the loop at line {event.location.row}"
    if event.op is Op.LAUNCH:
        return f"`{event.api}<<<>>>`"
    if event.op is Op.HOST:
        return f"the host's `{event.api}`"
    if event.op is Op.CALL:
        api = event.api.strip("`")
        return f"`{api}`" if api.endswith(")") or not api.isidentifier() and "." not in api else f"`{api}()`"
    return f"`{event.api}`"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("h") else f"{n} {word}s"


def launches_phrase(n: int, history: ObjectHistory | None = None) -> str:
    """`3 kernel launches`, or `3 loops` where the timeline counts loops (static Python)."""
    return plural(n, (history.timeline.distance if history is not None else Distance.LAUNCHES).value)


def gap_distance(history: ObjectHistory, gap, *ends: Event) -> int:
    """The launches in `gap` that count against `history`.

    A framework tensor (reference counted, from a run) is freed when the statement that drops its
    last reference ends, and allocated by the statement that makes it: launches of that same
    statement (`x = torch.tanh(x @ x)` frees the old `x` only after `tanh`) cannot be avoided by
    any edit, so only launches on other lines count.
    """
    if not history.freed_by_statement:
        return gap.distance
    rows = {(end.location.path, end.location.row) for end in ends}
    return sum(e.launches for e in gap if (e.location.path, e.location.row) not in rows)


def gap_related(history: ObjectHistory, events: list[Event], limit: int = 3) -> list[Related]:
    """Related entries for the launches in a gap (the first few)."""
    related = [Related(f"{what(e)} runs while `{history.name}` waits", e.location) for e in events[:limit]]
    if len(events) > limit:
        related.append(Related(f"... and {len(events) - limit} more", events[limit].location))
    return related


def make(code: str, location: Location, message: str, history: ObjectHistory | None,
         related: list[Related] | tuple[Related, ...] = (), **properties) -> Finding:
    props = {"origin": history.origin if history is not None else "static", **properties}
    if history is not None and history.obj_id is not None:
        props["object_id"] = history.obj_id
    if history is not None and history.size is not None:
        props.setdefault("size", history.size.value if history.size.value is not None else history.size.expr)
    return Finding(code=code, name=RULES[code].name, message=message, location=location,
                   related=tuple(related), obj=history.name if history is not None else None, properties=props)


def lifetime_candidates(histories, *, allow_members: bool = False):
    """Device objects whose lifetime within one scope the rules can judge."""
    for h in histories:
        if h.alloc is None or h.kind.host_memory or h.kind.allocator_owned or h.incomplete:
            continue
        if h.member and not allow_members:
            continue
        yield h


# Factories and in-place ops that draw from a random generator: moving one past another draw, or
# onto another device's generator, changes the numbers the program computes (the models' column).
RANDOM_DRAWS = torch_models.RANDOM_DRAWS


def draws_random(event: Event) -> bool:
    return event.opaque or event.api.rsplit(".", 1)[-1].strip("()`") in RANDOM_DRAWS

