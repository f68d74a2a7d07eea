#!/usr/bin/env python3
"""How fast is `gpulint check` on one core?

Generates a corpus of realistic CUDA programs (in the style of PolyBench/GPU, Rodinia and the
CUDA samples: `#define` sizes, an error-check macro, templated kernels with shared memory,
atomics and bounds guards, `__device__` helpers, host launch wrappers, and a `main` that
allocates, copies, launches in loops and branches, swaps ping-pong buffers, verifies and frees),
then times

* `python -m gpulint check DIR --jobs 1 --frontend tree-sitter --format json -o FILE -v`
* the same with `--frontend clang`
* `gpulint.engine.check_paths([DIR], Settings(jobs=1, frontend="tree-sitter"))` in this process
  (no interpreter start-up, no imports)

taking the best of `--repeat` runs, and prints lines/s for each, the number of findings and
whether the two frontends agree on the set of (code, file, row). `-v` costs nothing measurable
and lets the script see files where clang fell back to tree-sitter: when clang cannot be
imported, exits with an error, or fell back on every file, it is reported as unavailable.
The target is 20,000 lines/s on one core with tree-sitter; missing it is reported, never an
error: this is a benchmark, not a test, and it always exits 0.

`--jobs 1` keeps gpulint on one core; `--pin CPU` also pins the runs to one CPU, which only
makes sense on an otherwise idle machine. Files have a floor of about 175 lines (two kernels and
a full `main`), so a `--lines-per-file` below that yields longer files, never fewer lines.

    python benchmarks/static_speed.py                  # 200 files, ~50,000 lines
    python benchmarks/static_speed.py --markdown       # also a table for the README
    python benchmarks/static_speed.py --files 400 --lines-per-file 300 --keep --out /tmp/corpus

The corpus is deterministic for a given `--seed`, `--files` and `--lines-per-file`. The text of the
programs is in benchmarks/templates/cuda/; this script chooses and fills it, and times the runs
with benchmarks/harness.py.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402  (the harness and the templates live next to this script)
    REPO,
    TARGET_LINES_PER_S,
    Result,
    announce_timing,
    best_call,
    best_json_run,
    exit_error,
    gpulint_env,
    machine_description,
    pin_to_cpu,
    prepare_out_folder,
    print_machine,
    print_markdown_table,
    print_table,
    timed_process,
    today,
)
from templating import load, render  # noqa: E402

STRESS_TARGET_S = 10  # seconds for each stress input (`--stress`)

# templates/cuda/*.cu.tmpl: the text of the programs, by section
KERNEL_CODE = load("cuda/kernels.cu.tmpl")  # kernels, their CPU references and host set-up
HOST_CODE = load("cuda/host.cu.tmpl")  # the host functions and the fixed parts of main()
DEVICE_HELPERS = load("cuda/device_helpers.cu.tmpl")  # __device__ functions: those kernels need, a few more

# Every rule and every size: the figures measure the whole analysis, as before the default
# selection (README "Default rules") became two rules.
EVERY_RULE = ("--select", "ALL", "--min-bytes", "0")


# =============================================================================== generator
#
# A file is assembled from pieces: a header, includes, size macros, an error-check macro,
# `__device__` helpers, kernels drawn from a library (each knows how it is launched and which
# buffers it reads and writes), optional host launch wrappers and CPU references, and a `main`
# made of "phases" (single launches, loops with ping-pong swaps, branches on a mode flag,
# periodic probes, temporary buffers) over a pool of device buffers.


@dataclass
class Ctx:
    rng: Random
    index: int
    T: str  # the element type as the file spells it: float, real, DATA_TYPE, value_t
    base: str  # float or double
    check: str  # CHECK, CUDA_CHECK, CHECK_CUDA
    bs: str  # block-size macro
    tx: str
    ty: str
    nx: str  # size macros
    ny: str
    iters: str
    nbins: str = "NBINS"
    radius: str = "RADIUS"
    prefix: str = "d_"
    host_style: str = "malloc"  # malloc, vector, pinned
    stream: str | None = None  # name of the stream variable, when the file uses one
    used_names: set[str] = field(default_factory=set)
    needs: set[str] = field(default_factory=set)  # helper names kernels require
    constants: list[str] = field(default_factory=list)
    includes: set[str] = field(default_factory=set)

    def unique(self, stem: str) -> str:
        name = stem
        k = 2
        while name in self.used_names:
            name = f"{stem}{k}"
            k += 1
        self.used_names.add(name)
        return name

    def lit(self, value: float) -> str:
        text = repr(round(value, 4))
        if "." not in text and "e" not in text:
            text += ".0"
        return f"({self.T}){text}" if self.base == "double" else f"{text}f"

    def launch_cfg(self, grid: str, block: str, shmem: str = "0") -> str:
        if self.stream:
            return f"<<<{grid}, {block}, {shmem}, {self.stream}>>>"
        if shmem != "0":
            return f"<<<{grid}, {block}, {shmem}>>>"
        return f"<<<{grid}, {block}>>>"


# ----------------------------------------------------------------------------- kernels


@dataclass
class Kernel:
    kind: str
    name: str
    code: str
    reads: list[str]  # roles of pool buffers read: "in", "in2"
    writes: list[str]  # roles of pool buffers written: "out"
    extras: list[str]  # "sum", "hist", "count"
    launch: Callable[[dict[str, str]], str]  # role -> variable, returns a statement
    pingpong: bool = False  # out can be swapped with in and launched again
    needs_dim: bool = False
    cpu_ref: str | None = None  # name of a CPU reference with signature (in, out, nx, ny)
    cpu_code: str = ""
    const_setup: str = ""  # host code that fills a __constant__ array


NAME_STEMS = {
    "axpy": ["axpy", "saxpy", "daxpy", "accumulate", "blend", "mix_update"],
    "map": ["scale_bias", "activation", "relu_scale", "transform", "affine", "rectify"],
    "init": ["init_field", "fill_grid", "initialize", "seed_values", "setup_grid", "init_data"],
    "jacobi": ["jacobi2d", "stencil5", "relax", "smooth", "diffuse", "heat_step", "laplace"],
    "reduce": ["block_reduce", "reduce_sum", "sum_reduce", "partial_sum", "reduction"],
    "hist": ["histogram", "hist_shared", "bin_count", "histo"],
    "matmul": ["matmul_tiled", "gemm_shared", "mm_tile", "sgemm_tiled", "matrix_mul"],
    "transpose": ["transpose", "transpose_tile", "transpose_shared", "tr_kernel"],
    "gemv": ["gemv", "mat_vec", "mv_row", "atax_step", "bicg_rows"],
    "scan": ["block_scan", "inclusive_scan", "prefix_sum", "scan_block"],
    "softmax": ["row_softmax", "normalize_rows", "softmax_rows", "row_norm"],
    "colmean": ["column_mean", "col_mean", "mean_kernel", "cov_mean"],
    "center": ["center_data", "subtract_mean", "reduce_center", "cov_center"],
    "dot": ["dot_product", "dot_warp", "inner_product", "vdot"],
    "compact": ["compact", "select_above", "stream_compact", "filter_values"],
    "conv": ["convolve1d", "conv_row", "fir_filter", "blur1d"],
    "particles": ["advance_particles", "integrate", "leapfrog", "update_positions"],
    "heat1d": ["heat1d", "diffuse1d", "stencil3", "explicit_step"],
}
SUFFIXES = ["", "", "_kernel", "Kernel", "_k", "_gpu", "_v2", "_cuda"]


def kernel_name(ctx: Ctx, kind: str) -> str:
    stem = ctx.rng.choice(NAME_STEMS[kind]) + ctx.rng.choice(SUFFIXES)
    return ctx.unique(stem)


def grid_stride(var: str = "i") -> str:
    return f"for (int {var} = blockIdx.x * blockDim.x + threadIdx.x; {var} < n; {var} += blockDim.x * gridDim.x)"


def k_axpy(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "axpy")
    alpha = ctx.lit(ctx.rng.choice([0.5, 0.25, 1.5, 2.0, 0.125]))
    body = ctx.rng.choice(["y[i] = alpha * x[i] + y[i];", "y[i] += alpha * x[i];",
                           "y[i] = fma(alpha, x[i], y[i]);"])
    code = render(KERNEL_CODE["axpy"], name=name, T=ctx.T, loop=grid_stride(), body=body)
    return Kernel("axpy", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('blocks', 'threads')}(n, {alpha}, {b['in']}, {b['out']});")


def k_map(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "map")
    variant = ctx.rng.choice(["relu", "clamp", "square", "leaky"])
    if variant == "clamp":
        ctx.needs.add("clampv")
    expr = {
        "relu": "out[i] = v > V(0) ? v : V(0);",
        "clamp": "out[i] = clampv(v, V(-1), V(1));",
        "square": "out[i] = v * v;",
        "leaky": "out[i] = v > V(0) ? v : V(0.01) * v;",
    }[variant]
    scale = ctx.lit(ctx.rng.choice([0.5, 0.9, 1.1, 2.0]))
    bias = ctx.lit(ctx.rng.choice([0.0, 0.1, -0.25, 0.05]))
    code = render(KERNEL_CODE["map"], name=name, expr=expr)
    cpu_expr = {
        "relu": "out[i] = v > 0 ? v : 0;",
        "clamp": "out[i] = v < -1 ? -1 : (v > 1 ? 1 : v);",
        "square": "out[i] = v * v;",
        "leaky": "out[i] = v > 0 ? v : ($T)0.01 * v;",
    }[variant]
    cpu_name = ctx.unique(f"{name}_cpu")
    cpu_code = render(KERNEL_CODE["map_cpu"], cpu=cpu_name, T=ctx.T, scale=scale, bias=bias,
                      expr=render(cpu_expr, T=ctx.T))
    return Kernel("map", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}<{ctx.T}>{ctx.launch_cfg('blocks', 'threads')}({b['in']}, {b['out']}, {scale}, {bias}, n);",
                  pingpong=True, cpu_ref=cpu_name, cpu_code=cpu_code)


def k_init(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "init")
    a, b, m = ctx.rng.choice([(7, 13, 29), (3, 5, 17), (11, 31, 37), (1, 3, 101)])
    code = render(KERNEL_CODE["init"], name=name, T=ctx.T, a=a, b=b, m=m)
    phase = ctx.lit(ctx.rng.choice([0.0, 0.5, 1.0]))
    return Kernel("init", name, code, [], ["out"], [],
                  lambda bb: f"{name}{ctx.launch_cfg('grid2d', 'block2d')}({bb['out']}, nx, ny, {phase});")


def k_jacobi(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "jacobi")
    w = ctx.lit(0.2)
    code = render(KERNEL_CODE["jacobi"], name=name, T=ctx.T, w=w)
    cpu_name = ctx.unique(f"{name}_reference")
    cpu_code = render(KERNEL_CODE["jacobi_cpu"], cpu=cpu_name, T=ctx.T, w=w)
    return Kernel("jacobi", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('grid2d', 'block2d')}({b['in']}, {b['out']}, nx, ny);",
                  pingpong=True, cpu_ref=cpu_name, cpu_code=cpu_code)


def k_reduce(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "reduce")
    code = render(KERNEL_CODE["reduce"], name=name)
    mem = (f"{ctx.check}(cudaMemsetAsync(%s, 0, sizeof({ctx.T}), {ctx.stream}));" if ctx.stream
           else f"{ctx.check}(cudaMemset(%s, 0, sizeof({ctx.T})));")
    return Kernel("reduce", name, code, ["in"], [], ["sum"],
                  lambda b: (mem % b["sum"]) + "\n"
                  + f"{name}<{ctx.T}, {ctx.bs}>{ctx.launch_cfg('blocks', ctx.bs)}({b['in']}, {b['sum']}, n);")


def k_hist(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "hist")
    code = render(KERNEL_CODE["hist"], name=name, T=ctx.T, NB=ctx.nbins, loop=grid_stride())
    return Kernel("hist", name, code, ["in"], [], ["hist"],
                  lambda b: f"{name}{ctx.launch_cfg('blocks', 'threads')}({b['in']}, {b['hist']}, n);")


def k_matmul(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "matmul")
    tile = ctx.rng.choice([8, 16, 16, 32])
    code = render(KERNEL_CODE["matmul"], name=name, T=ctx.T)
    grid = f"dim3((dim + {tile - 1}) / {tile}, (dim + {tile - 1}) / {tile})"
    return Kernel("matmul", name, code, ["in", "in2"], ["out"], [],
                  lambda b: f"{name}<{tile}>{ctx.launch_cfg(grid, f'dim3({tile}, {tile})')}({b['in']}, {b['in2']}, {b['out']}, dim);",
                  needs_dim=True)


def k_transpose(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "transpose")
    code = render(KERNEL_CODE["transpose"], name=name, T=ctx.T)
    cpu_name = ctx.unique(f"{name}_host")
    cpu_code = render(KERNEL_CODE["transpose_cpu"], cpu=cpu_name, T=ctx.T)
    return Kernel("transpose", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('dim3((nx + 31) / 32, (ny + 31) / 32)', 'dim3(32, 8)')}({b['in']}, {b['out']}, nx, ny);",
                  cpu_ref=cpu_name, cpu_code=cpu_code)


def k_gemv(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "gemv")
    code = render(KERNEL_CODE["gemv"], name=name, T=ctx.T)
    return Kernel("gemv", name, code, ["in", "in2"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('(ny + threads - 1) / threads', 'threads')}({b['in']}, {b['in2']}, {b['out']}, ny, nx);")


def k_scan(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "scan")
    code = render(KERNEL_CODE["scan"], name=name)
    return Kernel("scan", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}<{ctx.T}, {ctx.bs}>{ctx.launch_cfg('blocks', ctx.bs)}({b['in']}, {b['out']}, n);")


def k_softmax(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "softmax")
    code = render(KERNEL_CODE["softmax"], name=name, T=ctx.T)
    return Kernel("softmax", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('(ny + threads - 1) / threads', 'threads')}({b['in']}, {b['out']}, ny, nx);")


def k_colmean(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "colmean")
    code = render(KERNEL_CODE["colmean"], name=name, T=ctx.T)
    return Kernel("colmean", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('(nx + threads - 1) / threads', 'threads')}({b['in']}, {b['out']}, ny, nx);")


def k_center(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "center")
    code = render(KERNEL_CODE["center"], name=name, T=ctx.T)
    return Kernel("center", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('grid2d', 'block2d')}({b['out']}, {b['in']}, ny, nx);")


def k_dot(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "dot")
    ctx.needs.add("warp_sum")
    code = render(KERNEL_CODE["dot"], name=name, T=ctx.T, loop=grid_stride())
    mem = f"{ctx.check}(cudaMemset(%s, 0, sizeof({ctx.T})));"
    return Kernel("dot", name, code, ["in", "in2"], [], ["sum"],
                  lambda b: (mem % b["sum"]) + "\n"
                  + f"{name}{ctx.launch_cfg('blocks', 'threads')}({b['in']}, {b['in2']}, {b['sum']}, n);")


def k_compact(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "compact")
    thr = ctx.lit(ctx.rng.choice([0.5, 0.25, 0.75]))
    code = render(KERNEL_CODE["compact"], name=name, T=ctx.T)
    return Kernel("compact", name, code, ["in"], ["out"], ["count"],
                  lambda b: f"{ctx.check}(cudaMemset({b['count']}, 0, sizeof(int)));\n"
                  + f"{name}{ctx.launch_cfg('blocks', 'threads')}({b['in']}, {b['out']}, {b['count']}, n, {thr});")


def k_conv(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "conv")
    weights = ctx.unique(ctx.rng.choice(["c_weights", "c_filter", "c_taps", "d_kernel_coef"]))
    ctx.constants.append(f"__constant__ {ctx.T} {weights}[2 * {ctx.radius} + 1];")
    code = render(KERNEL_CODE["conv"], name=name, T=ctx.T, R=ctx.radius, w=weights)
    host = ctx.unique("h_taps")
    setup = render(KERNEL_CODE["conv_weights_setup"], T=ctx.T, R=ctx.radius, w=weights, h=host, check=ctx.check)
    return Kernel("conv", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('blocks', 'threads')}({b['in']}, {b['out']}, n);",
                  pingpong=True, const_setup=setup)


def k_particles(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "particles")
    ctx.needs.add("clampv")
    dt = ctx.lit(ctx.rng.choice([0.01, 0.001, 0.005]))
    code = render(KERNEL_CODE["particles"], name=name, T=ctx.T, loop=grid_stride())
    return Kernel("particles", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('blocks', 'threads')}({b['out']}, {b['in']}, n, {dt});")


def k_heat1d(ctx: Ctx) -> Kernel:
    name = kernel_name(ctx, "heat1d")
    alpha = ctx.lit(ctx.rng.choice([0.1, 0.2, 0.25]))
    code = render(KERNEL_CODE["heat1d"], name=name, T=ctx.T)
    return Kernel("heat1d", name, code, ["in"], ["out"], [],
                  lambda b: f"{name}{ctx.launch_cfg('blocks', 'threads', f'(threads + 2) * sizeof({ctx.T})')}({b['in']}, {b['out']}, n, {alpha});",
                  pingpong=True)


KERNELS: dict[str, Callable[[Ctx], Kernel]] = {
    "axpy": k_axpy, "map": k_map, "init": k_init, "jacobi": k_jacobi, "reduce": k_reduce, "hist": k_hist,
    "matmul": k_matmul, "transpose": k_transpose, "gemv": k_gemv, "scan": k_scan, "softmax": k_softmax,
    "colmean": k_colmean, "center": k_center, "dot": k_dot, "compact": k_compact, "conv": k_conv,
    "particles": k_particles, "heat1d": k_heat1d,
}
# Program "flavours": which kernels a file draws from first (Rodinia/PolyBench/SDK-like mixes).
FLAVOURS = {
    "stencil": ["jacobi", "heat1d", "init", "reduce", "conv", "map"],
    "linear-algebra": ["matmul", "gemv", "axpy", "transpose", "dot", "init"],
    "statistics": ["colmean", "center", "reduce", "hist", "softmax", "scan"],
    "stream": ["map", "axpy", "compact", "scan", "hist", "dot"],
    "simulation": ["particles", "heat1d", "jacobi", "reduce", "init", "conv"],
}

# ----------------------------------------------------------------------------- headers, context

HEADERS = [
    ("PolyBench/GPU-style {what}.", "Adapted for CUDA; sizes are set at compile time."),
    ("Rodinia-like {what} benchmark.", "Runs a fixed number of iterations and reports the kernel time."),
    ("CUDA sample: {what}.", "Demonstrates shared memory, atomics and stream-ordered copies."),
    ("{what} on the GPU.", "Compile: nvcc -O3 -o app app.cu"),
]
WHAT = {
    "stencil": ["2-D heat diffusion", "Jacobi relaxation", "stencil sweep", "Poisson smoother"],
    "linear-algebra": ["matrix multiply", "GEMV/ATAX kernel", "BiCG sub-kernel", "dense linear algebra"],
    "statistics": ["covariance", "correlation", "histogram and moments", "column statistics"],
    "stream": ["vector pipeline", "stream compaction", "elementwise transforms", "prefix sums"],
    "simulation": ["particle integrator", "wave propagation", "explicit heat solver", "leapfrog simulation"],
}


def make_ctx(rng: Random, index: int) -> Ctx:
    base = rng.choice(["float", "float", "double"])
    T = rng.choice(["float" if base == "float" else "double", "real", "DATA_TYPE", "value_t"])
    if T in ("float", "double"):
        base = T
    ctx = Ctx(
        rng=rng, index=index, T=T, base=base,
        check=rng.choice(["CHECK", "CUDA_CHECK", "CHECK_CUDA"]),
        bs=rng.choice(["BLOCK_SIZE", "THREADS", "BLOCK"]),
        tx=rng.choice(["TILE_X", "DIM_THREAD_BLOCK_X", "BX"]),
        ty=rng.choice(["TILE_Y", "DIM_THREAD_BLOCK_Y", "BY"]),
        nx=rng.choice(["NX", "N", "WIDTH", "NI"]),
        ny="",
        iters=rng.choice(["ITERS", "TSTEPS", "NUM_ITER", "STEPS"]),
        prefix=rng.choice(["d_", "d_", "dev_", "gpu_"]),
        host_style=rng.choice(["malloc", "malloc", "vector", "pinned"]),
        stream=rng.choice([None, None, "stream"]),
    )
    ctx.ny = {"NX": "NY", "N": "M", "WIDTH": "HEIGHT", "NI": "NJ"}[ctx.nx]
    ctx.used_names.update({"main", "usage", "n", "nx", "ny", "dim", "bytes", "threads", "blocks", "grid2d",
                           "block2d", "start", "stop", "ms", "ok", "mode", "iters", "verify", "stream"})
    return ctx


# ----------------------------------------------------------------------------- main()


class Code:
    """Lines with an indentation level."""

    def __init__(self, level: int = 1) -> None:
        self.lines: list[str] = []
        self.level = level

    def add(self, text: str = "") -> None:
        for line in textwrap.dedent(text).strip("\n").split("\n") if text else [""]:
            self.lines.append(("    " * self.level + line) if line.strip() else "")

    def open(self, text: str) -> None:
        self.add(text + " {")
        self.level += 1

    def close(self, text: str = "}") -> None:
        self.level -= 1
        self.add(text)


def generate_file(rng: Random, index: int, target_lines: int) -> tuple[str, str]:
    """One CUDA program of roughly `target_lines` lines; returns (file name, text)."""
    ctx = make_ctx(rng, index)
    flavour = rng.choice(sorted(FLAVOURS))
    what = rng.choice(WHAT[flavour])
    T, C = ctx.T, ctx.check

    # --- kernels: grow until the estimate reaches the target
    kinds_pref = FLAVOURS[flavour][:]
    rng.shuffle(kinds_pref)
    others = [k for k in KERNELS if k not in kinds_pref]
    rng.shuffle(others)
    order = kinds_pref + others
    kernels: list[Kernel] = []
    estimate = 135  # fixed parts: header, macros, helpers, the skeleton of main
    while (estimate < target_lines or len(kernels) < 2) and len(kernels) < len(order) * 2:
        kind = order[len(kernels) % len(order)]
        kern = KERNELS[kind](ctx)
        kernels.append(kern)
        estimate += kern.code.count("\n") + 2 + 6 + kern.cpu_code.count("\n") // 2
    # an init kernel, when present, runs first
    kernels.sort(key=lambda k: 0 if k.kind == "init" else 1)

    # --- buffers
    stems = ["a", "b", "c", "u", "v", "w", "grid", "next", "src", "dst", "work", "field", "x", "y", "z", "in",
             "out", "buf", "state", "prev", "curr", "coef", "rhs", "sol", "tmp2", "acc"]
    pool_size = min(len(stems), max(3, min(7, 2 + len(kernels) // 2 + rng.randint(0, 1))))
    pool = [ctx.unique(ctx.prefix + s) for s in rng.sample(stems, pool_size)]
    extras_needed = sorted({e for k in kernels for e in k.extras})
    extra_names = {e: ctx.unique(ctx.prefix + {"sum": "sum", "hist": "hist", "count": "count"}[e])
                   for e in extras_needed}
    extra_decl = {"sum": (T, "1"), "hist": ("unsigned int", ctx.nbins), "count": ("int", "1")}
    needs_dim = any(k.needs_dim for k in kernels)
    verified = next((k for k in kernels if k.cpu_ref), None)
    h_in, h_out, h_ref = "h_in", "h_out", "h_ref"
    wastes = {w for w in ("leak", "unused", "alloc_in_loop", "invariant_copy", "dead_write", "overalloc")
              if rng.random() < {"leak": 0.2, "unused": 0.1, "alloc_in_loop": 0.2, "invariant_copy": 0.2,
                                 "dead_write": 0.15, "overalloc": 0.1}[w]}
    uses_swap = rng.random() < 0.5

    def pick(exclude: set[str]) -> str:
        choices = [p for p in pool if p not in exclude] or pool
        return rng.choice(choices)

    def roles(k: Kernel) -> dict[str, str]:
        out = pick(set())
        b = {"out": out}
        b["in"] = pick({out})
        b["in2"] = pick({out, b["in"]})
        for e in k.extras:
            b[e] = extra_names[e]
        return b

    # --- host launch wrappers (some kernels are launched through them)
    wrappers: list[str] = []
    wrapper_for: dict[str, Callable[[dict[str, str]], str]] = {}
    result_var: dict[str, str] = {}  # kernel -> variable that receives a ping-pong wrapper's result
    stream_param = f", cudaStream_t {ctx.stream}" if ctx.stream else ""
    for k in kernels:
        if k.pingpong and k.kind in ("jacobi", "heat1d", "map") and rng.random() < 0.45:
            fn = ctx.unique("run_" + k.name.split("_kernel")[0].split("Kernel")[0])
            launch = k.launch({"in": "a", "out": "b"})
            launch = launch.replace("<<<grid2d, block2d", "<<<grid, block")
            setup = {
                "jacobi": f"dim3 block({ctx.tx}, {ctx.ty});\n"
                          f"dim3 grid((nx + {ctx.tx} - 1) / {ctx.tx}, (ny + {ctx.ty} - 1) / {ctx.ty});",
                "heat1d": f"const int n = nx * ny;\nconst int threads = {ctx.bs};\n"
                          f"const int blocks = (n + threads - 1) / threads;",
                "map": f"const int n = nx * ny;\nconst int threads = {ctx.bs};\n"
                       f"const int blocks = (n + threads - 1) / threads;",
            }[k.kind]
            swap = "std::swap(a, b);" if uses_swap else f"{T}* t = a;\na = b;\nb = t;"
            wrappers.append(render(HOST_CODE["pingpong_wrapper"], T=T, fn=fn, stream_param=stream_param, setup=setup,
                                   launch=launch, check=C, swap=swap))
            res = ctx.unique(ctx.prefix + "result")
            wrapper_for[k.name] = (lambda fn=fn, res=res: lambda b: f"{T}* {res} = {fn}({b['in']}, {b['out']}, nx, ny, "
                                   + "iters" + (f", {ctx.stream}" if ctx.stream else "") + ");")()
            result_var[k.name] = res
        elif k.kind in ("axpy", "scan", "softmax", "colmean", "gemv") and rng.random() < 0.35:
            fn = ctx.unique("launch_" + k.name)
            params = {"axpy": (f"const {T}* x, {T}* y, int n", {"in": "x", "out": "y"}),
                      "scan": (f"const {T}* in, {T}* out, int n", {"in": "in", "out": "out"}),
                      "softmax": (f"const {T}* in, {T}* out, int nx, int ny", {"in": "in", "out": "out"}),
                      "colmean": (f"const {T}* in, {T}* out, int nx, int ny", {"in": "in", "out": "out"}),
                      "gemv": (f"const {T}* A, const {T}* x, {T}* y, int nx, int ny",
                               {"in": "A", "in2": "x", "out": "y"})}[k.kind]
            sig, names = params
            blocks = "const int blocks = (n + threads - 1) / threads;" if k.kind in ("axpy", "scan") else ""
            wrappers.append(render(HOST_CODE["launch_wrapper"], fn=fn, params=sig, stream_param=stream_param,
                                   block_size=ctx.bs, blocks=blocks, launch=k.launch(names), check=C))
            call_args = {"axpy": "{in}, {out}, n", "scan": "{in}, {out}, n", "softmax": "{in}, {out}, nx, ny",
                         "colmean": "{in}, {out}, nx, ny", "gemv": "{in}, {in2}, {out}, nx, ny"}[k.kind]
            wrapper_for[k.name] = (lambda fn=fn, call_args=call_args: lambda b: f"{fn}("
                                   + call_args.format(**b) + (f", {ctx.stream}" if ctx.stream else "") + ");")()

    # --- main
    m = Code(1)
    if rng.random() < 0.5:  # the options parsed in main, or by parse_args()
        m.add(render(HOST_CODE["main_arguments"], NX=ctx.nx, NY=ctx.ny, IT=ctx.iters))
        parse_fn = ""
    else:
        m.add(HOST_CODE["main_options"])
        parse_fn = render(HOST_CODE["parse_args"], NX=ctx.nx, NY=ctx.ny, IT=ctx.iters)
    m.add("const int n = nx * ny;")
    if needs_dim:
        m.add("const int dim = nx < ny ? nx : ny;")
    m.add(f"const size_t bytes = (size_t)n * sizeof({T});")
    m.add(f'printf("{what}: %d x %d, %d iterations, mode %d\\n", nx, ny, iters, mode);')
    m.add("")

    # host buffers
    host_bufs = [h_in, h_out] + ([h_ref] if verified else [])
    if ctx.host_style == "vector":
        ctx.includes.add("<vector>")
        for h in host_bufs:
            m.add(f"std::vector<{T}> {h}_vec(n);")
            m.add(f"{T}* {h} = {h}_vec.data();")
    elif ctx.host_style == "pinned":
        for h in host_bufs:
            m.add(f"{T}* {h} = NULL;")
            m.add(f"{C}(cudaMallocHost((void**)&{h}, bytes));")
    else:
        for h in host_bufs:
            m.add(f"{T}* {h} = ({T}*)malloc(bytes);")
        m.open(f"if ({' || '.join('!' + h for h in host_bufs)})")
        m.add('fprintf(stderr, "out of host memory\\n");\nreturn EXIT_FAILURE;')
        m.close()
    m.add(f"init_host({h_in}, n, {rng.randint(1, 99999)}u);")
    m.add("")

    # device buffers
    m.add("// device buffers")
    cast = rng.choice(["(void**)&", "&"])
    m.add(f"{T} " + ", ".join(f"*{p} = NULL" for p in pool) + ";")
    over = pool[-1] if "overalloc" in wastes else None
    for p in pool:
        size = "2 * bytes" if p == over else "bytes"
        m.add(f"{C}(cudaMalloc({cast}{p}, {size}));")
    for e in extras_needed:
        ty, count = extra_decl[e]
        m.add(f"{ty}* {extra_names[e]} = NULL;")
        m.add(f"{C}(cudaMalloc({cast}{extra_names[e]}, {count} * sizeof({ty})));")
    unused = ctx.unique(ctx.prefix + "scratch") if "unused" in wastes else None
    if unused:
        m.add(f"{T}* {unused} = NULL;")
        m.add(f"{C}(cudaMalloc({cast}{unused}, bytes));  // reserved for a future pass")
    if ctx.stream:
        m.add(f"cudaStream_t {ctx.stream};")
        m.add(f"{C}(cudaStreamCreate(&{ctx.stream}));")
    m.add("")
    m.add("@@CONFIG@@")
    for k in kernels:
        if k.const_setup:
            m.add(k.const_setup)

    # initial contents: upload the input, clear the rest
    if "dead_write" in wastes:
        m.add(f"{C}(cudaMemset({pool[0]}, 0, bytes));")
    m.add(f"{C}(cudaMemcpy({pool[0]}, {h_in}, bytes, cudaMemcpyHostToDevice));")
    for p in pool[1:]:
        if rng.random() < 0.7:
            m.add(f"{C}(cudaMemset({p}, 0, bytes));")
        else:
            m.add(f"{C}(cudaMemcpy({p}, {h_in}, bytes, cudaMemcpyHostToDevice));")
    m.add("bool ok = true;")
    m.add("")

    # a verified first step
    if verified:
        m.add(f"// check one launch of {verified.name} against the CPU")
        vb = {"in": pool[0], "out": pool[1], "in2": pool[-1]}
        m.add(verified.launch(vb))
        m.add(f"{C}(cudaGetLastError());")
        if ctx.stream:
            m.add(f"{C}(cudaStreamSynchronize({ctx.stream}));")
        m.add(f"{C}(cudaMemcpy({h_out}, {pool[1]}, bytes, cudaMemcpyDeviceToHost));")
        m.open("if (verify)")
        m.add(f"{verified.cpu_ref}({h_in}, {h_ref}, nx, ny);")
        if rng.random() < 0.5:
            m.add(f"int errors = compare_results({h_ref}, {h_out}, n, {ctx.lit(1e-4)});")
        else:
            m.add(render(HOST_CODE["count_mismatches"], h_out=h_out, h_ref=h_ref))
        m.add(f'printf("verification of {verified.name}: %d mismatches\\n", errors);')
        m.add("ok = ok && errors == 0;")
        m.close()
        m.add("")

    stream_arg = f", {ctx.stream}" if ctx.stream else ""
    m.add(render(HOST_CODE["timer_start"], check=C, stream_arg=stream_arg))
    m.add("")

    # phases
    loop_var = rng.choice(["it", "iter", "t", "step"])
    last_out = pool[1]
    pending = kernels[:]
    waste_loop_done = False
    while pending:
        k = pending.pop(0)
        b = roles(k)
        style = rng.choices(["single", "loop", "branch", "probe"], weights=[4, 4, 2, 1])[0]
        if k.name in wrapper_for:
            m.add(wrapper_for[k.name](b))
            last_out = result_var.get(k.name, b["out"])
        elif style == "branch" and pending and pending[0].name not in wrapper_for:
            k2 = pending.pop(0)
            b2 = roles(k2)
            m.open(f"if (mode == {rng.randint(0, 2)})")
            m.add(k.launch(b))
            m.close("} else {")
            m.level += 1
            m.add(k2.launch(b2))
            m.close()
            m.add(f"{C}(cudaGetLastError());")
            last_out = b2["out"] if k2.writes else (b["out"] if k.writes else last_out)
        elif style in ("loop", "probe") or (k.pingpong and rng.random() < 0.7):
            m.open(f"for (int {loop_var} = 0; {loop_var} < iters; ++{loop_var})")
            if "invariant_copy" in wastes and not waste_loop_done:
                m.add(f"{C}(cudaMemcpy({b['in']}, {h_in}, bytes, cudaMemcpyHostToDevice));")
                waste_loop_done = True
            if "alloc_in_loop" in wastes and not waste_loop_done and k.writes and not k.pingpong:
                tmp = ctx.unique(ctx.prefix + "tmp")
                m.add(f"{T}* {tmp} = NULL;")
                m.add(f"{C}(cudaMalloc({cast}{tmp}, bytes));")
                m.add(k.launch(dict(b, out=tmp)))
                m.add(f"{C}(cudaMemcpy({b['out']}, {tmp}, bytes, cudaMemcpyDeviceToDevice));")
                m.add(f"{C}(cudaFree({tmp}));")
                waste_loop_done = True
            else:
                m.add(k.launch(b))
            m.add(f"{C}(cudaGetLastError());")
            if k.pingpong:
                if uses_swap:
                    m.add(f"std::swap({b['in']}, {b['out']});")
                else:
                    m.add(f"{T}* swap_tmp = {b['in']};\n{b['in']} = {b['out']};\n{b['out']} = swap_tmp;")
                last_out = b["in"]
            elif k.writes:
                last_out = b["out"]
            if style == "probe":
                m.open(f"if (({loop_var} + 1) % {rng.choice([10, 50, 100])} == 0)")
                m.add(f"{T} probe;")
                m.add(f"{C}(cudaMemcpy(&probe, {last_out}, sizeof({T}), cudaMemcpyDeviceToHost));")
                m.add(f'printf("  step %d: probe %g\\n", {loop_var} + 1, (double)probe);')
                m.close()
            m.close()
        else:
            m.add(k.launch(b))
            m.add(f"{C}(cudaGetLastError());")
            last_out = b["out"] if "out" in k.writes else last_out
        m.add("")

    m.add(render(HOST_CODE["timer_stop"], check=C, stream_arg=stream_arg, h_out=h_out, last_out=last_out))
    # results of the extras
    for e in ("sum", "hist", "count"):
        if e in extra_names:
            m.add(render(HOST_CODE[f"result_{e}"], T=T, check=C, buffer=extra_names[e], nbins=ctx.nbins))
    m.add(render(HOST_CODE["report"], h_out=h_out))
    m.add("")

    # cleanup
    m.add(f"{C}(cudaEventDestroy(start));\n{C}(cudaEventDestroy(stop));")
    if ctx.stream:
        m.add(f"{C}(cudaStreamDestroy({ctx.stream}));")
    leak = rng.choice(pool) if "leak" in wastes else None
    for p in pool + [extra_names[e] for e in extras_needed] + ([unused] if unused else []):
        if p != leak:
            m.add(f"{C}(cudaFree({p}));")
    if ctx.host_style == "pinned":
        for h in host_bufs:
            m.add(f"{C}(cudaFreeHost({h}));")
    elif ctx.host_style == "malloc":
        for h in host_bufs:
            m.add(f"free({h});")
    m.add("return ok ? EXIT_SUCCESS : EXIT_FAILURE;")
    # the launch configuration, declared only where main uses it (nvcc warns about unused locals)
    body_text = "\n".join(m.lines)
    config = []
    uses_blocks = re.search(r"\bblocks\b", body_text) is not None
    if uses_blocks or re.search(r"\bthreads\b", body_text):
        config.append(f"const int threads = {ctx.bs};")
    if uses_blocks:
        config.append("const int blocks = (n + threads - 1) / threads;")
    if re.search(r"\b(grid2d|block2d)\b", body_text):
        config.append(f"dim3 block2d({ctx.tx}, {ctx.ty});")
        config.append(f"dim3 grid2d((nx + {ctx.tx} - 1) / {ctx.tx}, (ny + {ctx.ty} - 1) / {ctx.ty});")
    at = next(i for i, line in enumerate(m.lines) if line.strip() == "@@CONFIG@@")
    m.lines[at:at + 1] = ["    " + line for line in config]
    uses_compare = "compare_results(" in body_text

    # --- assemble the file
    ctx.includes.update({"<cstdio>", "<cstdlib>", "<cstring>", "<cmath>"})
    if uses_swap:
        ctx.includes.add("<utility>")
    if rng.random() < 0.3:
        ctx.includes.add("<algorithm>")
    first, second = rng.choice(HEADERS)
    out: list[str] = [
        "/*",
        f" * {first.format(what=what[0].upper() + what[1:])}",
        f" * {second}",
        " *",
    ]
    out += [" * " + line for line in textwrap.wrap(f"Kernels: {', '.join(k.name for k in kernels)}.", 90)]
    out.append(" */")
    incs = sorted(ctx.includes)
    rng.shuffle(incs)
    out += [f"#include {i}" for i in incs]
    out.append("#include <cuda_runtime.h>")
    out.append("")
    size = rng.choice([256, 512, 1024, 2048, 4096])
    defines = [
        (ctx.nx, size), (ctx.ny, rng.choice([size, size // 2, size * 2])), (ctx.iters, rng.choice([10, 20, 100, 500])),
        (ctx.bs, rng.choice([128, 256, 512])), (ctx.tx, rng.choice([16, 32])), (ctx.ty, rng.choice([8, 16])),
        (ctx.nbins, rng.choice([64, 128, 256])), (ctx.radius, rng.choice([2, 3, 4, 8])),
    ]
    out += [f"#ifndef {name}\n#define {name} {value}\n#endif" if rng.random() < 0.3 else f"#define {name} {value}"
            for name, value in defines]
    if T == "DATA_TYPE":
        out.append(f"#define DATA_TYPE {ctx.base}")
    elif T == "real":
        out.append(f"typedef {ctx.base} real;")
    elif T == "value_t":
        out.append(f"using value_t = {ctx.base};")
    out.append("")
    macro = render(HOST_CODE["check_macro"], check=C).split("\n")
    out += [line.ljust(78) + "\\" for line in macro[:-1]] + macro[-1:]  # continuation backslashes in a column
    out.append("")
    out += ctx.constants + ([""] if ctx.constants else [])
    helpers = set(ctx.needs) | set(rng.sample(sorted(DEVICE_HELPERS), rng.randint(0, 2)))
    for h in sorted(helpers):
        out.append(render(DEVICE_HELPERS[h], T=T))
        out.append("")
    for k in kernels:
        out.append(k.code)
        out.append("")
    # host helpers
    out.append(render(HOST_CODE["init_host_and_checksum"], T=T))
    out.append("")
    if verified:
        for k in kernels:
            if k is verified:
                out.append(k.cpu_code)
                out.append("")
    if uses_compare:
        out.append(render(HOST_CODE["compare_results"], T=T))
        out.append("")
    for w in wrappers:
        out.append(w)
        out.append("")
    out.append(render(HOST_CODE["usage"]))
    out.append("")
    if parse_fn:
        out.append(parse_fn)
        out.append("")
    out.append("int main(int argc, char** argv)\n{")
    out += m.lines
    out.append("}")
    text = "\n".join(out) + "\n"
    text = re.sub(r"\n{3,}", "\n\n", text)
    slug = re.sub(r"[^a-z0-9]+", "_", what.lower()).strip("_")
    return f"{index:04d}_{slug}.cu", text


def generate_corpus(folder: Path, files: int, lines_per_file: int, seed: int) -> tuple[int, int]:
    """Writes `files` programs totalling at least files * lines_per_file lines; returns (files, lines)."""
    rng = Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    goal = files * lines_per_file
    total = 0
    for i in range(files):
        left = files - i
        fair = (goal - total) / left
        if left > 1:
            # the estimate is rough: a file that comes out short leaves its lines to the next ones
            name, text = generate_file(rng, i, max(60, int(fair * rng.uniform(0.6, 1.4))))
        else:  # the last file makes up the total
            state = rng.getstate()
            target = max(60, int(fair))
            for _ in range(20):
                rng.setstate(state)
                name, text = generate_file(rng, i, target)
                missing = goal - total - text.count("\n")
                if missing <= 0:
                    break
                target += missing
        (folder / name).write_text(text, encoding="utf-8")
        total += text.count("\n")
    while total < goal:  # the last file came out short of its target: add one more
        name, text = generate_file(rng, files, max(60, goal - total))
        (folder / name).write_text(text, encoding="utf-8")
        total += text.count("\n")
        files += 1
    return files, total


# =============================================================================== stress inputs
#
# Time must grow (near) linearly with the size of a function and of a file (issue 15). These
# inputs are made of one small pattern repeated: one function with N allocations, or a file of N
# small functions. The patterns make most rules fire so that the fix builders run on most
# objects too: every allocation is one of the variants below (one in six of each in a function).

STRESS_CUDA_VARIANTS = (
    "plain",      # allocated, used, freed: no finding of its own
    "unused",     # GL004 (never used by a kernel; the fix removes it)
    "leaked",     # GL005 (never freed) and GL002 (the function's later launches run before its end)
    "early",      # GL001 (a launch between the allocation and the first use)
    "late",       # GL002 (a launch between the last use and the free)
    "guarded",    # GL004 (every use is under `if (verbose)`, the allocation is not)
)


def stress_cuda_function(allocations: int) -> str:
    """One `main` with `allocations` device buffers, each `float *pI; cudaMalloc(&pI, 4096); ...`."""
    out = ["#include <cuda_runtime.h>", "",
           "__global__ void touch(float *p, int n) { if (n > 0) p[0] = 1.0f; }",
           "__global__ void idle() {}", "",
           "int main(int argc, char **argv) {", "  int n = 1;", "  int verbose = argc > 1;"]
    for i in range(allocations):
        p = f"p{i}"
        out += [f"  float *{p};", f"  cudaMalloc(&{p}, 4096);"]
        variant = STRESS_CUDA_VARIANTS[i % len(STRESS_CUDA_VARIANTS)]
        use = f"  touch<<<1, 1>>>({p}, n);"
        out += {"plain": [use, f"  cudaFree({p});"],
                "unused": [f"  cudaFree({p});"],
                "leaked": [use],
                "early": ["  idle<<<1, 1>>>();", use, f"  cudaFree({p});"],
                "late": [use, "  idle<<<1, 1>>>();", f"  cudaFree({p});"],
                "guarded": ["  if (verbose) {", "  " + use, "  }", f"  cudaFree({p});"]}[variant]
    out += ["  return 0;", "}", ""]
    return "\n".join(out)


def stress_cuda_checked(allocations: int) -> str:
    """One `main` with `allocations` buffers, each allocation checked with an early return (the
    usual error handling, and thousands of exits): in turn used and freed; freed after another
    launch (GL002); allocated before another launch (GL001)."""
    out = ["#include <cuda_runtime.h>", "",
           "__global__ void touch(float *p, int n) { if (n > 0) p[0] = 1.0f; }",
           "__global__ void idle() {}", "",
           "int main() {", "  int n = 1;"]
    for i in range(allocations):
        p = f"p{i}"
        out += [f"  float *{p};", f"  if (cudaMalloc(&{p}, 4096) != cudaSuccess) return 1;"]
        use = f"  touch<<<1, 1>>>({p}, n);"
        out += [[use, f"  cudaFree({p});"],
                [use, "  idle<<<1, 1>>>();", f"  cudaFree({p});"],
                ["  idle<<<1, 1>>>();", use, f"  cudaFree({p});"]][i % 3]
    out += ["  return 0;", "}", ""]
    return "\n".join(out)


def stress_cuda_functions(functions: int) -> str:
    """`functions` host functions of 11 lines (two buffers: `a` allocated early, used and freed
    late (GL001, GL002), `b` used only under a branch and never freed (GL004, GL005)), and a
    `main` that calls them all."""
    out = ["#include <cuda_runtime.h>", "",
           "__global__ void touch(float *p, int n) { if (n > 0) p[0] = 1.0f; }",
           "__global__ void idle() {}", ""]
    for i in range(functions):
        out += [f"void step{i}(int n, int verbose) {{", "  float *a, *b;",
                "  cudaMalloc(&a, n * sizeof(float));", "  cudaMalloc(&b, n * sizeof(float));",
                "  idle<<<1, 1>>>();", "  touch<<<1, 1>>>(a, n);", "  if (verbose) touch<<<1, 1>>>(b, n);",
                "  idle<<<1, 1>>>();", "  cudaFree(a);", "}", ""]
    out += ["int main(int argc, char **argv) {"] + [f"  step{i}({i + 1}, argc > 1);" for i in range(functions)]
    out += ["  return 0;", "}", ""]
    return "\n".join(out)


STRESS_PYTHON_VARIANTS = (
    "plain",      # made, used: no finding of its own
    "unused",     # GL004 (never used; the fix removes it)
    "early",      # GL001 (a loop that does not use it runs between its creation and its first use)
    "late",       # a loop that does not use it runs after its last use (GL002, as for every
                  # tensor followed by a later variant's loop)
    "guarded",    # GL004 (its only use is under `if verbose:`)
)


def stress_python_function(tensors: int) -> str:
    """One function with `tensors` device tensors, each `tI = torch.ones(1024, device="cuda")`."""
    out = ["import torch", "", "", "def main(verbose):", '    x = torch.zeros(1024, device="cuda")']
    for i in range(tensors):
        t = f"t{i}"
        variant = STRESS_PYTHON_VARIANTS[i % len(STRESS_PYTHON_VARIANTS)]
        make = f'    {t} = torch.{"empty" if variant == "unused" else "ones"}(1024, device="cuda")'
        loop = ["    for _ in range(2):", "        x.mul_(2)"]
        out += [make] + {"plain": [f"    x.add_({t})"],
                         "unused": [],
                         "early": loop + [f"    x.add_({t})"],
                         "late": [f"    x.add_({t})"] + loop,
                         "guarded": ["    if verbose:", f"        x.add_({t})"]}[variant]
    out += ["    return x", ""]
    return "\n".join(out)


def stress_python_functions(functions: int) -> str:
    """`functions` functions of 13 lines, each with an unused tensor (GL004), one made before a
    loop that does not use it (GL001) and tensors alive across a later loop (GL002)."""
    out = ["import torch", ""]
    for i in range(functions):
        out += ["", f"def step{i}():", '    x = torch.zeros(1024, device="cuda")', '    a = torch.ones(1024, device="cuda")',
                '    b = torch.empty(1024, device="cuda")', "    for _ in range(2):", "        x.mul_(2)",
                "    x.add_(a)", '    c = torch.ones(1024, device="cuda")', "    x.add_(c)", "    for _ in range(2):",
                "        x.mul_(2)", "    return x"]
    return "\n".join(out) + "\n"


def stress_inputs(allocations: int, functions: int) -> list[tuple[str, str, str]]:
    """(file name, what it is, text) of the stress inputs."""
    return [
        ("one_function.cu", f"CUDA: one function, {allocations:,} allocations", stress_cuda_function(allocations)),
        ("checked.cu", f"CUDA: one function, {allocations:,} allocations checked with `return`",
         stress_cuda_checked(allocations)),
        ("many_functions.cu", f"CUDA: {functions:,} functions", stress_cuda_functions(functions)),
        ("one_function.py", f"Python: one function, {allocations:,} device tensors", stress_python_function(allocations)),
        ("many_functions.py", f"Python: {functions:,} functions", stress_python_functions(functions)),
    ]


def time_stress(allocations: int, functions: int, repeat: int, markdown: bool) -> None:
    """Time `gpulint check --no-cache --jobs 1` on each stress input (a process each, best of
    `repeat`) and print a table row per input."""
    print(f"stress inputs: {allocations:,} allocations in one function, {functions:,} functions in one file; "
          f"`gpulint check --no-cache --jobs 1`, best of {repeat}; target < {STRESS_TARGET_S} s each")
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpulint-stress-") as scratch:
        for name, what, text in stress_inputs(allocations, functions):
            path = Path(scratch) / name
            path.write_text(text, encoding="utf-8")
            cmd = [sys.executable, "-m", "gpulint", "check", str(path), "--no-cache", "--jobs", "1", "--format", "json",
                   *EVERY_RULE]
            seconds, items, _, error = best_json_run(cmd, Path(scratch), repeat)
            lines = text.count("\n")
            if error:
                rows.append((what, lines, None, None, error))
                print(f"  {what}: unavailable: {error}")
                continue
            met = "met" if seconds < STRESS_TARGET_S else "NOT met"
            rows.append((what, lines, seconds, len(items), met))
            print(f"  {what}: {lines:,} lines, {seconds:.2f} s, {len(items):,} findings -> {met}")
    print()
    print(f"machine: {machine_description()}; date: {today()}")
    if markdown:
        print()
        print("| Stress input | Lines | Time (s) | Findings | < 10 s |")
        print("|---|---:|---:|---:|---|")
        for what, lines, seconds, count, met in rows:
            if seconds is None:
                print(f"| {what} | {lines:,} | unavailable | - | - |")
            else:
                print(f"| {what} | {lines:,} | {seconds:.2f} | {count:,} | {met} |")


# =============================================================================== a real corpus
#
# Issue 19, point 1: lines/s on real code as well as on the generated corpus.  NVIDIA's
# cuda-samples at a pinned commit, fetched once into a cache folder when git and the network allow
# (never committed), or any folder given with --real-corpus.  CPU time of the child (user + sys)
# as well as wall; tree-sitter-cuda's parse of the same files is the floor; clang-tidy on the same
# files when it is installed.

REAL_REPOSITORY = "https://github.com/NVIDIA/cuda-samples"
REAL_COMMIT = "c94ff366aed18c797b8a85dfaac7817b0228b420"  # 2025-09-05, the labelled review's
REAL_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpulint-benchmarks"


def fetch_real_corpus() -> tuple[Path | None, str]:
    """The pinned cuda-samples checkout (fetched when missing), or None and why not."""
    folder = REAL_CACHE / f"cuda-samples-{REAL_COMMIT[:12]}"
    if (folder / ".fetched").exists():
        return folder, f"cached in {folder}"
    if shutil.which("git") is None:
        return None, "git is not installed"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    steps = [["git", "init", "-q"], ["git", "fetch", "-q", "--depth", "1", REAL_REPOSITORY, REAL_COMMIT],
             ["git", "checkout", "-q", "FETCH_HEAD"]]
    for step in steps:
        try:
            done = subprocess.run(step, cwd=folder, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return None, f"`{' '.join(step)}` timed out"
        if done.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            return None, f"`{' '.join(step[:3])}` failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}"
    (folder / ".fetched").write_text(REAL_COMMIT + "\n")
    return folder, f"fetched {REAL_REPOSITORY} at {REAL_COMMIT[:12]} into {folder}"


def child_cpu_run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run `cmd`: (wall seconds, CPU seconds of the child and its children, the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, proc = timed_process(cmd, cwd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def time_real_corpus(folder: Path, repeat: int) -> None:
    """Print lines/s (CPU and wall) of `gpulint check` on a real folder, every rule, one job, next to
    tree-sitter's parse of the same files and clang-tidy when installed."""
    sys.path.insert(0, str(REPO))
    from gpulint.config import Settings
    from gpulint.discovery import discover, is_gpu_source, is_python_source
    from gpulint.static.cuda_treesitter import _parser

    settings = Settings(jobs=1, respect_gitignore=False)
    files, _, _ = discover([str(folder)], settings)
    # The files gpulint analyses: `.cu`/`.cuh`, and C/C++ files that use CUDA (the others are skipped unread).
    candidates = [(f, f.read_bytes()) for f in files if not is_python_source(f)]
    cuda = [f for f, text in candidates if is_gpu_source(f, text)]
    texts = [text for f, text in candidates if is_gpu_source(f, text)]
    lines = sum(t.count(b"\n") for t in texts)
    print(f"real corpus: {folder}: {len(cuda)} files analysed (of {len(candidates)} CUDA/C/C++ files), {lines:,} lines")
    parser = _parser()
    best_parse = None
    for _ in range(repeat):
        t0 = time.process_time()
        for text in texts:
            parser.parse(text)
        elapsed = time.process_time() - t0
        best_parse = elapsed if best_parse is None else min(best_parse, elapsed)
    print(f"  tree-sitter-cuda parse alone (the floor): {best_parse:.2f} s CPU, {lines / best_parse:,.0f} lines/s")
    cmd = [sys.executable, "-m", "gpulint", "check", str(folder), "--jobs", "1", "--no-cache", "--no-respect-gitignore",
           "--exit-zero", "--format", "json", "-o", os.devnull, *EVERY_RULE]
    best = None
    for _ in range(repeat):
        wall, cpu, proc = child_cpu_run(cmd, folder, gpulint_env())
        if proc.returncode != 0:
            print(f"  gpulint: unavailable: {exit_error(proc)}")
            return
        best = (wall, cpu) if best is None or cpu < best[1] else best
    wall, cpu = best
    met = "met" if lines / cpu >= REAL_TARGET else "NOT met"
    print(f"  gpulint check (CLI, every rule, --jobs 1): {cpu:.2f} s CPU -> {lines / cpu:,.0f} lines/s "
          f"(target >= {REAL_TARGET:,}: {met}); wall {wall:.2f} s -> {lines / wall:,.0f} lines/s; "
          f"{cpu / best_parse:.1f}x the parse alone")
    print(f"  where the time goes (in-process, best of {repeat}): {phase_split(folder, repeat)}")
    tidy = shutil.which("clang-tidy")
    if tidy is None:
        print("  clang-tidy: not installed")
        return
    # Host-side parse only, no CUDA installation needed; the cost of reading the code, not of checks.
    tidy_cmd = [tidy, "--quiet", "--checks=-*,bugprone-*", *map(str, cuda), "--",
                "-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib", "-w"]
    wall, cpu, proc = child_cpu_run(tidy_cmd, folder, dict(os.environ))
    print(f"  clang-tidy (bugprone-*, host pass): {cpu:.2f} s CPU -> {lines / cpu:,.0f} lines/s; wall {wall:.2f} s; "
          f"exit {proc.returncode}")


