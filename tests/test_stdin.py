"""`gpulint check -`: an editor's unsaved buffer on standard input, named by --stdin-filename."""
from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from gpulint.cli import main
from test_cli import LATE_FREE, run

ALL = ("--select", "ALL", "--min-bytes", "0", "--no-cache")


def check_stdin(text: str, *args: str, cwd: Path) -> object:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", *args, "-"], input=text.encode(), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_stdin_gives_the_findings_of_the_same_file_on_disk(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.cu").write_text(LATE_FREE)
    on_disk = json.loads(run("check", *ALL, "--format", "json", "src/app.cu", cwd=tmp_path).stdout)
    piped = check_stdin(LATE_FREE, *ALL, "--format", "json", "--stdin-filename", "src/app.cu", cwd=tmp_path)
    assert piped.exit_code == 1 and json.loads(piped.stdout) == on_disk and on_disk
    # The buffer, not the file: an edit not yet saved is what is checked.
    edited = LATE_FREE.replace("  cudaFree(d_b);\n  cudaFree(d_a);\n", "  cudaFree(d_b);\n")
    codes = {f["code"] for f in json.loads(check_stdin(edited, *ALL, "--format", "json", "--stdin-filename",
                                                       "src/app.cu", cwd=tmp_path).stdout)}
    assert "GL005" in codes  # the leak exists only in the buffer


def test_the_name_picks_the_language_and_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nper-file-ignores = {"legacy/*" = ["GL004"]}\n')
    python = 'import torch\nx = torch.empty(10, device="cuda")\n'
    found = check_stdin(python, "--select", "ALL", "--min-bytes", "0", "--stdin-filename", "train.py", cwd=tmp_path)
    assert found.exit_code == 1 and "train.py:2:1: GL004" in found.stdout
    ignored = check_stdin(python, "--select", "ALL", "--min-bytes", "0", "--stdin-filename", "legacy/train.py",
                          cwd=tmp_path)
    assert ignored.exit_code == 0, ignored.output
    default = check_stdin(LATE_FREE, *ALL, cwd=tmp_path)
    assert default.exit_code == 1 and "stdin.cu:5:3: GL002" in default.stdout


def test_stdin_must_be_alone_and_is_not_written_to(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text(LATE_FREE)
    assert run("check", "-", "a.cu", cwd=tmp_path).exit_code == 2
    refused = check_stdin(LATE_FREE, "--add-ignore", cwd=tmp_path)
    assert refused.exit_code == 2 and "cannot take standard input" in refused.stderr
