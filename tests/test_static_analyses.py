"""The analyses of DESIGN §4 on small programs: kernel bodies, sizes, calls, aliases, members."""
from __future__ import annotations

from collections import Counter

import pytest

from gpulint.history import Access, Op
from gpulint.static import cuda_treesitter
from gpulint.static.kernels import summarize
from gpulint.static.lower import lower
from gpulint.static.sizes import Folder


def unit_of(code: str):
    tu = cuda_treesitter.parse("t.cu", code.encode())
    unit, skipped = lower(tu)
    return unit


def findings(code: str, tmp_path, **settings) -> Counter:
    from conftest import run_file

    path = tmp_path / "t.cu"
    path.write_text(code)
    return Counter((f.code, f.location.row) for f in run_file(path, **settings).findings)


def test_kernel_body_reads_writes_and_aliases() -> None:
    tu = cuda_treesitter.parse("k.cu", b"""
__device__ void store(float *p, float v) { *p = v; }
__device__ float load(const float *p) { return __ldg(p); }
template <typename T>
__global__ void k(T *out, const T *in, float *unused, int *counter, float *rows, float *viaDevice, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2;
  atomicAdd(counter, 1);
  float *row = rows + i * n;
  row[0] += 1.f;
  store(&viaDevice[i], load(in + i));
  unused + 1;
}
""")
    k = summarize(tu.functions)["k"][0]
    out, in_, unused, counter, rows, via, n = k.access
    assert out == Access.WRITE
    assert in_ == Access.READ
    assert unused == Access.NONE
    assert counter == Access.READ | Access.WRITE
    assert rows == Access.READ | Access.WRITE
    assert via == Access.WRITE
    assert n == Access.NONE


def test_host_accesses_of_managed_memory_are_uses() -> None:
    unit = unit_of("""
static float sum(const float *p, int n) { float s = 0; for (int i = 0; i < n; ++i) s += p[i]; return s; }
int main() {
  float *m;
  cudaMallocManaged(&m, 64);
  m[0] = 1.f;
  float *q = &m[2];
  size_t b = sizeof(m[0]);
  memset(m, 0, 64);
  float s = sum(m, 16);
  cudaFree(m);
  return 0;
}
""")
    m = next(h for h in unit.histories if h.name == "m")
    assert [(t.event.op, t.event.location.row, t.use) for t in m.touches] == [
        (Op.HOST, 6, True), (Op.HOST, 9, True), (Op.HOST, 10, True)]


def test_kernel_stores_of_pointer_parameters() -> None:
    tu = cuda_treesitter.parse("k.cu", b"""
struct Node { float *data; Node *next; };
__device__ float *g_ws;
__device__ void put(float **slot, float *v) { *slot = v; }
__global__ void table(float **t, float *buf, int n) { t[threadIdx.x] = buf + threadIdx.x * n; }
__global__ void link(Node *nodes, float *pool) {
  float *p = pool + threadIdx.x;
  nodes[threadIdx.x].data = p;
  nodes[threadIdx.x].next = &nodes[threadIdx.x + 1];
}
__global__ void via(float **slots, float *v) { put(&slots[threadIdx.x], v); }
__global__ void global(float *ws) { g_ws = ws; }
__global__ void local(float *x) { float *q; q = x; q[0] = 1.f; }
""")
    k = {name: s[0] for name, s in summarize(tu.functions).items()}
    assert k["table"].stores == {1: {0}} and k["table"].access[1] == Access.READ | Access.WRITE
    assert k["link"].stores == {1: {0}}  # nodes[i].next = &nodes[j] links the buffer to itself
    assert k["via"].stores == {1: {0}}
    assert k["global"].stores == {0: {-1}}
    assert k["local"].stores == {} and k["local"].access[0] == Access.WRITE


@pytest.mark.parametrize("expr, value", [
    ("N * sizeof(float)", 4096 * 4),
    ("M * sizeof(double2)", 64 * 16),
    ("(1 << 10) * K", 1024 * 3),
    ("HALF / 2", 2048),
    ("sizeof(float *) * 4", 32),
    ("N * n", None),
])
def test_size_folding(expr: str, value) -> None:
    tu = cuda_treesitter.parse("s.cu", f"""
#define N 4096
#define HALF (N / 2 * 2)
constexpr int M = 64;
const int K = 3;
void f(int n) {{ cudaMalloc(&p, {expr}); }}
""".encode())
    call = tu.functions[0].body.stmts[0].expr
    folder = Folder.for_unit(tu)
    size = folder.fold(call.args[1])
    assert size.value == value
    if value is None:
        assert size.expr == "4096*n" and not size.constant_only


def test_const_locals_fold_and_runtime_sizes_compare_by_text() -> None:
    unit = unit_of("""
__global__ void k(float *a) { a[0] = 1; }
void f(int n) {
  const int rows = 128;
  float *a, *b;
  cudaMalloc(&a, rows * 2 * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  k<<<1,1>>>(a); k<<<1,1>>>(b);
  cudaFree(a); cudaFree(b);
}
""")
    sizes = {h.name: h.size for h in unit.histories}
    assert sizes["a"].value == 1024 and sizes["a"].constant_only
    assert sizes["b"].value is None and sizes["b"].expr == "n*4"


