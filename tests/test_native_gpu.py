"""`gpulint run` on a GPU: small CUDA programs, each showing one pattern, run under the native
collector; the run's findings must be exactly the `// run: GLxxx` markers of the program (and
GL101 / GL103, which only static analysis sees, must be confirmed by the run).  Skipped where
there is no GPU; results are recorded in docs/benchmarks.md."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.collectors.native import build as builder
from gpulint.rules import RULES
from test_cli import run

PROGRAMS = Path(__file__).resolve().parent / "gpu_programs"
MARKER = re.compile(r"//\s*run:\s*(GL\d{3})")

try:
    DEVICE = builder.detect_device()
except builder.Unavailable as exc:
    DEVICE = None
    WHY = str(exc)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no NVIDIA GPU")]


def markers(source: Path) -> Counter:
    return Counter((m.group(1), i) for i, line in enumerate(source.read_text().splitlines(), 1)
                   for m in MARKER.finditer(line))


def compile_program(name: str, tmp_path: Path) -> Path:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    exe = tmp_path / name
    subprocess.run([nvcc, "-std=c++17", "-g", "-lineinfo", "-o", str(exe), str(PROGRAMS / f"{name}.cu")], check=True)
    return exe


def record(name: str, level: str, found: list, extra: dict | None = None) -> None:
    """Append what the run found to $GPULINT_GPU_RESULTS (for docs/benchmarks.md)."""
    path = os.environ.get("GPULINT_GPU_RESULTS")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"program": name, "level": level, "device": DEVICE.name,
                                  "findings": [[f.code, f.location.row, f.message] for f in found], **(extra or {})})
                      + "\n")


@pytest.mark.parametrize("name, level", [
    ("gl001_early", "object"), ("gl002_late", "object"), ("gl003_reuse", "object"), ("gl004_unused", "object"),
    ("gl005_leak", "object"), ("gl006_idle", "object"), ("gl007_dead", "object"), ("gl008_quarter", "access"),
    ("gl009_hot", "full"), ("gl010_slices", "access"),
])
def test_run_finds_exactly_the_pattern(name: str, level: str, tmp_path: Path) -> None:
    exe = compile_program(name, tmp_path)
    trace = tmp_path / "run.jsonl"
    result = run("run", "-o", str(trace), "--level", level, "--", str(exe), cwd=tmp_path)
    assert result.exit_code == 0, result.output
    found = analyze(trace, Settings(), sorted(RULES)).findings
    record(name, level, found, {k: f.properties.get(k) for f in found
                                for k in ("accessed_percent", "fragmentation", "coefficient_of_variation", "slices")
                                if k in f.properties})
    got = Counter((f.code, f.location.row) for f in found if Path(f.location.path).name == f"{name}.cu")
    assert got == markers(PROGRAMS / f"{name}.cu"), [(f.code, f.location.path, f.location.row, f.message) for f in found]
    if name == "gl008_quarter":
        assert [f.properties["accessed_percent"] for f in found if f.code == "GL008"] == [25.0]


@pytest.mark.parametrize("name", ["gl101_loop", "gl103_copy"])
def test_run_confirms_static_loop_findings(name: str, tmp_path: Path) -> None:
    exe = compile_program(name, tmp_path)
    trace = tmp_path / "run.jsonl"
    assert run("run", "-o", str(trace), "--", str(exe), cwd=tmp_path).exit_code == 0
    data = json.loads(run("check", "--format", "json", "--no-cache", "--confirm", str(trace),
                          str(PROGRAMS / f"{name}.cu"), cwd=tmp_path).stdout)
    code = name[:5].upper()
    marks = [f["properties"].get("confirmation") for f in data if f["code"] == code]
    record(name, "object", [], {"confirmation": marks})
    assert marks == ["confirmed"], data


def test_exit_code_and_output_pass_through(tmp_path: Path) -> None:
    source = tmp_path / "exit3.cu"
    source.write_text('#include <cstdio>\n#include <cuda_runtime.h>\nint main() { float* p; cudaMalloc(&p, 64); '
                      'printf("hello from the program\\n"); return 3; }\n')
    exe = tmp_path / "exit3"
    subprocess.run([shutil.which("nvcc") or "nvcc", "-o", str(exe), str(source)], check=True)
    proc = subprocess.run(["python3", "-m", "gpulint", "run", "-o", str(tmp_path / "t.jsonl"), "--", str(exe)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 3 and "hello from the program" in proc.stdout
    assert "GL005" in {f.code for f in analyze(tmp_path / "t.jsonl", Settings(), sorted(RULES)).findings}
