"""Metrics over what a run measured inside objects (DrGPUM §3.2, §5.2): the accessed fraction and
the fragmentation of the untouched bytes, per-element access-count variation, and whether
launches touch disjoint slices.

Below the rules and above the model: they read `AccessInfo` (history.py) and nothing of the trace,
so a rule asks for a measure without importing the dynamic side.  numpy is imported here, never by
history.py: static analysis does not pay for it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulint.history import AccessInfo


@dataclass
class Coverage:
    granules: int  # granules of the object
    touched: int  # granules any launch read or wrote
    untouched_ranges: list[tuple[int, int]]  # byte ranges [start, end) never touched
    largest_untouched: int  # bytes

    @property
    def accessed_fraction(self) -> float:
        return self.touched / self.granules if self.granules else 1.0

    @property
    def fragmentation(self) -> float:
        """DrGPUM eq. 1: 1 - largest untouched chunk / all untouched bytes (0: one hole, easy to
        shrink; near 1: scattered holes)."""
        untouched = sum(e - s for s, e in self.untouched_ranges)
        return 1.0 - self.largest_untouched / untouched if untouched else 0.0


def launch_bits(info: AccessInfo) -> list[np.ndarray]:
    """Per launch, the granules it read or wrote (padded to the object's granule count)."""
    granules = max(1, -(-info.size // info.granularity))
    out = []
    for _, read, write in info.per_launch:
        bits = np.zeros(granules, dtype=bool)
        for part in (read, write):
            if part is not None:
                n = min(granules, part.size)
                bits[:n] |= part[:n]
        out.append(bits)
    return out


def runs_of(mask: np.ndarray, value: bool) -> list[tuple[int, int]]:
    """[start, end) index ranges where `mask == value`."""
    selected = mask if value else ~mask
    edges = np.flatnonzero(np.diff(np.concatenate(([False], selected, [False])).astype(np.int8)))
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2])]


def touched(info: AccessInfo) -> np.ndarray | None:
    """Granules anything touched: a launch (bitmaps) or a copy or memset (byte ranges)."""
    bits = launch_bits(info)
    if not bits:
        return None
    union = np.any(bits, axis=0)
    g = info.granularity
    for start, end in info.extents:
        union[max(start, 0) // g:-(-min(end, info.size) // g)] = True
    return union


def coverage(info: AccessInfo) -> Coverage | None:
    union = touched(info)
    if union is None:
        return None
    g = info.granularity
    ranges = [(s * g, min(e * g, info.size)) for s, e in runs_of(union, False)]
    largest = max((e - s for s, e in ranges), default=0)
    return Coverage(len(union), int(union.sum()), ranges, largest)


def disjoint_launches(info: AccessInfo) -> bool:
    """Two or more launches touched the object, each something, and no granule twice."""
    bits = [b for b in launch_bits(info)]
    if len(bits) < 2 or not all(b.any() for b in bits):
        return False
    total = np.sum([b.sum() for b in bits])
    return int(total) == int(np.any(bits, axis=0).sum())


@dataclass
class Slices:
    """A kernel whose successive launches touch disjoint parts of an object: one slice per launch."""

    kernel: str
    launches: list  # the launch events, one per slice
    bits: list[np.ndarray]  # granules of each slice

    @property
    def largest_granules(self) -> int:
        return max(int(b.sum()) for b in self.bits)


def kernel_slices(info: AccessInfo) -> Slices | None:
    """DrGPUM's structured access, judged per kernel across its launches: the kernel whose
    launches (two or more that touched the object) never touch a granule twice, and together
    cover at least half of what the run touched in the object.  Other kernels may touch the same
    slices (GRAMSCHM's three kernels of an iteration all touch row k of R)."""
    per_launch = launch_bits(info)
    if not per_launch:
        return None
    touched_any = int(np.any(per_launch, axis=0).sum())
    by_kernel: dict[str, tuple[list, list[np.ndarray]]] = {}
    for (launch, _, _), bits in zip(info.per_launch, per_launch):
        if bits.any():  # a launch that touched nothing of it (the last, empty step) is no slice
            launches, slices = by_kernel.setdefault(launch.api, ([], []))
            launches.append(launch)
            slices.append(bits)
    best: Slices | None = None
    best_covered = 0
    for kernel, (launches, slices) in by_kernel.items():
        if len(slices) < 2:
            continue
        covered = int(np.any(slices, axis=0).sum())
        if int(sum(int(b.sum()) for b in slices)) != covered or 2 * covered < touched_any:
            continue
        if covered > best_covered:
            best, best_covered = Slices(kernel, launches, slices), covered
    return best


def slice_variation(info: AccessInfo, slices: Slices) -> float | None:
    """Coefficient of variation of the run's access totals per slice (DrGPUM's frequency over
    slices: GRAMSCHM's rows of R get fewer accesses as the factorisation goes on)."""
    if info.counts is None:
        return None
    granules = slices.bits[0].size
    element_granule = (np.arange(info.counts.size, dtype=np.int64) * info.count_granularity) // info.granularity
    keep = element_granule < granules
    per_granule = np.bincount(element_granule[keep], weights=info.counts[keep].astype(np.float64), minlength=granules)
    totals = np.array([per_granule[bits].sum() for bits in slices.bits])
    if totals.size < 2 or totals.mean() == 0:
        return None
    return float(totals.std() / totals.mean())


def count_variation(counts: np.ndarray) -> tuple[float, int]:
    """Coefficient of variation (std / mean) of the non-zero access counts, and how many there are
    (what the native collector stores per launch, and the analysis computes for a Python run's)."""
    cv, used = variation(counts)
    return cv, int(used.size)


def variation(counts: np.ndarray) -> tuple[float, np.ndarray]:
    """Coefficient of variation (std / mean) of the access counts of the accessed elements, and
    those counts."""
    used = counts[counts > 0].astype(np.float64)
    if used.size < 2 or used.mean() == 0:
        return 0.0, used
    return float(used.std() / used.mean()), used


def histogram(values: np.ndarray, bins: int = 8, width: int = 30) -> list[str]:
    """A small text histogram: `  12-15 accesses | ######      | 1,024 elements`."""
    if values.size == 0:
        return []
    lo, hi = float(values.min()), float(values.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
    counts, _ = np.histogram(values, bins=edges)
    top = max(int(counts.max()), 1)
    lines = []
    for n, a, b in zip(counts, edges, edges[1:]):
        bar = "#" * max(1 if n else 0, round(width * int(n) / top))
        lines.append(f"{a:>8.0f}-{b:<8.0f} {bar:<{width}} {int(n):,}")
    return lines
