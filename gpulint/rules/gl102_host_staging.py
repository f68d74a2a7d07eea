from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Related
from gpulint.history import Op, Unit
from gpulint.rules.common import make
from gpulint.rules.registry import RuleSettings, rule


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

    ## Fix safety
    Creating the tensor with `device=` is safe for deterministic factories; for random ones it
    is offered as unsafe because the CUDA generator gives different numbers than the CPU one.
    """
    for timeline in unit.timelines:
        for event in timeline.events:
            if event.op is not Op.COPY or not event.detail.startswith("host-factory:"):
                continue
            factory = event.detail.split(":", 1)[1]
            message = (f"`{factory}(...)` builds a tensor on the host only for `{event.api}` to copy it to the device; "
                       f"create it there with `device=`")
            yield make("GL102", event.location, message, None, [Related("the copy to the device", event.location)],
                       factory=factory)
