"""The native collector's CPU side: it builds with nvcc against the Sanitizer API, host stacks
resolve through DWARF, raw traces are finished into trace format v1, and without a GPU
`gpulint run` says what is missing instead of crashing."""
from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.collectors.native import build as builder
from gpulint.dynamic.collectors.native.finalize import finalize
from gpulint.dynamic.trace import sidecar_path
from gpulint.dynamic.symbols import resolve_frames
from gpulint.dynamic.trace import read_trace
from gpulint.rules import RULES
from test_cli import run

STACK_PROGRAM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>

__attribute__((noinline)) void where(void) {
    void* frames[8];
    int n = backtrace(frames, 8);
    for (int i = 1; i < n; ++i) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname)
            printf("%s 0x%lx\n", info.dli_fname, (unsigned long)((uintptr_t)frames[i] - (uintptr_t)info.dli_fbase));
    }
}

__attribute__((noinline)) void allocate_buffer(void) {
    where();
}

int main(void) {
    allocate_buffer();
    return 0;
}
"""


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def run_stack_program(tmp_path: Path, *flags: str) -> tuple[Path, list[str]]:
    """Build STACK_PROGRAM with gcc (extra `flags`) and run it: its source and the
    "module offset" lines it prints for its own frames and libc's."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not on PATH")
    source = tmp_path / "app.c"
    source.write_text(STACK_PROGRAM)
    binary = tmp_path / "app"
    subprocess.run([gcc, "-g", "-O0", *flags, "-o", str(binary), str(source), "-ldl"], check=True)
    return source, subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.splitlines()


@pytest.fixture
def stack_binary(tmp_path: Path) -> tuple[Path, list[list]]:
    source, out = run_stack_program(tmp_path)
    return source, [[module, offset, ""] for module, offset in (line.split() for line in out)]


@pytest.mark.parametrize("pie", [True, False])
def test_host_stacks_resolve_to_source_lines(tmp_path: Path, pie: bool) -> None:
    _, out = run_stack_program(tmp_path, "-pie" if pie else "-no-pie")
    resolved = [resolve_frames([module, offset, "f"])[0] for module, offset in (line.split() for line in out[:2])]
    assert [(Path(f).name, line) for f, line, _ in resolved] == [
        ("app.c", line_of(STACK_PROGRAM, "    where();")), ("app.c", line_of(STACK_PROGRAM, "    allocate_buffer();"))]
    # A module without line information keeps its name, line 0.
    libc = next(line.split() for line in out if "libc" in line)
    assert resolve_frames([libc[0], libc[1], "__libc_start_main"])[0][1] == 0


