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
