"""The timing harness shared by the speed benchmarks (static_speed.py, python_speed.py,
dynamic_speed.py): best-of-N wall times of a command or of a call, gpulint's JSON report from a
timed run, pinning to one CPU, the corpus folder, and the printed report (machine, date, a text
and a Markdown table of lines/s).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

REPO = Path(__file__).resolve().parent.parent
TARGET_LINES_PER_S = 20_000  # `gpulint check` on one core, CUDA and Python alike

Value = TypeVar("Value")


# =============================================================================== timing


def timed_process(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """Run `cmd` to its end, its output captured as text: (wall seconds, the process)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def exit_error(proc: subprocess.CompletedProcess) -> str:
    """A failed run in one line: its exit status and the last lines it printed."""
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return f"exit {proc.returncode}: " + (" | ".join(tail) or "no output")


def best_call(repeat: int, call: Callable[[], Value]) -> tuple[float, Value]:
    """Call `call` `repeat` times in this process, each after a garbage collection (outside the
    timing, with the previous result dropped): (best wall seconds, the last result)."""
    best = None
    result = None
    for _ in range(repeat):
        result = None
        gc.collect()
        t0 = time.perf_counter()
        result = call()
        elapsed = time.perf_counter() - t0
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def gpulint_env() -> dict[str, str]:
    """This environment with the repository first on PYTHONPATH, so that `python -m gpulint` runs
    this checkout, no PYTHONSTARTUP, and bytecode caching on: with PYTHONDONTWRITEBYTECODE set
    (as some CI images do) every run would compile gpulint's modules again and time that instead."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONSTARTUP", None)
    return env


def best_json_run(cmd: list[str], folder: Path, repeat: int) -> tuple[float | None, list, str, str | None]:
    """Run a `gpulint check --format json` command `repeat` times (adding `-o REPORT`): the best
    wall time, the findings of the report, the last run's stderr, and an error or None."""
    best = None
    stderr = ""
    with tempfile.TemporaryDirectory(prefix="gpulint-bench-") as scratch:
        report = Path(scratch) / "report.json"
        for _ in range(repeat):
            report.unlink(missing_ok=True)
            elapsed, proc = timed_process([*cmd, "-o", str(report)], folder, gpulint_env())
            stderr = proc.stderr
            if proc.returncode not in (0, 1) or not report.exists():
                return None, [], stderr, exit_error(proc)
            best = elapsed if best is None else min(best, elapsed)
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return None, [], stderr, f"unreadable JSON report: {exc}"
    items = data if isinstance(data, list) else data.get("findings", [])
    return best, items, stderr, None


def pin_to_cpu(cpu: int) -> str:
    """Pins this process (and so the gpulint processes it starts) to one CPU."""
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity here)"
    try:
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    except OSError as exc:
        return f"not pinned ({exc})"


def announce_timing(repeat: int, pin: int | None) -> None:
    """Pin if asked, then say how the runs are timed and whether the machine was busy."""
    pinning = "not pinned" if pin is None else pin_to_cpu(pin)
    print(f"timing with --jobs 1, best of {repeat}, {pinning}")
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5:
        print(f"note: load average {os.getloadavg()[0]:.2f} before timing; figures may be noisy")


# =============================================================================== corpus folder


def prepare_out_folder(parser: argparse.ArgumentParser, out: Path, marker: str, pattern: str, script: str,
                       others: dict[str, str]) -> Path:
    """`--out DIR` for a generated corpus: new, empty, or an earlier corpus of the same script
    (its `pattern` files are removed); the folder is marked as this script's. `others` maps
    other scripts' markers to what their folders hold: never ours to overwrite."""
    folder = out.resolve()
    if folder.exists() and not folder.is_dir():
        parser.error(f"--out {folder}: exists and is not a folder")
    if folder.exists() and any(folder.iterdir()):
        if not (folder / marker).exists():
            held = [what for other, what in others.items() if (folder / other).exists()]
            if held:
                parser.error(f"--out {folder}: holds {held[0]}; give another folder")
            parser.error(f"--out {folder}: the folder exists and was not made by this script; "
                         f"give an empty or new folder")
        for old in folder.glob(pattern):  # an earlier corpus: replace it
            old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    mark_folder(folder, marker, script)
    return folder


def mark_folder(folder: Path, marker: str, script: str) -> None:
    (folder / marker).write_text(f"generated by benchmarks/{script}\n", encoding="utf-8")


# =============================================================================== report


@dataclass
class Result:
    """One timed configuration: its label, best wall time and number of findings, or why not."""
    label: str
    seconds: float | None = None
    count: int | None = None  # findings (or, for flake8, reported problems)
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def machine_description() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    if model:
        cpu = f"{cpu} ({model})"
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def today() -> str:
    return _dt.date.today().isoformat()


def fmt_rate(lines: int, seconds: float | None) -> str:
    return f"{lines / seconds:,.0f}" if seconds else "-"


def print_machine(machine: str, date: str) -> None:
    print()
    print(f"machine: {machine}")
    print(f"date:    {date}")
    print()


def print_table(first_column: str, width: int, results: list[Result], files: int, lines: int) -> None:
    """Files, lines, seconds, lines/s and findings of each result, or why it is unavailable, with its notes."""
    header = f"{first_column:<{width}} {'files':>6} {'lines':>8} {'seconds':>9} {'lines/s':>10} {'findings':>9}"
    print(header)
    print("-" * len(header))
    for r in results:
        if r.error:
            print(f"{r.label:<{width}} unavailable: {r.error}")
            continue
        print(f"{r.label:<{width}} {files:>6} {lines:>8,} {r.seconds:>9.3f} {fmt_rate(lines, r.seconds):>10} "
              f"{r.count:>9}")
        for note in r.notes:
            print(f"{'':<{width}} note: {note}")


def print_markdown_table(caption: str, first_column: str, names: dict[str, str], results: list[Result], files: int,
                         lines: int) -> None:
    """The table for the README: `caption`, then a row per result under its name in `names`."""
    print()
    print(caption)
    print()
    print(f"| {first_column} | Files | Lines | Time (s) | Lines/s | Findings |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        if r.error:
            print(f"| {names[r.label]} | {files} | {lines:,} | unavailable | - | - |")
        else:
            print(f"| {names[r.label]} | {files} | {lines:,} | {r.seconds:.2f} | "
                  f"{fmt_rate(lines, r.seconds)} | {r.count} |")
    print()