def test_finalize_resolves_stacks_and_moves_bitmaps(tmp_path: Path, stack_binary) -> None:
    source, frames = stack_binary
    trace = tmp_path / "run.jsonl"
    bits = np.zeros(4096 // 32, dtype=bool)
    bits[:32] = True  # a quarter of 4096 bytes at 32-byte granules
    words = np.packbits(bits, bitorder="little").view("<u4")
    (tmp_path / "run.jsonl.bits").write_bytes(words.tobytes())
    lines = [
        {"ev": "meta", "version": 1, "collector": "native", "argv": ["./app"], "device": None, "granularity": 32},
        {"ev": "device", "t": 0, "device": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"},
        {"ev": "alloc", "t": 1, "obj": 1, "addr": 1 << 32, "size": 4096, "stream": 0, "api": "cudaMalloc",
         "site": frames},
        {"ev": "launch", "t": 2, "stream": 0, "kernel": "fill(float*)", "reads": [], "writes": [1], "site": frames},
        {"ev": "bitmap", "obj": 1, "launch_t": 2, "key": "o1_t2", "granularity": 32, "read": False, "write": True,
         "raw": {"file": "bits", "read_at": 0, "write_at": 0, "bits": 128}},
        {"ev": "free", "t": 3, "obj": 1, "stream": 0, "site": frames},
    ]
    trace.write_text("".join(json.dumps(e) + "\n" for e in lines) + '{"ev":"launch","t":4,"ker')  # cut by a crash
    finalize(trace, sidecar_path(trace))
    read = read_trace(trace)
    assert read.meta["device"] == "NVIDIA H100 80GB HBM3"
    assert read.events[0]["site"] == frames  # kept raw; resolved when analysed
    assert not Path(str(trace) + ".bits").exists()
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings
    over = [f for f in found if f.code == "GL008"]
    assert [f.properties["accessed_percent"] for f in over] == [25.0]
    assert over[0].location.path.endswith("app.c") and over[0].location.row == line_of(STACK_PROGRAM, "    where();")


def test_collector_builds_with_nvcc(tmp_path: Path, monkeypatch) -> None:
    try:
        chain = builder.toolchain()
    except builder.Unavailable as exc:
        pytest.skip(str(exc).split(".")[0])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = builder.build(chain, (9, 0))
    assert built.tool.is_file() and built.patch.is_file() and built.patch.stat().st_size > 0
    assert str(tmp_path) in str(built.tool) and f"cuda{chain.version}-sm_90-" in str(built.tool)
    library = ctypes.CDLL(str(built.tool))  # loads without a driver: libcuda is looked up at run time
    assert hasattr(library, "InitializeInjection")
    again = builder.build(chain, (9, 0))
    assert again.tool.stat().st_mtime_ns == built.tool.stat().st_mtime_ns  # cached, not rebuilt


def test_run_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    try:
        builder.detect_device()
        pytest.skip("this machine has a GPU: the GPU tests cover `gpulint run`")
    except builder.Unavailable:
        pass
    result = run("run", "-o", str(tmp_path / "t.jsonl"), "--", "true", cwd=tmp_path)
    assert result.exit_code == 2 and "NVIDIA" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "t.jsonl").exists()
    assert run("run", cwd=tmp_path).exit_code == 2  # nothing to run


def test_object_level_trace_needs_no_finishing(tmp_path: Path, stack_binary) -> None:
    """What the library writes at object level is already a trace: the device line goes into
    `meta`, the end marker is dropped, native frames resolve when analysed."""
    source, frames = stack_binary
    trace = tmp_path / "raw.jsonl"
    lines = [
        {"ev": "meta", "version": 1, "collector": "native", "argv": ["./app"], "device": None, "granularity": 32},
        {"ev": "device", "t": 0, "device": "NVIDIA H200", "compute_capability": "9.0"},
        {"ev": "alloc", "t": 1, "obj": 1, "addr": 4096, "size": 1024, "stream": 0, "api": "cudaMalloc", "site": frames},
        {"ev": "end", "t": 1},
    ]
    trace.write_text("".join(json.dumps(e) + "\n" for e in lines))
    read = read_trace(trace)
    assert read.meta["device"] == "NVIDIA H200" and [e["ev"] for e in read.events] == ["alloc"]
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings
    assert [(f.code, Path(f.location.path).name, f.location.row) for f in found] == [
        ("GL004", "app.c", line_of(STACK_PROGRAM, "    where();")), ("GL005", "app.c", line_of(STACK_PROGRAM, "    where();"))]


def test_finalize_summarises_each_launchs_counts(tmp_path: Path) -> None:
    """At --level full the tool writes each launch's per-element counts; finalize keeps the run's
    sum in the sidecar and each launch's variation on its bitmap event (DrGPUM's per-API
    frequency), never the per-launch arrays (each as large as the object)."""
    trace = tmp_path / "run.jsonl"
    words = np.array([0xFFFF], dtype="<u4")  # all 16 four-byte granules touched
    hot = np.array([1] * 12 + [40] * 4, dtype="<u4")  # 16 four-byte elements, 4 of them hot
    flat = np.full(16, 3, dtype="<u4")
    (tmp_path / "run.jsonl.bits").write_bytes(words.tobytes() + hot.tobytes() + flat.tobytes())
    site = [["app.cu", 3, "main"]]
    lines = [{"ev": "meta", "version": 1, "collector": "native", "argv": ["./app"], "device": None, "granularity": 4},
             {"ev": "alloc", "t": 1, "obj": 1, "addr": 1 << 32, "size": 64, "stream": 0, "api": "cudaMalloc",
              "site": site}]
    for t, at in ((2, len(words) * 4), (3, len(words) * 4 + 64)):
        lines.append({"ev": "launch", "t": t, "stream": 0, "kernel": "k", "reads": [1], "writes": [], "site": site})
        lines.append({"ev": "bitmap", "obj": 1, "launch_t": t, "key": f"o1_t{t}", "granularity": 4, "read": True,
                      "write": False, "raw": {"read_at": 0, "bits": 16, "counts_at": at}})
    trace.write_text("".join(json.dumps(e) + "\n" for e in lines))
    finalize(trace, sidecar_path(trace))
    events = read_trace(trace).events
    cvs = [(e["launch_t"], e["counts_cv"], e["counts_accessed"]) for e in events if e["ev"] == "bitmap"]
    assert cvs[1] == (3, 0.0, 16) and cvs[0][0] == 2 and cvs[0][1] > 1.0
    assert [e["key"] for e in events if e["ev"] == "counts"] == ["c1_tall"]


def access_level_trace(tmp_path: Path, slices: list[tuple[int, int]], merged_granules: int,
                       finished: bool = True) -> Path:
    """What the access level writes for one 4 KiB object (128 granules of 32 bytes): four launches
    of `fill`, each with its slice as ranges, and a launch of `sum` under which the object's
    merged bitmaps are filed (`merged_granules` granules read, the slices written)."""
    trace = tmp_path / "run.jsonl"
    site = [["app.cu", 3, "main"]]
    ranges = np.array([bound for pair in slices for bound in pair], dtype="<u4")
    written = np.zeros(128, dtype=bool)
    for start, end in slices:
        written[start:end] = True
    read = np.zeros(128, dtype=bool)
    read[:merged_granules] = True
    words = [np.packbits(bits, bitorder="little").view("<u4") for bits in (read, written)]
    (tmp_path / "run.jsonl.bits").write_bytes(ranges.tobytes() + words[0].tobytes() + words[1].tobytes())
    lines = [{"ev": "meta", "version": 1, "collector": "native", "argv": ["./app"], "device": None, "granularity": 32},
             {"ev": "alloc", "t": 1, "obj": 1, "addr": 1 << 32, "size": 4096, "stream": 0, "api": "cudaMalloc",
              "site": site}]
    for i in range(len(slices)):
        lines.append({"ev": "launch", "t": 2 + i, "stream": 0, "kernel": "fill", "reads": [], "writes": [1], "site": site})
        lines.append({"ev": "bitmap", "obj": 1, "launch_t": 2 + i, "key": f"o1_t{2 + i}", "granularity": 32,
                      "read": False, "write": True, "slice": True,
                      "raw": {"file": "bits", "ranges_at": 8 * i, "ranges": 1, "bits": 128}})
    t = 2 + len(slices)
    lines.append({"ev": "launch", "t": t, "stream": 0, "kernel": "sum", "reads": [1], "writes": [], "site": site})
    lines.append({"ev": "bitmap", "obj": 1, "launch_t": t, "key": f"o1_t{t}", "granularity": 32, "read": True,
                  "write": True, "merged": True,
                  "raw": {"file": "bits", "read_at": ranges.nbytes, "write_at": ranges.nbytes + 16, "bits": 128}})
    lines.append({"ev": "free", "t": t + 1, "obj": 1, "stream": 0, "site": site})
    trace.write_text("".join(json.dumps(e) + "\n" for e in lines))
    if finished:
        finalize(trace, sidecar_path(trace))
    return trace


def test_the_first_reader_finishes_what_the_collector_left(tmp_path: Path) -> None:
    """`gpulint run` becomes the program, so nothing finishes the trace after it: the raw words stay
    in `<trace>.bits` until `analyze` reads the trace, which moves them into the sidecar once."""
    trace = access_level_trace(tmp_path, [(0, 8), (8, 16), (16, 24), (24, 32)], merged_granules=16, finished=False)
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES))
    assert not (tmp_path / "run.jsonl.bits").exists() and (tmp_path / "run.jsonl.npz").is_file()
    assert [f.properties["accessed_percent"] for f in found.findings if f.code == "GL008"] == [25.0]
    again = analyze(trace, Settings(min_bytes=0), sorted(RULES))  # finished: read as it is
    assert [f.code for f in again.findings] == [f.code for f in found.findings] and not again.warnings


