"""Fixes are built when they are asked for (issue 19, point 2): a rule defers its fix
(`Finding.defer_fix`: a `LazyFix`, the builder and its inputs), the finding builds it the first time
`fix` is read, and a check whose output prints no fix builds none."""
from __future__ import annotations

import pickle
from pathlib import Path

from conftest import FIXTURES
from gpulint.config import Settings
from gpulint.engine import check_paths
from gpulint.findings import Applicability, Edit, Finding, Fix, LazyFix, Location, finding_to_dict
from gpulint.rules import RULES

EVERY_RULE = Settings(jobs=1, select=tuple(sorted(RULES)), min_bytes=0)


def _finding(fix: object = None) -> Finding:
    return Finding("GL001", "early-allocation", "m", Location("a.cu", 3, 1), fix=fix)  # type: ignore[arg-type]


def _fix(message: str = "move it") -> Fix:
    return Fix(message, Applicability.UNSAFE, (Edit("a.cu", 0, 1, ""),))


def test_a_lazy_fix_is_built_once_on_first_read() -> None:
    calls: list[str] = []

    def build(message: str) -> Fix:
        calls.append(message)
        return _fix(message)

    finding = _finding()
    finding.defer_fix(build, "move it")
    assert finding.fix_pending and calls == []
    assert finding.fix == _fix("move it") and calls == ["move it"]
    assert finding.fix == _fix("move it") and calls == ["move it"] and not finding.fix_pending


def test_a_refinement_runs_on_the_built_fix_and_reading_properties_builds_it() -> None:
    def withhold(finding: Finding, fix: Fix | None) -> Fix | None:
        finding.properties["fix_withheld"] = "edits a macro use"
        return None

    finding = _finding(LazyFix(_fix))
    finding.refine_fix(withhold)
    assert finding.fix_pending
    assert finding.properties == {"fix_withheld": "edits a macro use"}  # read first: it builds the fix
    assert finding.fix is None and not finding.fix_pending
    built = _finding(_fix())
    built.refine_fix(withhold)  # a fix given built is refined at once
    assert built.fix is None and built.properties == {"fix_withheld": "edits a macro use"}


def test_pickling_sends_the_built_fix_never_its_inputs() -> None:
    finding = _finding(LazyFix(_fix, "sent"))
    copy = pickle.loads(pickle.dumps(finding))
    assert not copy.fix_pending and copy.fix == _fix("sent") and copy == finding


def test_a_builder_that_raises_raises_at_every_read() -> None:
    def broken() -> Fix:
        raise ValueError("builder bug")

    finding = _finding(LazyFix(broken))
    for _ in range(2):
        try:
            finding.fix  # noqa: B018
        except ValueError:
            pass
        else:
            raise AssertionError("the builder's error was swallowed")
    assert finding.fix_pending


def test_a_check_without_fixes_builds_none_and_building_them_later_gives_the_same_findings() -> None:
    folder = str(FIXTURES / "cuda")
    eager = check_paths([folder], EVERY_RULE)
    lazy = check_paths([folder], EVERY_RULE, fixes=False)
    assert not any(f.fix_pending for f in eager.findings)
    pending = [f for f in lazy.findings if f.fix_pending]
    assert len(pending) > 20  # GL001, GL002, GL004, GL005, GL008, GL101, GL103 fixtures
    # Built after every file was analysed, in the report's order: what building them at once gave.
    assert [finding_to_dict(f) for f in lazy.findings] == [finding_to_dict(f) for f in eager.findings]
    assert sum(f.fix is not None for f in lazy.findings) > 20


def test_formats_without_fixes_ask_for_none(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from gpulint import engine
    from gpulint.cli import main

    (tmp_path / "a.cu").write_text((FIXTURES / "cuda" / "GL001" / "pos_loop_before_use.cu").read_text())
    asked: list[bool] = []
    real = engine.check_paths

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        asked.append(kwargs.get("fixes", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "check_paths", spy)
    monkeypatch.chdir(tmp_path)
    for fmt, wanted in (("github", False), ("concise", False), ("junit", False), ("json", True), ("sarif", True),
                        ("text", True)):
        asked.clear()
        CliRunner().invoke(main, ["check", "--no-cache", "--isolated", "--format", fmt, "a.cu"])
        assert asked == [wanted], fmt
