"""Each rule's fix, on small programs, with the exact text it produces — and the places where a
fix must not be offered because moving the statement would change what the program does."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import run_file
from gpulint.config import Settings
from gpulint.fixloop import fix_file
from gpulint.findings import Applicability
from gpulint.rules import RULES


def dedent(text: str) -> str:
    """Dedent a program written after the unindented KERNEL line."""
    if text.startswith(KERNEL):
        return KERNEL + textwrap.dedent(text[len(KERNEL):])
    return textwrap.dedent(text)


def fixed(tmp_path: Path, name: str, text: str, unsafe: bool = True) -> str:
    path = tmp_path / name
    path.write_text(dedent(text))
    result = fix_file(path, Settings(), sorted(RULES), unsafe=unsafe)
    assert result.problem is None, result.problem
    return result.after.decode()


def fix_of(tmp_path: Path, name: str, text: str, code: str):
    path = tmp_path / name
    path.write_text(dedent(text))
    found = [f for f in run_file(path).findings if f.code == code]
    assert len(found) == 1, [f.code for f in run_file(path).findings]
    return found[0].fix


KERNEL = "__global__ void k(float *a) { a[threadIdx.x] += 1.f; }\n"


def test_gl001_moves_allocation_and_its_upload_to_the_first_use(tmp_path: Path) -> None:
    out = fixed(tmp_path, "a.cu", KERNEL + """\
        int main() {
          float *a, *b, h[64];
          cudaMalloc(&a, 256);
          cudaMalloc(&b, 256);
          cudaMemcpy(b, h, 256, cudaMemcpyHostToDevice);
          k<<<1, 64>>>(a);
          cudaFree(a);
          for (int i = 0; i < 3; ++i) {
            k<<<1, 64>>>(b);
          }
          cudaFree(b);
          return 0;
        }
        """)
    assert out == KERNEL + textwrap.dedent("""\
        int main() {
          float *a, *b, h[64];
          cudaMalloc(&a, 256);
          k<<<1, 64>>>(a);
          cudaFree(a);
          cudaMalloc(&b, 256);
          cudaMemcpy(b, h, 256, cudaMemcpyHostToDevice);
          for (int i = 0; i < 3; ++i) {
            k<<<1, 64>>>(b);
          }
          cudaFree(b);
          return 0;
        }
        """)


def test_gl001_not_offered_out_of_a_branch(tmp_path: Path) -> None:
    path = tmp_path / "a.cu"
    path.write_text(dedent(KERNEL + """\
        int main(int argc, char **argv) {
          float *a, *b;
          cudaMalloc(&a, 256);
          if (argc > 1) {
            cudaMalloc(&b, 256);
          } else {
            cudaMalloc(&b, 512);
          }
          k<<<1, 64>>>(a);
          k<<<1, 64>>>(b);
          cudaFree(a);
          cudaFree(b);
          return 0;
        }
        """))
    early = [f for f in run_file(path).findings if f.code == "GL001"]
    assert len(early) == 2 and all(f.fix is None for f in early)


def test_gl002_moves_the_free_after_the_last_access_not_the_last_use(tmp_path: Path) -> None:
    """Rodinia's backprop: the copy back to the host reads the buffer after its last kernel."""
    out = fixed(tmp_path, "b.cu", KERNEL + """\
        int main() {
          float *a, *b, h[64];
          cudaMalloc(&a, 256);
          cudaMalloc(&b, 256);
          k<<<1, 64>>>(a);
          cudaMemcpy(h, a, 256, cudaMemcpyDeviceToHost);
          k<<<1, 64>>>(b);
          k<<<1, 64>>>(b);
          cudaFree(a);
          cudaFree(b);
          return 0;
        }
        """)
    assert "  cudaMemcpy(h, a, 256, cudaMemcpyDeviceToHost);\n  cudaFree(a);\n" in out
    assert out.count("cudaFree(a);") == 1


def test_gl002_not_offered_when_an_error_path_frees_in_between(tmp_path: Path) -> None:
    fix = fix_of(tmp_path, "b.cu", KERNEL + """\
        int main(int argc, char **argv) {
          float *a, *b;
          cudaMalloc(&a, 256);
          cudaMalloc(&b, 256);
          k<<<1, 64>>>(a);
          if (argc > 3) { cudaFree(a); cudaFree(b); return 1; }
          k<<<1, 64>>>(b);
          cudaFree(a);
          cudaFree(b);
          return 0;
        }
        """, "GL002")
    assert fix is None or "cudaFree(a)" not in "".join(e.content for e in fix.edits)


