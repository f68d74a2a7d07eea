"""Differential proof that a fix never changes what a program computes (issue 15, point 4).

Every runnable program in the tests is run before and after `gpulint fix --apply --unsafe-fixes`
and must print the same output and exit with the same code:

* tests/fix_programs/*.py: PyTorch programs on the CPU here (CI) and on the GPU where there is one;
* tests/python_loop_programs/*.py: CUDA-only PyTorch programs, where there is a GPU;
* tests/fix_programs/*.cu and tests/gpu_programs/*.cu: built with nvcc at -O0 and at -O3 -g, run
  where there is a GPU, and the fixed build run again under compute-sanitizer's memcheck (no use
  after free, no double free, no invalid access).  Without a GPU the fixed files must still compile.

So that the proof cannot pass vacuously, the test counts the programs the fixes changed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main

TESTS = Path(__file__).resolve().parent
FIX_PROGRAMS = TESTS / "fix_programs"
NVCC = shutil.which("nvcc")
SANITIZER = shutil.which("compute-sanitizer") or next(
    (p for p in ("/usr/local/cuda/compute-sanitizer/compute-sanitizer", "/usr/local/cuda/bin/compute-sanitizer")
     if os.path.exists(p)), None)


def _has_gpu() -> bool:
    try:
        from gpulint.dynamic.collectors.native import build as builder

        builder.detect_device()
    except Exception:
        return False
    return True


GPU = _has_gpu()


def fix_copy(source: Path, folder: Path) -> tuple[Path, Path]:
    """The program copied twice into `folder`: as written, and after every fix gpulint applies."""
    folder.mkdir(parents=True, exist_ok=True)
    before = folder / f"before{source.suffix}"
    after = folder / source.name
    for target in (before, after):
        shutil.copy(source, target)
    if (source.parent / "common.h").exists():
        shutil.copy(source.parent / "common.h", folder / "common.h")
    old = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(main, ["fix", "--apply", "--unsafe-fixes", "--isolated", after.name],
                                    catch_exceptions=False)
        again = CliRunner().invoke(main, ["fix", "--diff", "--unsafe-fixes", "--isolated", after.name],
                                   catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code in (0, 1), result.stderr
    assert again.stdout == "", f"{source.name}: a second fix run still changes:\n{again.stdout}"
    return before, after


def run(argv: list[str], cwd: Path) -> tuple[int, str]:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout


# ------------------------------------------------------------------------- PyTorch


def _python_programs() -> list[Path]:
    programs = sorted(FIX_PROGRAMS.glob("*.py"))
    if GPU:
        programs += sorted((TESTS / "python_loop_programs").glob("*.py"))
    return programs


def test_python_programs_compute_the_same_after_every_fix(tmp_path) -> None:
    pytest.importorskip("torch")
    changed = []
    for source in _python_programs():
        before, after = fix_copy(source, tmp_path / source.stem)
        if before.read_bytes() == after.read_bytes():
            continue  # nothing to compare
        changed.append(source.name)
        expected = run([sys.executable, str(before)], before.parent)
        assert expected[0] == 0, f"{source.name} does not run as written"
        assert run([sys.executable, str(before)], before.parent) == expected, f"{source.name} is not deterministic"
        assert run([sys.executable, str(after)], after.parent) == expected, source.name
    # Both CPU programs are rewritten (GL001, GL002, GL004, GL007, GL101, GL102, GL103 fixes).
    assert {"training_step.py", "feature_pipeline.py"} <= set(changed), changed


# ------------------------------------------------------------------------- CUDA


# The CUDA programs the fixes rewrite.
CHANGED_CUDA = ["gl001_early.cu", "gl002_late.cu", "gl003_reuse.cu", "gl004_unused.cu", "gl005_leak.cu", "gl007_dead.cu",
                "gl101_loop.cu", "gl103_copy.cu", "pipeline.cu"]


def _cuda_programs() -> list[Path]:
    return sorted(FIX_PROGRAMS.glob("*.cu")) + sorted((TESTS / "gpu_programs").glob("*.cu"))


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.skipif(GPU, reason="the GPU test below builds and runs them")
def test_fixed_cuda_programs_still_compile(tmp_path) -> None:
    changed = []
    for source in _cuda_programs():
        before, after = fix_copy(source, tmp_path / source.stem)
        if before.read_bytes() == after.read_bytes():
            continue
        changed.append(source.name)
        proc = subprocess.run([NVCC, "-std=c++17", "-c", "-o", str(after.with_suffix(".o")), str(after)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{source.name}: {proc.stderr[-2000:]}"
    assert sorted(changed) == CHANGED_CUDA


@pytest.mark.gpu
@pytest.mark.skipif(NVCC is None or not GPU, reason="needs nvcc and an NVIDIA GPU")
@pytest.mark.parametrize("flags", [["-O0"], ["-O3", "-g"]], ids=["O0", "O3g"])
def test_cuda_programs_compute_the_same_after_every_fix(tmp_path, flags) -> None:
    changed, checked = [], 0
    for source in _cuda_programs():
        before, after = fix_copy(source, tmp_path / source.stem)
        if before.read_bytes() == after.read_bytes():
            continue
        changed.append(source.name)
        exes = []
        for program in (before, after):
            exe = program.with_suffix("")
            subprocess.run([NVCC, "-std=c++17", *flags, "-o", str(exe), str(program)], check=True,
                           capture_output=True)
            exes.append(exe)
        expected = run([str(exes[0])], before.parent)
        assert expected[0] == 0, f"{source.name} does not run as written"
        assert run([str(exes[1])], after.parent) == expected, source.name
        checked += 1
        if SANITIZER is not None:
            proc = subprocess.run([SANITIZER, "--tool", "memcheck", "--leak-check", "full", "--error-exitcode", "99",
                                   str(exes[1])], cwd=after.parent, capture_output=True, text=True, timeout=300)
            assert proc.returncode != 99 and "ERROR SUMMARY: 0 errors" in proc.stdout, \
                f"{source.name}: {proc.stdout[-3000:]}"
    assert sorted(changed) == CHANGED_CUDA and checked == len(CHANGED_CUDA), (changed, checked)
