#!/usr/bin/env python3
"""Whole-program overhead of `gpulint run` (needs an NVIDIA GPU, nvcc and compute-sanitizer).

Builds the GPU test programs (tests/gpu_programs) and three heavier workloads
(benchmarks/native_workloads: a 1024^3 SGEMM loop, a 4096^2 stencil time loop, a four-stream
copy/compute pipeline), then runs each, in one session on one machine, `--repeat` times (median):
natively, under `gpulint run --level object`, under `gpulint run --level access`, and under
`compute-sanitizer --leak-check full`.  Prints each slowdown and the medians over programs.
Targets: object level <= 1.10x, access level <= 3x (median).  A benchmark: it always exits 0.

    python benchmarks/native_overhead.py --repeat 3 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


LIMIT = 120.0  # seconds per run: compute-sanitizer on the heavy loops can take many minutes


def timed(cmd: list[str], env: dict | None = None) -> float:
    t0 = time.perf_counter()
    try:
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return float("inf")  # reported as "> LIMIT"
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    global LIMIT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", help="only programs whose name contains this")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a run is cut off [120]")
    args = parser.parse_args(argv)
    LIMIT = args.limit
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/compute-sanitizer/compute-sanitizer"
    work = Path(tempfile.mkdtemp(prefix="gpulint-overhead-"))
    sources = sorted((REPO / "tests/gpu_programs").glob("*.cu")) + sorted((REPO / "benchmarks/native_workloads").glob("*.cu"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    gpulint = [sys.executable, "-m", "gpulint", "run", "-o", str(work / "t.jsonl")]
    subprocess.run([*gpulint, "--", "true"], env=env, capture_output=True)  # build the collector once
    rows = []
    if args.only:
        sources = [s for s in sources if args.only in s.stem]
    for source in sources:
        exe = work / source.stem
        subprocess.run([nvcc, "-O2", "-lineinfo", "-I", str(source.parent), "-o", str(exe), str(source)], check=True)
        modes = {
            "native": [str(exe)],
            "object": [*gpulint, "--level", "object", "--", str(exe)],
            "access": [*gpulint, "--level", "access", "--", str(exe)],
            "compute-sanitizer": [sanitizer, "--leak-check", "full", str(exe)],
        }
        times = {mode: statistics.median(timed(cmd, env) for _ in range(args.repeat)) for mode, cmd in modes.items()}
        row = {"program": source.stem, **{f"{m}_s": round(t, 3) for m, t in times.items()},
               **{f"{m}_x": round(times[m] / times["native"], 2) for m in ("object", "access", "compute-sanitizer")}}
        rows.append(row)
        shown = {m: (f"{row[f'{m}_x']:.2f}x" if row[f"{m}_x"] != float("inf") else f"> {LIMIT / times['native']:.0f}x")
                 for m in ("object", "access", "compute-sanitizer")}
        print(f"{source.stem:<18} native {times['native']:.3f}s  object {shown['object']}  access {shown['access']}  "
              f"compute-sanitizer {shown['compute-sanitizer']}", flush=True)
    medians = {m: statistics.median(r[f"{m}_x"] for r in rows) for m in ("object", "access", "compute-sanitizer")}
    print(f"median slowdown: object {medians['object']:.2f}x (target <= 1.10x), access {medians['access']:.2f}x "
          f"(target <= 3x), compute-sanitizer --leak-check full {medians['compute-sanitizer']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "medians": medians}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