def test_gl002_python_inserts_del_after_the_last_use(tmp_path: Path) -> None:
    out = fixed(tmp_path, "t.py", """\
        import torch


        def train(model, data, device):
            w = torch.randn(100, 100, device=device)
            y = model(w)
            for batch in data:
                model(batch)
            return y
        """)
    assert "    y = model(w)\n    del w\n    for batch in data:\n" in out


def test_gl004_unused_allocation_is_removed_or_nulled(tmp_path: Path) -> None:
    out = fixed(tmp_path, "c.cu", """\
        __global__ void k(float *a, float *unused) { a[threadIdx.x] += 1.f; }
        int main() {
          float *a, *ws, *dbg;
          cudaMalloc(&a, 256);
          cudaMalloc(&ws, 512);
          cudaMalloc(&dbg, 64);
          cudaMemset(dbg, 0, 64);
          k<<<1, 64>>>(a, ws);
          cudaFree(a);
          cudaFree(ws);
          cudaFree(dbg);
          return 0;
        }
        """)
    # `ws` is still passed to the kernel (which ignores it): it becomes a null pointer.
    assert "  ws = nullptr;\n" in out and "cudaMalloc(&ws" not in out and "cudaFree(ws)" not in out
    # `dbg` is mentioned nowhere else: allocation, memset and free go.
    assert "dbg" in out.splitlines()[2] and out.count("dbg") == 1


def test_gl004_not_removed_when_a_copy_reads_it_back(tmp_path: Path) -> None:
    fix = fix_of(tmp_path, "c.cu", KERNEL + """\
        int main() {
          int *dbg, h[16];
          cudaMalloc(&dbg, 64);
          cudaMemset(dbg, 0, 64);
          cudaMemcpy(h, dbg, 64, cudaMemcpyDeviceToHost);
          cudaFree(dbg);
          return h[0];
        }
        """, "GL004")
    assert fix is None


def test_gl004_guarded_allocation_moves_under_its_guard(tmp_path: Path) -> None:
    out = fixed(tmp_path, "g.py", """\
        import torch


        def conv(x, kh, device):
            columns = torch.empty(64, kh, device=device)
            if kh > 1:
                columns.copy_(x)
                out = columns @ x
            else:
                out = x
            return out
        """)
    assert "    if kh > 1:\n        columns = torch.empty(64, kh, device=device)\n        columns.copy_(x)\n" in out


def test_gl004_guard_without_braces_gets_no_fix(tmp_path: Path) -> None:
    fix = fix_of(tmp_path, "g.cu", """\
        __global__ void add(float *y, const float *b) { y[threadIdx.x] += b[threadIdx.x]; }
        int main(int argc, char **argv) {
          float *y, *b;
          cudaMalloc(&y, 256);
          cudaMalloc(&b, 256);
          add<<<1, 64>>>(y, y);
          if (argc > 1) add<<<1, 64>>>(y, b);
          cudaFree(b);
          cudaFree(y);
          return 0;
        }
        """, "GL004")
    assert fix is None


def test_gl005_frees_before_each_leaking_exit(tmp_path: Path) -> None:
    out = fixed(tmp_path, "l.cu", KERNEL + """\
        int run(int n) {
          float *d;
          cudaMalloc(&d, n * sizeof(float));
          if (n == 0)
            return -1;
          if (n < 0) { return -2; }
          k<<<1, 64>>>(d);
          return 0;
        }
        """)
    assert "  if (n == 0)\n    { cudaFree(d); return -1; }\n" in out
    assert "  if (n < 0) { cudaFree(d); return -2; }\n" in out
    assert "  k<<<1, 64>>>(d);\n  cudaFree(d);\n  return 0;\n" in out


