"""Issue 15: gpulint tells the truth or fails loudly.

Internal errors exit 2 with a one-line diagnostic (never "All checks passed", never exit 1), a file
that cannot be parsed is GL900, only regular files are read, every line ending gives the same
findings, and `gpulint run -- python ...` behaves as `python ...` does.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import cli_in
from gpulint.rules import RULES
from test_cli import LATE_FREE

LEAK = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *d;
  cudaMalloc(&d, 1024);
  k<<<1, 32>>>(d);
  return 0;
}
"""


invoke = cli_in


def codes_rows(result) -> list[tuple[str, str, int]]:
    return sorted((f["filename"], f["code"], f["location"]["row"]) for f in json.loads(result.stdout))


# ------------------------------------------------------------------------- internal errors


def _raise(*_args, **_kwargs):
    raise ZeroDivisionError("boom")


@pytest.mark.parametrize("extra", [[], ["--exit-zero"]])
def test_a_rule_that_raises_is_exit_2_and_the_other_rules_still_report(tmp_path, monkeypatch, extra) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    (tmp_path / "leak.cu").write_text(LEAK)
    monkeypatch.setitem(RULES, "GL005", replace(RULES["GL005"], check=_raise))
    result = invoke(tmp_path, "check", "--no-cache", "--jobs", "1", *extra, ".")
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if "internal error" in line]
    assert errors == [
        "gpulint: error: late.cu: internal error while checking GL005 (memory-leak): ZeroDivisionError: boom",
        "gpulint: error: leak.cu: internal error while checking GL005 (memory-leak): ZeroDivisionError: boom",
    ]
    assert "Traceback" not in result.stderr
    assert "All checks passed" not in result.stdout
    assert result.stdout.rstrip().endswith("in 2 files (GL002 ×1, GL003 ×1). 2 errors (above): the results are "
                                           "incomplete.")
    assert "late.cu:5:3: GL002" in result.stdout  # the other rules' findings are still there


def test_a_lowering_crash_loses_only_its_file_and_shows_the_traceback_with_debug(tmp_path, monkeypatch) -> None:
    (tmp_path / "a.cu").write_text(LEAK)
    (tmp_path / "b.py").write_text("import torch\nx = torch.zeros(3, device='cuda')\n")
    from gpulint.static import lower

    monkeypatch.setattr(lower, "lower_in_program", _raise)  # what the engine lowers a CUDA file with
    result = invoke(tmp_path, "check", "--no-cache", "--jobs", "1", "--format", "json", ".")
    assert result.exit_code == 2
    assert "gpulint: error: a.cu: internal error while lowering: ZeroDivisionError: boom" in result.stderr
    assert codes_rows(result) == [("b.py", "GL004", 2)]
    assert "Traceback" not in result.stderr
    monkeypatch.setenv("GPULINT_DEBUG", "1")
    result = invoke(tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert result.exit_code == 2 and "Traceback (most recent call last)" in result.stderr


def test_internal_errors_are_not_cached(tmp_path, monkeypatch) -> None:
    (tmp_path / "leak.cu").write_text(LEAK)
    rule = RULES["GL005"]
    monkeypatch.setitem(RULES, "GL005", replace(rule, check=_raise))
    assert invoke(tmp_path, "check", "--jobs", "1", ".").exit_code == 2
    monkeypatch.setitem(RULES, "GL005", rule)  # not undo(): that would also undo conftest's every-rule default
    result = invoke(tmp_path, "check", "--jobs", "1", "--format", "json", ".")
    assert result.exit_code == 1 and ("leak.cu", "GL005", 4) in codes_rows(result)


def test_a_crash_outside_the_engine_is_exit_2_not_1(tmp_path, monkeypatch) -> None:
    (tmp_path / "leak.cu").write_text(LEAK)
    from gpulint.output import FORMATS

    monkeypatch.setitem(FORMATS, "json", _raise)
    result = invoke(tmp_path, "check", "--no-cache", "--jobs", "1", "--format", "json", "--exit-zero", ".")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "internal error in `gpulint check`: ZeroDivisionError: boom (GPULINT_DEBUG=1 shows the traceback)")


def test_analyze_crash_is_exit_2(tmp_path, monkeypatch) -> None:
    from gpulint.dynamic import analyze

    trace = Path(__file__).resolve().parent.parent / "examples" / "trace" / "heat.jsonl"
    monkeypatch.setattr(analyze, "analyze", _raise)
    result = invoke(tmp_path, "analyze", str(trace))
    assert result.exit_code == 2 and "internal error in `gpulint analyze`" in result.stderr


