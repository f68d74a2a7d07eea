"""The Python collectors on a GPU: the per-rule PyTorch programs with CUDA tensors, the caching
allocator's pool (GL104), Numba, CuPy and cuda-python programs.  Skipped without a GPU; results
are recorded in docs/benchmarks.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.trace import read_trace
from gpulint.rules import RULES

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]

from conftest import markers  # noqa: E402
from test_torch_programs import PROGRAMS  # noqa: E402


def record(name: str, data: dict) -> None:
    path = os.environ.get("GPULINT_GPU_RESULTS")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"test": name, **data}) + "\n")


def gpulint_run(tmp_path: Path, script: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, list]:
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(script))
    trace = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(trace), "--", sys.executable, str(program)],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py")))
def test_torch_programs_on_cuda(program: str, tmp_path: Path) -> None:
    """The CPU programs with CUDA as the default device: the same findings (GL104, which only
    CUDA's caching allocator shows, is left to its own test)."""
    source = PROGRAMS / program
    copy = tmp_path / program
    copy.write_text("import torch\ntorch.set_default_device('cuda')\n" + source.read_text())
    trace = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(trace), "--", sys.executable, str(copy)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = analyze(trace, Settings(min_bytes=0), sorted(RULES)).findings
    got = Counter((f.code, f.location.row - 2) for f in found if f.code != "GL104" and Path(f.location.path).name == program)
    record(f"cuda:{program}", {"findings": sorted(got)})
    assert got == markers(source, "run"), [(f.code, f.location.row, f.message) for f in found]


def test_caching_allocator_fragmentation(tmp_path: Path) -> None:
    _, found = gpulint_run(tmp_path, """\
        import torch
        small, big = [], []
        for i in range(8):
            big.append(torch.empty(24 << 20, dtype=torch.uint8, device="cuda"))
            small.append(torch.empty(1 << 20, dtype=torch.uint8, device="cuda"))
        del big
        huge = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        print(huge.sum().item(), sum(s.sum().item() for s in small))
        """)
    pool = [f for f in found if f.code == "GL104"]
    record("gl104", {"messages": [f.message for f in pool]})
    assert pool and pool[0].properties["pool"] == "torch.cuda"


def test_numba_program(tmp_path: Path) -> None:
    pytest.importorskip("numba.cuda")
    # numba-cuda can import yet fail to compile anything against a newer numpy (0.x against
    # numpy 2.4: `np.row_stack` is gone); that is the machine, not gpulint.
    probe = subprocess.run([sys.executable, "-c", "from numba import cuda\n@cuda.jit\ndef k(a):\n    a[0] = 1\n"
                            "import numpy as np\nk[1, 1](cuda.to_device(np.zeros(1)))"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"numba-cuda cannot compile a kernel here: {probe.stderr.strip().splitlines()[-1][:200]}")
    _, found = gpulint_run(tmp_path, """\
        import numpy as np
        from numba import cuda

        @cuda.jit
        def scale(a, n):
            i = cuda.grid(1)
            if i < n:
                a[i] *= 2.0

        n = 1 << 16
        early = cuda.to_device(np.ones(n, dtype=np.float32))
        unused = cuda.device_array(n, dtype=np.float32)
        work = cuda.to_device(np.ones(n, dtype=np.float32))
        for _ in range(3):
            scale[n // 256, 256](work, n)
        scale[n // 256, 256](early, n)
        print(work.copy_to_host()[0], early.copy_to_host()[0])
        """)
    codes = {(f.code, f.location.row) for f in found}
    record("numba", {"findings": sorted(codes)})
    assert ("GL001", 11) in codes and ("GL004", 12) in codes, [(f.code, f.location.row, f.message) for f in found]


def test_cupy_program(tmp_path: Path) -> None:
    pytest.importorskip("cupy")
    proc, found = gpulint_run(tmp_path, """\
        import cupy as cp
        a = cp.ones(1 << 20, dtype=cp.float32)
        b = cp.ones(1 << 20, dtype=cp.float32)
        c = a + b
        del a, b
        print(float(c.sum()))
        """)
    events = read_trace(tmp_path / "t.jsonl").events
    allocs = [e for e in events if e["ev"] == "alloc" and e.get("framework") == "cupy"]
    pools = [e for e in events if e["ev"] == "pool" and e["pool"] == "cupy"]
    record("cupy", {"allocations": len(allocs), "pool_events": len(pools), "findings": [f.code for f in found]})
    assert len(allocs) >= 3 and pools and not [f for f in found if f.code in ("GL001", "GL002", "GL004")]
    assert any(e["ev"] == "free" for e in events)


def test_cuda_python_program(tmp_path: Path) -> None:
    pytest.importorskip("cuda.bindings.runtime")
    _, found = gpulint_run(tmp_path, """\
        import numpy as np
        from cuda.bindings import runtime as rt

        host = np.ones(1024, dtype=np.float32)
        err, used = rt.cudaMalloc(host.nbytes)
        err, leaked = rt.cudaMalloc(4096)
        rt.cudaMemcpy(used, host.ctypes.data, host.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice)
        rt.cudaMemcpy(host.ctypes.data, used, host.nbytes, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost)
        rt.cudaFree(used)
        rt.cudaDeviceSynchronize()
        print(host[0])
        """)
    codes = {(f.code, f.location.row) for f in found}
    events = read_trace(tmp_path / "t.jsonl").events
    record("cuda-python", {"findings": sorted(codes), "events": [e["ev"] for e in events]})
    assert [e["ev"] for e in events if e["ev"] != "pool"][:6] == ["alloc", "alloc", "memcpy", "memcpy", "free", "sync"]
    assert ("GL005", 6) in codes and ("GL004", 6) in codes


def test_cupy_launches_through_cupti(tmp_path: Path) -> None:
    """With cupti-python installed, CuPy's kernel launches are in the trace with the arrays their
    parameters point into, so the lifetime rules judge CuPy arrays: `early` waits through four
    unrelated launches (GL001 at line 3), `unused` is never used (GL004 at line 4)."""
    pytest.importorskip("cupy")
    pytest.importorskip("cupti.cupti", reason="cupti-python is not installed")
    _, found = gpulint_run(tmp_path, """\
        import cupy as cp
        n = 1 << 20
        early = cp.empty(n, dtype=cp.float32)
        unused = cp.empty(n, dtype=cp.float32)
        work = cp.ones(n, dtype=cp.float32)
        for _ in range(3):
            cp.multiply(work, 2.0, out=work)
        cp.add(work, 1.0, out=early)
        print(float(early[0]), float(work[0]))
        """)
    trace = read_trace(tmp_path / "t.jsonl")
    events = trace.events

    def line(event: dict) -> int | None:
        site = event.get("site") or []
        return site[0][1] if site and Path(site[0][0]).name == "prog.py" else None

    allocs = [e for e in events if e["ev"] == "alloc" and e.get("framework") == "cupy"]
    launches = [e for e in events if e["ev"] == "launch"]
    summary = {"allocs": [(line(e), e["obj"], e["size"]) for e in allocs],
               "launches": [(line(e), e["kernel"], e["reads"], e["writes"], e.get("params_unread")) for e in launches],
               "notes": trace.warnings}
    lifetime = sorted((f.code, f.location.row) for f in found
                      if f.code in ("GL001", "GL002", "GL004") and Path(f.location.path).name == "prog.py")
    record("cupy-cupti", {**summary, "findings": sorted((f.code, f.location.row) for f in found)})
    assert trace.warnings == [], summary  # attached: no "launches are not in this trace", no callback failure
    assert not [e for e in allocs if e.get("uses_unknown")], summary
    by_line = {line(e): e["obj"] for e in allocs}
    assert [line(e) for e in allocs] == [3, 4, 5] and all(e["size"] == 4 << 20 for e in allocs), summary
    early, unused, work = by_line[3], by_line[4], by_line[5]
    assert all(e["reads"] == e["writes"] and not e.get("params_unread") for e in launches), summary
    assert all(e["reads"] == [work] for e in launches if line(e) == 5), summary  # ones(): its fill kernel
    multiplies = [e for e in launches if line(e) == 7]
    assert len(multiplies) == 3 and all(e["reads"] == [work] and "multiply" in e["kernel"] for e in multiplies), summary
    adds = [e for e in launches if line(e) == 8]
    assert len(adds) == 1 and sorted(adds[0]["reads"]) == sorted([work, early]) and "add" in adds[0]["kernel"], summary
    assert not [e for e in launches if unused in e["reads"]], summary
    assert lifetime == [("GL001", 3), ("GL004", 4)], (lifetime, summary)
    gl001, gl004 = (next(f for f in found if f.code == code and Path(f.location.path).name == "prog.py")
                    for code in ("GL001", "GL004"))
    assert gl001.properties["object_id"] == early and gl001.properties["distance"] >= 3, gl001.message
    assert gl004.properties["object_id"] == unused, gl004.message
