"""The pre-commit hooks run from a checkout of this repository (`pre-commit try-repo`)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_fix import DEAD

pytestmark = pytest.mark.skipif(shutil.which("git") is None or subprocess.run(
    [sys.executable, "-m", "pre_commit", "--version"], capture_output=True).returncode != 0,
    reason="pre-commit or git not available")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "dead.cu").write_text(DEAD)
    (repo / "notes.txt").write_text("not code\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    return repo


def _try_repo(repo: Path, hook: str, home: Path, files: tuple[str, ...] = ("dead.cu", "notes.txt")
              ) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin:" + str(Path(sys.executable).parent), "HOME": str(home),
           "PRE_COMMIT_HOME": str(home / "pre-commit"), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), hook, "--files", *files,
                           "--verbose"], cwd=repo, capture_output=True, text=True, env=env, timeout=900)


def test_hooks_from_a_checkout(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("try-repo needs this checkout to be a git repository")
    repo = _repo(tmp_path)
    # Every rule, as the dead write below is GL007's (not in the default selection).
    (repo / "gpulint.toml").write_text('select = ["ALL"]\nmin-bytes = 0\n')
    (repo / "clean.cu").write_text("__global__ void k(float *a) { a[0] = 1.f; }\n"
                                   "int main() { float *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); cudaFree(d); return 0; }\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    clean = _try_repo(repo, "gpulint", tmp_path, ("clean.cu", "notes.txt"))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    check = _try_repo(repo, "gpulint", tmp_path)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "dead.cu:5:3: GL007" in check.stdout
    fix = _try_repo(repo, "gpulint-fix", tmp_path)
    assert fix.returncode == 1  # it changed a file, as pre-commit reports it
    assert "cudaMemset" not in (repo / "dead.cu").read_text()
