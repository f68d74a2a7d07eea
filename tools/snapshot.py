"""Record gpulint's observable behaviour over every fixture, program and trace, to diff before and after a
refactoring: `python tools/snapshot.py OUT [--traces DIR]`, then `diff -r OUT_BEFORE OUT_AFTER`.

Each command's stdout, stderr and exit code land in OUT/<name>.txt. Commands run from the repository root
with relative paths and `--isolated --no-cache`, and the checkout's own path is cut from what they print
(a trace names the files of the checkout that recorded it), so snapshots of two checkouts compare."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["tests/fixtures/cuda", "tests/fixtures/python", "tests/fix_programs", "tests/gpu_programs",
           "tests/python_loop_programs", "tests/torch_programs", "examples", "benchmarks/programs"]


def commands(traces: list[Path]) -> dict[str, list[str]]:
    gl = [sys.executable, "-m", "gpulint"]
    out: dict[str, list[str]] = {}
    for src in SOURCES:
        if not (ROOT / src).exists():
            continue
        key = src.replace("/", "_")
        check = [*gl, "check", "--isolated", "--no-cache", "-j", "1", "--select", "ALL", src]
        for frontend in ("tree-sitter", "clang"):
            out[f"check-{key}-{frontend}.json"] = [*check, "--frontend", frontend, "--format", "json"]
        out[f"check-{key}.sarif"] = [*check, "--format", "sarif"]
        out[f"check-{key}.text"] = [*check, "--format", "text"]
        out[f"check-{key}.github"] = [*check, "--format", "github"]
        out[f"fix-{key}.diff"] = [*gl, "fix", "--isolated", "--diff", "--select", "ALL", src]
        out[f"fix-{key}-unsafe.diff"] = [*gl, "fix", "--isolated", "--diff", "--unsafe-fixes", "--select", "ALL",
                                        src]
    for trace in traces:
        name = (trace.relative_to(ROOT) if trace.is_relative_to(ROOT) else trace.relative_to(trace.anchor)).as_posix()
        name = name.replace("/", "_")
        for fmt in ("json", "text"):
            out[f"analyze-{name}.{fmt}"] = [*gl, "analyze", "--isolated", "--min-bytes", "0", "--format", fmt,
                                            str(trace)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--traces", type=Path, help="folder of .jsonl traces to analyse as well")
    parser.add_argument("--strip", action="append", default=[], metavar="PREFIX",
                        help="also cut this path prefix (the checkout that recorded the traces)")
    args = parser.parse_args()
    traces = sorted((ROOT / "examples").rglob("*.jsonl"))
    if args.traces:
        traces += sorted(args.traces.rglob("*.jsonl"))
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    for name, cmd in commands(traces).items():
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
        text = f"$ {' '.join(cmd[1:])}\nexit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
        for prefix in [f"{ROOT}/", *args.strip]:
            text = text.replace(prefix, "")
        (args.out / f"{name}.txt").write_text(text)
    print(f"{len(commands(traces))} commands recorded in {args.out}")


if __name__ == "__main__":
    main()
