from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.engine import check_file
from gpulint.rules import RULES
from gpulint.static.unknown import STRICT_ENV

# Unknown syntax is an error under the tests (pyflakes' switch): a test program with a statement a
# frontend has no lowering for fails instead of passing on a silent gap.  Child processes inherit it.
os.environ[STRICT_ENV] = "1"

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def every_rule_by_default(request, monkeypatch):
    """The tests judge each rule on small programs: `check` and `fix` without a selection run every
    rule and show findings of any size here.  Tests marked `real_defaults` see the shipped default
    (DEFAULT_SELECT and `--min-bytes`), which `test_defaults.py` checks."""
    if request.node.get_closest_marker("real_defaults") is None:
        import gpulint.cli

        monkeypatch.setattr(gpulint.cli, "DEFAULT_SELECT", ())
        monkeypatch.setattr(gpulint.cli, "_at_least", lambda findings, min_bytes: (findings, 0))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The one marker grammar of every test program, in a comment on the line a finding points at:
#   `// expect: GL001, GL002`  static analysis finds these here
#   `# run: GL004 run: GL004`  a run of the program finds these here (each clause counts once)
#   `# confirm: GL102 GL103`   `check --confirm` marks the static findings here confirmed
_MARKER = re.compile(r"\b(expect|run|confirm):((?:[\s,]*GL\d{3})+)")


def markers(path: Path, kind: str) -> Counter:
    """(code, line) multiset of the `kind:` markers (expect, run or confirm) in a program."""
    found: Counter = Counter()
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for match in _MARKER.finditer(line):
            if match.group(1) == kind:
                for code in re.findall(r"GL\d{3}", match.group(2)):
                    found[(code, row)] += 1
    return found


def expected_findings(path: Path) -> Counter:
    """(code, line) multiset from `// expect: GL001, GL002` markers."""
    return markers(path, "expect")


def actual_findings(path: Path, frontend: str = "tree-sitter", **settings) -> Counter:
    result = run_file(path, frontend=frontend, **settings)
    assert not result.diagnostics and not result.errors, result.diagnostics + result.errors
    return Counter((f.code, f.location.row) for f in result.findings)


def run_file(path: Path, frontend: str = "tree-sitter", **settings):
    codes = Settings(**settings).enabled_codes(sorted(RULES))
    return check_file(path, Settings(frontend=frontend, **settings), codes)


@pytest.fixture
def write(tmp_path):
    def _write(name: str, text: str | bytes) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
        return p

    return _write


def assert_markers_match(fixture: Path) -> None:
    """The fixture's findings over all rules are exactly its `expect:` markers."""
    expected = expected_findings(fixture)
    actual = actual_findings(fixture)
    missing, unexpected = expected - actual, actual - expected
    assert not missing and not unexpected, f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"


def assert_rule_fixtures(language: str, code: str, suffix: str) -> None:
    """At least three positive fixtures expecting `code` and three negatives expecting nothing."""
    folder = FIXTURES / language / code
    positives = sorted(folder.glob(f"pos_*{suffix}"))
    negatives = sorted(folder.glob(f"neg_*{suffix}"))
    assert len(positives) >= 3 and len(negatives) >= 3
    for p in positives:
        assert code in {c for c, _ in expected_findings(p)}, f"{p.name} expects no {code}"
    for n in negatives:
        assert not expected_findings(n), f"{n.name} is a negative fixture but expects findings"


def cli_in(cwd: Path, *args: str, stdin: str | None = None):
    """`gpulint ARGS` run in this process from folder `cwd` (click's runner; exceptions propagate)."""
    import os

    from click.testing import CliRunner

    from gpulint.cli import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)