def test_sizes_written_alike_differ_after_an_assignment_in_between() -> None:
    unit = unit_of("""
#include <iostream>
struct Plan { size_t bytes; };
int g_n;
static void configure(int level) { g_n = 1024 >> level; }
static void read_size(int &n) { std::cin >> n; }
static void show(const int &n) {}
void f(Plan cfg, int n, int m) {
  float *a0, *a1, *b0, *b1, *c0, *c1, *d0, *d1, *e0, *e1, *s0, *s1, *t;
  cudaMalloc(&a0, cfg.bytes);
  cfg.bytes = cfg.bytes / 2;
  cudaMalloc(&a1, cfg.bytes);
  cudaMalloc(&b0, n * 4);
  read_size(n);
  cudaMalloc(&b1, n * 4);
  cudaMalloc(&c0, n * 4);
  show(n);
  cudaMalloc(&c1, n * 4);
  cudaMalloc(&d0, g_n * 4);
  configure(1);
  cudaMalloc(&d1, g_n * 4);
  cudaMalloc(&e0, m * 4);
  std::cin >> m;
  cudaMalloc(&e1, m * 4);
  size_t bytes = n * 4;
  cudaMalloc(&s0, bytes);
  for (int i = 0; i < 3; ++i) {
    cudaMalloc(&t, bytes);
    cudaMalloc(&s1, bytes);
    bytes *= 2;
  }
}
""")
    sizes = {h.name: h.size for h in unit.histories}
    for name in ("a", "b", "d", "e"):
        assert not sizes[name + "0"].same_as(sizes[name + "1"]), name
    assert sizes["c0"].same_as(sizes["c1"])  # a const reference cannot change n
    assert not sizes["s0"].same_as(sizes["t"])  # `bytes *= 2` later in the loop: another version
    assert sizes["t"].same_as(sizes["s1"])  # the same iteration, nothing assigned between


def test_assigning_one_member_keeps_sizes_of_the_others() -> None:
    unit = unit_of("""
struct Net { int n, m; float *units; };
void f(Net *net, Net cfg) {
  float *a, *b, *c, *d;
  int hid = net->n;
  cudaMalloc(&a, hid * 4);
  cudaMalloc(&c, cfg.n * 4);
  for (int j = 0; j < hid; ++j) net->units[j] = 0.f;
  cfg.m = 3;
  cudaMalloc(&b, hid * 4);
  cudaMalloc(&d, cfg.n * 4);
}
""")
    sizes = {h.name: h.size for h in unit.histories}
    assert sizes["a"].same_as(sizes["b"]) and sizes["c"].same_as(sizes["d"])


def test_worked_example_of_design_section_7(tmp_path) -> None:
    # Allocated at T=2, first accessed at T=7, last at T=9, freed at T=12; T=3..6 and T=10..11 are
    # unrelated launches: GL001 with distance 4 and GL002 with distance 2.
    code = """
__global__ void other(float *x) { x[0] = 1; }
__global__ void use(float *x) { x[0] += 1; }
int main() {
  float *o, *d;
  cudaMalloc(&o, 64);
  cudaMalloc(&d, 64);
  other<<<1,1>>>(o); other<<<1,1>>>(o); other<<<1,1>>>(o); other<<<1,1>>>(o);
  use<<<1,1>>>(d);
  cudaMemcpy(d, o, 64, cudaMemcpyDeviceToDevice);
  use<<<1,1>>>(d);
  other<<<1,1>>>(o); other<<<1,1>>>(o);
  cudaFree(d);
  cudaFree(o);
  return 0;
}
"""
    unit = unit_of(code)
    from gpulint.rules import RULES, RuleSettings

    found = {(f.code, f.obj): f.properties.get("distance") for code_ in ("GL001", "GL002")
             for f in RULES[code_].check(unit, RuleSettings())}
    assert found[("GL001", "d")] == 4
    assert found[("GL002", "d")] == 2


def test_same_file_helper_launches_count_and_unknown_calls_use(tmp_path) -> None:
    code = """
__global__ void k(float *x) { x[0] = 1; }
void run_twice(float *x) { k<<<1,1>>>(x); k<<<1,1>>>(x); }
void step(float *y) { k<<<1,1>>>(y); }
extern void library_fn(float *p);
int main() {
  float *a, *b;
  cudaMalloc(&a, 64);
  cudaMalloc(&b, 64);
  run_twice(a);
  step(b);
  library_fn(a);
  cudaFree(a);
  cudaFree(b);
  return 0;
}
"""
    unit = unit_of(code)
    a = next(h for h in unit.histories if h.name == "a")
    b = next(h for h in unit.histories if h.name == "b")
    assert [t.event.api for t in a.uses] == ["run_twice", "library_fn"]
    assert a.escaped  # handed to a function gpulint cannot see
    assert [t.event.api for t in b.uses] == ["step"]
    assert next(e for e in unit.timelines[-1].events if e.api == "run_twice").launches == 2
    # b's first use comes after run_twice's 2 launches: GL001 distance 2.
    assert findings(code, tmp_path, select=("GL001",)) == Counter({("GL001", 9): 1})