REAL_TARGET = 60_000  # lines/s on one core (issue 19)


def phase_split(folder: Path, repeat: int) -> str:
    """CPU seconds of each phase of `check_paths` on `folder` in this process (warm: a first run
    fills the caches), best of `repeat` per phase: preprocessing, tree-sitter's parse, building the
    `syntax` tree (the rest of parsing), lowering to histories, rules, building their fixes, and the rest
    (discovery, reading, includes, summaries, the second pass's table, suppressions)."""
    sys.path.insert(0, str(REPO))
    from gpulint import engine
    from gpulint.config import Settings
    from gpulint.static import cuda_treesitter, frontends

    spent: dict[str, float] = {}

    def timed(owner: object, name: str, phase: str) -> tuple[object, str, object]:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            t0 = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[phase] = spent.get(phase, 0.0) + time.process_time() - t0

        setattr(owner, name, wrapper)
        return owner, name, original

    class TimedParser:
        def __init__(self, parser) -> None:  # noqa: ANN001
            self.parser = parser

        def parse(self, text: bytes):  # noqa: ANN202
            t0 = time.process_time()
            try:
                return self.parser.parse(text)
            finally:
                spent["ts"] = spent.get("ts", 0.0) + time.process_time() - t0

    from gpulint.findings import Finding

    # Fixes are built after the rules, when the engine reads them (`LazyFix`): timed on their own.
    patched = [timed(frontends, "parse", "parse"), timed(frontends, "lower", "lower"),
               timed(engine, "analyse_unit", "rules"), timed(cuda_treesitter, "preprocess", "preprocess"),
               timed(Finding, "_built_fix", "fixes")]
    real_parser = cuda_treesitter._parser()
    patched.append((cuda_treesitter, "_parser", cuda_treesitter._parser))
    cuda_treesitter._parser = lambda: TimedParser(real_parser)  # type: ignore[assignment]
    settings = Settings(jobs=1, respect_gitignore=False, frontend="tree-sitter")
    best: dict[str, float] = {}
    try:
        engine.check_paths([str(folder)], settings)
        for _ in range(repeat):
            spent.clear()
            t0 = time.process_time()
            engine.check_paths([str(folder)], settings)
            spent["total"] = time.process_time() - t0
            spent["build"] = spent.get("parse", 0.0) - spent.get("ts", 0.0) - spent.get("preprocess", 0.0)
            spent["rest"] = spent["total"] - spent.get("parse", 0.0) - spent.get("lower", 0.0) - spent.get("rules", 0.0) \
                - spent.get("fixes", 0.0)
            for phase, seconds in spent.items():
                best[phase] = min(best.get(phase, seconds), seconds)
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)
    labels = [("preprocess", "preprocess"), ("ts", "tree-sitter parse"), ("build", "syntax build"),
              ("lower", "lowering"), ("rules", "rules"), ("fixes", "fixes"), ("rest", "rest"), ("total", "total")]
    return ", ".join(f"{label} {best.get(key, 0.0):.2f} s" for key, label in labels)
