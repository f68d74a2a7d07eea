from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Op, Unit
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
    Removing an unused allocation together with its copies, memsets and free is safe when
    nothing else reads the pointer; moving a guarded allocation under its guard is unsafe.
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
            yield make("GL004", h.alloc.location, message, h, related, unused=True)
            continue
        if h.member or h.alloc.detail == "derived":
            continue  # members: guards across functions do not compare; a computed value is not an allocation to move
        if any(t.event.loops != h.alloc.loops for t in uses):
            continue  # a guard inside a loop: moving the allocation under it would repeat it
        common = set(uses[0].event.guards)
        for touch in uses[1:]:
            common &= set(touch.event.guards)
        common = {g for g in common if not any(g == a or g.same_test(a) for a in h.alloc.guards)}
        if not common:
            continue
        # The outermost guard shared by every use that the allocation lacks.
        guard = next(g for g in uses[0].event.guards if g in common)
        arm = "" if guard.branch == 0 else "the else branch of "
        message = (f"`{h.name}` is allocated unconditionally at line {h.alloc.location.row} but every use is under "
                   f"{arm}`if ({guard.condition})` at line {guard.location.row}")
        related = [Related(f"guard of every use of `{h.name}`", guard.location),
                   *(Related(f"use of `{h.name}`: {what(t.event)}", t.event.location) for t in uses[:3])]
        yield make("GL004", h.alloc.location, message, h, related, guarded_by=guard.condition)
