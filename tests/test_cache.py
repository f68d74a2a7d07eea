"""The result cache: unchanged files are not analysed again, anything that could change a result
misses, and a broken or unwritable cache never changes what is reported."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpulint import engine
from gpulint.config import Settings
from gpulint.output import FORMATS
from test_cli import LATE_FREE, run


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> tuple[Path, list]:
    for i in range(3):
        (tmp_path / f"k{i}.cu").write_text(LATE_FREE)
    (tmp_path / "t.py").write_text("import torch\n\n\ndef f(d):\n    x = torch.zeros(8).to(d)\n    return x\n")
    monkeypatch.chdir(tmp_path)
    analysed: list[str] = []
    real = engine.analyse_source

    def counting(path, display, data, settings, codes, result=None, **program):
        analysed.append(display)
        return real(path, display, data, settings, codes, result, **program)

    monkeypatch.setattr(engine, "analyse_source", counting)
    return tmp_path, analysed


def report(settings: Settings | None = None, cache: bool = True) -> str:
    found = engine.check_paths(["."], settings or Settings(jobs=1), cache=cache)
    return FORMATS["json"](found.findings)


def test_second_run_analyses_nothing_and_reports_the_same(project) -> None:
    folder, analysed = project
    first = report()
    assert sorted(analysed) == ["k0.cu", "k1.cu", "k2.cu", "t.py"]
    analysed.clear()
    assert report() == first and analysed == []
    cache = folder / ".gpulint_cache"
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert len(list((cache / "v1").iterdir())) == 4  # one entry per file


def test_what_changes_a_result_misses(project) -> None:
    folder, analysed = project
    report()
    analysed.clear()
    (folder / "k1.cu").write_text(LATE_FREE.replace("phase2<<<1, 32>>>(d_b);", "phase2<<<1, 32>>>(d_b);\n  "))
    report()
    assert analysed == ["k1.cu"]  # only the edited file
    analysed.clear()
    report(Settings(jobs=1, thresholds={"GL002": 3}))
    assert len(analysed) == 4  # another threshold
    analysed.clear()
    report(Settings(jobs=1, select=("GL002",)))
    assert len(analysed) == 4  # other rules (GL901 depends on which rules ran)


def test_no_cache_neither_reads_nor_writes(project) -> None:
    folder, analysed = project
    report(cache=False)
    report(cache=False)
    assert len(analysed) == 8 and not (folder / ".gpulint_cache").exists()


def test_corrupt_entries_are_misses(project) -> None:
    folder, analysed = project
    first = report()
    for entry in (folder / ".gpulint_cache" / "v1").iterdir():
        entry.write_text('{"key": ' if entry.name < "8" else json.dumps({"key": "x"}))
    analysed.clear()
    assert report() == first and len(analysed) == 4


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_unwritable_cache_is_not_an_error(project) -> None:
    folder, analysed = project
    (folder / ".gpulint_cache").mkdir()
    (folder / ".gpulint_cache").chmod(0o500)
    try:
        assert report() == report()
    finally:
        (folder / ".gpulint_cache").chmod(0o700)


def test_unwritable_cache_folder_is_not_an_error(project) -> None:
    folder, analysed = project
    (folder / ".gpulint_cache").write_text("a file where the folder should be")
    first = report()
    assert first == report() and len(analysed) == 8


def test_cli_no_cache_flag(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text(LATE_FREE)
    cached = run("check", "--format", "json", "a.cu", cwd=tmp_path)
    again = run("check", "--format", "json", "a.cu", cwd=tmp_path)
    assert cached.exit_code == again.exit_code == 1 and cached.output == again.output
    assert (tmp_path / ".gpulint_cache").is_dir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "a.cu").write_text(LATE_FREE)
    fresh = run("check", "--no-cache", "a.cu", cwd=tmp_path / "b")
    assert fresh.exit_code == 1 and not (tmp_path / "b" / ".gpulint_cache").exists()
