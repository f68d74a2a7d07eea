"""Progress for long work: on a terminal, for the formats people read, and gone when done."""
from __future__ import annotations

import io

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.progress import Progress
from gpulint.rules import RULES


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_analyze_reports_each_stage_and_clears_its_line(tmp_path) -> None:
    from test_tracebin import varied_events, write_both

    text, _ = write_both(tmp_path, varied_events())
    screen = Terminal()
    progress = Progress(screen, delay=0, interval=0)
    stages: list[str] = []
    analyze(text, Settings(min_bytes=0), sorted(RULES), lambda what: (stages.append(what), progress(what)))
    progress.done()
    assert [s.split()[0] for s in stages] == ["reading", "ordering", "checking", "what-if", "grouping"]
    assert stages[1].startswith("ordering ") and stages[1].endswith(" events")
    shown = screen.getvalue()
    assert shown.count("\r") >= len(stages) and "gpulint: reading run.jsonl" in shown
    assert shown.endswith("\r") and shown.rstrip("\r").split("\r")[-1].strip() == ""  # the line is cleared


def test_no_progress_off_a_terminal_or_when_disabled() -> None:
    piped = io.StringIO()
    Progress(piped)("working")
    assert piped.getvalue() == ""
    screen = Terminal()
    Progress(screen, enabled=False)("working")
    assert screen.getvalue() == ""


def test_the_cli_shows_none_when_stderr_is_not_a_terminal(tmp_path) -> None:
    from test_cli import run
    from test_tracebin import varied_events, write_both

    text, _ = write_both(tmp_path, varied_events())
    result = run("analyze", str(text), cwd=tmp_path)
    assert "ordering" not in result.stderr and "\r" not in result.stderr


def test_quick_work_shows_nothing_and_frequent_updates_are_thinned(monkeypatch) -> None:
    import gpulint.progress as module

    clock = [100.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: clock[0])
    screen = Terminal()
    progress = Progress(screen, delay=0.3, interval=0.1)
    progress("starting")
    clock[0] += 0.2
    progress("still quick")
    assert screen.getvalue() == ""  # within the delay: a small run never flickers
    for step in range(100):  # a file every 10 ms for a second: about ten rewrites, not a hundred
        clock[0] += 0.01
        progress(f"analysing {step}/100 files")
    assert 8 <= screen.getvalue().count("\r") <= 11
    assert "analysing" in screen.getvalue()


def test_check_tells_progress_each_file(tmp_path) -> None:
    from gpulint.config import Settings
    from gpulint.engine import check_paths

    for n in range(5):
        (tmp_path / f"k{n}.cu").write_text("__global__ void k(float *p) { p[0] = 1; }\n")
    told: list[str] = []
    check_paths([str(tmp_path)], Settings(jobs=1), progress=told.append)
    assert told[0] == "reading 5 files"
    assert told[1] == "analysing 0/5 files" and told[-1] == "analysing 5/5 files"
    assert len([t for t in told if t.startswith("analysing")]) == 6


def test_finishing_an_access_level_run_is_a_stage_of_its_own(tmp_path) -> None:
    import json

    import numpy as np

    words = np.packbits(np.ones(128, dtype=bool), bitorder="little").view("<u4")
    (tmp_path / "run.jsonl.bits").write_bytes(words.tobytes())
    site = [["app.cu", 3, "main"]]
    events = [
        {"ev": "meta", "version": 1, "collector": "native", "argv": ["./app"], "device": None, "granularity": 32},
        {"ev": "alloc", "t": 1, "obj": 1, "addr": 1 << 32, "size": 4096, "stream": 0, "api": "cudaMalloc", "site": site},
        {"ev": "launch", "t": 2, "stream": 0, "kernel": "fill(float*)", "reads": [], "writes": [1], "site": site},
        {"ev": "bitmap", "obj": 1, "launch_t": 2, "key": "o1_t2", "granularity": 32, "read": False, "write": True,
         "raw": {"file": "bits", "read_at": 0, "write_at": 0, "bits": 128}},
        {"ev": "free", "t": 3, "obj": 1, "stream": 0, "site": site},
    ]
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    stages: list[str] = []
    analyze(tmp_path / "run.jsonl", Settings(min_bytes=0), sorted(RULES), stages.append)
    assert stages[0].startswith("finishing the run's access bitmaps (0 MiB) and reading run.jsonl")
    assert not (tmp_path / "run.jsonl.bits").exists()
    stages.clear()
    analyze(tmp_path / "run.jsonl", Settings(min_bytes=0), sorted(RULES), stages.append)
    assert stages[0] == "reading run.jsonl"  # finished once, by the first reader
