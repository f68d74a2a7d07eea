"""`gpulint run -- python prog.py` on small PyTorch programs, one pattern each, on CPU tensors
(the collector sees CPU and CUDA tensors alike): the run's findings in the program must be
exactly its `# run: GLxxx` markers, by code and line."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import markers  # noqa: E402
from gpulint.config import Settings  # noqa: E402
from gpulint.dynamic.analyze import analyze  # noqa: E402
from gpulint.dynamic.collectors import pyrun  # noqa: E402
from gpulint.rules import RULES  # noqa: E402

PROGRAMS = Path(__file__).resolve().parent / "torch_programs"


def traced(program: Path, trace: Path) -> list:
    """Run the program as `gpulint run -- python program` does (in this process: torch is
    imported once for all the programs), and analyse its trace."""
    argv, path = list(sys.argv), list(sys.path)
    try:
        assert pyrun.main(["-o", str(trace), "--", str(program)]) == 0
    finally:
        sys.argv[:], sys.path[:] = argv, path
    return analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings


@pytest.fixture(params=["native", "mode"])
def driver(request, monkeypatch) -> str:
    """Both ways the collector sees ops: the C++ hook and the dispatch mode (its fallback)."""
    monkeypatch.setenv("GPULINT_TORCH_HOOK", request.param)
    return request.param


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py")))
def test_run_finds_exactly_the_pattern(program: str, driver: str, tmp_path: Path) -> None:
    source = PROGRAMS / program
    found = traced(source, tmp_path / "t.jsonl")
    got = Counter((f.code, f.location.row) for f in found if Path(f.location.path).name == program)
    assert got == markers(source, "run"), [(f.code, f.location.path, f.location.row, f.message) for f in found]


def test_measured_figures(tmp_path: Path) -> None:
    over = next(f for f in traced(PROGRAMS / "gl008_over.py", tmp_path / "a.jsonl") if f.code == "GL008")
    assert over.properties["accessed_percent"] == 10.0  # rows 0-99 of 1000
    hot = next(f for f in traced(PROGRAMS / "gl009_hot.py", tmp_path / "b.jsonl") if f.code == "GL009")
    assert hot.properties["coefficient_of_variation"] > 5  # row 0 is hit 1,001 times, the others once
    slices = next(f for f in traced(PROGRAMS / "gl010_slices.py", tmp_path / "c.jsonl") if f.code == "GL010")
    assert slices.properties["slices"] == 4


CONFIRM_PROGRAM = """\
import sys
import torch

dev = "cpu" if len(sys.argv) < 3 else sys.argv[2]
steps = int(sys.argv[1])


def main():
    w = torch.ones(64, 64, device=dev)
    x = torch.ones(64, 64, device=dev)
    for _ in range(3):
        x = torch.tanh(x @ x)
    y = x @ w
    z = torch.zeros(64, 64, device=dev)
    for _ in range(steps):
        y = torch.relu(y @ y)
    print(float(y.sum()), float(z.sum()))


main()
"""


def test_check_confirm_on_a_python_file(tmp_path: Path) -> None:
    """Static findings of a .py file, marked by a run of it: `w` waits for a loop that ran
    (GL001 confirmed); `z` waits for a loop that ran zero times (GL001 refuted)."""
    import json

    from test_cli import run

    program = tmp_path / "prog.py"
    program.write_text(CONFIRM_PROGRAM)
    argv, path = list(sys.argv), list(sys.path)
    try:
        assert pyrun.main(["-o", str(tmp_path / "t.jsonl"), "--", str(program), "0"]) == 0
    finally:
        sys.argv[:], sys.path[:] = argv, path
    result = run("check", "--isolated", "--no-cache", "--format", "json", "--min-bytes", "0", "--confirm", str(tmp_path / "t.jsonl"),
                 str(program), cwd=tmp_path)
    marks = {(f["code"], f["location"]["row"]): f["properties"].get("confirmation") for f in json.loads(result.stdout)}
    assert marks[("GL001", 9)] == "confirmed", marks
    assert marks[("GL001", 14)] == "refuted", marks
