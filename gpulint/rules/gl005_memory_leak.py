from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Event, ObjectHistory, Unit, guards_within
from gpulint.rules.common import make
from gpulint.rules.registry import RuleSettings, rule


def _exclusive(alloc: Event, exit_: Event) -> bool:
    """The exit lies in another arm of a branch the allocation is in: no path joins them."""
    arms = {g.id: g.branch for g in alloc.guards}
    return any(g.id in arms and arms[g.id] != g.branch for g in exit_.guards)


def _covered(h: ObjectHistory, exit_: Event) -> bool:
    """A free runs before the exit on every path that went through the allocation."""
    allowed = set(exit_.guards) | set(h.alloc.guards)
    return any(free.t < exit_.t and guards_within(free.guards, allowed) for free in h.frees)


@rule("GL005", "memory-leak", "Object not freed on some path to the end of its scope", languages=("cuda", "python"))
def memory_leak(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a device allocation that some path through its function leaves without freeing,
    when the pointer does not leave the function (returned, stored in a member, a global or
    an out-parameter, or handed to code gpulint cannot see). Struct members are tracked by
    member name across the file: a `cudaFree(p->buf)` anywhere frees every `buf`.

    ## Why is this bad?
    Leaked device memory stays reserved until the process ends; in a long-running service or
    a loop it accumulates until allocations fail. Error paths that `return` early are the
    usual culprit.

    ## Example
    ```cuda
    cudaMalloc(&d_a, bytes);
    if (n == 0) return -1;        // d_a leaks here
    work<<<g, b>>>(d_a, n);
    cudaFree(d_a);
    ```

    ## Use instead
    ```cuda
    cudaMalloc(&d_a, bytes);
    if (n == 0) { cudaFree(d_a); return -1; }
    ```

    ## Fix safety
    Inserting `cudaFree` before each uncovered exit is safe when the pointer is not used
    after the exit; offered as unsafe.
    """
    for h in unit.histories:
        if h.alloc is None or h.escaped or h.incomplete or h.kind in ("tensor", "raw"):
            continue  # framework arrays are freed by reference counting
        if h.member:
            if not h.frees:
                message = f"`{h.name}` is allocated at line {h.alloc.location.row} and never freed anywhere in this file"
                yield make("GL005", h.alloc.location, message, h, [])
            continue
        leaks: list[Event] = []
        for exit_ in h.timeline.exits():
            if exit_.t <= h.alloc.t or _exclusive(h.alloc, exit_):
                continue
            if {g.id for g in exit_.guards} & h.checked_by:
                continue  # the allocation failed on this path: nothing to free
            if not _covered(h, exit_):
                leaks.append(exit_)
        if not leaks:
            continue
        if not h.frees:
            end = leaks[-1]
            message = f"`{h.name}` is allocated at line {h.alloc.location.row} and never freed"
            if end.detail == "end":
                message += f" before the end of `{h.timeline.name}` at line {end.location.row}"
        else:
            lines = ", ".join(str(e.location.row) for e in leaks[:5])
            kinds = "return" if all(e.detail == "return" for e in leaks) else "exit"
            message = (f"`{h.name}` is allocated at line {h.alloc.location.row} but not freed on the path through the "
                       f"{kinds}{'s' if len(leaks) > 1 else ''} at line{'s' if len(leaks) > 1 else ''} {lines}")
        related = [Related(f"`{h.name}` is still allocated when {'the function ends' if e.detail == 'end' else 'this returns'}",
                           e.location) for e in leaks[:5]]
        related += [Related(f"`{h.name}` is freed here, but not on that path", f.location) for f in h.frees[:2]]
        yield make("GL005", h.alloc.location, message, h, related)
