"""Issue 15, point 4: a fix never changes what a program computes.

Each test is a program on which an earlier gpulint wrote a fix that broke it, with the exact
result gpulint gives now."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import cli_in


run = cli_in


def fixed(tmp_path: Path, name: str, text: str, *options: str) -> str:
    """The file after `fix --apply --unsafe-fixes` (twice: the second run must change nothing)."""
    path = tmp_path / name
    path.write_bytes(text.encode())
    first = run(tmp_path, "fix", "--apply", "--unsafe-fixes", "--isolated", *options, name)
    assert first.exit_code in (0, 1), first.stderr
    after = path.read_bytes()
    second = run(tmp_path, "fix", "--diff", "--unsafe-fixes", "--isolated", *options, name)
    assert second.stdout == "", f"not idempotent:\n{second.stdout}"
    return after.decode()


def codes(tmp_path: Path, name: str, text: str) -> list[tuple[str, int]]:
    import json

    (tmp_path / name).write_text(text)
    result = run(tmp_path, "check", "--no-cache", "--isolated", "--format", "json", name)
    return sorted((f["code"], f["location"]["row"]) for f in json.loads(result.stdout))


REASSIGNED_SIZE = """\
__global__ void k(float *a, int n) { if (threadIdx.x < n) a[threadIdx.x] += 1.f; }
int main() {
  float h[100] = {0};
  float *d;
  int n = 100;
  cudaMalloc(&d, 100 * sizeof(float));
  cudaMemset(d, 0, n * sizeof(float));
  n = 50;
  cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
  k<<<1, 100>>>(d, 100);
  cudaMemcpy(h, d, 100 * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return 0;
}
"""


def test_a_reassigned_size_is_another_size(tmp_path) -> None:
    # The memset writes 100 floats, the copy after `n = 50;` only 50: the memset is not dead.
    assert ("GL007", 7) not in codes(tmp_path, "a.cu", REASSIGNED_SIZE)
    assert fixed(tmp_path, "a.cu", REASSIGNED_SIZE) == REASSIGNED_SIZE
    # Without the reassignment it is dead, and the safe fix removes it.
    dead = REASSIGNED_SIZE.replace("  n = 50;\n", "")
    assert ("GL007", 7) in codes(tmp_path, "b.cu", dead)
    assert "cudaMemset" not in fixed(tmp_path, "b.cu", dead)


MANAGED = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
__global__ void other(float *b) { b[threadIdx.x] = 2.f; }
int main() {
  float *m, *b;
  cudaMallocManaged(&m, 32 * sizeof(float));
  cudaMalloc(&b, 32 * sizeof(float));
  k<<<1, 32>>>(m);
  cudaDeviceSynchronize();
  float seen = m[3];
  other<<<1, 32>>>(b);
  other<<<1, 32>>>(b);
  cudaFree(b);
  cudaFree(m);
  return (int)seen;
}
"""


def test_managed_memory_is_freed_only_after_the_host_reads_it(tmp_path) -> None:
    assert ("GL002", 5) in codes(tmp_path, "m.cu", MANAGED)
    after = fixed(tmp_path, "m.cu", MANAGED, "--select", "GL002")
    lines = after.splitlines()
    assert lines.index("  cudaFree(m);") == lines.index("  float seen = m[3];") + 1


def test_no_gl002_when_the_host_reads_managed_memory_last(tmp_path) -> None:
    late_read = MANAGED.replace("  float seen = m[3];\n", "").replace("  cudaFree(b);\n",
                                                                      "  cudaFree(b);\n  float seen = m[3];\n")
    assert [c for c in codes(tmp_path, "m.cu", late_read) if c[0] == "GL002" and c[1] == 5] == []


PYTHON_MOVE_AND_DEL = """\
import torch
dev = "cuda"
feats = torch.randn(8, device=dev)
y = feats.sum()
for i in range(3):
    z = torch.ones(4, device=dev) + i
    print(float(z.sum()))
print(float(y))
"""


def test_python_move_and_del_of_one_round_never_meet(tmp_path) -> None:
    assert codes(tmp_path, "p.py", PYTHON_MOVE_AND_DEL) == [("GL001", 4), ("GL002", 3)]
    after = fixed(tmp_path, "p.py", PYTHON_MOVE_AND_DEL)
    compile(after, "p.py", "exec")
    lines = after.splitlines()
    use = lines.index("y = feats.sum()")
    assert all(not (line.strip() == "del feats" and i < use) for i, line in enumerate(lines)), after


REALLOCATED = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *p;
  cudaMalloc(&p, 128);
  k<<<1, 32>>>(p);
  cudaMalloc(&p, 128);
  k<<<1, 32>>>(p);
  return 0;
}
"""


def test_gl005_never_frees_a_pointer_twice(tmp_path) -> None:
    assert [c for c in codes(tmp_path, "r.cu", REALLOCATED) if c[0] == "GL005"] == [("GL005", 4), ("GL005", 6)]
    after = fixed(tmp_path, "r.cu", REALLOCATED, "--select", "GL005")
    assert after.count("cudaFree(p);") == 1  # the second allocation's; the first has no safe place here
    assert after.index("cudaFree(p);") > after.rindex("k<<<1, 32>>>(p);")


LOOP = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  for (int i = 0; i < 10; i++) {
    float *d;
    cudaMalloc(&d, 128);
    k<<<1, 32>>>(d);
    cudaFree(d);
  }
  return 0;
}
"""

