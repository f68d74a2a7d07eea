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
    found = analyze(tmp_path / "t.jsonl", Settings(), sorted(RULES)).findings
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
    assert meta["collector"] == "torch" and meta["argv"] == [str(script), "a", "b"]
    found = analyze(tmp_path / "t.jsonl", Settings(), sorted(RULES)).findings
    assert ("GL001", 3) in {(f.code, f.location.row) for f in found}  # w waits for x @ x
    failed = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(tmp_path / "f.jsonl"), "--",
                             sys.executable, str(script), "--fail"], capture_output=True, text=True, cwd=tmp_path,
                            env=env)
    assert failed.returncode == 1 and "RuntimeError: boom" in failed.stderr
    assert (tmp_path / "f.jsonl").read_text().count('"ev":"alloc"') >= 3  # flushed although it raised
