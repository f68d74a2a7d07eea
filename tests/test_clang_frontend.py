"""The precise (libclang) CUDA frontend: stub header, lowering, compile databases, parity with tree-sitter."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("clang.cindex")

from gpulint.static import compile_db, cuda_clang  # noqa: E402
from gpulint.static import syntax as s  # noqa: E402

if not cuda_clang.available():  # pragma: no cover - depends on the machine
    pytest.skip("libclang cannot be loaded", allow_module_level=True)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CUDA_FIXTURES = sorted(FIXTURES.rglob("*.cu"))

PROGRAM = b"""\
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define N 1024  // elements
#define THREADS 256
#define CHECK(call)                                                   \\
  do {                                                                \\
    cudaError_t err = (call);                                         \\
    if (err != cudaSuccess) {                                         \\
      fprintf(stderr, "%s:%d %s\\n", __FILE__, __LINE__,               \\
              cudaGetErrorString(err));                               \\
      exit(1);                                                        \\
    }                                                                 \\
  } while (0)

struct Buffers {
  float *in;
  float *out;
  int n;
};

namespace kernels {
template <typename T>
__global__ void scale(T *out, const T *in, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = s * in[i];
}
__device__ float square(float x) { return x * x; }
__host__ __device__ float twice(float x) { return 2.0f * x; }
}  // namespace kernels

__global__ void reduce(const float *in, float *out, int n) {
  __shared__ float tile[THREADS];
  tile[threadIdx.x] = threadIdx.x < n ? in[threadIdx.x] : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(out, tile[0]);
}

int run(Buffers *b, cudaStream_t stream) {
  CHECK(cudaMalloc(&b->in, N * sizeof(float)));
  CHECK(cudaMalloc((void **)&b->out, sizeof(float)));
  std::vector<float> host(N, 1.0f);
  cudaMemcpyAsync(b->in, host.data(), N * sizeof(float), cudaMemcpyHostToDevice, stream);
  dim3 grid((N + THREADS - 1) / THREADS), block(THREADS);
  for (int it = 0; it < 3; ++it) {
    kernels::scale<float><<<grid, block, 0, stream>>>(b->in, b->in, 0.5f, N);
  }
  reduce<<<1, THREADS>>>(b->in, b->out, N);
  switch (b->n) {
    case 0:
    case 1:
      cudaFree(b->out);
      break;
    default:
      break;
  }
  for (float v : host) {
    if (v < 0) return -1;
  }
  cudaFree(b->in);
  return 0;
}
"""


def parse(code: bytes | str, name: str = "t.cu", **kw) -> s.TranslationUnit:
    return cuda_clang.parse(name, code.encode() if isinstance(code, str) else code, **kw)


def function(tu: s.TranslationUnit, name: str) -> s.Function:
    return next(f for f in tu.functions if f.name == name)


def text(tu: s.TranslationUnit, node) -> str:
    span = node if isinstance(node, s.Span) else node.span
    return tu.source[span.start:span.end].decode()


def calls(node) -> list[s.Call]:
    return [n for n in s.walk(node) if isinstance(n, s.Call)]


# --------------------------------------------------------------------------- the stub header


def test_stub_header_uses_no_toolkit_header() -> None:
    stub = cuda_clang.STUB_HEADER.read_text()
    includes = re.findall(r"#\s*include\s*[<\"]([^>\"]+)", stub)
    assert includes and all(not name.startswith(("cuda", "crt/", "device_", "driver_")) for name in includes)
    for name in ("cudaConfigureCall", "__cudaPushCallConfiguration", "cudaMallocManaged", "cuMemAlloc",
                 "cudaDeviceProp", "__shfl_down_sync", "atomicCAS", "GPULINT_MATH1(rsqrt)"):
        assert name in stub


def test_stub_parses_a_realistic_program_without_errors() -> None:
    tu = parse(PROGRAM)
    assert tu.frontend == "clang"
    assert not tu.errors
    assert [f.qualname for f in tu.functions] == [
        "kernels::scale", "kernels::square", "kernels::twice", "reduce", "run",
    ]
    scale, square, twice, reduce, run = tu.functions
    assert scale.is_kernel and scale.is_template and not scale.is_device
    assert square.is_device and not square.is_kernel
    assert not twice.is_device and not twice.is_kernel
    assert reduce.is_kernel and not reduce.is_template
    assert [(p.name, p.type, p.is_pointer) for p in scale.params] == [
        ("out", "T *", True), ("in", "T *", True), ("s", "T", False), ("n", "int", False),
    ]
    assert tu.structs == {"Buffers": ["in", "out"]}
    assert not any(f.has_errors for f in tu.functions)


def test_common_headers_and_runtime_calls_resolve() -> None:
    code = """
