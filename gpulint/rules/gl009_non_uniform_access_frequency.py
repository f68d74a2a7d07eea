from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding
from gpulint.history import Unit
from gpulint.rules.common import make
from gpulint.rules.registry import RuleSettings, rule

# Coefficient of variation of per-element access counts above which access is "non-uniform".
CV_LIMIT = 0.20


@rule("GL009", "non-uniform-access-frequency", "Some elements of an object are accessed far more than others",
      languages=("cuda", "python"), needs_trace=True)
def non_uniform_access_frequency(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    With a trace recorded at `--level full`: flags an object whose accessed elements have
    access counts with a coefficient of variation (standard deviation / mean) above 20%, and
    shows a histogram of the counts.

    ## Why is this bad?
    A few hot elements (a lookup table's common entries, a stencil's halo, the first rows of
    an embedding) are fetched from device memory over and over while the rest is touched
    rarely: DrGPUM's "non-uniform access frequency" pattern. The hot slice fits in shared
    memory or an L2 persistence window; the cold rest could be smaller, offloaded or
    recomputed.

    ## Example
    ```cuda
    // every thread reads lut[0..15] on each step; the other 65,520 entries once
    apply<<<g, b>>>(d_lut, d_in, d_out);
    ```

    ## Use instead
    ```cuda
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = d_lut;        // keep the hot entries in L2
    attr.accessPolicyWindow.num_bytes = 16 * sizeof(float);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    ```
    or stage the hot slice in `__shared__` memory.

    ## Fix safety
    No fix: where the hot data should live is a design decision.
    """
    measured = [h for h in unit.histories if h.measured is not None and getattr(h.measured, "counts", None) is not None]
    if not measured:
        return
    from gpulint.dynamic.bitmaps import histogram, variation

    for h in measured:
        cv, used = variation(h.measured.counts)
        if cv <= CV_LIMIT:
            continue
        message = (f"access counts of `{h.name}` vary by {cv:.0%} (coefficient of variation over {used.size:,} accessed "
                   f"elements; mean {used.mean():.1f}, max {used.max():.0f}): hot elements could live in shared memory "
                   f"or an L2 persistence window")
        yield make("GL009", h.alloc.location, message, h, [], coefficient_of_variation=round(cv, 4),
                   histogram=histogram(used))
