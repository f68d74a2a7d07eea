"""The project, not the file (issue 18, point 2): `gpulint check FOLDER` analyses the files of a
folder as one program.  Each folder of tests/project_programs/ is one program; the findings over
all rules, file by file, are exactly the `// expect:` markers of its files."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import markers
from gpulint.config import Settings
from gpulint.engine import check_paths

PROGRAMS = Path(__file__).resolve().parent / "project_programs"
FOLDERS = sorted(p for p in PROGRAMS.iterdir() if p.is_dir())


def findings(target: Path, **settings) -> Counter:
    report = check_paths([str(target)], Settings(jobs=1, select=("GL",), **settings))
    assert not report.errors and not report.diagnostics, report.errors + report.diagnostics
    return Counter((Path(f.location.path).resolve().name, f.code, f.location.row) for f in report.findings)


def expected(folder: Path) -> Counter:
    found: Counter = Counter()
    for source in sorted(folder.iterdir()):
        if source.suffix in (".cu", ".cuh", ".h"):
            for (code, row), n in markers(source, "expect").items():
                found[(source.name, code, row)] += n
    return found


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_program_findings_match_markers(folder: Path) -> None:
    want, got = expected(folder), findings(folder)
    missing, unexpected = want - got, got - want
    assert not missing and not unexpected, f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"
