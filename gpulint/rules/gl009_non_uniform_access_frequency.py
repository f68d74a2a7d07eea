from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding
from gpulint.history import Unit
from gpulint.rules.common import make
from gpulint.rules.registry import RuleSettings, Source, rule

# Coefficient of variation of per-element access counts above which access is "non-uniform".
CV_LIMIT = 0.20


@rule("GL009", "non-uniform-access-frequency", "Some elements of an object are accessed far more than others",
      languages=("cuda", "python"), source=Source.TRACE)
def non_uniform_access_frequency(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    With a trace recorded at `--level full`: flags an object whose access counts vary by more
    than 20% (coefficient of variation, standard deviation / mean), measured as DrGPUM does:
    within each launch (counts start at zero at every GPU API; the median over launches), or
    across the slices one kernel's launches touch (see GL010), whichever is larger. Shows a
    histogram of the run's counts.

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
    measured = [h for h in unit.histories
                if h.measured is not None and (h.measured.counts is not None or h.measured.launch_counts)]
    if not measured:
        return
    from gpulint.measures import histogram, kernel_slices, slice_variation, variation

    for h in measured:
        info = h.measured
        cv, how, extra = _variation(info, kernel_slices, slice_variation, variation)
        if cv is None or cv <= CV_LIMIT:
            continue
        used = variation(info.counts)[1] if info.counts is not None else None
        message = f"access counts of `{h.name}` vary by {cv:.0%} {how}: hot elements could live in shared memory " \
                  f"or an L2 persistence window"
        if used is not None and used.size:
            message += f" (over the run: {used.size:,} elements accessed, mean {used.mean():.1f}, max {used.max():.0f})"
        yield make("GL009", h.alloc.location, message, h, [], coefficient_of_variation=round(cv, 4),
                   histogram=histogram(used) if used is not None else [], **extra)


def _variation(info, kernel_slices, slice_variation, variation) -> tuple[float | None, str, dict]:
    """DrGPUM's measure: the variation within each launch (counts start at zero at every GPU
    API), or across the slices a kernel's launches touch, whichever is larger; a trace with the
    run's totals only gives the variation of those."""
    per_launch = sorted(cv for _, cv, accessed in info.launch_counts if accessed >= 2)
    found: list[tuple[float, str, dict]] = []
    if per_launch:
        median = per_launch[len(per_launch) // 2]
        found.append((median, f"within its launches (the median over {len(per_launch)} launches of the coefficient "
                              f"of variation over the elements each touched)",
                      {"measure": "per-launch", "launches_measured": len(per_launch)}))
    slices = kernel_slices(info) if info.per_launch else None
    if slices is not None:
        across = slice_variation(info, slices)
        if across is not None:
            found.append((across, f"across the {len(slices.bits)} slices that `{slices.kernel}` touches one per launch "
                                  f"(coefficient of variation of the access totals per slice)",
                          {"measure": "slices", "slices": len(slices.bits), "kernel": slices.kernel}))
    if not found and info.counts is not None:
        cv, used = variation(info.counts)
        found.append((cv, f"over the run (coefficient of variation over {used.size:,} accessed elements)",
                      {"measure": "whole-run"}))
    if not found:
        return None, "", {}
    return max(found, key=lambda item: item[0])
