from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Finding, Fix, Related
from gpulint.fixes.builders import empty_instead_of_filled, remove_call
from gpulint.history import Access, ObjectHistory, Op, Touch, Unit
from gpulint.rules.common import lifetime_candidates, line, make, what
from gpulint.rules.registry import RuleSettings, rule

_WRITE_OPS = (Op.COPY, Op.MEMSET)


def _covers(h: ObjectHistory, earlier: Touch, later: Touch) -> bool:
    """`later` writes every byte `earlier` wrote."""
    if later.definite and later.access & Access.FULL:
        return True  # `x.copy_(y)`, `x[:] = v`, `out=x`: every element, whatever the sizes say
    if not later.offset_zero or later.size is None or not later.definite:
        return False
    if h.size is not None and later.size.same_as(h.size):
        return True  # a full overwrite kills any earlier write
    if h.size is not None and later.size.value is not None and h.size.value is not None and later.size.value >= h.size.value:
        return True
    if not earlier.offset_zero or earlier.size is None:
        return False
    if later.size.value is not None and earlier.size.value is not None:
        return later.size.value >= earlier.size.value
    return later.size.same_as(earlier.size)  # by value: `n * 4` after `n = 50;` is another size


@rule("GL007", "dead-write", "Memset or copy overwritten before anything reads it", languages=("cuda", "python"))
def dead_write(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a memset or copy into a GPU object that a later memset or copy overwrites
    completely before any kernel, copy or library call reads the object.

    ## Why is this bad?
    The first write costs a full pass over device memory (and, for host-to-device copies, PCIe
    bandwidth) and its result is never seen: DrGPUM's "dead write" pattern. Zero-filling a
    buffer that is then filled from the host is the common case.

    ## Example
    ```cuda
    cudaMemset(d_a, 0, bytes);
    cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice);
    ```

    ## Use instead
    ```cuda
    cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice);
    ```

    ## Fix safety
    Removing the dead write is safe when the later write really covers every byte on every
    path; gpulint checks sizes and branches, so the fix is marked safe. In Python
    `torch.zeros` → `torch.empty` is safe under the same condition.
    """
    for h in lifetime_candidates(unit.histories):
        for first, later in h.consecutive_touches(_WRITE_OPS):
            if not (first.access & Access.WRITE) or first.use:
                continue
            if later.use or later.access & Access.READ:
                continue
            if later.by_alloc:
                continue
            if later.event.loops != first.event.loops or not set(later.event.guards) <= set(first.event.guards):
                continue  # the later write does not run every time the first one does
            if not _covers(h, first, later):
                continue
            a, b = first.event, later.event
            message = (f"{what(a)} into `{h.name}` at {line(a.location, a.location)} is overwritten by {what(b)} at "
                       f"{line(b.location, a.location)} before anything reads it")
            related = [Related(f"{what(b)} overwrites `{h.name}`", b.location)]
            finding = make("GL007", a.location, message, h, related)
            if first.by_alloc:
                edit = empty_instead_of_filled(a.location.path, unit.source, a)
                label = "allocate with `empty`: every element is overwritten before it is read"
            else:
                edit = remove_call(a.location.path, unit.source, a)
                label = f"remove the dead {what(a)}"
            if edit is not None:
                finding.fix = Fix(label, Applicability.SAFE, (edit,))
            yield finding
