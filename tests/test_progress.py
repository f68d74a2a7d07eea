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
    progress = Progress(screen)
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
