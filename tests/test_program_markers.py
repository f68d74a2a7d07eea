"""The GPU test programs say, in one marker grammar, what static analysis finds (`expect:`) and what
a run finds (`run:`).  On any machine: static analysis finds exactly its markers, and for every rule
both sides judge the two agree line for line, so a GPU run that passes its own test also agrees
with static analysis."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import assert_markers_match, markers
from gpulint.rules import RULES, Source

PROGRAMS = Path(__file__).resolve().parent / "gpu_programs"
CUDA_PROGRAMS = sorted(PROGRAMS.glob("*.cu"))
# Rules that judge histories on both sides.  GL008 is not among them although its source is the
# histories: statically it compares a compile-time maximum with the extents written, in a run the
# bytes touched, which the source does not show.
BOTH_SIDES = sorted(code for code, rule in RULES.items() if rule.source is Source.HISTORIES and code != "GL008")


def _only(found: Counter, codes: list[str]) -> Counter:
    return Counter({key: n for key, n in found.items() if key[0] in codes})


@pytest.mark.parametrize("program", CUDA_PROGRAMS, ids=lambda p: p.name)
def test_static_findings_are_the_expect_markers(program: Path) -> None:
    assert_markers_match(program)


@pytest.mark.parametrize("program", [p for p in CUDA_PROGRAMS if markers(p, "run")], ids=lambda p: p.name)
def test_static_and_run_markers_agree_on_rules_both_sides_judge(program: Path) -> None:
    static, run = _only(markers(program, "expect"), BOTH_SIDES), _only(markers(program, "run"), BOTH_SIDES)
    assert static == run, f"static only {sorted(static - run)}, run only {sorted(run - static)}"


def test_the_markers_cover_every_rule_a_run_judges() -> None:
    """Each rule a run can find (all but the file-level ones) has a GPU program that shows it."""
    shown = {code for p in CUDA_PROGRAMS for code, _ in markers(p, "run")}
    judged = {code for code, rule in RULES.items() if rule.source in (Source.HISTORIES, Source.TRACE)}
    assert judged - shown <= {"GL102", "GL104"}, sorted(judged - shown)  # PyTorch-only; pools: torch_programs
