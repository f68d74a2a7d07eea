"""The command line: exit codes, options, output formats, rule docs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from click.testing import CliRunner

from gpulint.cli import main
from gpulint.rules import RULES

LATE_FREE = """\
__global__ void phase1(float *a) { a[threadIdx.x] = 1.f; }
__global__ void phase2(float *b) { b[threadIdx.x] += 1.f; }
int main() {
  float *d_a, *d_b;
  cudaMalloc(&d_a, 1024);
  phase1<<<1, 32>>>(d_a);
  cudaMalloc(&d_b, 1024);
  phase2<<<1, 32>>>(d_b);
  cudaFree(d_b);
  cudaFree(d_a);
  return 0;
}
"""

CLEAN = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *d;
  cudaMalloc(&d, 1024);
  k<<<1, 32>>>(d);
  cudaFree(d);
  return 0;
}
"""


def run(*args: str, cwd: Path | None = None):
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    (tmp_path / "ok.cu").write_text(CLEAN)
    assert run("check", "ok.cu", cwd=tmp_path).exit_code == 0
    result = run("check", "late.cu", cwd=tmp_path)
    assert result.exit_code == 1
    assert "late.cu:5:3: GL002 `d_a` is last used by `phase1<<<>>>` at line 6 but freed at line 10, after 1 kernel launch" in result.output
    assert run("check", "--select", "GL999", "late.cu", cwd=tmp_path).exit_code == 2
    assert run("check", "--threshold", "GL002=x", "late.cu", cwd=tmp_path).exit_code == 2
    assert run("check", "--threshold", "GL004=2", "late.cu", cwd=tmp_path).exit_code == 2
    assert run("check", "missing.cu", cwd=tmp_path).exit_code == 2


