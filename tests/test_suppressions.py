"""`// gpulint: ignore[...]` comments and GL901 for the ones that suppress nothing."""
from __future__ import annotations

from collections import Counter

from conftest import run_file

CODE = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
__global__ void other(float *b) { b[threadIdx.x] = 2.f; }
int main() {
  float *d_a, *d_b;
  cudaMalloc(&d_a, 64);  // gpulint: ignore[GL002]
  k<<<1, 32>>>(d_a);
  cudaMalloc(&d_b, 64);  // gpulint: ignore[GL003, GL007]
  other<<<1, 32>>>(d_b);
  cudaFree(d_b);
  // gpulint: ignore
  cudaFree(d_a);
  cudaMemset(d_b, 0, 4);  // gpulint: ignore[GL004]
  return 0;
}
"""


def test_suppressions_and_unused_ones(tmp_path) -> None:
    path = tmp_path / "s.cu"
    path.write_text(CODE)
    found = Counter((f.code, f.location.row) for f in run_file(path).findings)
    # GL002 on d_a (line 5) and GL003 on d_b (line 7) are suppressed; GL007 on line 7, the bare
    # ignore above line 11 and GL004 on line 12 suppress nothing.
    assert found == Counter({("GL901", 7): 1, ("GL901", 10): 1, ("GL901", 12): 1})
    messages = {f.location.row: f.message for f in run_file(path).findings}
    assert messages[7] == "unused suppression of GL007"


def test_gl901_only_when_selected(tmp_path) -> None:
    path = tmp_path / "s.cu"
    path.write_text(CODE)
    assert not [f for f in run_file(path, select=("GL0",)).findings if f.code == "GL901"]


def test_suppression_of_unselected_code_is_not_reported(tmp_path) -> None:
    path = tmp_path / "s.cu"
    path.write_text(CODE)
    found = {(f.code, f.location.row) for f in run_file(path, ignore=("GL007",)).findings}
    assert ("GL901", 7) not in found


def test_ignore_file(tmp_path) -> None:
    path = tmp_path / "f.cu"
    path.write_text("// gpulint: ignore-file[GL002, GL007]\n" + CODE.replace("  // gpulint: ignore[GL002]", ""))
    found = Counter((f.code, f.location.row) for f in run_file(path).findings)
    # GL002 (d_a) is suppressed file-wide; GL007 in the ignore-file comment matches nothing.
    assert ("GL002", 6) not in found
    assert found[("GL901", 1)] == 1
    assert next(f.message for f in run_file(path).findings if f.location.row == 1) == "unused suppression of GL007"
    path.write_text("# nothing\n// gpulint: ignore-file\n" + CODE)
    assert [f.code for f in run_file(path).findings] == []