#include <cmath>
#include <cstring>
#include <cstdint>
#include <climits>
#include <cfloat>
#include <algorithm>
#include <memory>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <device_launch_parameters.h>
__global__ void k(float *p, unsigned long long *c) {
  float v = rsqrtf(p[0]) + sqrtf(p[1]) + fmaxf(p[2], 1.f) + __shfl_down_sync(0xffffffffu, p[3], 1);
  atomicAdd(c, 1ull); atomicMax((int *)c, 3); atomicCAS((int *)c, 0, 1); atomicExch(p, v);
  p[0] = min(v, 1.0f) + max(2, 3) + warpSize + gridDim.x;
}
int main() {
  int count = 0; cudaGetDeviceCount(&count); cudaSetDevice(0);
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  size_t free_b, total_b; cudaMemGetInfo(&free_b, &total_b);
  float *d, *h, *m; size_t pitch;
  cudaMalloc((void **)&d, 4); cudaMallocManaged(&m, 4); cudaMallocHost(&h, 4); cudaHostAlloc((void **)&h, 4, 0);
  cudaMallocPitch(&d, &pitch, 64, 64); cudaMallocAsync(&d, 4, 0); cudaFreeAsync(d, 0);
  cudaMemset(d, 0, 4); cudaMemsetAsync(d, 0, 4); cudaMemcpy2D(d, pitch, h, 64, 64, 64, cudaMemcpyHostToDevice);
  cudaStream_t st; cudaStreamCreate(&st); cudaStreamSynchronize(st); cudaStreamDestroy(st);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventRecord(e0); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1); cudaEventDestroy(e0);
  CUdeviceptr dp; cuMemAlloc(&dp, 64); cuMemcpyHtoD(dp, h, 64); cuMemcpyDtoH(h, dp, 64); cuMemsetD32(dp, 0, 16);
  cuMemFree(dp);
  printf("%s %d\\n", cudaGetErrorString(cudaGetLastError()), prop.multiProcessorCount);
  memset(h, 0, 4); cudaFreeHost(h); cudaFree(m); cudaDeviceSynchronize();
  return 0;
}
"""
    tu = parse(code)
    names = {c.callee.id for c in calls(function(tu, "main").body) if isinstance(c.callee, s.Name)}
    assert {"cudaMallocPitch", "cuMemAlloc", "cudaEventElapsedTime", "cudaGetErrorString"} <= names


# --------------------------------------------------------------------------- lowering


def test_launches_are_calls_with_a_launch_configuration() -> None:
    tu = parse(PROGRAM)
    launches = [c for c in calls(function(tu, "run").body) if c.launch is not None]
    assert len(launches) == 2
    scale, reduce = launches
    assert scale.callee == s.Name(scale.callee.span, "kernels::scale")
    assert text(tu, scale.callee) == "kernels::scale<float>"
    assert [text(tu, e) for e in scale.launch] == ["grid", "block", "0", "stream"]
    assert [s.path_of(a) for a in scale.args] == ["b.in", "b.in", None, None]
    assert isinstance(reduce.callee, s.Name) and reduce.callee.id == "reduce"
    assert [text(tu, e) for e in reduce.launch] == ["1", "THREADS"]
    assert reduce.launch[1] == s.Literal(reduce.launch[1].span, "THREADS", 256)


def test_templated_launch_inside_a_template_keeps_the_plain_name() -> None:
    tu = parse("""
