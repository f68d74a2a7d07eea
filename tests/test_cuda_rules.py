"""Every CUDA fixture's findings, over all rules, are exactly its `// expect:` markers."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, actual_findings, expected_findings

CUDA_FIXTURES = sorted((FIXTURES / "cuda").rglob("*.cu"))
RULE_DIRS = ["GL001", "GL002", "GL003", "GL004", "GL005", "GL006", "GL007", "GL008", "GL101", "GL103"]


def _id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


@pytest.mark.parametrize("fixture", CUDA_FIXTURES, ids=_id)
def test_fixture_findings_match_markers(fixture: Path) -> None:
    expected = expected_findings(fixture)
    actual = actual_findings(fixture)
    missing = expected - actual
    unexpected = actual - expected
    assert not missing and not unexpected, f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"


@pytest.mark.parametrize("code", RULE_DIRS)
def test_every_rule_has_three_positive_and_three_negative_fixtures(code: str) -> None:
    folder = FIXTURES / "cuda" / code
    positives = sorted(folder.glob("pos_*.cu"))
    negatives = sorted(folder.glob("neg_*.cu"))
    assert len(positives) >= 3 and len(negatives) >= 3
    for p in positives:
        assert (code, ) in {(c,) for c, _ in expected_findings(p)}, f"{p.name} expects no {code}"
    for n in negatives:
        assert not expected_findings(n), f"{n.name} is a negative fixture but expects findings"
