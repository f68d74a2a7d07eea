#!/usr/bin/env python3
"""Whole-program overhead of `gpulint run` (needs an NVIDIA GPU, nvcc and compute-sanitizer).

Builds the GPU test programs (tests/gpu_programs) and three heavier workloads
(benchmarks/native_workloads: a 1024^3 SGEMM loop, a 4096^2 stencil time loop, a four-stream
copy/compute pipeline), then runs each, in one session on one machine, `--repeat` times (median):
natively, under `gpulint run --level object`, with the object-level collector alone (the program
started with the environment `gpulint run` gives it, so without gpulint's own Python start-up),
under `gpulint run --level access`, and under `compute-sanitizer --leak-check full`.  Prints each slowdown and the medians over programs.
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


MODES = ("object", "collector", "access", "compute-sanitizer")
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
    sys.path.insert(0, str(REPO))
    from gpulint.dynamic.collectors.native import runner

    collector_env = runner.program_environment(runner.prepare(), str(work / "c.jsonl"))
    rows = []
    if args.only:
        sources = [s for s in sources if args.only in s.stem]
    for source in sources:
        exe = work / source.stem
        subprocess.run([nvcc, "-O2", "-lineinfo", "-I", str(source.parent), "-o", str(exe), str(source)], check=True)
        modes = {
            "native": [str(exe)],
            "object": [*gpulint, "--level", "object", "--", str(exe)],
            "collector": [str(exe)],  # the program with the object-level collector, without gpulint's start-up
            "access": [*gpulint, "--level", "access", "--", str(exe)],
            "compute-sanitizer": [sanitizer, "--leak-check", "full", str(exe)],
        }
        times = {}
        for mode, cmd in modes.items():
            runs = []
            for _ in range(args.repeat):
                runs.append(timed(cmd, collector_env if mode == "collector" else env))
                if runs[-1] == float("inf"):
                    break  # cut off once: the others would be too
            times[mode] = statistics.median(runs)
        row = {"program": source.stem, **{f"{m}_s": round(t, 3) for m, t in times.items()},
               **{f"{m}_x": round(times[m] / times["native"], 2) for m in MODES}}
        rows.append(row)
        shown = {m: (f"{row[f'{m}_x']:.2f}x" if row[f"{m}_x"] != float("inf") else f"> {LIMIT / times['native']:.0f}x")
                 for m in MODES}
        print(f"{source.stem:<18} native {times['native']:.3f}s  object {shown['object']}  collector alone "
              f"{shown['collector']}  access {shown['access']}  compute-sanitizer {shown['compute-sanitizer']}", flush=True)
    medians = {m: statistics.median(r[f"{m}_x"] for r in rows) for m in MODES}
    print(f"median slowdown: object {medians['object']:.2f}x (target <= 1.10x; the collector alone "
          f"{medians['collector']:.2f}x), access {medians['access']:.2f}x "
          f"(target <= 3x), compute-sanitizer --leak-check full {medians['compute-sanitizer']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "medians": medians}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
