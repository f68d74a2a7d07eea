"""`gpulint fix`: diffs, atomic application, re-analysis until stable, nothing half-written."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path


import pytest

from conftest import FIXTURES, cli_in, run_file
from gpulint.findings import Applicability
from gpulint.config import Settings
from gpulint.fixloop import fix_file, write_atomically
from gpulint.rules import RULES


cli = cli_in


DEAD = """\
__global__ void k(float *a) { a[threadIdx.x] += 1.f; }
int main() {
  float *d, h[64] = {0};
  cudaMalloc(&d, sizeof(h));
  cudaMemset(d, 0, sizeof(h));  // zero it first
  cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
  k<<<1, 64>>>(d);
  cudaFree(d);
  return 0;
}
"""

PY = """\
import torch


def f(src, device):
    buf = torch.zeros(1024, device=device)
    buf.copy_(src)
    return buf
"""


def test_diff_then_apply_then_nothing_left(tmp_path: Path) -> None:
    (tmp_path / "dead.cu").write_text(DEAD)
    (tmp_path / "buf.py").write_text(PY)
    (tmp_path / "dead.cu").chmod(0o640)
    diff = cli(tmp_path, "fix", "--diff", ".")
    assert diff.exit_code == 1
    assert "-  cudaMemset(d, 0, sizeof(h));  // zero it first\n" in diff.stdout
    assert "-    buf = torch.zeros(1024, device=device)\n+    buf = torch.empty(1024, device=device)\n" in diff.stdout
    assert (tmp_path / "dead.cu").read_text() == DEAD  # --diff writes nothing
    applied = cli(tmp_path, "fix", "--apply", ".")
    assert applied.exit_code == 0, applied.output
    assert "cudaMemset" not in (tmp_path / "dead.cu").read_text()
    assert "torch.empty(1024" in (tmp_path / "buf.py").read_text()
    assert stat.S_IMODE((tmp_path / "dead.cu").stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".gpulint")]  # no temporary left
    again = cli(tmp_path, "fix", "--diff", ".")
    assert again.exit_code == 0 and again.stdout == ""


def test_unused_suppression_is_removed(tmp_path: Path) -> None:
    (tmp_path / "s.cu").write_text(DEAD.replace("  cudaFree(d);", "  cudaFree(d);  // gpulint: ignore[GL002]")
                                   .replace("  cudaMemset(d, 0, sizeof(h));  // zero it first\n", ""))
    result = cli(tmp_path, "fix", "--apply", "s.cu")
    assert result.exit_code == 0, result.output
    assert "gpulint" not in (tmp_path / "s.cu").read_text()
    assert "  cudaFree(d);\n" in (tmp_path / "s.cu").read_text()


def test_file_changed_on_disk_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "dead.cu"
    path.write_text(DEAD)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        fixed = fix_file(Path("dead.cu"), Settings(), sorted(RULES), unsafe=False)
        path.write_text(DEAD + "// edited meanwhile\n")
        assert "changed on disk" in write_atomically(fixed)
    finally:
        os.chdir(old)
    assert path.read_text().endswith("// edited meanwhile\n")


def test_a_fix_that_breaks_parsing_is_not_applied(tmp_path: Path, monkeypatch) -> None:
    from gpulint import fixloop
    from gpulint.findings import Applicability, Edit, Fix

    path = tmp_path / "dead.cu"
    path.write_text(DEAD)
    real = fixloop.analyse_source

    def breaking(p, display, data, settings, codes, result=None):
        out = real(p, display, data, settings, codes, result)
        for f in out.findings:
            f.fix = Fix("break it", Applicability.SAFE, (Edit(display, 0, 0, "}}}{{{ ((( "),))
        return out

    monkeypatch.setattr(fixloop, "analyse_source", breaking)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        fixed = fix_file(Path("dead.cu"), Settings(), sorted(RULES), unsafe=False)
    finally:
        os.chdir(old)
    # Each fix breaks the file alone: every one is withheld with a warning, nothing is written.
    assert fixed.after == fixed.before and fixed.problem is None
    assert fixed.withheld and all("would leave the file unparsable" in line for line in fixed.withheld)


def test_every_fix_on_every_fixture(tmp_path: Path) -> None:
    """Fixed files still compile, the fixed findings are gone, and a second run changes nothing."""
    work = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, work)
    before = {p: {(f.code, f.message) for f in run_file(p).findings} for p in work.rglob("*") if p.suffix in (".cu", ".py")}
    fixable = {p: {(f.code, f.message) for f in run_file(p).findings
                   if f.fix and f.fix.applicability is not Applicability.DISPLAY_ONLY} for p in before}
    # The fixtures exercise a fix of every rule that has one.
    fixed_codes = {code for found in fixable.values() for code, _ in found}
    assert fixed_codes >= {"GL001", "GL002", "GL004", "GL005", "GL007", "GL008", "GL101", "GL102", "GL103"}, fixed_codes
    result = cli(work, "fix", "--apply", "--unsafe-fixes", ".")
    assert result.exit_code in (0, 1), result.output
    nvcc = shutil.which("nvcc")
    for path, fixed in fixable.items():
        after = {(f.code, f.message) for f in run_file(path).findings}
        assert not (fixed & after), f"{path.name}: still {sorted(fixed & after)}"
        if path.suffix == ".py":
            compile(path.read_text(), str(path), "exec")
        elif fixed and nvcc:
            proc = subprocess.run([nvcc, "-std=c++17", "-c", "-o", str(tmp_path / "x.o"), str(path)],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr[-2000:]
    again = cli(work, "fix", "--diff", "--unsafe-fixes", ".")
    assert again.exit_code == 0 and again.stdout == ""


def _sarif(tmp_path: Path) -> dict:
    import json

    (tmp_path / "dead.cu").write_text(DEAD)
    result = cli(tmp_path, "check", "--format", "sarif", "-o", "gl.sarif", "dead.cu")
    assert result.exit_code == 1
    return json.loads((tmp_path / "gl.sarif").read_text())


DEAD_AND_LATE = DEAD.replace("  k<<<1, 64>>>(d);\n", "  k<<<1, 64>>>(d);\n  k<<<1, 64>>>(nullptr);\n")


def test_from_sarif_applies_recorded_fixes(tmp_path: Path) -> None:
    """The same applicability as `gpulint fix`: safe fixes, unsafe ones with --unsafe-fixes."""
    import json

    def report() -> dict:
        (tmp_path / "dead.cu").write_text(DEAD_AND_LATE)
        assert cli(tmp_path, "check", "--format", "sarif", "-o", "gl.sarif", "dead.cu").exit_code == 1
        return json.loads((tmp_path / "gl.sarif").read_text())

    log = report()
    marks = {r["ruleId"]: r["fixes"][0]["properties"]["applicability"] for r in log["runs"][0]["results"] if "fixes" in r}
    assert marks == {"GL007": "safe", "GL002": "unsafe"}, marks  # the memset's removal; the free moved up
    result = cli(tmp_path, "fix", "--from-sarif", "gl.sarif", "--apply")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dead.cu").read_text() == DEAD_AND_LATE.replace("  cudaMemset(d, 0, sizeof(h));  // zero it first\n", "")
    report()
    result = cli(tmp_path, "fix", "--from-sarif", "gl.sarif", "--apply", "--unsafe-fixes")
    assert result.exit_code == 0, result.output
    both = (tmp_path / "dead.cu").read_text()
    assert "cudaMemset" not in both and "  k<<<1, 64>>>(d);\n  cudaFree(d);\n  k<<<1, 64>>>(nullptr);\n" in both


@pytest.mark.parametrize("uri, why", [
    ("../outside.cu", "outside the project root"),
    ("/etc/passwd", "relative to the project root"),
    ("file:///tmp/x.cu", "relative to the project root"),
    ("sub/../../outside.cu", "outside the project root"),
    ("link/escape.cu", "resolves outside the project root"),
])
def test_from_sarif_refuses_paths_outside_the_root(tmp_path: Path, uri: str, why: str) -> None:
    import json

    project = tmp_path / "project"
    project.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "escape.cu").write_text(DEAD)
    (tmp_path / "outside.cu").write_text(DEAD)
    (project / "link").symlink_to(outside)
    log = _sarif(project)
    for result in log["runs"][0]["results"]:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                change["artifactLocation"]["uri"] = uri
    (project / "gl.sarif").write_text(json.dumps(log))
    result = cli(project, "fix", "--from-sarif", "gl.sarif", "--apply")
    assert result.exit_code == 2 and why in result.output
    assert (outside / "escape.cu").read_text() == DEAD and (tmp_path / "outside.cu").read_text() == DEAD
    assert (project / "dead.cu").read_text() == DEAD


def test_from_sarif_refuses_a_file_that_changed(tmp_path: Path) -> None:
    _sarif(tmp_path)
    changed = DEAD.replace("cudaMemset(d, 0, sizeof(h));", "cudaMemset(d, 1, sizeof(h));")
    (tmp_path / "dead.cu").write_text(changed)
    result = cli(tmp_path, "fix", "--from-sarif", "gl.sarif", "--apply")
    assert result.exit_code == 2 and "no longer matches what the SARIF recorded" in result.output
    assert (tmp_path / "dead.cu").read_text() == changed