def test_fix_leaves_a_file_alone_when_its_analysis_crashed(tmp_path, monkeypatch) -> None:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    monkeypatch.setitem(RULES, "GL005", replace(RULES["GL005"], check=_raise))
    result = invoke(tmp_path, "fix", "--apply", "--unsafe-fixes", ".")
    assert result.exit_code == 2
    assert "late.cu: internal error while checking GL005 (memory-leak): ZeroDivisionError: boom; left untouched" \
        in result.stderr
    assert (tmp_path / "late.cu").read_text() == LATE_FREE


# ------------------------------------------------------------------------- unparsable files


def test_python_syntax_error_is_gl900_at_its_line(tmp_path) -> None:
    (tmp_path / "bad.py").write_text("import torch\nx = torch.zeros(3, device='cuda')\ndef f(:\n    pass\n")
    result = invoke(tmp_path, "check", "--no-cache", "--format", "json", ".")
    gl900 = [f for f in json.loads(result.stdout) if f["code"] == "GL900"]
    assert [(f["location"]["row"], f["message"]) for f in gl900] == [
        (3, "cannot analyse this file: syntax error: invalid syntax (line 3); code in the scopes it breaks is "
            "not analysed")]
    assert result.exit_code == 1


def test_cuda_file_with_no_parsable_function_is_gl900(tmp_path) -> None:
    (tmp_path / "junk.cu").write_text("int main( {{{ cudaMalloc(&d, 4) ;;; ))\n")
    result = invoke(tmp_path, "check", "--no-cache", "--format", "json", ".")
    assert [(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)] == [("GL900", 1)]
    assert result.exit_code == 1


