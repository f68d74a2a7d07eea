"""One finding per site and rule: a run repeats its allocation sites (a training loop makes the
same activations 200 times), and a finding per object buries the few sites whose fix lowers
the peak under thousands that say the same thing.

Findings of one rule at one place (the allocation site for object rules, the copy's for
transfer rules) become one finding: the evidence of the largest instance, the object count, the
total and largest bytes, and the peak saved by fixing the site (every object it made, together).
Zero-byte objects make no finding at all.  A group whose bytes and saving are both below
`min_bytes` is hidden; the caller says how many were.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from gpulint.dynamic.whatif import WhatIf
from gpulint.findings import Finding, human_bytes


@dataclass
class Grouped:
    shown: list[Finding]
    hidden: list[Finding]  # groups below `min_bytes`


def _key(f: Finding) -> tuple:
    loc = f.location
    return f.code, loc.path, loc.row, loc.symbol


def _bytes(f: Finding) -> int | None:
    value = f.properties.get("bytes")
    return value if isinstance(value, int) else None


def by_site(findings: list[Finding], model: WhatIf, min_bytes: int) -> Grouped:
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        if _bytes(f) == 0:
            continue  # a zero-byte object holds no memory: nothing to save
        groups.setdefault(_key(f), []).append(f)
    shown: list[Finding] = []
    hidden: list[Finding] = []
    actual = model.actual
    for members in groups.values():
        largest = max(members, key=lambda f: (_bytes(f) or 0, f.properties.get("peak_saved_bytes", 0)))
        sizes = [b for b in map(_bytes, members) if b is not None]
        if len(members) == 1:
            finding = largest
        else:
            saved = model.saving(members)
            finding = replace(largest, properties=dict(largest.properties))
            finding.properties.update(
                objects=len(members), total_bytes=sum(sizes), largest_bytes=max(sizes, default=0),
                peak_saved_bytes=int(saved), peak_saved_percent=round(100.0 * saved / actual, 2) if actual else 0.0,
                object_ids=[f.properties.get("object_id") for f in members[:50]])
            if sizes:
                finding.message += (f" ({len(members)} objects from this site, {human_bytes(sum(sizes))} in all; "
                                    f"the largest, shown, {human_bytes(max(sizes))})")
            else:
                finding.message += f" ({len(members)} times at this site)"
        total = sum(sizes) if sizes else None
        if len(members) == 1 and isinstance(finding.properties.get("total_bytes"), int):
            total = finding.properties["total_bytes"]  # a site-level finding (GL101, GL103 from a run)
        saved = finding.properties.get("peak_saved_bytes", 0)
        below = total is not None and total < min_bytes and saved < min_bytes
        (hidden if below else shown).append(finding)
    return Grouped(shown, hidden)
