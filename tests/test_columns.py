"""Columns (issue 15, point 5): text and JSON count characters, as Ruff does; SARIF counts UTF-16
code units and says so (`columnKind`), as GitHub does.  Parsers count bytes, so every line below
has non-ASCII text before the flagged expression: é (2 bytes, 1 unit), 中 (3 bytes, 1 unit) and
😀 (4 bytes, 2 UTF-16 units)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from gpulint.cli import main

CUDA = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *d;
  /* é中😀 */ cudaMalloc(&d, 1024);
  k<<<1, 32>>>(d);
  return 0;
}
"""

PYTHON = """\
import torch
s = "é中😀"; x = torch.zeros(3, device="cuda")
"""


def check(tmp_path: Path, fmt: str) -> str:
    (tmp_path / "a.cu").write_text(CUDA, encoding="utf-8")
    (tmp_path / "b.py").write_text(PYTHON, encoding="utf-8")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "--isolated", "--format", fmt, "."],
                                    catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code == 1, result.stderr
    return result.stdout


def test_text_and_json_columns_are_characters(tmp_path) -> None:
    found = {(f["filename"], f["code"]): (f["location"]["column"], f["end_location"]["column"])
             for f in json.loads(check(tmp_path, "json"))}
    # `cudaMalloc(&d, 1024)` starts at character 13 of line 4 (byte 19) and ends before character 33.
    assert found[("a.cu", "GL005")] == (13, 33)
    # `x = torch.zeros(...)` starts at character 12 of line 2 (byte 18).
    assert found[("b.py", "GL004")] == (12, 45)
    text = check(tmp_path, "text")
    assert "a.cu:4:13: GL005" in text and "b.py:2:12: GL004" in text
    # The caret sits under the call: 12 characters of the line before it.
    lines = text.splitlines()
    source = lines.index("4 |   /* é中😀 */ cudaMalloc(&d, 1024);")
    assert lines[source + 1] == "  | " + " " * 12 + "^" * 20


def test_sarif_columns_are_utf16_code_units(tmp_path) -> None:
    log = json.loads(check(tmp_path, "sarif"))
    run = log["runs"][0]
    assert run["columnKind"] == "utf16CodeUnits"
    regions = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]):
               r["locations"][0]["physicalLocation"]["region"] for r in run["results"]}
    # The emoji is one character but two UTF-16 units: every column after it moves by one.
    assert (regions[("GL005", "a.cu")]["startColumn"], regions[("GL005", "a.cu")]["endColumn"]) == (14, 34)
    assert (regions[("GL004", "b.py")]["startColumn"], regions[("GL004", "b.py")]["endColumn"]) == (13, 46)