def test_text_output_has_snippet_caret_related_and_summary(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    out = run("check", "--select", "GL002", "late.cu", cwd=tmp_path).output
    lines = out.splitlines()
    assert lines[0].startswith("late.cu:5:3: GL002")
    assert lines[2] == "5 |   cudaMalloc(&d_a, 1024);"
    assert lines[3] == "  |   " + "^" * len("cudaMalloc(&d_a, 1024)")
    assert "    = last use of `d_a`: `phase1<<<>>>` at late.cu:6:3" in out
    assert "    = `d_a` is freed here at late.cu:10:3" in out
    assert lines[-1] == "Found 1 finding in 1 file (GL002 ×1)."
    assert "\x1b[" not in out  # no colour when not a terminal


def test_select_ignore_and_threshold(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    codes = lambda *a: {f["code"] for f in json.loads(run("check", "--format", "json", *a, "late.cu", cwd=tmp_path).output)}
    # d_a dies after phase1 (GL002) and d_b, allocated while d_a is still held, could reuse it (GL003).
    assert codes() == {"GL002", "GL003"}
    assert codes("--select", "GL002") == {"GL002"}
    assert codes("--ignore", "GL00") == set()
    assert codes("--select", "GL0", "--ignore", "GL003") == {"GL002"}
    assert codes("--select", "gl00", "--ignore", "GL003,GL002") == set()
    assert codes("--threshold", "GL002=2") == {"GL003"}


def test_json_fields_follow_ruff(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    data = json.loads(run("check", "--format", "json", "--select", "GL002", "late.cu", cwd=tmp_path).output)
    assert len(data) == 1
    f = data[0]
    assert f["code"] == "GL002" and f["filename"] == "late.cu"
    assert f["location"] == {"row": 5, "column": 3}
    assert f["end_location"] == {"row": 5, "column": 25}
    assert f["fix"]["applicability"] == "unsafe" and f["fix"]["message"] == "free `d_a` right after its last access"
    assert [e["content"] for e in f["fix"]["edits"]] == ["", "  cudaFree(d_a);\n"]
    assert f["url"].endswith("GL002")
    assert {"message": "last use of `d_a`: `phase1<<<>>>`", "filename": "late.cu", "location": {"row": 6, "column": 3}} in f["related"]
    assert f["properties"]["distance"] == 1


def test_output_file(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    result = run("check", "--format", "json", "-o", "out.json", "late.cu", cwd=tmp_path)
    assert result.exit_code == 1 and result.output == ""
    assert len(json.loads((tmp_path / "out.json").read_text())) == 2


def test_walks_folders_skips_hidden_build_and_excluded(tmp_path: Path) -> None:
    for rel in ["src/a.cu", "src/sub/b.cuh", ".hidden/c.cu", "build/d.cu", "third/e.cu", "src/f.cpp"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(LATE_FREE)
    (tmp_path / "src/plain.cpp").write_text("int main() { return 0; }\n")
    data = json.loads(run("check", "--format", "json", "--select", "GL002", "--exclude", "third", ".", cwd=tmp_path).output)
    assert sorted({f["filename"] for f in data}) == ["src/a.cu", "src/f.cpp", "src/sub/b.cuh"]


def test_parallel_output_is_deterministic(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"f{i:02d}.cu").write_text(LATE_FREE)
    one = run("check", "--format", "json", "--jobs", "1", ".", cwd=tmp_path).output
    many = run("check", "--format", "json", "--jobs", "4", ".", cwd=tmp_path).output
    assert one == many
    assert len(json.loads(one)) == 24


def test_rule_docs() -> None:
    for code, rule in RULES.items():
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
            assert heading in rule.doc, f"{code} lacks {heading}"
    out = run("rule", "GL002").output
    assert out.startswith("# GL002 (late-deallocation)") and "## Fix safety" in out
    assert run("rule", "late-deallocation").output == out
    assert run("rule", "GL999").exit_code == 2
    listing = run("rules").output
    assert all(code in listing for code in RULES)


def test_console_script_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "gpulint", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "gpulint" in proc.stdout


def test_config_in_pyproject(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nselect = ["GL002"]\nthreshold = { GL002 = 1 }\n')
    data = json.loads(run("check", "--format", "json", "late.cu", cwd=tmp_path).output)
    assert {f["code"] for f in data} == {"GL002"}
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nselekt = ["GL002"]\n')
    result = run("check", "late.cu", cwd=tmp_path)
    assert result.exit_code == 2 and "unknown setting" in result.output


PY_EARLY = """\
import torch


def evaluate(model, loader, device):
    stats = torch.zeros(10, device=device)
    for x, y in loader:
        model(x.to(device))
    stats += 1
    return stats
"""


def test_cuda_and_python_mixed_in_one_run(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "late.cu").write_text(LATE_FREE)
    (tmp_path / "train.py").write_text(PY_EARLY)
    (tmp_path / "util.py").write_text("def add(a, b):\n    return a + b\n")  # no GPU framework: skipped
    result = run("check", "--format", "json", ".", cwd=tmp_path)
    data = json.loads(result.output)
    assert [(f["filename"], f["code"], f["location"]["row"]) for f in data] == [
        ("kernels/late.cu", "GL002", 5), ("kernels/late.cu", "GL003", 7), ("train.py", "GL001", 5)]
    text = run("check", ".", cwd=tmp_path).output
    assert "train.py:5:5: GL001 `stats` is allocated at line 5 but first used by `+=` at line 8, after 1 loop" in text
    assert text.splitlines()[-1] == "Found 3 findings in 3 files (GL001 ×1, GL002 ×1, GL003 ×1)."


def test_github_format_statistics_and_exit_zero(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    out = run("check", "--format", "github", "late.cu", cwd=tmp_path).output.splitlines()
    assert out[0] == ("::warning file=late.cu,line=5,col=3,endColumn=25,title=GL002 late-deallocation::"
                      "`d_a` is last used by `phase1<<<>>>` at line 6 but freed at line 10, after 1 kernel launch")
    assert len(out) == 2 and out[1].startswith("::warning file=late.cu,line=7,")
    stats = run("check", "--statistics", "late.cu", cwd=tmp_path)
    assert stats.exit_code == 1
    assert stats.output == ("     1  GL002  late-deallocation\n     1  GL003  redundant-allocation\n"
                            "allocation sites analysed: 2 of 2 (100.0%)\n")
    assert run("check", "--exit-zero", "late.cu", cwd=tmp_path).exit_code == 0
