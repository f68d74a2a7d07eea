"""Mutators, targets and oracles of gpulint's fuzz harness, shared by tests/test_fuzz.py (a
bounded Hypothesis run) and benchmarks/fuzz.py (10,000 inputs and a table).

A mutator turns seed bytes into hostile bytes with a `random.Random`; a target runs one mutated
input through the command line in this process (click's CliRunner) and returns the classes of
failure it shows, empty when the input was handled: exit code in {0, 1, 2}, no traceback, the file
analysed or reported, bounded time; for `fix`, a file that parsed still parses after
`fix --apply --unsafe-fixes` and a second run changes nothing.
"""
from __future__ import annotations

import json
import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SLOW_SECONDS = 10.0  # one small input taking longer is a failure of the benchmark ("slow")

# ------------------------------------------------------------------------- mutators

HUGE = [b"1e308 * 1e308", b"1 << 100000", b"99999999999999999999999", b"-1", b"0x7fffffffffffffffffff"]
SEPARATORS = [b"\x0c", b"\x0b", b"\x1c", b"\xc2\x85", "\u2028".encode(), b"\r", b"\x00"]


_SYNTAX = b"(){}[];,*&<>=+-/%!?:#\"' \n\t0123456789abcxyz_"


def _byte(rng: random.Random) -> int:
    # Mostly bytes that keep the text UTF-8 (else nearly every input stops at GL900 "not UTF-8").
    return rng.randrange(256) if rng.random() < 0.05 else rng.choice(_SYNTAX)


