from __future__ import annotations

import bisect
from typing import Iterator

from gpulint.findings import Applicability, Edit, Finding, Fix, Related
from gpulint.fixes import placement
from gpulint.fixes.editor import editor_for
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
    member name across the program (`gpulint check DIR` reads the files as one): a
    `cudaFree(p->buf)` anywhere frees every `buf`, and a struct returned by value does not
    make its members escape.

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
    Unsafe. The free (written like the program's own free of that pointer, e.g.
    `CHECK(cudaFree(d_a));`) is inserted before each leaking `return`, and before the closing
    brace when the function falls off its end; a braceless `if (...) return -1;` becomes
    `if (...) { cudaFree(d_a); return -1; }`.
    """
    allocations = _allocations_by_name(unit)
    for h in unit.histories:
        if h.alloc is None or h.escaped or h.incomplete or h.kind.reference_counted or h.kind.allocator_owned:
            continue  # framework arrays are freed by reference counting
        if h.member:
            if not h.frees:
                message = f"`{h.name}` is allocated at line {h.alloc.location.row} and never freed anywhere in the program"
                yield make("GL005", h.alloc.location, message, h, [])
            continue
        leaks: list[Event] = []
        # Exits after a free that runs whenever the allocation does are covered: only those
        # between the allocation and that free are judged (all exits, for each allocation, was
        # quadratic in a function that checks each of its allocations with a `return`).
        always = set(h.alloc.guards)
        covered_after = min((f.t for f in h.frees if guards_within(f.guards, always)), default=float("inf"))
        for exit_ in h.timeline.exits_between(h.alloc.t, covered_after):
            if _exclusive(h.alloc, exit_):
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
        finding = make("GL005", h.alloc.location, message, h, related)
        finding.defer_fix(_free_before_exits, unit, h, leaks, allocations)
        yield finding


def _allocations_by_name(unit: Unit) -> dict[tuple[int, str], list[int]]:
    """(scope, name) -> the times that name is allocated, in order."""
    found: dict[tuple[int, str], list[int]] = {}
    for h in unit.histories:
        if h.alloc is not None:
            found.setdefault((id(h.timeline), h.name), []).append(h.alloc.t)
    for times in found.values():
        times.sort()
    return found


def _rebound(allocations: dict[tuple[int, str], list[int]], h: ObjectHistory, exit_: Event) -> bool:
    """Whether `h`'s name holds something else by `exit_`: another allocation of the same scope
    (`cudaMalloc(&p, n); ... cudaMalloc(&p, n); return;`) or another value (`p = nullptr;`)."""
    times = allocations.get((id(h.timeline), h.name), [])
    if any(h.alloc.t <= t < exit_.t for t in h.overwritten):
        return True  # `p = nullptr;` in between: a free there would free something else
    return bisect.bisect_left(times, exit_.t) - bisect.bisect_right(times, h.alloc.t) > 0


def _free_before_exits(unit: Unit, h: ObjectHistory, leaks: list[Event],
                       allocations: dict[tuple[int, str], list[int]]) -> Fix | None:
    """Insert the free before each exit that leaks `h`."""
    source, path, alloc = unit.source, h.alloc.location.path, h.alloc
    if source is None or alloc.stmt_start is None:
        return None
    free = editor_for(unit).free_statement(source, h)
    if free is None:
        return None
    edits = []
    for exit_ in leaks:
        if _rebound(allocations, h, exit_):
            return None  # at this exit the name holds a later allocation: freeing it would free that one
        if not set(alloc.loops) <= set(exit_.loops):
            # Allocated in a loop, leaking after it: one free there would free only the last
            # iteration's buffer (and the loop's variable may be out of scope).
            return None
        if exit_.detail == "end":
            # The closing brace of the function: the allocation must be in its outermost block.
            pos = h.timeline.end_byte
            if pos is None or alloc.guards or alloc.loops or not placement.starts_line(source, pos) \
                    or not placement.same_block(source, h.timeline, alloc.stmt_start, pos, False):
                return None
            indent = placement.indentation(source, alloc.stmt_start).decode()
            edits.append(Edit(path, placement.line_start(source, pos), placement.line_start(source, pos),
                              f"{indent}{free}\n"))
            continue
        start, end = exit_.stmt_start, exit_.stmt_end
        if start is None or end is None or not placement.same_block(source, h.timeline, alloc.stmt_start, start, False, "later"):
            return None  # the pointer's name may be out of scope there
        if placement.starts_line(source, start) and placement.statement_boundary_before(source, start, False):
            indent = placement.indentation(source, start).decode()
            edits.append(Edit(path, placement.line_start(source, start), placement.line_start(source, start),
                              f"{indent}{free}\n"))
        elif placement.statement_boundary_before(source, start, False):  # `{ cudaFree(a); return -1; }`
            edits.append(Edit(path, start, start, f"{free} "))
        else:  # `if (err) return -1;`: the return becomes a block that frees first
            edits.append(Edit(path, start, end, f"{{ {free} {source[start:end].decode('utf-8', 'replace')} }}"))
    return Fix(f"free `{h.name}` before {'each exit' if len(edits) > 1 else 'the exit'} that leaks it",
               Applicability.UNSAFE, tuple(edits))
