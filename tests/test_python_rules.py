"""Every Python fixture's findings, over all rules, are exactly its `# expect:` markers."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, assert_markers_match, assert_rule_fixtures

PYTHON_FIXTURES = sorted((FIXTURES / "python").rglob("*.py"))
RULE_DIRS = ["GL001", "GL002", "GL004", "GL006", "GL007", "GL008", "GL101", "GL102", "GL103"]


@pytest.mark.parametrize("fixture", PYTHON_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_fixture_findings_match_markers(fixture: Path) -> None:
    assert_markers_match(fixture)


@pytest.mark.parametrize("code", RULE_DIRS)
def test_every_rule_has_three_positive_and_three_negative_fixtures(code: str) -> None:
    assert_rule_fixtures("python", code, ".py")


def test_python_fixtures_compile() -> None:
    for path in PYTHON_FIXTURES:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