GENERATED_TARGET = 40_000  # the generated corpus: dense host code, slower per line


# =============================================================================== scaling
#
# Issue 19, point 2: no superlinear path.  Time per statement of one function must stay flat from
# 1,000 to 50,000 statements, and one big file must cost what its functions cost as separate files.
# Measured in this process (CPU time, no start-up), every rule on, so that the fix builders run too.

SCALING_STATEMENTS = (1_000, 5_000, 20_000, 50_000)
SCALING_FLAT = 1.25  # the largest time per statement at most this many times the smallest


def split_functions(functions: int) -> dict[str, str]:
    """The text of `stress_cuda_functions(functions)` as one file per function (each with the
    kernels it launches and its own `main`-less unit), plus a file whose `main` calls them all."""
    head = ["#include <cuda_runtime.h>", "",
            "__global__ void touch(float *p, int n) { if (n > 0) p[0] = 1.0f; }",
            "__global__ void idle() {}", ""]
    whole = stress_cuda_functions(functions).splitlines()
    files: dict[str, str] = {}
    body = whole[len(head):whole.index("int main(int argc, char **argv) {")]
    for i in range(functions):
        files[f"step{i}.cu"] = "\n".join(head + body[i * 11:(i + 1) * 11]) + "\n"
    files["main.cu"] = "\n".join(whole[whole.index("int main(int argc, char **argv) {"):]) + "\n"
    return files


