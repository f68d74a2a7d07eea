"""Every CUDA fixture's findings, over all rules, are exactly its `// expect:` markers."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, assert_markers_match, assert_rule_fixtures

CUDA_FIXTURES = sorted((FIXTURES / "cuda").rglob("*.cu"))
RULE_DIRS = ["GL001", "GL002", "GL003", "GL004", "GL005", "GL006", "GL007", "GL008", "GL101", "GL103"]


@pytest.mark.parametrize("fixture", CUDA_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_fixture_findings_match_markers(fixture: Path) -> None:
    assert_markers_match(fixture)


@pytest.mark.parametrize("code", RULE_DIRS)
def test_every_rule_has_three_positive_and_three_negative_fixtures(code: str) -> None:
    assert_rule_fixtures("cuda", code, ".cu")