def test_no_files_is_said(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    result = invoke(tmp_path, "check", "empty")
    assert result.exit_code == 0
    assert "gpulint: warning: no files to check in empty" in result.stderr
    assert result.stdout == "No files checked.\n"


@pytest.mark.parametrize("content, why", [
    ("{bad", "not a valid compile_commands.json"),
    ('{"a": 1}', "a compile database is a JSON list of entries"),
    ('[{"file": 3}]', "entry 0: an entry is an object with `directory` and `file` strings"),
    ('[{"file": "a.cu", "directory": "."}]', "entry 0: needs `arguments` (a list of strings) or `command`"),
])
def test_broken_compile_database_is_exit_2_naming_it(tmp_path, content, why) -> None:
    (tmp_path / "a.cu").write_text(LEAK)
    (tmp_path / "cc.json").write_text(content)
    result = invoke(tmp_path, "check", "--no-cache", "--compile-commands", "cc.json", ".")
    assert result.exit_code == 2
    assert "cc.json" in result.stderr and why in result.stderr
    assert result.stdout == "No findings, but 1 error (above): the results are incomplete.\n"
    config = tmp_path / "gpulint.toml"
    config.write_text('compile-commands = "cc.json"\n')
    assert invoke(tmp_path, "check", "--no-cache", ".").exit_code == 2
    assert invoke(tmp_path, "fix", "--diff", ".").exit_code == 2


# ------------------------------------------------------------------------- special files


def _gpulint(cwd: Path, *args: str, stdin: str | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """A real process, with a timeout: a hang must fail the test, not the suite.  `check` and `fix`
    run every rule (and `check` every size), as in-process tests do (conftest)."""
    if args and args[0] in ("check", "fix") and "--select" not in args:
        args = (args[0], "--select", "ALL", *(("--min-bytes", "0") if args[0] == "check" else ()), *args[1:])
    return subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, capture_output=True, text=True,
                          input=stdin, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_and_devices_are_skipped_never_opened(tmp_path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "leak.cu").write_text(LEAK)
    os.mkfifo(folder / "pipe.cu")
    (folder / "zero.cu").symlink_to("/dev/zero")
    result = _gpulint(tmp_path, "check", "--no-cache", "--format", "json", "src")
    assert result.returncode == 1
    assert [(f["filename"], f["code"]) for f in json.loads(result.stdout)] == [("src/leak.cu", "GL005")]
    assert "gpulint: src/pipe.cu: a FIFO, not a regular file; skipped" in result.stderr
    assert "gpulint: src/zero.cu: a device, not a regular file; skipped" in result.stderr
    named = _gpulint(tmp_path, "check", "--no-cache", "src/pipe.cu", "src/leak.cu")
    assert named.returncode == 2
    assert "gpulint: error: src/pipe.cu: a FIFO, not a regular file; skipped" in named.stderr
    assert "GL005" in named.stdout
    assert _gpulint(tmp_path, "fix", "--diff", "--unsafe-fixes", "src").returncode == 1  # the leak's fix


# ------------------------------------------------------------------------- line endings


SUPPRESSED = """\
__global__ void k(float *a) { a[threadIdx.x] = 1.f; }
int main() {
  float *d;
  \fcudaMalloc(&d, 1024); // gpulint: ignore[GL005]
  k<<<1, 32>>>(d);
  float *e; // gpulint: ignore[GL002]
  cudaMalloc(&e, 1024);
  k<<<1, 32>>>(e);
  return 0;
}
"""


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_gives_the_same_findings(tmp_path, ending) -> None:
    for name, text in (("leak.cu", LEAK), ("late.cu", LATE_FREE), ("sup.cu", SUPPRESSED),
                       ("t.py", "import torch\n\fx = torch.zeros(3, device='cuda')  # gpulint: ignore[GL002]\n")):
        (tmp_path / name).write_bytes(text.replace("\n", ending).encode())
    result = invoke(tmp_path, "check", "--no-cache", "--format", "json", ".")
    found = [(f["filename"], f["code"], f["location"]["row"], f["location"]["column"])
             for f in json.loads(result.stdout)]
    assert sorted(found) == sorted([
        ("late.cu", "GL002", 5, 3), ("late.cu", "GL003", 7, 3),
        ("leak.cu", "GL005", 4, 3),
        ("sup.cu", "GL002", 4, 4),   # column 4: the form feed is a character of line 4
        ("sup.cu", "GL901", 6, 13),  # the comment after `float *e;` is not comment-only: nothing there is GL002
        ("sup.cu", "GL003", 7, 3), ("sup.cu", "GL005", 7, 3),
        ("t.py", "GL004", 2, 2),     # column 2: after the form feed
        ("t.py", "GL901", 2, 37),    # the comment suppresses GL002, which `x` does not have
    ]), found
    assert "Traceback" not in result.stderr and result.exit_code == 1


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_removing_an_unused_suppression_keeps_the_code_and_the_line_endings(tmp_path, ending) -> None:
    text = "import torch\n\fx = torch.ones(3, device='cuda')  # gpulint: ignore[GL006]\ny = x + 1\nprint(y)\n"
    path = tmp_path / "t.py"
    path.write_bytes(text.replace("\n", ending).encode())
    result = invoke(tmp_path, "fix", "--apply", "--select", "GL006,GL901", ".")
    assert result.exit_code == 0, result.stderr
    expected = "import torch\n\fx = torch.ones(3, device='cuda')\ny = x + 1\nprint(y)\n"
    assert path.read_bytes() == expected.replace("\n", ending).encode()


# ------------------------------------------------------------------------- gpulint run -- python


def test_run_python_behaves_as_python(tmp_path) -> None:
    code = "import sys; print(sys.argv, repr(sys.path[0]), __name__); sys.exit(3)"
    result = _gpulint(tmp_path, "run", "-o", "c.jsonl", "--", sys.executable, "-c", code, "a", "b")
    assert (result.returncode, result.stdout) == (3, "['-c', 'a', 'b'] '' __main__\n")
    assert "gpulint: wrote c.jsonl" in result.stderr and (tmp_path / "c.jsonl").exists()

    result = _gpulint(tmp_path, "run", "-o", "s.jsonl", "--", sys.executable, "-", "q",
                      stdin="import sys\nprint(sys.argv)\n1/0\n")
    assert (result.returncode, result.stdout) == (1, "['-', 'q']\n")
    assert result.stderr.splitlines()[:3] == ["Traceback (most recent call last):",
                                              '  File "<stdin>", line 3, in <module>',
                                              "ZeroDivisionError: division by zero"]

    expected = subprocess.run([sys.executable, "missing.py"], cwd=tmp_path, capture_output=True, text=True)
    result = _gpulint(tmp_path, "run", "-o", "m.jsonl", "--", sys.executable, "missing.py")
    assert (result.returncode, result.stderr) == (expected.returncode, expected.stderr) == (2, expected.stderr)
    assert not (tmp_path / "m.jsonl").exists()

    result = _gpulint(tmp_path, "run", "-o", "n.jsonl", "-m", "no_such_module_here")
    assert result.returncode == 1 and result.stderr.endswith(": No module named no_such_module_here\n")
    assert "wrote" not in result.stderr and not (tmp_path / "n.jsonl").exists()

    (tmp_path / "syn.py").write_text("def f(:\n")
    expected = subprocess.run([sys.executable, "syn.py"], cwd=tmp_path, capture_output=True, text=True)
    result = _gpulint(tmp_path, "run", "-o", "y.jsonl", "--", sys.executable, "syn.py")
    assert result.returncode == expected.returncode == 1
    assert result.stderr.startswith(expected.stderr)  # the same message, then gpulint's `wrote` line

    result = _gpulint(tmp_path, "run", "--", sys.executable, "-W", "error", "-c", "import sys; print(sys.warnoptions)")
    assert (result.returncode, result.stdout) == (0, "['error']\n")
