"""Every Python fixture's findings, over all rules, are exactly its `# expect:` markers."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, actual_findings, expected_findings

PYTHON_FIXTURES = sorted((FIXTURES / "python").rglob("*.py"))
RULE_DIRS = ["GL001", "GL002", "GL004", "GL006", "GL007", "GL008", "GL101", "GL102", "GL103"]


def _id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


@pytest.mark.parametrize("fixture", PYTHON_FIXTURES, ids=_id)
def test_fixture_findings_match_markers(fixture: Path) -> None:
    expected = expected_findings(fixture)
    actual = actual_findings(fixture)
    missing = expected - actual
    unexpected = actual - expected
    assert not missing and not unexpected, f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"


@pytest.mark.parametrize("code", RULE_DIRS)
def test_every_rule_has_three_positive_and_three_negative_fixtures(code: str) -> None:
    folder = FIXTURES / "python" / code
    positives = sorted(folder.glob("pos_*.py"))
    negatives = sorted(folder.glob("neg_*.py"))
    assert len(positives) >= 3 and len(negatives) >= 3
    for p in positives:
        assert code in {c for c, _ in expected_findings(p)}, f"{p.name} expects no {code}"
    for n in negatives:
        assert not expected_findings(n), f"{n.name} is a negative fixture but expects findings"


def test_python_fixtures_compile() -> None:
    for path in PYTHON_FIXTURES:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
