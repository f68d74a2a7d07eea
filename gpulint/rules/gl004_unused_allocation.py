from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Edit, Finding, Fix, Related
from gpulint.fixes import placement
from gpulint.fixes.builders import disturbed, move_allocation_down, move_statements, real_frees, remove_call
from gpulint.fixes.editor import editor_for
from gpulint.history import Access, Guard, ObjectHistory, Op, Unit
from gpulint.rules.common import lifetime_candidates, make, what
from gpulint.rules.registry import RuleSettings, rule


@rule("GL004", "unused-allocation", "Object never used, or used only under a guard the allocation lacks",
      languages=("cuda", "python"))
def unused_allocation(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags an allocation that no kernel (or library call) ever uses, and an allocation whose
    every use sits under a condition that does not also guard the allocation.

    ## Why is this bad?
    The memory is reserved on every run but touched only by copies or memsets, or only on the
    runs where the condition holds (PyTorch's old `columns` buffer in convolutions was
    allocated on every call and used only for some kernel sizes).

    ## Example
    ```cuda
    cudaMalloc(&d_workspace, bytes);
    if (use_workspace) {
        reduce<<<g, b>>>(d_in, d_workspace);
    }
    ```

    ## Use instead
    ```cuda
    if (use_workspace) {
        cudaMalloc(&d_workspace, bytes);
        reduce<<<g, b>>>(d_in, d_workspace);
        cudaFree(d_workspace);
    }
    ```

    ## Fix safety
    Both fixes are unsafe. Removing an unused allocation takes its memsets, host-to-device
    copies and frees with it; a pointer still mentioned elsewhere (passed to a kernel that
    ignores it) is set to `nullptr` instead of being left uninitialised; nothing is offered
    when a copy reads the buffer back. Moving a guarded allocation puts it (with its
    initialising copies) just before the first use inside the guard and its free just after
    the last access there; nothing is offered for a braceless `if` body or when code outside
    the guard touches the buffer.
    """
    for h in lifetime_candidates(unit.histories, allow_members=True):
        if h.escaped:
            continue
        uses = h.uses
        if not uses:
            writes = [t.event for t in h.touches if t.event.op in (Op.COPY, Op.MEMSET)]
            message = f"`{h.name}` is allocated at line {h.alloc.location.row} but never used by any kernel"
            if writes:
                message += f" (only {what(writes[0])} at line {writes[0].location.row} touches it)"
            related = [Related(f"{what(e)} touches `{h.name}` but is not a use", e.location) for e in writes[:3]]
            finding = make("GL004", h.alloc.location, message, h, related, unused=True)
            finding.defer_fix(_remove, unit, h)
            yield finding
            continue
        if h.member or h.alloc.detail == "derived":
            continue  # members: guards across functions do not compare; a computed value is not an allocation to move
        if not uses[0].event.guards:
            continue  # some use is unguarded (always so in a run's history): no guard is common to all
        if any(t.event.loops != h.alloc.loops for t in uses):
            continue  # a guard inside a loop: moving the allocation under it would repeat it
        # The guards of the first use that every other use has too, or the same test (`if (ws)`
        # twice; in Python a conditional expression `b if ws else x` testing it), outermost first.
        common = list(uses[0].event.guards)
        for touch in uses[1:]:
            if not common:
                break  # some use is unguarded (always so in a run's history)
            common = [g for g in common if any(g == o or g.same_test(o) for o in touch.event.guards)]
        common = [g for g in common if not any(g == a or g.same_test(a) for a in h.alloc.guards)]
        if not common:
            continue
        # The outermost such guard the allocation lacks, an `if` statement's before an expression's.
        guard = next((g for g in common if g.stmt_start is not None), common[0])
        arm = "" if guard.branch == 0 else "the else branch of "
        message = (f"`{h.name}` is allocated unconditionally at line {h.alloc.location.row} but every use is under "
                   f"{arm}`if ({guard.condition})` at line {guard.location.row}")
        related = [Related(f"guard of every use of `{h.name}`", guard.location),
                   *(Related(f"use of `{h.name}`: {what(t.event)}", t.event.location) for t in uses[:3])]
        finding = make("GL004", h.alloc.location, message, h, related, guarded_by=guard.condition)
        finding.defer_fix(_under_guard, unit, h, guard)
        yield finding


def _remove(unit: Unit, h: ObjectHistory) -> Fix | None:
    """Remove the allocation, the copies and memsets into it, and its frees."""
    if unit.source is None:
        return None
    path, source = h.alloc.location.path, unit.source
    if any(t.access & Access.READ for t in h.touches):
        return None  # a copy back to the host reads it: removing that changes what the host sees
    edits = []
    for event in [t.event for t in h.touches if not t.by_alloc] + real_frees(h):
        edit = remove_call(path, source, event)
        if edit is None:
            return None
        edits.append(edit)
    alloc_edit = _remove_allocation(unit, path, source, h, edits)
    if alloc_edit is None:
        return None
    edits.append(alloc_edit)
    if len({(e.start, e.end) for e in edits}) != len(edits):
        return None
    return Fix(f"remove the unused allocation of `{h.name}`", Applicability.UNSAFE, tuple(edits))


def _remove_allocation(unit: Unit, path: str, source: bytes, h: ObjectHistory, other_edits: list) -> Edit | None:
    alloc = h.alloc
    # Other objects made by the same statement would go too.
    if any(e is not alloc and e.op is Op.ALLOC for e in h.timeline.statement_events(alloc.stmt_start)):
        return None
    return editor_for(unit).remove_allocation(path, source, h, other_edits)


def _under_guard(unit: Unit, h: ObjectHistory, guard: Guard) -> Fix | None:
    """Move the allocation (with its initialising writes) into the guarded block, before the first
    use, and its free after the last use."""
    if unit.source is None or any(guard not in t.event.guards for t in h.uses):
        return None  # some use is under another test of the same condition: no one block holds them all
    path, source = h.alloc.location.path, unit.source
    enter = frozenset({("if", guard.id, guard.branch)})
    uses = sorted((t.event for t in h.uses), key=lambda e: e.t)
    edits = move_allocation_down(source, unit.histories, h, uses[0], enter)
    frees = real_frees(h)
    if edits is None or len(frees) > 1:
        return None
    if frees:
        free = frees[0]
        last = max((t.event for t in h.touches), key=lambda e: e.t)
        free_dest = placement.after(source, path, free, last, h.timeline, enter)
        if free_dest is None or disturbed(unit.histories, [free], last.t, free.t):
            return None
        free_edits = move_statements(path, source, [free], free_dest)
        if free_edits is None:
            return None
        edits += free_edits
    return Fix(f"allocate `{h.name}` only where `{guard.condition}` holds", Applicability.UNSAFE, tuple(edits))
