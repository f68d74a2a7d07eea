"""What macOS and Windows do differently from this Linux CI, done here on purpose (issue 20, point 1).

CI has no macOS or Windows machine, so each difference that can break gpulint there is forced on
Linux: worker processes started by `spawn` (the default on both), the locale's encoding where a
file is opened without one (cp1252 on Windows), and a stdout that cannot encode every character
(Windows' cp1252 when output is redirected)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# Not in cp1252: a redirected Windows stdout cannot encode it.
ARROW = "\u2192"
# This checkout first, then whatever the environment already puts on the path (a machine whose
# dependencies are installed under PYTHONPATH).
PATH = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

LATE_FREE = f"""\
#include <cuda_runtime.h>
__global__ void fill(float *a, int n) {{ int i = threadIdx.x; if (i < n) a[i] += 1.0f; }}
int main() {{
  float *a, *b;
  cudaMalloc(&a, 1 << 24);
  cudaMalloc(&b, 1 << 24);  // the second buffer {ARROW} filled 100 times
  fill<<<1, 256>>>(a, 256);
  for (int step = 0; step < 100; ++step) fill<<<1, 256>>>(b, 256);
  cudaFree(a);
  cudaFree(b);
  return 0;
}}
"""


def _gpulint(*args: str, cwd: Path = ROOT, env: dict | None = None, prelude: str = "") -> subprocess.CompletedProcess:
    """`gpulint ARGS` in a fresh interpreter, as the console script runs it (`cli.entry`)."""
    code = f"{prelude}\nfrom gpulint.cli import entry\nentry()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          env={**os.environ, "PYTHONPATH": PATH, **(env or {})}, timeout=300)


def test_workers_started_by_spawn_find_what_one_process_finds():
    """macOS and Windows start worker processes with `spawn`: a fresh interpreter that imports
    gpulint and receives each job pickled.  The findings must be those of `--jobs 1`."""
    spawn = "import multiprocessing, gpulint.engine as engine\n" \
            "engine._worker_context = lambda: multiprocessing.get_context('spawn')"
    args = ("check", str(FIXTURES), "--format", "json", "--no-cache", "--exit-zero", "--min-bytes", "0", "--select", "ALL")
    alone = _gpulint(*args, "--jobs", "1")
    spawned = _gpulint(*args, "--jobs", "2", prelude=spawn)
    assert alone.returncode == 0, alone.stderr
    assert spawned.returncode == 0, spawned.stderr
    found = json.loads(spawned.stdout)
    assert len(found) > 20
    assert found == json.loads(alone.stdout)


@pytest.mark.parametrize("args", [
    ("check", "{tmp}", "--no-cache"),
    ("check", "{tmp}", "--no-cache", "--format", "sarif"),
    ("check", "{tmp}", "--no-cache", "--format", "junit"),
    ("fix", "--diff", "--unsafe-fixes", "{tmp}"),
    ("check", "{tmp}", "--no-cache", "--baseline", "{tmp}/baseline.json", "--update-baseline"),
    ("check", "{tmp}", "--no-cache", "--add-ignore"),
    ("analyze", str(ROOT / "examples" / "trace" / "heat.jsonl")),
    ("report", str(ROOT / "examples" / "trace" / "heat.jsonl"), "--html", "{tmp}/page.html",
     "--perfetto", "{tmp}/trace.json"),
    ("rule", "GL007"),
])
def test_no_file_is_opened_in_the_locale_encoding(tmp_path, args):
    """A text file opened without `encoding=` is read and written in the locale's encoding: cp1252
    on Windows, where a UTF-8 source or rule text would be misread or fail to write.  Python
    warns of every such open under `-X warn_default_encoding`; the warning is an error here."""
    (tmp_path / "late.cu").write_text(LATE_FREE, encoding="utf-8")
    args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
    done = subprocess.run([sys.executable, "-X", "warn_default_encoding", "-W", "error::EncodingWarning", "-m",
                           "gpulint", *args], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
                          env={**os.environ, "PYTHONPATH": PATH}, timeout=300)
    assert "EncodingWarning" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr


def test_a_redirected_windows_stdout_gets_people_text_escaped_and_machine_formats_in_utf8(tmp_path):
    """Windows encodes a redirected stdout in cp1252, which has no `→`.  Text for people shows it
    as `\\u2192` (the run does not end with UnicodeEncodeError, exit 2); machine formats, read by
    programs that expect UTF-8 (JUnit's header says so), are UTF-8 whatever the console."""
    folder = tmp_path / f"step{ARROW}one"  # in every format's path
    folder.mkdir()
    (folder / "late.cu").write_text(LATE_FREE, encoding="utf-8")
    cp1252 = {"PYTHONIOENCODING": "cp1252"}

    text = _gpulint("check", ".", "--no-cache", "--min-bytes", "0", cwd=tmp_path, env=cp1252)
    assert text.returncode == 1, text.stderr
    assert b"GL003" in text.stdout
    assert b"// the second buffer \\u2192 filled 100 times" in text.stdout
    assert b"step\\u2192one" in text.stdout

    manual = _gpulint("rule", "GL007", env=cp1252)
    assert manual.returncode == 0, manual.stderr
    assert b"\\u2192" in manual.stdout

    for fmt in ("junit", "sarif", "json", "json-lines", "gitlab", "rdjson", "github"):
        done = _gpulint("check", ".", "--no-cache", "--min-bytes", "0", "--format", fmt, cwd=tmp_path, env=cp1252)
        assert done.returncode == 1, (fmt, done.stderr)
        decoded = done.stdout.decode("utf-8")  # cp1252 bytes would raise or lose the arrow
        assert "GL003" in decoded
        assert f"step{ARROW}one" in decoded or "step\\u2192one" in decoded, fmt
