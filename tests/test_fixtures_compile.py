"""Every CUDA fixture under tests/fixtures/ (and tests/project_programs/) must be a real, compilable program.

One test per ``*.cu`` file (found recursively, so new fixture folders are picked up), compiled with
``nvcc -std=c++17 -c``. Skipped when nvcc is not on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# The multi-file programs of tests/project_programs/ too: each file compiles on its own (`-c`).
PROJECTS = Path(__file__).parent / "project_programs"
CU_FILES = sorted(FIXTURES.rglob("*.cu")) + sorted(PROJECTS.rglob("*.cu"))

pytestmark = [
    pytest.mark.nvcc,
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH"),
]


@pytest.mark.parametrize(
    "cu_file", CU_FILES, ids=[str(p.relative_to(p.parents[1] if PROJECTS in p.parents else FIXTURES)) for p in CU_FILES]
)
def test_fixture_compiles(cu_file: Path, tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = subprocess.run(
        [nvcc, "-std=c++17", "-c", "-o", str(tmp_path / "x.o"), str(cu_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"nvcc failed on {cu_file}:\n{proc.stdout}\n{proc.stderr}"