template <typename T, int B> __global__ void k(T *p) {}
namespace ns { template <typename T> __global__ void g(T *p) {} }
template <typename T> void launch(T *p, int n) {
  k<T, 128><<<(n + 127) / 128, 128>>>(p);
  ns::g<T><<<1, 1>>>(p);
}
""")
    got = [(c.callee.id, len(c.launch)) for c in calls(function(tu, "launch").body)]
    assert got == [("k", 2), ("ns::g", 2)]
    assert function(tu, "launch").is_template


def test_check_macro_do_while_is_a_block_not_a_loop() -> None:
    tu = parse(PROGRAM)
    run = function(tu, "run")
    first = run.body.stmts[0]
    assert isinstance(first, s.Block)
    assert text(tu, first) == "CHECK(cudaMalloc(&b->in, N * sizeof(float)));"
    assert not any(isinstance(n, s.Loop) and n.kind == "do" for n in s.walk(run))
    malloc = next(c for c in calls(first) if c.callee.id == "cudaMalloc")
    assert text(tu, malloc) == "cudaMalloc(&b->in, N * sizeof(float))"  # the argument keeps its own span
    size = malloc.args[1]
    assert isinstance(size, s.Binary) and size.left == s.Literal(size.left.span, "N", 1024)
    assert size.right == s.Sizeof(size.right.span, "float", None)
    # what the macro body does is visible, with the span of the macro's use
    exit_call = next(c for c in calls(first) if c.callee.id == "exit")
    assert (exit_call.span.start, exit_call.span.end) == (first.span.start, first.span.end - 1)


def test_macros_are_collected() -> None:
    tu = parse(PROGRAM)
    assert set(tu.macros) == {"N", "THREADS"}  # object-like, main file only
    n = tu.macros["N"]
    assert n.text == "1024" and n.span.row == 6 and n.span.column == 1
    assert tu.source[n.span.start:n.span.end] == b"#define N 1024  // elements\n"
    if importlib.util.find_spec("gpulint.static.cuda_treesitter") is None:  # pragma: no cover
        assert n.value is None
    else:
        assert isinstance(n.value, s.Literal) and n.value.value == 1024


def test_object_like_macros_fold_to_literals_named_as_written() -> None:
    tu = parse("""
