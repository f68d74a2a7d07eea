#!/usr/bin/env python3
"""The native collector's two encodings on one long run (issue 19, point 5, on a real trace).

Builds `native_workloads/many_events.cu` (about `--events` events over `--objects` objects, four
streams), runs it under `gpulint run` at the object level writing JSON Lines (`run.jsonl`) and
the binary variant (`run.gltrace`), and reports for each: the program's wall time under the
collector, the trace's size, and `analyze` alone in a fresh process (CPU, wall, peak RSS, against
the point-5 targets of 8 s and 1 GiB), the binary run's findings checked against the JSON Lines
run's.  Needs nvcc and an NVIDIA GPU.  A benchmark, not a test: it always exits 0.

    python benchmarks/native_trace_speed.py --events 1000000 --objects 10000
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from dynamic_speed import compare_analysis  # noqa: E402
from harness import machine_description, today  # noqa: E402


def same_findings(a: Path, b: Path) -> bool:
    """The two dumps agree on everything but the trace's own name in warnings."""
    first, second = json.loads(a.read_text()), json.loads(b.read_text())
    return {k: first[k] for k in first if k != "warnings"} == {k: second[k] for k in second if k != "warnings"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="a folder to keep the program and the traces in")
    args = parser.parse_args(argv)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(nvcc).exists():
        print("no nvcc: nothing measured")
        return 0
    folder = args.keep or Path(tempfile.mkdtemp(prefix="gpulint-native-trace-"))
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "many_events"
    subprocess.run([nvcc, "-O3", "-g", "-lineinfo", "-o", str(exe), str(HERE / "native_workloads" / "many_events.cu")],
                   check=True)
    print(f"machine: {machine_description()}; date {today()}")
    t0 = time.perf_counter()
    plain = subprocess.run([str(exe), str(args.events), str(args.objects)], capture_output=True, text=True)
    print(f"program alone: {time.perf_counter() - t0:.1f} s wall ({plain.stdout.strip()})")
    dumps = {}
    for name in ("run.jsonl", "run.gltrace"):
        trace = folder / name
        trace.unlink(missing_ok=True)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(trace), "--", str(exe),
                               str(args.events), str(args.objects)], capture_output=True, text=True, cwd=REPO)
        took = time.perf_counter() - t0
        if proc.returncode or not trace.exists():
            print(f"{name}: the run failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
            return 0
        print(f"{name}: program under the collector {took:.1f} s wall, trace {trace.stat().st_size / 1e6:.0f} MB")
        dumps[name] = compare_analysis(trace, folder, None)
    if all(dumps.values()):
        same = same_findings(dumps["run.jsonl"], dumps["run.gltrace"])
        print(f"findings: {'identical' if same else 'DIFFER'} between the two encodings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
