"""Which files a run checks, as a mature linter decides: `.c` files that use CUDA, `extend-include`
globs for odd suffixes, what git ignores skipped (unless `--no-respect-gitignore`), and
`--force-exclude` for the files pre-commit names."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.discovery import discover
from test_cli import run

LEAK = "__global__ void k(float* p) { p[0] = 1; }\nvoid f() {\n  float* d;\n  cudaMalloc(&d, 64);\n  k<<<1, 1>>>(d);\n}\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _found(root: Path, settings: Settings, *paths: str) -> list[str]:
    files, _, errors = discover([str(root / p) for p in paths] or [str(root)], settings)
    assert not errors
    return sorted(f.relative_to(root).as_posix() for f in files)


def test_c_files_and_extend_include(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.c": LEAK, "dock.cpp.Cuda": LEAK, "notes.txt": "x"})
    assert _found(tmp_path, Settings()) == ["a.c"]
    assert _found(tmp_path, Settings(extend_include=("*.cpp.Cuda",))) == ["a.c", "dock.cpp.Cuda"]
    result = run("check", "--isolated", "--no-cache", "--extend-include", "*.cpp.Cuda", "--format", "concise", ".",
                 cwd=tmp_path)
    assert "dock.cpp.Cuda:4:" in result.output and "GL005" in result.output, result.output


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="no git")
def test_what_git_ignores_is_skipped(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _tree(tmp_path, {".gitignore": "out/\n*.gen.cu\n!keep.gen.cu\n", "src/a.cu": LEAK, "src/b.gen.cu": LEAK,
                     "src/keep.gen.cu": LEAK, "out/c.cu": LEAK, "src/.gitignore": "local.cu\n", "src/local.cu": LEAK,
                     "vendor/d.cu": LEAK, ".git/info/exclude": "vendor/\n"})
    assert _found(tmp_path, Settings()) == ["src/a.cu", "src/keep.gen.cu"]
    assert _found(tmp_path, Settings(respect_gitignore=False)) == [
        "out/c.cu", "src/a.cu", "src/b.gen.cu", "src/keep.gen.cu", "src/local.cu", "vendor/d.cu"]
    # Named on the command line: checked, unless --force-exclude (pre-commit names every staged file).
    assert _found(tmp_path, Settings(), "out/c.cu") == ["out/c.cu"]
    assert _found(tmp_path, Settings(force_exclude=True), "out/c.cu", "src/a.cu") == ["src/a.cu"]
    result = run("check", "--isolated", "--no-cache", "--force-exclude", "out/c.cu", cwd=tmp_path)
    assert result.exit_code == 0 and "GL005" not in result.output, result.output


def test_outside_a_work_tree_nothing_is_ignored(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.cu\n", "a.cu": LEAK})
    assert _found(tmp_path, Settings()) == ["a.cu"]


def test_force_exclude_applies_configured_excludes(tmp_path: Path) -> None:
    _tree(tmp_path, {"gen/x.cu": LEAK, "gpulint.toml": 'exclude = ["gen"]\nforce-exclude = true\n'})
    result = run("check", "--no-cache", "gen/x.cu", cwd=tmp_path)
    assert result.exit_code == 0 and "GL005" not in result.output, result.output
