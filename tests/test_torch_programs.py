"""`gpulint run -- python prog.py` on small PyTorch programs, one pattern each, on CPU tensors
(the collector sees CPU and CUDA tensors alike): the run's findings in the program must be
exactly its `# run: GLxxx` markers, by code and line."""
from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("torch")

from gpulint.config import Settings  # noqa: E402
from gpulint.dynamic.analyze import analyze  # noqa: E402
from gpulint.dynamic.collectors import pyrun  # noqa: E402
from gpulint.rules import RULES  # noqa: E402

PROGRAMS = Path(__file__).resolve().parent / "torch_programs"
MARKER = re.compile(r"#\s*run:\s*(GL\d{3})")


def markers(source: Path) -> Counter:
    return Counter((m.group(1), i) for i, line in enumerate(source.read_text().splitlines(), 1)
                   for m in MARKER.finditer(line))


def traced(program: Path, trace: Path) -> list:
    """Run the program as `gpulint run -- python program` does (in this process: torch is
    imported once for all the programs), and analyse its trace."""
    argv, path = list(sys.argv), list(sys.path)
    try:
        assert pyrun.main(["-o", str(trace), "--", str(program)]) == 0
    finally:
        sys.argv[:], sys.path[:] = argv, path
    return analyze(trace, Settings(), sorted(RULES)).findings


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py")))
def test_run_finds_exactly_the_pattern(program: str, tmp_path: Path) -> None:
    source = PROGRAMS / program
    found = traced(source, tmp_path / "t.jsonl")
    got = Counter((f.code, f.location.row) for f in found if Path(f.location.path).name == program)
    assert got == markers(source), [(f.code, f.location.path, f.location.row, f.message) for f in found]


def test_measured_figures(tmp_path: Path) -> None:
    over = next(f for f in traced(PROGRAMS / "gl008_over.py", tmp_path / "a.jsonl") if f.code == "GL008")
    assert over.properties["accessed_percent"] == 10.0  # rows 0-99 of 1000
    hot = next(f for f in traced(PROGRAMS / "gl009_hot.py", tmp_path / "b.jsonl") if f.code == "GL009")
    assert hot.properties["coefficient_of_variation"] > 5  # row 0 is hit 1,001 times, the others once
    slices = next(f for f in traced(PROGRAMS / "gl010_slices.py", tmp_path / "c.jsonl") if f.code == "GL010")
    assert slices.properties["slices"] == 4