def test_pointer_swap_in_loop_binds_both_objects(tmp_path) -> None:
    code = """
#include <utility>
__global__ void stencil(const float *in, float *out) { out[threadIdx.x] = in[threadIdx.x]; }
int main() {
  float *cur, *next;
  cudaMalloc(&cur, 1024);
  cudaMalloc(&next, 1024);
  for (int it = 0; it < 100; ++it) {
    stencil<<<1, 256>>>(cur, next);
    std::swap(cur, next);
  }
  cudaFree(cur);
  cudaFree(next);
  return 0;
}
"""
    assert findings(code, tmp_path) == Counter()


def test_alias_frees_and_uses_count(tmp_path) -> None:
    code = """
__global__ void k(float *x) { x[0] = 1; }
int main() {
  float *d;
  cudaMalloc(&d, 64);
  float *alias = d;
  k<<<1,1>>>(alias);
  cudaFree(alias);
  return 0;
}
"""
    assert findings(code, tmp_path) == Counter()


def test_struct_members_tracked_across_functions(tmp_path) -> None:
    code = """
struct Buffers { float *a; float *b; };
__global__ void k(float *x) { x[0] = 1; }
void setup(Buffers *s, int n) {
  cudaMalloc(&s->a, n);
  cudaMalloc(&s->b, n);
}
void work(Buffers *s) { k<<<1,1>>>(s->a); }
void teardown(Buffers *s) { cudaFree(s->a); }
"""
    # b: never used anywhere (GL004) and never freed anywhere in the file (GL005); a: fine.
    assert findings(code, tmp_path) == Counter({("GL004", 6): 1, ("GL005", 6): 1})


def test_failed_allocation_paths_need_no_free(tmp_path) -> None:
    code = """
__global__ void k(float *x) { x[0] = 1; }
int f(int n) {
  float *d;
  if (cudaMalloc(&d, n) != cudaSuccess) return -1;
  cudaError_t err = cudaMemset(d, 0, n);
  k<<<1,1>>>(d);
  cudaFree(d);
  return 0;
}
int g(int n) {
  float *d;
  cudaMalloc(&d, n);
  if (n > 100) return -1;
  k<<<1,1>>>(d);
  cudaFree(d);
  return 0;
}
"""
    found = findings(code, tmp_path, select=("GL005",))
    assert found == Counter({("GL005", 13): 1})


def test_parse_errors_mark_function_incomplete() -> None:
    tu = cuda_treesitter.parse("b.cu", b"void f() { float *d; cudaMalloc(&d, 4); %%% garbage ;; }\nint main() { return 0; }\n")
    assert tu.functions[0].has_errors
    unit, skipped = lower(tu)
    assert skipped == ["f"]
    assert all(h.incomplete for h in unit.histories)


def test_correlated_switches_and_null_checked_frees(tmp_path) -> None:
    code = """
__global__ void k(float *x) { x[0] = 1; }
void run(int mode, int n) {
  float *d = 0, *w = 0;
  switch (mode) {
  case 0:
  case 1:
    cudaMalloc(&d, n);
    break;
  default:
    cudaMallocManaged(&d, n);
    break;
  }
  cudaMalloc(&w, n);
  k<<<1,1>>>(d);
  k<<<1,1>>>(w);
  switch (mode) {
  case 0:
  case 1:
    cudaFree(d);
    break;
  default:
    cudaFree(d);
  }
  if (w) cudaFree(w);
}
"""
    assert findings(code, tmp_path, select=("GL005",)) == Counter()


def test_exit_at_the_end_is_not_a_scope_exit(tmp_path) -> None:
    code = """
#include <cstdlib>
__global__ void k(float *x) { x[0] = 1; }
int main() {
  float *d;
  cudaMalloc(&d, 64);
  k<<<1,1>>>(d);
  exit(EXIT_SUCCESS);
}
"""
    assert findings(code, tmp_path) == Counter()


def test_members_through_arrow_and_dot_are_the_same_slot(tmp_path) -> None:
    code = """
struct Net { float *w; };
__global__ void k(float *x) { x[0] = 1; }
void run(Net *net, Net other, int n) {
  cudaMalloc(&net->w, n);
  k<<<1,1>>>(other.w);
  cudaFree(net->w);
}
"""
    unit = unit_of(code)
    w = next(h for h in unit.histories if h.name == "net->w")
    assert w.member and [t.event.api for t in w.uses] == ["k"]
    assert findings(code, tmp_path) == Counter()
