"""Bad input: a one-line diagnostic naming the file, a GL900 finding, the other files still analysed."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main
from test_cli import LATE_FREE


def check(tmp_path: Path, *args: str):
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        return CliRunner().invoke(main, ["check", "--format", "json", *args, "."], catch_exceptions=False)
    finally:
        os.chdir(old)


def _findings(result) -> list[dict]:
    return json.loads(result.stdout)


def test_bad_files_are_reported_and_others_still_analysed(tmp_path: Path) -> None:
    (tmp_path / "good.cu").write_text(LATE_FREE)
    (tmp_path / "empty.cu").write_text("")
    (tmp_path / "binary.cu").write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    (tmp_path / "latin1.cu").write_bytes("// caf\xe9\nint main() { return 0; }\n".encode("latin-1"))
    (tmp_path / "huge.cu").write_text("// x\n" * 10)
    secret = tmp_path / "secret.cu"
    secret.write_text(LATE_FREE)
    secret.chmod(0)
    (tmp_path / "dangling.cu").symlink_to(tmp_path / "nowhere.cu")
    result = check(tmp_path)
    findings = _findings(result)
    gl900 = {f["filename"]: f["message"] for f in findings if f["code"] == "GL900"}
    assert "empty.cu" in gl900 and "empty" in gl900["empty.cu"]
    assert "binary" in gl900["binary.cu"]
    assert "latin1.cu" not in gl900  # read with a fallback: a note on stderr, not a finding
    assert "dangling.cu" in gl900
    if os.geteuid() != 0:  # root reads anything
        assert "secret.cu" in gl900
    assert {f["code"] for f in findings if f["filename"] == "good.cu"} == {"GL002", "GL003"}
    stderr = result.stderr
    assert "Traceback" not in stderr
    for name in ("empty.cu", "binary.cu", "latin1.cu", "dangling.cu"):
        assert sum(name in line for line in stderr.splitlines()) == 1
    assert result.exit_code == 1


def test_enormous_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.gpulint]\nmax-file-size = 100\n")
    (tmp_path / "big.cu").write_text(LATE_FREE)
    findings = _findings(check(tmp_path))
    assert [f["code"] for f in findings] == ["GL900"]
    assert "too large" in findings[0]["message"]


BROKEN = """\
#define WEIRD(x) x ## _impl(
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
void broken() {
  float *d;
  cudaMalloc(&d, 64);
  WEIRD(foo) d, 3;;; } } {{
  k<<<1, 1>>>(d);
}
int main() {
  float *d;
  cudaMalloc(&d, 64);
  k<<<1, 32>>>(d);
  cudaFree(d);
  return 0;
}
"""


def test_unrecoverable_syntax_never_crashes(tmp_path: Path) -> None:
    (tmp_path / "broken.cu").write_text(BROKEN)
    result = check(tmp_path, "-v")
    assert "Traceback" not in result.stderr
    assert result.exit_code in (0, 1)
    assert "parse errors" in result.stderr


@pytest.mark.parametrize("text", [
    "<<<>>>" * 50, "__global__ void k(", "int main() { cudaMalloc(&", "}}}}{{{{" * 100,
    "#define N\nvoid f(){ cudaMalloc(&d, N); cudaMalloc(&d); cudaFree(); cudaMemcpy(d); k<<<>>>(); }",
    "void f() { " + "(" * 3000 + " }",
])
def test_garbage_does_not_crash(tmp_path: Path, text: str) -> None:
    (tmp_path / "g.cu").write_text(text)
    result = check(tmp_path)
    assert "Traceback" not in result.stderr
    assert result.exit_code in (0, 1)


@pytest.mark.parametrize("text", [
    "import torch\ndef f(:\n", "import torch\nx = torch.zeros(3, device='cuda'\n", "import torch\n" + "(" * 3000,
    "import torch\nclass A:\n    def f(self):\n        self.x = torch.zeros(1, device='cuda')\n        del self.x, [a, b]\n",
    "import torch\nfor (a, *b) in c: x = torch.ones(a, device=dev); x[...] += 1\n",
])
def test_python_garbage_does_not_crash(tmp_path: Path, text: str) -> None:
    (tmp_path / "g.py").write_text(text)
    result = check(tmp_path)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.exit_code in (0, 1)


def test_a_latin1_file_is_analysed_and_left_unfixed(tmp_path: Path) -> None:
    """Not UTF-8 (a Latin-1 comment): analysed with the undecodable bytes read as `?` (lines and
    columns unchanged), said once on stderr; `fix` leaves it untouched rather than write `?` back."""
    source = "// r\xe9sum\xe9 of the run\n" + LATE_FREE
    (tmp_path / "latin1.cu").write_bytes(source.encode("latin-1"))
    result = check(tmp_path)
    findings = _findings(result)
    assert {f["code"] for f in findings} == {"GL002", "GL003"}, findings
    said = [line for line in result.stderr.splitlines() if "latin1.cu" in line]
    assert len(said) == 1 and "latin1.cu: not valid UTF-8 (byte 4): read with undecodable bytes as `?`" in said[0]
    before = (tmp_path / "latin1.cu").read_bytes()
    from test_cli import run

    fixed = run("fix", "--isolated", "--apply", "--unsafe-fixes", "latin1.cu", cwd=tmp_path)
    assert (tmp_path / "latin1.cu").read_bytes() == before
    assert fixed.exit_code == 0 and "latin1.cu: not valid UTF-8: left untouched" in fixed.output


def test_functions_skipped_for_parse_errors_are_counted(tmp_path: Path) -> None:
    """A function with a parse error is skipped whole; the summary says how many, -v names them, and
    a cached result says it again."""
    (tmp_path / "broken.cu").write_text(
        "__global__ void k(float* p) { p[0] = 1; }\nvoid good() {\n  float* d;\n  cudaMalloc(&d, 64);\n"
        "  k<<<1, 1>>>(d);\n}\nvoid bad() {\n  float* e;\n  cudaMalloc(&e, 64);\n  k<<<1, 1>>>(e ;\n}\n")
    from test_cli import run

    for _ in range(2):  # the second run reads the cache
        result = run("check", "--isolated", "broken.cu", cwd=tmp_path)
        assert "Found 1 finding in 1 file (GL005 ×1). 1 function in 1 file was not analysed (parse errors); " \
               "-v lists them." in result.output, result.output
    verbose = run("check", "--isolated", "-v", "broken.cu", cwd=tmp_path)
    assert "broken.cu: `bad` has parse errors" in verbose.output