def test_an_unfinished_trace_that_cannot_be_finished_is_still_read(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder the reader may not write: the analyses without bitmaps still run, a warning says
    why the others did not, and neither the trace nor the raw words are touched."""
    import gpulint.dynamic.collectors.native.finalize as finishing

    trace = access_level_trace(tmp_path, [(0, 8), (8, 16)], merged_granules=16, finished=False)
    before = trace.read_bytes()

    def refused(*_args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(finishing.os, "replace", refused)
    result = analyze(trace, Settings(min_bytes=0), sorted(RULES))
    assert [w for w in result.warnings if "cannot move the collector's raw bitmaps" in w and "Permission denied" in w]
    assert trace.read_bytes() == before and (tmp_path / "run.jsonl.bits").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run.jsonl.bits"]
    assert not [f for f in result.findings if f.code in ("GL008", "GL010")]  # they need the bitmaps


def test_access_level_slices_become_per_launch_bitmaps(tmp_path: Path) -> None:
    """A slice's ranges become that launch's bitmap, cut after its last granule; with the merged
    bitmap filed under another kernel's launch (`sum` reads half of what `fill` wrote), GL010
    sees the four slices of `fill` and GL008 the union."""
    trace = access_level_trace(tmp_path, [(0, 8), (8, 16), (16, 24), (24, 32)], merged_granules=16)
    events = read_trace(trace)
    assert events.bitmap("o1_t3", "w").tolist() == [False] * 8 + [True] * 8
    assert events.bitmap("o1_t6", "w").sum() == 32 and events.bitmap("o1_t6", "r").sum() == 16
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings
    assert [(f.code, f.properties.get("slices"), f.properties.get("kernel")) for f in found if f.code == "GL010"] == [
        ("GL010", 4, "fill")]
    assert [f.properties["accessed_percent"] for f in found if f.code == "GL008"] == [25.0]


def test_access_level_merged_bitmap_keeps_overlapping_kernels_apart(tmp_path: Path) -> None:
    """When `sum` reads the whole object the slices of `fill` are still disjoint among themselves,
    but they cover a quarter of what the run touched: no GL010 (measures.kernel_slices needs
    half), and no GL008 either (everything was touched)."""
    trace = access_level_trace(tmp_path, [(0, 8), (8, 16), (16, 24), (24, 32)], merged_granules=128)
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings
    assert not [f for f in found if f.code in ("GL008", "GL010")], [(f.code, f.message) for f in found]
