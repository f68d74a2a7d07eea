"""The PyTorch collector (issue 7, in progress) on CPU tensors: the same findings as on the GPU."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpulint.config import Settings  # noqa: E402
from gpulint.dynamic.analyze import analyze  # noqa: E402
from gpulint.rules import RULES  # noqa: E402

PROGRAM = textwrap.dedent("""\
    import torch
    import gpulint


    def main(path):
        with gpulint.trace(path):
            w = torch.randn(256, 256)          # run: GL001
            x = torch.ones(256, 256)
            for _ in range(3):
                x = x @ x.t() / 256
            y = w @ x
            buf = torch.zeros(256, 256)         # run: GL007
            buf.copy_(y)
            z = buf.sum()
            unused = torch.empty(1024)          # run: GL004
            for _ in range(3):
                z = z + x.sum()
        return float(z), unused
    """)


def test_cpu_tensors_show_early_allocation_dead_write_and_unused(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    namespace: dict = {}
    exec(compile(PROGRAM, str(script), "exec"), namespace)
    namespace["main"](str(tmp_path / "t.jsonl"))
    found = analyze(tmp_path / "t.jsonl", Settings(min_bytes=0), sorted(RULES)).findings
    lines = PROGRAM.splitlines()
    expected = {(line.split("# run: ")[1].strip(), i) for i, line in enumerate(lines, 1) if "# run: " in line}
    got = {(f.code, f.location.row) for f in found if f.code in ("GL001", "GL004", "GL007")}
    assert got == expected, [(f.code, f.location.row, f.message) for f in found]
    early = next(f for f in found if f.code == "GL001")
    assert "kernel launch" in early.message and early.properties["size"] == 256 * 256 * 4


def test_gpulint_run_python_script(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import sys
        import torch
        w = torch.randn(64, 64)
        x = torch.ones(64, 64)
        y = x @ x
        y = y @ w
        print("args", sys.argv[1:], y.shape[0])
        if "--fail" in sys.argv:
            raise RuntimeError("boom")
        sys.exit(3)
        """))
    repo = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(tmp_path / "t.jsonl"), "--", sys.executable,
                           str(script), "a", "b"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 3 and "args ['a', 'b'] 64" in proc.stdout, proc.stderr
    meta = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert meta["collector"] == "python" and meta["argv"] == [str(script), "a", "b"]
    found = analyze(tmp_path / "t.jsonl", Settings(min_bytes=0), sorted(RULES)).findings
    assert ("GL001", 3) in {(f.code, f.location.row) for f in found}  # w waits for x @ x
    failed = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(tmp_path / "f.jsonl"), "--",
                             sys.executable, str(script), "--fail"], capture_output=True, text=True, cwd=tmp_path,
                            env=env)
    assert failed.returncode == 1 and "RuntimeError: boom" in failed.stderr
    assert (tmp_path / "f.jsonl").read_text().count('"ev":"alloc"') >= 3  # flushed although it raised


def _accesses(path: Path):
    """(kernel, obj) -> (read elements, written elements) from a torch trace and its sidecar."""
    from gpulint.dynamic.trace import read_trace

    trace = read_trace(path)
    launches = {e["t"]: e["kernel"] for e in trace.events if e["ev"] == "launch"}
    out = {}
    for e in trace.events:
        if e["ev"] == "bitmap":
            read = trace.bitmap(e["key"], "r") if e["read"] else None
            write = trace.bitmap(e["key"], "w") if e["write"] else None
            out.setdefault((launches[e["launch_t"]], e["obj"]), []).append(
                (set(map(int, read.nonzero()[0])) if read is not None else set(),
                 set(map(int, write.nonzero()[0])) if write is not None else set()))
    return trace, out


def test_index_ops_touch_exact_rows(tmp_path: Path) -> None:
    import gpulint

    with gpulint.trace(str(tmp_path / "t.jsonl")):
        table = torch.randn(10, 4)
        rows = torch.tensor([0, 5, 7])
        picked = torch.index_select(table, 0, rows).sum()
        looked = torch.nn.functional.embedding(torch.tensor([[2, 2]]), table).sum()
        gathered = torch.gather(table, 1, torch.tensor([[3], [1]])).sum()
        taken = torch.take(table, torch.tensor([39])).sum()
        table.index_put_((torch.tensor([9]),), torch.ones(4))
        table.scatter_(0, torch.tensor([[8, 8, 8, 8]]), torch.zeros(1, 4))
        part = table[2:4, 1:3] * 2
    trace, seen = _accesses(tmp_path / "t.jsonl")
    table_id = next(e["obj"] for e in trace.events if e["ev"] == "alloc" and e["api"] == "torch.randn")

    def rows_of(kernel: str, role: int) -> set:
        (entry,) = seen[(kernel, table_id)]
        return entry[role]

    assert rows_of("aten::index_select", 0) == {r * 4 + c for r in (0, 5, 7) for c in range(4)}
    assert rows_of("aten::embedding", 0) == {8, 9, 10, 11}
    assert rows_of("aten::gather", 0) == {3, 5}  # row 0 col 3, row 1 col 1
    assert rows_of("aten::take", 0) == {39}
    assert rows_of("aten::index_put_", 1) == {36, 37, 38, 39}
    assert rows_of("aten::scatter_", 1) == {32, 33, 34, 35}
    assert rows_of("aten::mul", 0) == {9, 10, 13, 14}  # the view table[2:4, 1:3]
    assert float(picked + looked + gathered + taken) == float(picked + looked + gathered + taken)
    assert part.shape == (2, 2)


def test_backward_ops_are_recorded_at_the_backward_call(tmp_path: Path) -> None:
    import gpulint

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    x = torch.randn(8, 16)
    with gpulint.trace(str(tmp_path / "t.jsonl")):
        loss = model(x).pow(2).mean()
        loss.backward()  # the backward line
    from gpulint.dynamic.trace import read_trace

    events = read_trace(tmp_path / "t.jsonl").events
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "# the backward line" in text)
    backward = [e["kernel"] for e in events if e["ev"] == "launch" and e["site"] and e["site"][0][1] == line]
    assert "aten::threshold_backward" in backward and backward.count("aten::mm") >= 3, backward


def test_gpulint_run_module_and_the_trace_context_manager(tmp_path: Path) -> None:
    """`gpulint run -m module args` runs the module as `__main__` under the Python collectors;
    `with gpulint.trace(...)` lets the program's exception through and still writes the trace."""
    import subprocess
    import sys

    package = tmp_path / "job"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(textwrap.dedent("""\
        import sys
        import torch
        unused = torch.zeros(1024)
        print("module args", sys.argv[1:])
        sys.exit(4)
        """))
    repo = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(tmp_path / "m.jsonl"), "-m", "job", "x"],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 4 and "module args ['x']" in proc.stdout, proc.stderr
    found = analyze(tmp_path / "m.jsonl", Settings(min_bytes=0), sorted(RULES)).findings
    assert ("GL004", 3) in {(f.code, f.location.row) for f in found}

    import gpulint

    with pytest.raises(ValueError, match="inside"):
        with gpulint.trace(str(tmp_path / "c.jsonl")):
            kept = torch.ones(256) * 2
            raise ValueError("inside")
    assert '"api":"torch.ones"' in (tmp_path / "c.jsonl").read_text() and kept.shape == (256,)