def test_gl005_copies_the_programs_own_free_statement(tmp_path: Path) -> None:
    out = fixed(tmp_path, "l.cu", KERNEL + """\
        #define CHECK(x) do { if ((x) != cudaSuccess) return 1; } while (0)
        int run(int n) {
          float *d;
          CHECK(cudaMalloc(&d, 256));
          if (n == 0) {
            return -1;
          }
          k<<<1, 64>>>(d);
          CHECK(cudaFree(d));
          return 0;
        }
        """)
    assert "  if (n == 0) {\n    CHECK(cudaFree(d));\n    return -1;\n  }\n" in out


def test_gl008_shrinks_to_the_runtime_extent_or_only_shows_it(tmp_path: Path) -> None:
    program = """\
        #define MAX_N 4096
        __global__ void k(float *a, int n) { if (threadIdx.x < n) a[threadIdx.x] = 0.f; }
        int main(int argc, char **argv) {
          int n = argc * 10;
          float *d, h[MAX_N];
          cudaMalloc(&d, MAX_N * sizeof(float));
          cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
          k<<<1, 64>>>(d, n);
          cudaFree(d);
          return 0;
        }
        """
    fix = fix_of(tmp_path, "o.cu", program, "GL008")
    assert fix.applicability is Applicability.UNSAFE and [e.content for e in fix.edits] == ["n * sizeof(float)"]
    late = program.replace("  int n = argc * 10;\n", "").replace("float *d, h[MAX_N];", "float *d, h[MAX_N];\n  int m = argc;") \
        .replace("cudaMalloc(&d, MAX_N * sizeof(float));", "cudaMalloc(&d, MAX_N * sizeof(float));\n  int n = m * 10;")
    fix = fix_of(tmp_path, "late.cu", late, "GL008")
    assert fix.applicability is Applicability.DISPLAY_ONLY  # `n` is declared after the allocation


def test_gl101_hoists_allocation_declaration_and_free(tmp_path: Path) -> None:
    out = fixed(tmp_path, "h.cu", KERNEL + """\
        int main() {
          for (int it = 0; it < 10; ++it) {
            float* tmp;
            cudaMalloc(&tmp, 1024);
            k<<<1, 64>>>(tmp);
            cudaFree(tmp);
          }
          return 0;
        }
        """)
    assert out == KERNEL + textwrap.dedent("""\
        int main() {
          float* tmp;
          cudaMalloc(&tmp, 1024);
          for (int it = 0; it < 10; ++it) {
            k<<<1, 64>>>(tmp);
          }
          cudaFree(tmp);
          return 0;
        }
        """)


def test_gl101_allocation_under_a_branch_in_the_loop_is_not_hoisted(tmp_path: Path) -> None:
    fix = fix_of(tmp_path, "h.cu", KERNEL + """\
        int main() {
          float* tmp;
          for (int it = 0; it < 10; ++it) {
            if (it % 2 == 0) {
              cudaMalloc(&tmp, 1024);
              k<<<1, 64>>>(tmp);
              cudaFree(tmp);
            }
          }
          return 0;
        }
        """, "GL101")
    assert fix is None


def test_gl101_python_flush_is_dropped_and_empty_block_gets_pass(tmp_path: Path) -> None:
    out = fixed(tmp_path, "f.py", """\
        import torch


        def run(model, batches):
            for b in batches:
                model(b)
                if b.shape[0] > 1:
                    torch.cuda.empty_cache()
        """)
    assert "        if b.shape[0] > 1:\n            pass\n" in out
    compile(out, "f.py", "exec")


def test_gl102_creates_on_the_device(tmp_path: Path) -> None:
    program = """\
        import torch


        def init(n, device):
            w = torch.randn(n, n).to(device)
            b = torch.zeros(n).to(device=device)
            c = torch.ones(n).cuda()
            d = torch.ones(n).to(device, non_blocking=True)
            return w @ b + c + d
        """
    safe_only = fixed(tmp_path, "s.py", program, unsafe=False)
    assert "w = torch.randn(n, n).to(device)" in safe_only  # random: the CUDA generator differs
    assert "b = torch.zeros(n, device=device)" in safe_only
    assert 'c = torch.ones(n, device="cuda")' in safe_only
    assert "d = torch.ones(n).to(device, non_blocking=True)" in safe_only  # left to a person
    # Display-only even with --unsafe-fixes: the program would compute with other numbers.
    assert "w = torch.randn(n, n).to(device)" in fixed(tmp_path, "u.py", program)


