"""GL101, GL102 and GL103 from Python runs.  Static analysis finds these three (loops and
host-side factories are in the code); a run confirms or refutes them, and adds host staging the
code does not show (a host tensor made on one line and copied on another).

Each program in `python_loop_programs/` marks its lines: `confirm: GLxxx` — the static finding
there must come out `confirmed`; `run: GLxxx` — the run itself finds it there.  The programs that
need a GPU run in test_python_gpu.py; the cache flush runs here, on the CPU build too."""
from __future__ import annotations

import json
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

PROGRAMS = Path(__file__).resolve().parent / "python_loop_programs"


def expected(source: Path) -> tuple[Counter, dict]:
    """(run findings by (code, line), static code -> lines that must be confirmed)."""
    confirms: dict = {}
    for code, row in markers(source, "confirm"):
        confirms.setdefault(code, set()).add(row)
    return markers(source, "run"), confirms


def confirmation_marks(trace: Path, program: Path, cwd: Path) -> dict:
    """`gpulint check --confirm TRACE program`: (code, line) -> mark of each static finding."""
    from test_cli import run

    result = run("check", "--isolated", "--no-cache", "--format", "json", "--min-bytes", "0", "--confirm", str(trace), str(program),
                 cwd=cwd)
    return {(f["code"], f["location"]["row"]): f["properties"].get("confirmation")
            for f in json.loads(result.stdout) if f["properties"].get("origin") == "static"}


def check_program(program: Path, trace: Path) -> tuple[list, dict]:
    """The run's findings in `program` and the marks of its static findings; asserts both
    against the program's markers."""
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings
    runs, confirms = expected(program)
    # GL104 (the caching allocator's segments) holds for any small CUDA program: not these rules.
    got = Counter((f.code, f.location.row) for f in found
                  if Path(f.location.path).name == program.name and f.code != "GL104")
    assert got == runs, [(f.code, f.location.row, f.message) for f in found]
    marks = confirmation_marks(trace, program, trace.parent)
    for code, rows in confirms.items():
        for row in rows:
            assert marks.get((code, row)) == "confirmed", (code, row, marks)
    return found, marks


def test_cache_flush_in_a_loop_is_confirmed(tmp_path: Path) -> None:
    program = PROGRAMS / "gl101_flush.py"
    argv, path = list(sys.argv), list(sys.path)
    try:
        assert pyrun.main(["-o", str(tmp_path / "t.jsonl"), "--", str(program)]) == 0
    finally:
        sys.argv[:], sys.path[:] = argv, path
    flushes = [line for line in (tmp_path / "t.jsonl").read_text().splitlines() if '"ev":"flush"' in line]
    assert len(flushes) == 3 and all('"api":"torch.cuda.empty_cache"' in line for line in flushes)
    check_program(program, tmp_path / "t.jsonl")


def test_a_flush_outside_a_loop_is_refuted(tmp_path: Path) -> None:
    """The same static finding, but the loop runs once: nothing repeats, so the run refutes it."""
    program = tmp_path / "once.py"
    program.write_text((PROGRAMS / "gl101_flush.py").read_text().replace("range(3)", "range(1)"))
    argv, path = list(sys.argv), list(sys.path)
    try:
        assert pyrun.main(["-o", str(tmp_path / "t.jsonl"), "--", str(program)]) == 0
    finally:
        sys.argv[:], sys.path[:] = argv, path
    assert confirmation_marks(tmp_path / "t.jsonl", program, tmp_path)[("GL101", 7)] == "refuted"


def test_host_tensor_made_only_for_the_device(tmp_path: Path) -> None:
    """A synthetic run: a CPU tensor from `torch.randn`, copied to the device and dropped, is host
    staging (GL102 at the copy); being host memory, no lifetime rule judges it, nor the peak."""
    from gpulint.dynamic.trace import TraceWriter

    site = lambda row: [[str(tmp_path / "prog.py"), row, "<module>"]]  # noqa: E731
    with TraceWriter(tmp_path / "t.jsonl", collector="python", granularity=4) as trace:
        trace.write({"ev": "alloc", "t": 1, "obj": 1, "size": 4096, "stream": 0, "api": "torch.randn",
                     "framework": "torch", "device": "cpu", "site": site(3)})
        trace.write({"ev": "memset", "t": 2, "obj": 1, "size": 4096, "stream": 0, "site": site(3)})
        trace.write({"ev": "alloc", "t": 3, "obj": 2, "size": 4096, "stream": 0, "api": "torch._to_copy",
                     "framework": "torch", "device": "cuda:0", "site": site(5)})
        trace.write({"ev": "memcpy", "t": 4, "dst": 2, "src": 1, "size": 4096, "kind": "h2d", "stream": 0,
                     "site": site(5)})
        for t in range(5, 9):  # launches while the host tensor is still alive: GL002 if it were device memory
            trace.write({"ev": "launch", "t": t, "kernel": "aten::relu", "stream": 0, "reads": [2], "writes": [2],
                         "site": site(t + 1)})
        trace.write({"ev": "free", "t": 9, "obj": 1, "stream": 0, "site": site(10)})
    result = analyze(tmp_path / "t.jsonl", Settings(min_bytes=0), sorted(RULES))
    assert [(f.code, f.location.row) for f in result.findings] == [("GL102", 5)], result.findings
    assert "at line 3" in result.findings[0].message
    assert result.peaks.actual == 4096  # the device tensor alone


@pytest.mark.gpu
@pytest.mark.parametrize("program", ["gl101_flush.py", "gl101_cudart.py", "gl102_staging.py", "gl103_upload.py"])
def test_loop_programs_on_cuda(program: str, tmp_path: Path) -> None:
    import os
    import subprocess

    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    if program == "gl101_cudart.py":
        pytest.importorskip("cuda.bindings.runtime")
    source = PROGRAMS / program
    trace = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(trace), "--", sys.executable, str(source)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found, marks = check_program(source, trace)
    path = os.environ.get("GPULINT_GPU_RESULTS")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"test": f"loop:{program}", "run": sorted({(f.code, f.location.row) for f in found
                                                                                if Path(f.location.path).name == program}),
                                  "marks": sorted(f"{c}:{r}={m}" for (c, r), m in marks.items())}) + "\n")


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py")))
def test_confirm_markers_name_static_findings(program: str, tmp_path: Path) -> None:
    """A `confirm:` marker is a static finding the run must confirm: static analysis must report it
    (checked here, without a GPU, so that a change to a static rule cannot leave the GPU test
    waiting for a finding no longer made)."""
    from test_cli import run

    source = PROGRAMS / program
    result = run("check", "--isolated", "--no-cache", "--format", "json", "--min-bytes", "0", str(source), cwd=tmp_path)
    static = {(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)}
    assert set(markers(source, "confirm")) <= static, static
