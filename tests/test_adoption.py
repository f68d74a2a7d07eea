"""Adopting gpulint on a code base with findings: `--add-ignore` marks them in the source,
`--baseline` remembers them in a file; either way only new findings fail the run."""
from __future__ import annotations

import json
from pathlib import Path

from test_cli import LATE_FREE, run

ALL = ("--select", "ALL", "--min-bytes", "0", "--no-cache")
PY_LEAK = """\
import torch


def train(n):
    buffers = [torch.empty(1 << 20, device="cuda") for _ in range(n)]
    x = torch.zeros(1 << 20, device="cuda")
    return x
"""
MACRO = """\
#define SETUP(p, n) \\
  cudaMalloc(&p, n); \\
  cudaMemset(p, 0, n)
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *d_a, *d_b;
  SETUP(d_a, 1024);
  k<<<1, 32>>>(d_a);
  cudaMalloc(&d_b, 1024);
  k<<<1, 32>>>(d_b);
  cudaFree(d_b);
  cudaFree(d_a);
  return 0;
}
"""


def findings(folder: Path, *extra: str) -> list[dict]:
    result = run("check", "--format", "json", *ALL, *extra, ".", cwd=folder)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_add_ignore_silences_every_current_finding_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    (tmp_path / "macro.cu").write_text(MACRO)
    (tmp_path / "train.py").write_text(PY_LEAK)
    before = findings(tmp_path)
    assert {f["filename"] for f in before} >= {"late.cu", "macro.cu"}
    result = run("check", *ALL, "--add-ignore", ".", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    rows = {(f["filename"], f["location"]["row"]) for f in before}
    assert f"added {len(rows)} ignore comment" in result.stderr
    assert findings(tmp_path) == []  # GL901 (unused suppressions) is among ALL: none is unused
    late = (tmp_path / "late.cu").read_text().splitlines()
    for f in before:
        if f["filename"] == "late.cu":
            assert late[f["location"]["row"] - 1].endswith(f"// gpulint: ignore[{','.join(sorted(x['code'] for x in before if (x['filename'], x['location']['row']) == ('late.cu', f['location']['row'])))}]")
    # A second run has nothing to add, and a new finding is reported.
    again = run("check", *ALL, "--add-ignore", ".", cwd=tmp_path)
    assert again.exit_code == 0 and "added 0 ignore comments to 0 files" in again.stderr
    (tmp_path / "new.cu").write_text(LATE_FREE)
    assert {f["filename"] for f in findings(tmp_path)} == {"new.cu"}


def test_add_ignore_keeps_macro_continuations_and_merges_existing_comments(tmp_path: Path) -> None:
    source = tmp_path / "a.cu"
    source.write_text(MACRO.replace("  cudaMalloc(&d_b, 1024);", "  cudaMalloc(&d_b, 1024);  // gpulint: ignore[GL999]"))
    before = findings(tmp_path, "--ignore", "GL901")
    assert run("check", *ALL, "--ignore", "GL901", "--add-ignore", "a.cu", cwd=tmp_path).exit_code == 0
    text = source.read_text()
    assert "cudaMalloc(&d_b, 1024);  // gpulint: ignore[GL003,GL999]" in text  # merged into the existing comment
    assert before and findings(tmp_path, "--ignore", "GL901") == []
    import subprocess
    import shutil
    if shutil.which("g++"):  # the macro still expands: the file still preprocesses the same
        out = subprocess.run(["g++", "-E", "-x", "c++", str(source)], capture_output=True, text=True)
        assert out.returncode == 0 and "cudaMalloc(&d_a, 1024); cudaMemset(d_a, 0, 1024)" in " ".join(out.stdout.split())


def test_baseline_reports_only_new_findings_and_survives_moved_lines(tmp_path: Path) -> None:
    source = tmp_path / "late.cu"
    source.write_text(LATE_FREE)
    baseline = tmp_path / "gl.baseline"
    missing = run("check", *ALL, "--baseline", str(baseline), ".", cwd=tmp_path)
    assert missing.exit_code == 2 and "no such baseline (write it with --update-baseline)" in missing.stderr
    wrote = run("check", *ALL, "--baseline", str(baseline), "--update-baseline", ".", cwd=tmp_path)
    assert wrote.exit_code == 0 and "to the baseline" in wrote.stderr
    known = json.loads(baseline.read_text())["findings"]
    assert known and all(e["fingerprint"].startswith(e["code"] + ":late.cu:") for e in known)
    clean = run("check", *ALL, "--baseline", str(baseline), ".", cwd=tmp_path)
    assert clean.exit_code == 0, clean.output
    assert f"{len(known)} finding" in clean.output and "in the baseline" in clean.output
    # Lines moved by an edit elsewhere: still known.  A second copy of the pattern: new.
    source.write_text("// a comment\n\n" + LATE_FREE)
    assert run("check", *ALL, "--baseline", str(baseline), ".", cwd=tmp_path).exit_code == 0
    (tmp_path / "copy.cu").write_text(LATE_FREE)
    new = findings(tmp_path, "--baseline", str(baseline))
    assert new and {f["filename"] for f in new} == {"copy.cu"}


def test_a_damaged_baseline_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    for content, expected in (("{not json", "not a gpulint baseline (not JSON"),
                              ('{"findings": []}', 'no "gpulint_baseline"'),
                              ('{"gpulint_baseline": 9, "findings": []}', "baseline version 9 is not supported"),
                              ('{"gpulint_baseline": 1, "findings": [{}]}', 'needs a "fingerprint" string')):
        (tmp_path / "b.json").write_text(content)
        result = run("check", *ALL, "--baseline", "b.json", ".", cwd=tmp_path)
        assert result.exit_code == 2 and expected in result.stderr, result.stderr
    assert run("check", "--update-baseline", ".", cwd=tmp_path).exit_code == 2


def test_comment_placement_where_an_end_of_line_comment_would_break_the_code() -> None:
    from gpulint.add_ignore import _with_comments

    macro = "#define SETUP(p, n) \\\r\n  cudaMalloc(&p, n); \\\r\n  use(p)\r\n"
    text, count = _with_comments(macro, {2: {"GL004", "GL002"}}, python=False)
    assert count == 1
    assert text.splitlines()[1] == "  cudaMalloc(&p, n); /* gpulint: ignore[GL002,GL004] */ \\"
    assert text.count("\r\n") == 3  # the file's line endings kept
    continued = "x = torch.empty(n, \\\n    device='cuda')\n"
    text, count = _with_comments(continued, {1: {"GL004"}}, python=True)
    assert text.splitlines()[0] == "# gpulint: ignore[GL004]" and text.splitlines()[1].startswith("x = torch.empty")
    compile(text, "t.py", "exec")  # still Python
    file_wide = "int *p; cudaMalloc(&p, 4);  // gpulint: ignore-file[GL006]\n"
    text, _ = _with_comments(file_wide, {1: {"GL004"}}, python=False)
    assert text.splitlines() == ["// gpulint: ignore[GL004]", file_wide.rstrip("\n")]
    bare = "p = alloc()  # gpulint: ignore\n"
    assert _with_comments(bare, {1: {"GL004"}}, python=True) == (bare, 0)  # already covers every code