def time_scaling(repeat: int) -> None:
    """Print CPU microseconds per statement for one function of growing size (CUDA and Python),
    and one file of many functions against the same functions in as many files."""
    sys.path.insert(0, str(REPO))
    from gpulint.config import Settings
    from gpulint.engine import check_paths
    from gpulint.rules import RULES

    settings = Settings(jobs=1, select=tuple(sorted(RULES)), min_bytes=0)

    def cpu_seconds(paths: list[str], fixes: bool = True) -> float:
        """Best of `repeat` runs, and of as many more as fit in a second: a 20 ms run's best of
        two varies by 10%, which is the whole margin of a ratio between sizes."""
        best, runs, spent = None, 0, 0.0
        while runs < repeat or spent < 1.0:
            t0 = time.process_time()
            report = check_paths(paths, settings, fixes=fixes)
            del report  # freeing what the run made is part of its cost
            elapsed = time.process_time() - t0
            best = elapsed if best is None else min(best, elapsed)
            runs, spent = runs + 1, spent + elapsed
        return best

    from gpulint.static import cuda_treesitter, python as python_frontend

    parsers = {".cu": cuda_treesitter._parser(), ".py": python_frontend._parser()}

    def parse_seconds(suffix: str, source: bytes) -> float:
        """tree-sitter's parse of the same text, best of `repeat` + 2: the growth of a linear C
        parser's time per statement on a bigger input is the memory hierarchy's, not an algorithm's."""
        best, runs, spent = None, 0, 0.0
        while runs < repeat + 2 or spent < 0.5:
            t0 = time.process_time()
            tree = parsers[suffix].parse(source)
            elapsed = time.process_time() - t0
            del tree
            best = elapsed if best is None else min(best, elapsed)
            runs, spent = runs + 1, spent + elapsed
        return best

    print(f"scaling: CPU time in this process, every rule, best of {repeat}; flat = the largest time per statement "
          f"<= {SCALING_FLAT:g}x the smallest; 'check': fixes not asked for (built when read: a format that prints "
          f"none), 'check + fixes': every fix built (json, sarif, text)")
    with tempfile.TemporaryDirectory(prefix="gpulint-scaling-") as scratch:
        for name, text in (("warm.cu", stress_cuda_function(10)), ("warm.py", stress_python_function(10))):
            (Path(scratch) / name).write_text(text, encoding="utf-8")  # lazy imports and parsers, outside the timing
            check_paths([str(Path(scratch) / name)], settings)
        for language, make, per_unit, suffix in (("CUDA", stress_cuda_function, ";", ".cu"),
                                                  ("Python", stress_python_function, "\n", ".py")):
            for fixes, what in ((False, "check"), (True, "check + fixes")):
                rates, parse_rates = [], []
                for statements in SCALING_STATEMENTS:
                    # A CUDA allocation's pattern is about 4 statements, a Python tensor's about 2.
                    text = make(max(1, statements // (4 if suffix == ".cu" else 2)))
                    path = Path(scratch) / f"one_function_{statements}{suffix}"
                    path.write_text(text, encoding="utf-8")
                    count = text.count(per_unit)
                    seconds = cpu_seconds([str(path)], fixes)
                    rates.append(seconds / count * 1e6)
                    parse_rates.append(parse_seconds(suffix, text.encode()) / count * 1e6)
                    print(f"  {language} one function, {what}, {count:,} statements: {seconds:.2f} s, "
                          f"{rates[-1]:.1f} us/statement (tree-sitter's parse alone {parse_rates[-1]:.2f})")
                ratio = rates[-1] / rates[0]
                parse_ratio = parse_rates[-1] / parse_rates[0]
                print(f"  {language}, {what}: time per statement at {SCALING_STATEMENTS[-1]:,} / at "
                      f"{SCALING_STATEMENTS[0]:,} statements {ratio:.2f} (largest / smallest "
                      f"{max(rates) / min(rates):.2f}) -> {'flat' if max(rates) / min(rates) <= SCALING_FLAT else 'NOT flat'}; "
                      f"tree-sitter's parse alone, a linear C parser, grows {parse_ratio:.2f} on this machine "
                      f"(gpulint's growth over the parser's: {ratio / parse_ratio:.2f})")
        functions = 2_000
        big = Path(scratch) / "big"
        big.mkdir()
        (big / "all.cu").write_text(stress_cuda_functions(functions), encoding="utf-8")
        many = Path(scratch) / "many"
        many.mkdir()
        for name, text in split_functions(functions).items():
            (many / name).write_text(text, encoding="utf-8")
        one_file = cpu_seconds([str(big)])
        many_files = cpu_seconds([str(many)])
        ratio = one_file / many_files
        print(f"  CUDA {functions:,} functions: one file {one_file:.2f} s, {functions + 1:,} files {many_files:.2f} s "
              f"-> one file costs {ratio:.2f}x ({'no more' if ratio <= SCALING_FLAT else 'MORE'}: the files' own cost "
              f"is {(many_files - one_file) / functions * 1e3:.2f} ms each)")
    print(f"machine: {machine_description()}; date: {today()}")


# =============================================================================== timing


@dataclass
class FrontendResult(Result):
    findings: set[tuple[str, str, int]] | None = None  # distinct (code, file name, row)


_FALLBACK = re.compile(r"using tree-sitter|falling back to tree-sitter")


def time_cli(frontend: str, folder: Path, repeat: int, files: int) -> FrontendResult:
    result = FrontendResult(f"{frontend} (CLI)")
    if frontend == "clang":
        try:
            import importlib

            importlib.import_module("gpulint.static.cuda_clang")
        except Exception as exc:  # ImportError, or a module that is half written
            result.error = f"gpulint.static.cuda_clang cannot be imported ({type(exc).__name__}: {exc})"
            return result
    cmd = [sys.executable, "-m", "gpulint", "check", str(folder), "--jobs", "1", "--frontend", frontend,
           "--format", "json", "-v", "--no-cache", *EVERY_RULE]
    best, items, stderr, error = best_json_run(cmd, folder, repeat)
    if error is not None:
        result.error = error
        return result
    result.seconds = best
    result.count = len(items)
    result.findings = {(f.get("code"), Path(str(f.get("filename"))).name, (f.get("location") or {}).get("row"))
                       for f in items}
    stderr = stderr.splitlines()
    fallbacks = [line for line in stderr if _FALLBACK.search(line)]
    internal = [line for line in stderr if "internal error" in line]
    if frontend == "clang" and fallbacks:
        if len(fallbacks) >= files:
            result.error = (f"every file fell back to tree-sitter, e.g. "
                            f"{fallbacks[0].removeprefix('gpulint: ')[:160]}")
            result.seconds = None
            return result
        result.notes.append(f"{len(fallbacks)} of {files} files fell back to tree-sitter")
    if internal:
        result.notes.append(f"{len(internal)} internal errors, e.g. {internal[0].removeprefix('gpulint: ')[:160]}")
    return result


@dataclass
class CacheTiming:
    cold: float | None = None  # first run: analyses every file and fills .gpulint_cache/
    warm: float | None = None  # best later run over the unchanged tree
    same: bool = False  # the warm run reported exactly the cold run's findings
    error: str | None = None

    def line(self) -> str:
        if self.error or not self.cold or not self.warm:
            return f"cache:   not measured ({self.error or 'no timing'})"
        ratio = self.cold / self.warm
        return (f"cache:   cold {self.cold:.3f} s, warm {self.warm:.3f} s -> {ratio:.1f}x faster "
                f"(target >= {CACHE_TARGET:g}x: {'met' if ratio >= CACHE_TARGET else 'NOT met'}); "
                f"same findings: {'yes' if self.same else 'NO'}")


CACHE_TARGET = 10.0


def time_cache(cmd: list[str], folder: Path, repeat: int) -> CacheTiming:
    """`cmd` (a `gpulint check --format json` command line, CLI start-up included) once on an
    empty `.gpulint_cache/`, then `repeat` times over the unchanged tree."""
    timing = CacheTiming()
    shutil.rmtree(folder / ".gpulint_cache", ignore_errors=True)
    timing.cold, cold_items, _, timing.error = best_json_run(cmd, folder, 1)
    if timing.error is None:
        timing.warm, warm_items, _, timing.error = best_json_run(cmd, folder, repeat)
        timing.same = json.dumps(cold_items, sort_keys=True) == json.dumps(warm_items, sort_keys=True)
    shutil.rmtree(folder / ".gpulint_cache", ignore_errors=True)
    return timing


def time_in_process(folder: Path, repeat: int) -> FrontendResult:
    result = FrontendResult("tree-sitter (in-process)")
    try:
        sys.path.insert(0, str(REPO))
        from gpulint.config import Settings
        from gpulint.engine import check_paths
    except Exception as exc:
        result.error = f"cannot import gpulint.engine ({type(exc).__name__}: {exc})"
        return result
    settings = Settings(jobs=1, frontend="tree-sitter")
    try:
        best, report = best_call(repeat, lambda: check_paths([str(folder)], settings))
    except Exception as exc:
        result.error = f"check_paths raised {type(exc).__name__}: {exc}"
        return result
    result.seconds = best
    result.count = len(report.findings)
    result.findings = {(f.code, Path(f.location.path).name, f.location.row) for f in report.findings}
    return result


MARKER = ".gpulint-benchmark-corpus"
OTHER_MARKERS = {".gpulint-python-benchmark-corpus": "python_speed.py's Python corpus"}  # not ours to overwrite


# =============================================================================== report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200, help="number of .cu files to generate [200]")
    parser.add_argument("--lines-per-file", type=int, default=250, help="average lines per file [250]")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported [3]")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the generator")
    parser.add_argument("--out", type=Path, help="generate into DIR (created; kept) instead of a temporary folder")
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table for the README")
    parser.add_argument("--pin", type=int, metavar="CPU",
                        help="pin the runs to this CPU (--jobs 1 already keeps gpulint on one core; pinning only "
                             "helps on an otherwise idle machine)")
    parser.add_argument("--generate-only", action="store_true", help="write the corpus and stop")
    parser.add_argument("--stress", action="store_true",
                        help="time the stress inputs instead (one huge function, a file of many small functions; "
                             "CUDA and Python)")
    parser.add_argument("--stress-allocations", type=int, default=20_000, metavar="N",
                        help="allocations in the one-function stress inputs [20000]")
    parser.add_argument("--stress-functions", type=int, default=4_000, metavar="N",
                        help="functions in the many-functions stress inputs [4000: 44,000 lines of CUDA]")
    parser.add_argument("--scaling", action="store_true",
                        help="time one function of 1,000 to 50,000 statements and one big file against the same "
                             "functions in many files (CPU time per statement, in this process)")
    parser.add_argument("--real-corpus", type=Path, metavar="DIR", action="append",
                        help="time this folder of real code instead of fetching the pinned cuda-samples "
                             "(repeat for several folders)")
    parser.add_argument("--no-real", action="store_true", help="skip the real corpus")
    args = parser.parse_args(argv)
    if args.scaling:
        time_scaling(args.repeat)
        return 0
    if args.stress:
        if args.stress_allocations < 1 or args.stress_functions < 1 or args.repeat < 1:
            parser.error("--stress-allocations, --stress-functions and --repeat must be >= 1")
        if args.pin is not None:
            print(f"pinning: {pin_to_cpu(args.pin)}")
        time_stress(args.stress_allocations, args.stress_functions, args.repeat, args.markdown)
        return 0
    if args.files < 1 or args.lines_per_file < 60 or args.repeat < 1:
        parser.error("--files and --repeat must be >= 1, --lines-per-file >= 60")

    if args.out:
        folder = prepare_out_folder(parser, args.out, MARKER, "*.cu", "static_speed.py", OTHER_MARKERS)
        keep = True
    else:
        folder = Path(tempfile.mkdtemp(prefix="gpulint-corpus-"))
        keep = args.keep
    try:
        t0 = time.perf_counter()
        nfiles, nlines = generate_corpus(folder, args.files, args.lines_per_file, args.seed)
        print(f"generated {nfiles} files, {nlines:,} lines in {folder} ({time.perf_counter() - t0:.1f} s, "
              f"seed {args.seed})")
        if args.generate_only:
            keep = True
            return 0
        announce_timing(args.repeat, args.pin)

        results = [time_cli("tree-sitter", folder, args.repeat, nfiles),
                   time_in_process(folder, args.repeat),
                   time_cli("clang", folder, args.repeat, nfiles)]
        machine = machine_description()
        date = today()
        print_machine(machine, date)
        print_table("frontend", 26, results, nfiles, nlines)
        print()

        ts, inproc, clang = results
        if ts.findings is not None and clang.findings is not None:
            only_ts, only_clang = ts.findings - clang.findings, clang.findings - ts.findings
            if not only_ts and not only_clang:
                agreement = (f"yes: {ts.count} and {clang.count} findings, the same {len(ts.findings)} distinct "
                             f"(code, file, row)")
            else:
                agreement = (f"no: {len(ts.findings & clang.findings)} shared, {len(only_ts)} only with tree-sitter, "
                             f"{len(only_clang)} only with clang")
                for label, diff in (("tree-sitter only", only_ts), ("clang only", only_clang)):
                    for f in sorted(diff, key=str)[:3]:
                        agreement += f"\n    {label}: {f[0]} {f[1]}:{f[2]}"
        else:
            agreement = "n/a (clang frontend unavailable)" if clang.error else "n/a"
        print(f"frontends agree: {agreement}")
        cache = time_cache([sys.executable, "-m", "gpulint", "check", str(folder), "--jobs", "1", "--frontend",
                            "tree-sitter", "--format", "json", *EVERY_RULE], folder, args.repeat)
        print(cache.line())
        if ts.findings is not None and inproc.findings is not None and ts.findings != inproc.findings:
            print("note: the in-process run found a different set of findings than the CLI run")

        best_ts = min((r.seconds for r in (ts, inproc) if r.seconds), default=None)
        if ts.seconds:
            rate = nlines / ts.seconds
            met = "met" if rate >= TARGET_LINES_PER_S else "NOT met"
            print(f"target:  >= {TARGET_LINES_PER_S:,} lines/s on one core with tree-sitter (CLI, start-up "
                  f"included): {rate:,.0f} lines/s -> {met}")
            if inproc.seconds:
                rate_in = nlines / inproc.seconds
                print(f"         in-process (no start-up): {rate_in:,.0f} lines/s -> "
                      f"{'met' if rate_in >= TARGET_LINES_PER_S else 'NOT met'}")
        elif best_ts:
            print(f"target:  >= {TARGET_LINES_PER_S:,} lines/s: CLI unavailable; in-process "
                  f"{nlines / best_ts:,.0f} lines/s")
        else:
            print(f"target:  >= {TARGET_LINES_PER_S:,} lines/s: not measured (tree-sitter unavailable)")

        cpu_cmd = [sys.executable, "-m", "gpulint", "check", str(folder), "--jobs", "1", "--frontend", "tree-sitter",
                   "--no-cache", "--exit-zero", "--format", "json", "-o", os.devnull, *EVERY_RULE]
        cpu = min(child_cpu_run(cpu_cmd, folder, gpulint_env())[1] for _ in range(args.repeat))
        print(f"CPU:     tree-sitter CLI {cpu:.2f} s CPU (user + sys) -> {nlines / cpu:,.0f} lines/s "
              f"(issue 19 target for this corpus >= {GENERATED_TARGET:,}: "
              f"{'met' if nlines / cpu >= GENERATED_TARGET else 'NOT met'})")
        print(f"         where the time goes (in-process, best of {args.repeat}): "
              f"{phase_split(folder, args.repeat)}")
        if not args.no_real:
            for real, how in ([(given, "given") for given in args.real_corpus] if args.real_corpus
                              else [fetch_real_corpus()]):
                print()
                if real is None:
                    print(f"real corpus: unavailable ({how}); --real-corpus DIR names one")
                else:
                    time_real_corpus(real, args.repeat)

        if args.markdown:
            print_markdown_table(f"Static analysis speed, one core (`--jobs 1`), {nfiles} generated CUDA files, "
                                 f"{nlines:,} lines; best of {args.repeat}. {machine}; {date}.", "Frontend",
                                 {"tree-sitter (CLI)": "tree-sitter (`gpulint check`)",
                                  "tree-sitter (in-process)": "tree-sitter (in-process, no start-up)",
                                  "clang (CLI)": "clang (`gpulint check`)"}, results, nfiles, nlines)
            print(f"Frontends agree: {agreement.splitlines()[0]}. Reproduce with `python benchmarks/static_speed.py "
                  f"--markdown`.")
        return 0
    finally:
        if keep:
            print(f"\nkept the generated files in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