#include <cstddef>
#define BYTES (1 << 10)
#define SCALE 0.5f
#define DEV_NULL NULL
void g(int, float, void *, int);
void f(float *p, int n) { g(BYTES, SCALE, DEV_NULL, n); }
""")
    call = calls(function(tu, "f").body)[0]
    assert call.args[:3] == [
        s.Literal(call.args[0].span, "BYTES", 1024),
        s.Literal(call.args[1].span, "SCALE", 0.5),
        s.Literal(call.args[2].span, "DEV_NULL", None),
    ]


def test_syntax_error_raises_clang_parse_error() -> None:
    with pytest.raises(cuda_clang.ClangParseError) as info:
        parse("__global__ void k(float *p) { p[0] = ; }\n", name="broken.cu")
    assert any(m.startswith("broken.cu:1:") and "error" in m for m in info.value.messages)
    with pytest.raises(cuda_clang.ClangParseError):
        parse('#include "no_such_header.cuh"\nint main() { return 0; }\n')
    tu = parse("__global__ void k(float *p) { p[0] = ; }\nvoid ok() {}\n", allow_errors=True)
    assert function(tu, "k").has_errors and not function(tu, "ok").has_errors


def test_spans_are_one_based_and_statements_include_their_semicolon() -> None:
    code = "void f(float *p, int n) {\n  float *q = p;\n  q[0] = 1;\n  for (int i = 0; i < n; ++i) {\n    if (i) continue;\n    break;\n  }\n  return;\n}\n"
    tu = parse(code)
    f = tu.functions[0]
    assert (f.span.row, f.span.column, f.span.end_row, f.span.end_column) == (1, 1, 9, 2)
    assert text(tu, f.name_span) == "f"
    decl, assign, loop, ret = f.body.stmts
    assert text(tu, decl) == "float *q = p;" and (decl.span.row, decl.span.column) == (2, 3)
    assert text(tu, decl.vars[0]) == "*q = p"
    assert (decl.vars[0].name, decl.vars[0].type, decl.vars[0].is_pointer) == ("q", "float *", True)
    assert text(tu, assign) == "q[0] = 1;" and text(tu, assign.expr) == "q[0] = 1"
    assert text(tu, ret) == "return;"
    assert isinstance(loop, s.Loop) and loop.kind == "for"
    assert text(tu, loop.init) == "int i = 0;" and text(tu, loop.cond) == "i < n" and text(tu, loop.step) == "++i"
    inner_if, brk = loop.body.stmts
    assert text(tu, inner_if) == "if (i) continue;" and text(tu, inner_if.then) == "continue;"
    assert brk == s.Jump(brk.span, "break") and text(tu, brk) == "break;"
    for node in s.walk(f):
        span = getattr(node, "span", None)
        if isinstance(node, s.Name):
            assert text(tu, node) == node.id
        if span is not None:
            assert span.row >= 1 and span.column >= 1 and span.start < span.end


def test_switch_cases_range_for_and_direct_initialisation() -> None:
    tu = parse(PROGRAM)
    run = function(tu, "run")
    switch = next(st for st in run.body.stmts if isinstance(st, s.Block) and text(tu, st).startswith("switch"))
    (braces,) = switch.stmts  # the `{ ... }` holding the cases: a block fixes must not cross
    assert text(tu, braces).startswith("{") and text(tu, braces).endswith("}")
    first, second = braces.stmts
    assert isinstance(first, s.If) and isinstance(second, s.If)
    # `case 0: case 1:` -> b->n == 0 || b->n == 1
    assert isinstance(first.cond, s.Binary) and first.cond.op == "||"
    assert text(tu, first) == "case 1:\n      cudaFree(b->out);\n      break;"
    assert isinstance(second.cond, s.Binary) and second.cond.right == s.Name(second.span, "default")
    loop = next(st for st in run.body.stmts if isinstance(st, s.Loop) and st.kind == "range_for")
    assert loop.init.vars[0].name == "v" and s.path_of(loop.cond) == "host"
    grid_decl = next(st for st in run.body.stmts if isinstance(st, s.Decl) and st.vars and st.vars[0].name == "grid")
    assert [(v.name, v.type) for v in grid_decl.vars] == [("grid", "dim3"), ("block", "dim3")]
    assert grid_decl.vars[1].init == s.Other(grid_decl.vars[1].init.span, "argument_list",
                                            [s.Literal(grid_decl.vars[1].init.children[0].span, "THREADS", 256)])


def test_casts_sizeof_members_and_operators() -> None:
    tu = parse("""
#include <vector>
struct P { float *buf; };
void f(P *p, P &r, std::vector<float> &v, float2 *w) {
  void *a = (void *)p->buf;
  float *b = static_cast<float *>(a);
  unsigned long c = sizeof(float2) + sizeof *w + sizeof(p->buf);
  v[2] = r.buf[1];
  float d = float(c);
}
""")
    decls = function(tu, "f").body.stmts
    a, b, c = (st.vars[0].init for st in decls[:3])
    assert isinstance(a, s.Cast) and a.type == "void *" and s.path_of(a.operand) == "p.buf"
    assert a.operand.arrow
    assert isinstance(b, s.Cast) and b.type == "float *"
    assert c.left.left == s.Sizeof(c.left.left.span, "float2", None)
    assert isinstance(c.left.right.operand, s.Unary) and c.right.operand.field == "buf"
    assign = decls[3].expr
    assert isinstance(assign, s.Assign) and isinstance(assign.target, s.Index)
    assert s.path_of(assign.target.base) == "v" and s.path_of(assign.value.base) == "r.buf"
    assert not assign.value.base.arrow
    assert isinstance(decls[4].vars[0].init, s.Cast) and decls[4].vars[0].init.type == "float"


def test_globals_structs_methods_and_conditional_definitions() -> None:
    tu = parse("""