def test_gl103_hoists_the_copy(tmp_path: Path) -> None:
    out = fixed(tmp_path, "c.cu", """\
        __global__ void apply(const float *w, float *x) { x[threadIdx.x] *= w[threadIdx.x]; }
        int main() {
          float *w, *x, h[64];
          cudaMalloc(&w, 256);
          cudaMalloc(&x, 256);
          for (int it = 0; it < 10; ++it) {
            cudaMemcpy(w, h, 256, cudaMemcpyHostToDevice);
            apply<<<1, 64>>>(w, x);
          }
          cudaFree(w);
          cudaFree(x);
          return 0;
        }
        """)
    assert "  cudaMemcpy(w, h, 256, cudaMemcpyHostToDevice);\n  for (int it = 0; it < 10; ++it) {\n    apply" in out


@pytest.mark.parametrize("code", ["GL001", "GL002", "GL004", "GL005", "GL007", "GL008", "GL101", "GL102", "GL103",
                                  "GL901"])
def test_fix_safety_is_documented(code: str) -> None:
    doc = RULES[code].doc
    section = doc.split("## Fix safety", 1)[1]
    assert "safe" in section or "display" in section


def test_placement_reads_the_blocks_the_frontend_recorded() -> None:
    """Same block or not is span arithmetic over the frontend's `{ ... }` spans, the braces of a
    `switch` included: a statement never moves into a case from outside it."""
    from gpulint.fixes.placement import block_of, same_block
    from gpulint.static import cuda_treesitter
    from gpulint.static.lower import lower

    source = (b"__global__ void k(float* p) { p[0] = 1; }\n"
              b"void f(int m) {\n  float* d;\n  cudaMalloc(&d, 4);\n  switch (m) {\n  case 0:\n    k<<<1, 1>>>(d);\n"
              b"    break;\n  }\n  if (m) { k<<<1, 1>>>(d); }\n  cudaFree(d);\n}\n")
    unit, _ = lower(cuda_treesitter.parse("t.cu", source))
    timeline = next(t for t in unit.timelines if t.name == "f")
    at = source.find
    body, cases, arm = at(b"{\n  float*"), at(b"{\n  case"), at(b"{ k<<<")
    assert sorted(timeline.blocks) == [(body, len(source) - 1), (cases, at(b"}\n  if") + 1), (arm, at(b"}\n  cuda") + 1)]
    assert block_of(timeline, at(b"case 0")) == (cases, at(b"}\n  if") + 1)
    assert block_of(timeline, cases) == (body, len(source) - 1)  # the brace belongs to the block outside
    alloc, launch, free = at(b"cudaMalloc"), at(b"k<<<1, 1>>>(d);\n    break"), at(b"cudaFree")
    assert same_block(source, timeline, alloc, free, False)
    assert not same_block(source, timeline, alloc, launch, False)
    assert same_block(source, timeline, alloc, launch, False, inward="later")
    assert not same_block(source, timeline, launch, free, False)


def test_python_placement_reads_the_suites_the_frontend_recorded() -> None:
    """A Python position belongs to the suite its line's first code is in; suites are the spans the
    frontend recorded, not indentation read back from the text."""
    from gpulint.fixes.placement import block_of, same_block
    from gpulint.static.python import analyse

    source = (b"import torch\n\ndef f(loader, n):\n    x = torch.zeros(n, device='cuda')\n    for b in loader:\n"
              b"        y = b * 2\n    if n:\n        z = x + 1\n    return x\n")
    unit, _ = analyse("t.py", source)
    timeline = next(t for t in unit.timelines if t.name.endswith("f"))
    at = source.find
    body, loop, arm = (at(b"x = torch"), at(b"return x") + 8), (at(b"y = b"), at(b"* 2") + 3), (at(b"z = x"), at(b"+ 1") + 3)
    assert sorted(timeline.blocks) == [body, loop, arm]
    assert block_of(timeline, at(b"y = b"), python=True) == loop
    assert same_block(source, timeline, at(b"x = torch"), at(b"    return"), True)  # from the line's start
    assert not same_block(source, timeline, at(b"x = torch"), at(b"y = b"), True)
    assert same_block(source, timeline, at(b"x = torch"), at(b"z = x"), True, inward="later")
    assert not same_block(source, timeline, at(b"y = b"), at(b"z = x"), True)