HOISTED = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *d;
  cudaMalloc(&d, 128);
  for (int i = 0; i < 10; i++) {
    k<<<1, 32>>>(d);
  }
  cudaFree(d);
  return 0;
}
"""


def test_gl101_fixes_every_line_ending_alike(tmp_path) -> None:
    for ending in ("\n", "\r\n", "\r"):
        path = tmp_path / "l.cu"
        path.write_bytes(LOOP.replace("\n", ending).encode())
        assert run(tmp_path, "fix", "--apply", "--unsafe-fixes", "--isolated", "--select", "GL101", "l.cu").exit_code == 0
        assert path.read_bytes() == HOISTED.replace("\n", ending).encode(), repr(ending)


def test_hostile_constants_fold_to_unknown_quickly(tmp_path) -> None:
    text = """\
__global__ void k(float *a) { a[0] = 1; }
#define BIG (1 << 100000000)
int main() {
  float *d, *e;
  cudaMalloc(&d, 1e308 * 1e308);
  cudaMalloc(&e, BIG * 99999999999999999999999);
  k<<<1, 1>>>(d);
  k<<<1, 1>>>(e);
  cudaMemset(d, 0, -5);
  cudaFree(d);
  cudaFree(e);
}
"""
    (tmp_path / "h.cu").write_text(text)
    # A fresh process, timed out: folding `1 << 100000000` must not build the integer.
    result = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--isolated", "--select", "ALL", "--min-bytes", "0", "h.cu"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr and "error" not in result.stderr


OVERWRITTEN = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *p;
  cudaMalloc(&p, 128);
  k<<<1, 32>>>(p);
  p = nullptr;
  return 0;
}
"""

SHADOWED = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
void run() {
  float *p;
  cudaMalloc(&p, 128);
  k<<<1, 32>>>(p);
  float *p;
  cudaFree(p);
}
"""


def test_gl005_never_frees_a_name_that_holds_something_else(tmp_path) -> None:
    # Found by benchmarks/fuzz.py: the fix freed the new value before the exit, the leak stayed,
    # and each round added another free until the loop gave up.
    for name, text in (("o.cu", OVERWRITTEN), ("s.cu", SHADOWED)):
        assert ("GL005", 4) in codes(tmp_path, name, text)
        assert fixed(tmp_path, name, text, "--select", "GL005") == text


def test_same_names_in_many_functions_are_fixed_together(tmp_path) -> None:
    # Found by the perf helper: "the same object" was the variable name alone, so 40 functions
    # each with `a` and `b` got two fixes per round and `fix` gave up after 100 rounds.
    import runpy

    generate = runpy.run_path(str(Path(__file__).resolve().parent.parent / "benchmarks" / "static_speed.py"))
    text = generate["stress_cuda_functions"](40)
    after = fixed(tmp_path, "m.cu", text)
    assert after != text
