from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Location
from gpulint.history import PoolSample, Unit
from gpulint.rules.common import make
from gpulint.rules.registry import RuleSettings, Source, rule

# Reserved bytes at least this much above the live peak make a finding (vDNN++).
OVERHEAD_LIMIT = 0.20


@rule("GL104", "pool-fragmentation", "A memory pool reserves much more than the program ever has live",
      languages=("cuda", "python"), source=Source.TRACE)
def pool_fragmentation(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    With a trace that records a pool or caching allocator (PyTorch's, CuPy's, a
    `cudaMemPool`): flags a run whose peak reserved bytes exceed the peak of live (allocated)
    bytes by 20% or more. `gpulint report` shows an offset plan that fits the same objects
    in less.

    ## Why is this bad?
    The difference is memory the process holds but cannot use: blocks split and cached in
    sizes later requests do not fit (vDNN++). Other processes and larger batches cannot have
    it.

    ## Example
    ```python
    for step in range(steps):
        x = torch.randn(sizes[step % 7], 1024, device="cuda")   # ever-changing sizes
        loss = model(x).sum()
    ```

    ## Use instead
    ```python
    x = torch.empty(max(sizes), 1024, device="cuda")            # one buffer, sliced
    for step in range(steps):
        xs = x[: sizes[step % 7]].normal_()
        loss = model(xs).sum()
    ```
    or `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.

    ## Fix safety
    No fix: the offset plan in `gpulint report` shows what is achievable.
    """
    by_pool: dict[str, list[PoolSample]] = {}
    for sample in unit.pools:
        by_pool.setdefault(sample.pool, []).append(sample)
    for name, samples in sorted(by_pool.items()):
        reserved = max(s.reserved for s in samples)
        # A sampling collector also gives the allocator's own peak of allocated bytes.
        live = max(s.allocated_peak or s.allocated for s in samples)
        if live <= 0 or reserved < (1 + OVERHEAD_LIMIT) * live:
            continue
        overhead = (reserved - live) / live
        message = (f"the {name} pool reserved {reserved} bytes at its peak but at most {live} bytes were live "
                   f"({overhead:.0%} more than needed)")
        yield make("GL104", Location(unit.path, 1, 1), message, None, [], pool=name, reserved_peak=reserved,
                   live_peak=live, overhead_percent=round(100 * overhead, 2))