#ifndef GUARD_H
#define GUARD_H
__constant__ float coef[16];
static const int K = 4, J = 8;
__device__ float *g_ptr;
typedef struct { double *p; int n; } Anon;
class Pool {
 public:
  Pool(int n) { cudaMalloc(&base_, n); }
  ~Pool() { cudaFree(base_); }
  float *take(int n);
 private:
  float *base_;
  float arr_[4];
};
float *Pool::take(int n) { return base_ + n; }
#ifdef WITH_EXTRA
void extra() {}
#endif
#if 1
void always() {}
#endif
#endif
""")
    assert [[(v.name, v.type, v.is_pointer, v.is_const, v.is_static) for v in d.vars] for d in tu.globals] == [
        [("coef", "float []", False, False, False)],
        [("K", "int", False, True, True), ("J", "int", False, True, True)],
        [("g_ptr", "float *", True, False, False)],
    ]
    assert [len(d.vars[0].array_dims) for d in tu.globals] == [1, 0, 0]
    assert tu.structs == {"Anon": ["p"], "Pool": ["base_"]}
    assert [(f.qualname, f.in_conditional) for f in tu.functions] == [
        ("Pool::Pool", False), ("Pool::~Pool", False), ("Pool::take", False), ("always", True),
    ]
    assert text(tu, function(tu, "take").name_span) == "Pool::take"


def test_compile_database_arguments_reach_the_parse(tmp_path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "sizes.h").write_text("#define ELEMS 64\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "sizes.h"\n#ifdef USE_EXTRA\nvoid extra(float *p) { cudaFree(p); }\n#endif\n'
                   "void f(float *p) { cudaMemset(p, 0, ELEMS); }\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([{
        "directory": str(tmp_path),
        "command": "/usr/local/cuda/bin/nvcc -DUSE_EXTRA -Iinc -gencode arch=compute_120,code=sm_120 -c k.cu -o k.o",
        "file": "k.cu",
    }]))
    args = compile_db.load(tmp_path).args_for(str(src))
    assert args == ["-D", "USE_EXTRA", "-I", str(tmp_path / "inc"), "--cuda-gpu-arch=sm_120"]
    tu = cuda_clang.parse(str(src), src.read_bytes(), args)  # sm_120 is unknown to clang 18: left out
    assert [f.name for f in tu.functions] == ["extra", "f"]
    with pytest.raises(cuda_clang.ClangParseError):
        cuda_clang.parse(str(src), src.read_bytes())  # without -Iinc the header is missing


def test_quoted_includes_resolve_from_the_real_file(tmp_path) -> None:
    (tmp_path / "common.cuh").write_text("#pragma once\n#define TILE 8\n__device__ inline float sq(float x) { return x * x; }\n")
    src = tmp_path / "main.cu"
    src.write_text('#include "common.cuh"\n__global__ void k(float *p) { p[0] = sq(p[TILE]); }\n')
    tu = cuda_clang.parse("main.cu", src.read_bytes(), filename=str(src))
    assert [f.name for f in tu.functions] == ["k"]  # sq is the header's, not this file's


# --------------------------------------------------------------------------- compile databases

NVCC_COMMAND = (
    "ccache /usr/local/cuda-12.4/bin/nvcc -ccbin /usr/bin/g++-12 -forward-unknown-to-host-compiler "
    "-DNDEBUG -DUSE_FP16=1 -I../include -I /opt/deps/include -isystem third_party/cub "
    "--expt-relaxed-constexpr --expt-extended-lambda -Xcompiler=-fPIC,-Wall,-DFROM_HOST,-I/host/inc "
    "-Xcompiler -fopenmp -Xptxas -v -lineinfo -G --use_fast_math -rdc=true -Werror all-warnings "
    "--generate-code=arch=compute_80,code=[compute_80,sm_80] -gencode arch=compute_90,code=sm_90 "
    "-arch=sm_70 -maxrregcount 64 -O3 -std=c++17 -x cu -c /proj/src/solver.cu -o CMakeFiles/solver.dir/solver.cu.o"
)


def test_nvcc_command_lines_are_rewritten_for_clang() -> None:
    args = compile_db.rewrite(NVCC_COMMAND.split(), "/proj/build", "/proj/src/solver.cu")
    assert args == [
        "-D", "NDEBUG", "-D", "USE_FP16=1", "-I", "/proj/include", "-I", "/opt/deps/include",
        "-isystem", "/proj/build/third_party/cub", "-D", "FROM_HOST", "-I", "/host/inc", "-std=c++17",
        "--cuda-gpu-arch=sm_80", "--cuda-gpu-arch=sm_90", "--cuda-gpu-arch=sm_70",
    ]
    assert compile_db.rewrite(["nvcc", "--std", "c++14", "-arch", "sm_86", "--compiler-options", "-DA", "k.cu"],
                              "/p", "k.cu") == ["-std=c++14", "-D", "A", "--cuda-gpu-arch=sm_86"]
    assert compile_db.rewrite(["clang++", "-x", "cuda", "--cuda-gpu-arch=sm_75", "-Iinc", "-UNDEBUG", "-c", "a.cu"],
                              "/p", "a.cu") == ["-I", "/p/inc", "-U", "NDEBUG", "--cuda-gpu-arch=sm_75"]


def test_compile_database_lookup_and_headers(tmp_path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (tmp_path / "src").mkdir()
    db_file = build / "compile_commands.json"
    db_file.write_text(json.dumps([
        {"directory": str(build), "arguments": ["nvcc", "-I../include", "-c", "../src/a.cu", "-o", "a.o"],
         "file": "../src/a.cu"},
        {"directory": str(build), "command": "g++ -DHOST -c ../src/b.cpp", "file": str(tmp_path / "src" / "b.cpp")},
    ]))
    db = compile_db.load(build)
    assert db is compile_db.load(db_file)  # cached while the file is unchanged
    assert db.args_for(str(tmp_path / "src" / "a.cu")) == ["-I", str(tmp_path / "include")]
    assert db.args_for(str(tmp_path / "src" / "b.cpp")) == ["-D", "HOST"]
    assert db.args_for(str(tmp_path / "src" / "kernels.cuh")) == ["-x", "cuda", "-I", str(tmp_path / "include")]
    assert db.args_for(str(tmp_path / "elsewhere" / "x.cuh")) == ["-x", "cuda"]
    assert db.args_for(str(tmp_path / "src" / "c.cu")) is None
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(compile_db.CompileDatabaseError):
        compile_db.load(tmp_path / "bad.json")


# --------------------------------------------------------------------------- parity with tree-sitter

_FUNCTION_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(", re.M)


class Normaliser:
    """What the rules read, frontend-neutral: functions, statement kinds and nesting, and every call
    with its callee and argument paths.

    Two differences are by design and normalised here, the same way for both trees:
    * a statement that is a function-like macro use (`CHECK(cudaMalloc(...));`) is tree-sitter's
      call of `CHECK` and clang's expansion (a do-while block, an if, ...): both become
      ("macro", the calls inside), where calls of function-like macros (tree-sitter) and calls
      spanning a whole macro use (clang: what the macro body calls) are not counted;
    * an object-like macro is tree-sitter's `Name("N")` and clang's `Literal("N", 1024)`: an argument
      is its text either way.
    Blocks that are tree-sitter's `#if`/`#ifdef` regions are flattened (clang sees only the active
    branch; fixtures with an `#else` would disagree and must be reported).
    """

    def __init__(self, tu: s.TranslationUnit) -> None:
        self.tu = tu
        self.src = tu.source
        self.function_macros = {m.decode() for m in _FUNCTION_MACRO.findall(tu.source)}

    def text(self, span: s.Span) -> str:
        return self.src[span.start:span.end].decode("utf-8", "replace")

    def macro_use(self, span: s.Span) -> bool:
        m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", self.text(span))
        return m is not None and m.group(1) in self.function_macros

    def arg(self, e: s.Expr) -> str:
        e = s.strip_parens_and_casts(e)
        if isinstance(e, s.Name):
            return e.id
        if isinstance(e, s.Literal):
            return e.text
        if isinstance(e, s.Member):
            return s.path_of(e) or "?." + e.field
        if isinstance(e, s.Unary) and e.op in ("&", "*"):
            return e.op + self.arg(e.operand)
        if isinstance(e, s.Index):
            return self.arg(e.base) + "[]"
        return "?"

    def calls(self, node) -> list:
        out = []
        for n in s.walk(node):
            if not isinstance(n, s.Call) or self.macro_use(n.span):
                continue
            callee = n.callee
            if isinstance(callee, s.Name):
                name = callee.id
            elif isinstance(callee, s.Member):
                name = s.path_of(callee) or "?." + callee.field
            else:
                name = "?"
            out.append((name, tuple(self.arg(a) for a in n.args), None if n.launch is None else len(n.launch)))
        return out

    def stmts(self, stmts: list) -> list:
        out = []
        for st in stmts:
            if isinstance(st, s.Block) and self.text(st.span).lstrip().startswith("#"):
                out.extend(self.stmts(st.stmts))
                continue
            out.append(self.stmt(st))
        return out

    def stmt(self, st):
        if st is None:
            return None
        if self.macro_use(st.span):
            return ("macro", self.calls(st))
        if isinstance(st, s.Block):
            return ("block", self.stmts(st.stmts))
        if isinstance(st, s.ExprStmt):
            return ("expr", self.calls(st.expr))
        if isinstance(st, s.Decl):
            return ("decl", [(v.name, v.is_pointer) for v in st.vars], self.calls(st))
        if isinstance(st, s.If):
            return ("if", None if st.cond is None else self.calls(st.cond), self.stmt(st.then), self.stmt(st.orelse))
        if isinstance(st, s.Loop):
            return ("loop", st.kind, self.stmt(st.init), None if st.cond is None else self.calls(st.cond),
                    None if st.step is None else self.calls(st.step), self.stmt(st.body))
        if isinstance(st, s.Return):
            return ("return", None if st.value is None else self.calls(st.value))
        if isinstance(st, s.Jump):
            return ("jump", st.kind)
        return (type(st).__name__.lower(),)

    def unit(self) -> dict:
        return {
            "functions": [
                {
                    "qualname": f.qualname, "name": f.name, "kernel": f.is_kernel, "device": f.is_device,
                    "template": f.is_template, "conditional": f.in_conditional,
                    "params": [(p.name, p.is_pointer) for p in f.params],
                    "body": self.stmts(f.body.stmts),
                }
                for f in self.tu.functions
            ],
            "globals": [[(v.name, v.is_pointer) for v in d.vars] for d in self.tu.globals],
            "structs": {k: sorted(v) for k, v in self.tu.structs.items()},
            "macros": {k: m.text for k, m in self.tu.macros.items()},
        }


def _compare(ts_value, clang_value, src: bytes, path: str, out: list, allowed: list) -> None:
    if type(ts_value) is not type(clang_value):
        out.append((path, ts_value, clang_value))
        return
    if isinstance(ts_value, dict):
        for key in sorted(set(ts_value) | set(clang_value), key=str):
            if key not in ts_value or key not in clang_value:
                out.append((f"{path}.{key}", ts_value.get(key, "<missing>"), clang_value.get(key, "<missing>")))
            else:
                _compare(ts_value[key], clang_value[key], src, f"{path}.{key}", out, allowed)
        return
    if isinstance(ts_value, (list, tuple)):
        if len(ts_value) != len(clang_value):
            out.append((f"{path} (length {len(ts_value)} vs {len(clang_value)})", ts_value, clang_value))
            return
        for i, (a, b) in enumerate(zip(ts_value, clang_value)):
            _compare(a, b, src, f"{path}[{i}]", out, allowed)
        return
    if ts_value != clang_value:
        out.append((path, ts_value, clang_value))


@pytest.mark.skipif(not CUDA_FIXTURES, reason="no CUDA fixtures")
@pytest.mark.parametrize("path", CUDA_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_frontends_agree_on_fixture(path: Path) -> None:
    cuda_treesitter = pytest.importorskip("gpulint.static.cuda_treesitter")
    src = path.read_bytes()
    ts_tu = cuda_treesitter.parse(str(path), src)
    clang_tu = cuda_clang.parse(str(path), src)
    ts_unit, clang_unit = Normaliser(ts_tu).unit(), Normaliser(clang_tu).unit()
    # clang sees only the macros of the branches it compiles
    ts_unit["macros"] = {k: v for k, v in ts_unit["macros"].items() if k in clang_unit["macros"]}
    diffs: list = []
    allowed: list = []
    _compare(ts_unit, clang_unit, src, "unit", diffs, allowed)
    assert not diffs, "\n".join(f"{p}\n  tree-sitter: {a!r}\n  clang:       {b!r}" for p, a, b in diffs[:5])


@pytest.mark.skipif(not CUDA_FIXTURES, reason="no CUDA fixtures")
@pytest.mark.parametrize("path", CUDA_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_clang_frontend_gives_the_expected_findings(path: Path) -> None:
    from conftest import actual_findings, expected_findings

    assert actual_findings(path, frontend="clang") == expected_findings(path)


def test_tree_sitter_keeps_direct_initialised_variables() -> None:
    cuda_treesitter = pytest.importorskip("gpulint.static.cuda_treesitter")
    tu = cuda_treesitter.parse("t.cu", b"#define B 16\nvoid f(int n) { std::vector<float> h(n); dim3 t(B, B); }\n")
    assert [[v.name for v in st.vars] for st in tu.functions[0].body.stmts] == [["h"], ["t"]]


def test_engine_falls_back_to_tree_sitter_and_says_so_with_v(tmp_path) -> None:
    import json
    import os

    from click.testing import CliRunner

    from gpulint.cli import main

    (tmp_path / "bad.cu").write_text(
        "#include \"does_not_exist.cuh\"\n"
        "__global__ void k(float *a) { a[0] = 1.f; }\n"
        "int main() { float *d; cudaMalloc(&d, 64); k<<<1, 1>>>(d); return 0; }\n"
    )
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        quiet = CliRunner().invoke(main, ["check", "--frontend", "clang", "--format", "json", "bad.cu"])
        loud = CliRunner().invoke(main, ["check", "--frontend", "clang", "--format", "json", "-v", "bad.cu"])
    finally:
        os.chdir(old)
    # The fallback still analyses the file: the leak is found either way.
    assert [f["code"] for f in json.loads(quiet.stdout)] == ["GL005"]
    assert "falling back to tree-sitter" not in quiet.stderr
    assert "bad.cu: clang could not parse it cleanly" in loud.stderr and "falling back to tree-sitter" in loud.stderr
    assert "does_not_exist.cuh" in loud.stderr


def test_compile_commands_selects_clang(tmp_path) -> None:
    import json
    import os

    from click.testing import CliRunner

    from gpulint.cli import main

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "sizes.cuh").write_text("#define N 256\n")
    (tmp_path / "a.cu").write_text(
        "#include \"sizes.cuh\"\n"
        "__global__ void k(float *a) { a[0] = 1.f; }\n"
        "int main() { float *d; cudaMalloc(&d, N * sizeof(float)); k<<<1, 1>>>(d); cudaFree(d); return 0; }\n"
    )
    (tmp_path / "compile_commands.json").write_text(json.dumps([{
        "directory": str(tmp_path), "file": "a.cu",
        "command": "nvcc -c -Iinc -gencode arch=compute_90,code=sm_90 --expt-relaxed-constexpr -o a.o a.cu",
    }]))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["check", "-v", "--compile-commands", "compile_commands.json", "a.cu"])
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    assert "falling back" not in result.stderr  # the include path came from the database
