"""The shipped default of `check`: the rules the labelled review found worth a change (GL003 and
GL102, `DEFAULT_SELECT`), findings on objects whose size folds below `--min-bytes` hidden; every
other rule and size one option away."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main
from gpulint.config import DEFAULT_SELECT

pytestmark = pytest.mark.real_defaults

REUSE = """#include <cuda_runtime.h>
__global__ void fill(float *a, int n) { int i = threadIdx.x; if (i < n) a[i] = 1.0f; }
__global__ void scale(float *a, int n) { int i = threadIdx.x; if (i < n) a[i] *= 2.0f; }
int main() {
    const int n = %d;
    float *d_a, *d_b;
    cudaMalloc(&d_a, n * sizeof(float));
    cudaMalloc(&d_b, n * sizeof(float));
    fill<<<1, 256>>>(d_a, n);
    scale<<<1, 256>>>(d_b, n);
    cudaFree(d_a);
    cudaFree(d_b);
    return 0;
}
"""


def run(cwd: Path, *args: str):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_the_default_selection_is_the_reviewed_rules():
    assert DEFAULT_SELECT == ("GL003", "GL102")


def test_large_reuse_is_reported_and_lifetimes_are_one_select_away(tmp_path):
    (tmp_path / "big.cu").write_text(REUSE % (1 << 20))  # 4 MiB buffers
    found = json.loads(run(tmp_path, "check", "--no-cache", "--format", "json", "big.cu").output)
    assert [(f["code"], f["location"]["row"], f["properties"]["size"]) for f in found] == [("GL003", 8, 4 << 20)]
    every = json.loads(run(tmp_path, "check", "--no-cache", "--format", "json", "--select", "ALL", "big.cu").output)
    assert {f["code"] for f in every} >= {"GL001", "GL002", "GL003"}


def test_small_objects_are_hidden_and_counted(tmp_path):
    (tmp_path / "small.cu").write_text(REUSE % 256)  # 1 KiB buffers
    result = run(tmp_path, "check", "--no-cache", "small.cu")
    assert result.exit_code == 0
    assert "1 finding on objects below --min-bytes 1.0 MiB was hidden (--min-bytes 0 shows them)." in result.output
    shown = json.loads(run(tmp_path, "check", "--no-cache", "--format", "json", "--min-bytes", "0", "small.cu").output)
    assert [f["code"] for f in shown] == ["GL003"]


def test_a_configuration_selection_replaces_the_default(tmp_path):
    (tmp_path / "gpulint.toml").write_text('select = ["GL002"]\nmin-bytes = 0\n')
    (tmp_path / "small.cu").write_text(REUSE % 256)
    found = json.loads(run(tmp_path, "check", "--no-cache", "--format", "json", "small.cu").output)
    assert [f["code"] for f in found] == ["GL002"]