def flip_byte(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([_byte(rng)])
    i = rng.randrange(len(data))
    return data[:i] + bytes([_byte(rng)]) + data[i + 1:]


def insert_bytes(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + bytes(_byte(rng) for _ in range(rng.randrange(1, 8))) + data[i:]


def delete_bytes(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randrange(1, 40):]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def delete_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def line_endings(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\r"]))


def separator(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(SEPARATORS) + data[i:]


def encoding(rng: random.Random, data: bytes) -> bytes:
    text = data.decode("utf-8", "replace") + " é中😀"
    choice = rng.randrange(3)
    if choice == 0:
        return b"\xef\xbb\xbf" + data  # a BOM
    if choice == 1:
        return text.encode("utf-16")
    return text.encode("latin-1", "replace")


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    opener, closer = rng.choice([(b"(", b")"), (b"{", b"}"), (b"[", b"]")])
    depth = rng.choice([100, 1000, 5000])
    i = rng.randrange(len(data) + 1)
    return data[:i] + opener * depth + b"x" + closer * depth * rng.randrange(2) + data[i:]


def huge_literal(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines[i] = lines[i].replace(b"1024", rng.choice(HUGE)).replace(b"256", rng.choice(HUGE)) if rng.random() < 0.7 \
        else lines[i] + b" " + rng.choice(HUGE)
    return b"\n".join(lines)


def long_line(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"a+" * rng.choice([1000, 50000]) + b"a" + data[i:]


def suppression(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    comment = rng.choice([b"// gpulint: ignore", b"# gpulint: ignore[GL00%d]" % rng.randrange(10),
                          b"// gpulint: ignore-file[GL1]", b"/* gpulint: ignore[GL002, */"])
    lines[i] = lines[i] + b" " + comment
    return b"\n".join(lines)


SOURCE_MUTATORS: list[Callable[[random.Random, bytes], bytes]] = [
    flip_byte, insert_bytes, delete_bytes, delete_line, duplicate_line, swap_lines, truncate, line_endings,
    separator, encoding, deep_nesting, huge_literal, long_line, suppression,
]


def mutate_source(rng: random.Random, data: bytes) -> bytes:
    for _ in range(rng.randrange(1, 4)):
        data = rng.choice(SOURCE_MUTATORS)(rng, data)
    return data


HOSTILE_VALUES = [None, True, False, -1, 1e400, "x", [], {}, [[1]], 2 ** 70, 0.5, float("nan"), "0xZZ", [None]]


def _replace_somewhere(rng: random.Random, value):
    """A copy of a JSON value with one value somewhere inside replaced by a hostile one."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        return {**value, key: _replace_somewhere(rng, value[key])}
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        return value[:i] + [_replace_somewhere(rng, value[i])] + value[i + 1:]
    return rng.choice(HOSTILE_VALUES)


def mutate_json_lines(rng: random.Random, data: bytes) -> bytes:
    """A trace: one event's field replaced, lines dropped, duplicated, cut, or garbage added."""
    lines = [line for line in data.split(b"\n") if line.strip()]
    for _ in range(rng.randrange(1, 4)):
        choice = rng.randrange(6)
        i = rng.randrange(len(lines))
        if choice <= 2:
            try:
                lines[i] = json.dumps(_replace_somewhere(rng, json.loads(lines[i]))).encode()
            except (ValueError, RecursionError):  # a garbage line an earlier mutation added
                pass
        elif choice == 3:
            del lines[i]
            lines = lines or [b"{}"]
        elif choice == 4:
            lines.insert(i, lines[i])
        else:
            lines.append(rng.choice([b"[1, 2]", b"garbage", b'{"ev": 3}', b'{"ev":"free","t":', b"[" * 5000]))
    return b"\n".join(lines) + b"\n"


def mutate_json(rng: random.Random, data: bytes) -> bytes:
    """A SARIF document: a value inside replaced, a URI with NUL, deep nesting, or not SARIF at all."""
    choice = rng.randrange(8)
    if choice == 0:
        return b"[" * 100_000 + b"]" * 100_000
    if choice == 1:
        return json.dumps(rng.choice([[], {}, {"version": "2.1.0"}, "text", 3])).encode()
    log = json.loads(data)
    if choice == 2:
        return data.replace(b'"uri": "', b'"uri": "\\u0000')
    for _ in range(rng.randrange(1, 3)):
        log = _replace_somewhere(rng, log)
    return json.dumps(log).encode()


# ------------------------------------------------------------------------- targets


@dataclass
class Outcome:
    target: str
    data: bytes
    suffix: str
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    detail: str = ""


def _invoke(folder: Path, args: list[str]):
    old = os.getcwd()
    os.chdir(folder)
    try:
        return CliRunner().invoke(_main(), args, catch_exceptions=True)
    finally:
        os.chdir(old)


def _main():
    from gpulint.cli import main

    return main


def _crashed(result) -> str | None:
    """A traceback: an exception that is not click's exit, or one printed."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"{type(result.exception).__name__}: {result.exception}"
    if "Traceback (most recent call last)" in result.output:
        return "a traceback was printed"
    return None


def _judge(outcome: Outcome, result, started: float) -> None:
    crash = _crashed(result)
    if crash:
        outcome.failures.append("traceback")
        outcome.detail = crash
    if "internal error" in result.stderr:  # handled loudly, but still a gpulint bug
        outcome.failures.append("internal-error")
        outcome.detail = outcome.detail or result.stderr[-300:]
    if result.exit_code not in (0, 1, 2):
        outcome.failures.append("bad-exit")
        outcome.detail = outcome.detail or f"exit {result.exit_code}"
    outcome.seconds = time.perf_counter() - started
    if outcome.seconds > SLOW_SECONDS:
        outcome.failures.append("slow")


def _seeds(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in ROOT.glob(pattern))


CUDA_SEEDS = _seeds("tests/fixtures/cuda/**/*.cu", "examples/*.cu", "tests/gpu_programs/*.cu", "tests/fix_programs/*.cu")
PYTHON_SEEDS = _seeds("tests/fixtures/python/**/*.py", "tests/torch_programs/*.py", "tests/fix_programs/*.py")
TRACE_SEEDS = _seeds("examples/trace/*.jsonl")


def check_source(rng: random.Random, seeds: list[Path], target: str) -> Outcome:
    seed = rng.choice(seeds)
    outcome = Outcome(target, mutate_source(rng, seed.read_bytes()), seed.suffix)
    with tempfile.TemporaryDirectory() as folder:
        name = "input" + seed.suffix
        (Path(folder) / name).write_bytes(outcome.data)
        started = time.perf_counter()
        result = _invoke(Path(folder), ["check", "--no-cache", "--isolated", "--jobs", "1", name])
        _judge(outcome, result, started)
        # Every input is analysed or reported: the summary counts it, or a diagnostic names it.
        if not outcome.failures and "in 1 file" not in result.stdout and name not in result.stderr:
            outcome.failures.append("unreported")
            outcome.detail = (result.stdout + result.stderr)[-300:]
    return outcome


def check_cuda(rng: random.Random) -> Outcome:
    return check_source(rng, CUDA_SEEDS, "check-cuda")


def check_python(rng: random.Random) -> Outcome:
    return check_source(rng, PYTHON_SEEDS, "check-python")


def _parses(path: Path, data: bytes) -> bool:
    from gpulint.fixloop import still_parses

    return still_parses(path, data)


def fix(rng: random.Random) -> Outcome:
    seed = rng.choice(CUDA_SEEDS + PYTHON_SEEDS)
    data = seed.read_bytes()
    if rng.random() < 0.7:  # some inputs as written: the fixes must hold on real programs too
        data = mutate_source(rng, data)
    outcome = Outcome("fix", data, seed.suffix)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("input" + seed.suffix)
        path.write_bytes(data)
        started = time.perf_counter()
        result = _invoke(Path(folder), ["fix", "--apply", "--unsafe-fixes", "--isolated", path.name])
        _judge(outcome, result, started)
        if outcome.failures:
            return outcome
        after = path.read_bytes()
        if _parses(path, data) and not _parses(path, after):
            outcome.failures.append("fix-broke-parse")
        again = _invoke(Path(folder), ["fix", "--diff", "--unsafe-fixes", "--isolated", path.name])
        if _crashed(again) or again.stdout:
            outcome.failures.append("fix-not-idempotent")
            outcome.detail = again.stdout[:500]
        if result.exit_code == 2:
            outcome.failures.append("fix-error")
            outcome.detail = result.stderr[-300:]
    return outcome


def analyze(rng: random.Random) -> Outcome:
    seed = rng.choice(TRACE_SEEDS)
    outcome = Outcome("analyze", mutate_json_lines(rng, seed.read_bytes()), ".jsonl")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "t.jsonl").write_bytes(outcome.data)
        started = time.perf_counter()
        command = rng.choice([["analyze", "t.jsonl"], ["report", "t.jsonl"], ["analyze", "--format", "sarif", "t.jsonl"]])
        _judge(outcome, _invoke(Path(folder), command), started)
    return outcome


_SARIF_CACHE: dict[str, tuple[bytes, bytes]] = {}


def _recorded_sarif() -> tuple[bytes, bytes]:
    """gpulint's own SARIF for a fixture with safe and unsafe fixes, and that fixture."""
    if "log" not in _SARIF_CACHE:
        source = (ROOT / "tests/fix_programs/pipeline.cu").read_bytes()
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "pipeline.cu").write_bytes(source)
            _invoke(Path(folder), ["check", "--no-cache", "--isolated", "--format", "sarif", "-o", "gl.sarif",
                                   "pipeline.cu"])
            _SARIF_CACHE["log"] = ((Path(folder) / "gl.sarif").read_bytes(), source)
    return _SARIF_CACHE["log"]


def from_sarif(rng: random.Random) -> Outcome:
    log, source = _recorded_sarif()
    outcome = Outcome("from-sarif", mutate_json(rng, log), ".sarif")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "pipeline.cu").write_bytes(source)
        (Path(folder) / "in.sarif").write_bytes(outcome.data)
        started = time.perf_counter()
        result = _invoke(Path(folder), ["fix", "--apply", "--unsafe-fixes", "--from-sarif", "in.sarif"])
        _judge(outcome, result, started)
        after = (Path(folder) / "pipeline.cu").read_bytes()
        if after != source and not _parses(Path(folder) / "pipeline.cu", after):
            outcome.failures.append("fix-broke-parse")
    return outcome


TARGETS: dict[str, Callable[[random.Random], Outcome]] = {
    "check-cuda": check_cuda, "check-python": check_python, "fix": fix, "analyze": analyze, "from-sarif": from_sarif,
}
FAILURE_CLASSES = ["traceback", "internal-error", "bad-exit", "unreported", "slow", "fix-broke-parse", "fix-not-idempotent", "fix-error"]
