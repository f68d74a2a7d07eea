from __future__ import annotations

from typing import Iterator

from gpulint.findings import Applicability, Finding, Fix, Related
from gpulint.fixes.builders import create_on_device
from gpulint.history import Access, Kind, Op, Unit
from gpulint.models.torch import TRACED_FACTORIES  # the factories that take `device=`, as a run names them
from gpulint.rules.common import RANDOM_DRAWS, make
from gpulint.rules.registry import RuleSettings, rule



# Factories of values the program already holds (`torch.tensor([1, 2])`): with `device=` the data
# still crosses from the host, so only a host temporary would be saved.
_FROM_PYTHON_DATA = {"tensor", "as_tensor", "from_numpy"}


@rule("GL102", "host-staging", "Tensor created on the host only to be copied to the device", languages=("python",))
def host_staging(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Flags a tensor made by a factory on the host (`torch.randn`, `torch.zeros`, `torch.arange`,
    ... without a CUDA `device=`) whose only purpose is to be moved to the device with
    `.to(device)` or `.cuda()`.

    ## Why is this bad?
    The values are generated in host memory, then copied over PCIe and the host tensor is
    thrown away: twice the allocations, a synchronous transfer, and host RAM for nothing. The
    factory can fill device memory directly.

    ## Example
    ```python
    noise = torch.randn(batch, 128).to(device)
    ```

    ## Use instead
    ```python
    noise = torch.randn(batch, 128, device=device)
    ```

    Not reported: `torch.tensor(data)` / `as_tensor` / `from_numpy` (the program's own values
    cross from the host either way; only a host temporary would be saved), staging that runs once
    (at module level or in `__init__`, outside a loop) and staging in an outer loop that runs a
    step loop inside (once per epoch).  A labelled review of 13 real code bases found none of those
    worth a change; what repeats every step, in the innermost loop or a function such as
    `forward`, was.

    In a run, the same holds of any host tensor a factory made whose only use is a copy to the
    device, wherever the copy is (an earlier line, another function).

    ## Fix safety
    Creating the tensor with `device=` is safe for deterministic factories; for random ones it
    is display-only (shown, never applied, not even with `--unsafe-fixes`): the CUDA generator
    gives different numbers than the CPU one, so the program would compute something else.
    Only the one-expression form (`factory(...).to(dev)`, `.cuda()`) is rewritten; a host
    tensor made on an earlier line, `.cuda(1)` and `.to(dev, non_blocking=True)` are left to
    a person.
    """
    for timeline in unit.timelines:
        if timeline.observed:
            continue  # a run's copies name no factory: its host tensors are judged below
        once = timeline.name == "<module>" or timeline.name.rsplit(".", 1)[-1] == "__init__"
        # Loops that hold another loop with events: an epoch loop around the step loop.
        outer = {e.loops[i] for e in timeline.events for i in range(len(e.loops) - 1)}
        for event in timeline.events:
            if event.op is not Op.COPY or not event.detail.startswith("host-factory:"):
                continue
            factory = event.detail.split(":", 1)[1]
            if factory.rsplit(".", 1)[-1] in _FROM_PYTHON_DATA or (once and not event.loops) \
                    or (event.loops and event.loops[-1] in outer):
                continue
            message = (f"`{factory}(...)` builds a tensor on the host only for `{event.api}` to copy it to the device; "
                       f"create it there with `device=`")
            finding = make("GL102", event.location, message, None, [Related("the copy to the device", event.location)],
                           factory=factory)
            edit = create_on_device(event.location.path, unit.source, event, factory) if unit.source else None
            if edit is not None:
                # The CUDA generator gives other numbers than the CPU one: shown, never applied.
                random = factory.rsplit(".", 1)[-1] in RANDOM_DRAWS
                finding.fix = Fix("create it on the device with `device=`" + (" (other random numbers)" if random else ""),
                                  Applicability.DISPLAY_ONLY if random else Applicability.SAFE, (edit,))
            yield finding
    yield from _run_host_staging(unit)


def _run_host_staging(unit: Unit) -> Iterator[Finding]:
    """A run's host tensors (kind `host`) that a factory made and nothing but copies to the
    device ever read."""
    for h in unit.histories:
        if h.kind is not Kind.HOST or h.alloc is None or h.alloc.api not in TRACED_FACTORIES:
            continue
        reads = [t for t in h.touches if t.access & Access.READ]
        if not reads or any(t.use or t.event.op is not Op.COPY or t.event.direction != "h2d" for t in reads):
            continue
        copy = reads[0].event
        factory = h.alloc.api
        where = "on the same line" if copy.location.row == h.alloc.location.row else f"at line {h.alloc.location.row}"
        message = (f"`{factory}(...)` {where} builds a tensor on the host only to copy it to the device; create it "
                   f"there with `device=`")
        yield make("GL102", copy.location, message, h, [Related("the host tensor is made here", h.alloc.location)],
                   factory=factory)
