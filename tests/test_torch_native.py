"""The PyTorch collector's C++ hook against its reference, the dispatch mode: the same program
gives the same trace (events, bitmaps and counts) both ways.  Also what only the hook does:
frees that no allocator reports, its fallback when it cannot be built."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from gpulint.dynamic.collectors import pyrun, torch_native  # noqa: E402

TESTS = Path(__file__).resolve().parent
PROGRAMS = sorted([*(TESTS / "torch_programs").glob("*.py"), TESTS / "python_loop_programs" / "gl101_flush.py"])


@pytest.fixture(scope="module")
def hook_built() -> None:
    try:
        torch_native.build()
    except torch_native.Unavailable as exc:
        pytest.skip(f"the hook cannot be built here: {exc}")


def run(program: Path, trace: Path, driver: str, monkeypatch) -> list[dict]:
    monkeypatch.setenv("GPULINT_TORCH_HOOK", driver)
    argv, path = list(sys.argv), list(sys.path)
    try:
        assert pyrun.main(["-o", str(trace), "--", str(program)]) == 0
    finally:
        sys.argv[:], sys.path[:] = argv, path
    return [json.loads(line) for line in trace.read_text().splitlines()]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_hook_writes_the_dispatch_modes_trace(program: Path, hook_built, tmp_path: Path, monkeypatch) -> None:
    native = run(program, tmp_path / "native.jsonl", "native", monkeypatch)
    mode = run(program, tmp_path / "mode.jsonl", "mode", monkeypatch)
    for events in (native, mode):
        events[0].pop("pid")
        # The pool's state is sampled (every 50 ms, or per op): the samples differ, not what they show.
        # (With CuPy imported earlier in this process, its CUPTI callback sees PyTorch's kernels:
        # both drivers must keep those out, so no other event is left out here.)
        events[:] = [e for e in events if e["ev"] != "pool"]
        # Both drivers stamp every event that has a `t` with the host's clock; the clocks differ.
        assert all(e.pop("ns", None) is not None for e in events if "t" in e)
    assert not [e for e in native if e["ev"] == "note" and "dispatch mode" in e["text"]], "the hook was not used"
    assert native == mode, [(x, y) for x, y in zip(native, mode) if x != y][:3]
    arrays = [tmp_path / f"{name}.jsonl.npz" for name in ("native", "mode")]
    assert arrays[0].exists() == arrays[1].exists()
    if arrays[0].exists():
        a, b = np.load(arrays[0]), np.load(arrays[1])
        assert sorted(a.files) == sorted(b.files)
        assert all(np.array_equal(a[key], b[key]) for key in a.files)


FREES = """\
import numpy
import torch

host = numpy.ones(1024, dtype=numpy.float32)
t = torch.from_numpy(host)     # numpy's memory: no allocator reports its free
u = t * 2
del t, host
v = u + 1
print(float(v.sum()))
"""


def test_frees_no_allocator_reported_are_found(hook_built, tmp_path: Path, monkeypatch) -> None:
    program = tmp_path / "frees.py"
    program.write_text(FREES)
    events = run(program, tmp_path / "t.jsonl", "native", monkeypatch)
    numpy_object = next(e["obj"] for e in events if e["ev"] == "alloc" and e["size"] == 4096 and e["api"] == "tensor")
    frees = [e for e in events if e["ev"] == "free" and e["obj"] == numpy_object]
    assert len(frees) == 1  # found by the sweep at the end, never twice


def test_without_a_compiler_the_dispatch_mode_records(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    events = run(TESTS / "torch_programs" / "gl004_unused.py", tmp_path / "t.jsonl", "native", monkeypatch)
    notes = [e["text"] for e in events if e["ev"] == "note"]
    dispatch = [n for n in notes if "dispatch mode" in n]  # (a machine without cupti-python adds its own note)
    assert len(dispatch) == 1 and "no-such-compiler" in dispatch[0]
    assert any(e["ev"] == "launch" for e in events)
    assert not list((tmp_path / "cache").rglob("*.so"))  # nothing half-built left behind


def test_the_hook_owns_the_launches_inside_its_ops(hook_built, tmp_path: Path, monkeypatch) -> None:
    """Inside an op the hook records, the kernels launched are the op's (CUPTI leaves them out);
    outside one they are not."""
    import torch

    import gpulint

    monkeypatch.setenv("GPULINT_TORCH_HOOK", "native")
    seen, recorders = [], []
    handed = torch_native.NativeInstalled._op

    def op(self, plan, args, outputs, site):
        seen.append((plan.name, self.recorder.launch_owned()))
        recorders.append(self.recorder)
        handed(self, plan, args, outputs, site)

    monkeypatch.setattr(torch_native.NativeInstalled, "_op", op)
    with gpulint.trace(str(tmp_path / "t.jsonl")):
        a, b = torch.ones(64), torch.zeros(64)
        b.copy_(a)  # handed to Python: the callback runs inside the op
        outside = recorders[0].launch_owned()
        owners = len(recorders[0].launch_owners)
    assert ("aten::copy_", True) in seen
    assert owners == 1 and outside is False
    assert recorders[0].launch_owners == []  # the session took its owner back
