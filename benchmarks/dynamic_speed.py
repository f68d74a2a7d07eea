#!/usr/bin/env python3
"""How fast is the dynamic core on a large run?

Generates a trace of `--events` events (default 1,000,000) over `--objects` objects (default
10,000): allocations and frees spread over the run, kernel launches on four streams reading and
writing a few live objects each, host-to-device and device-to-host copies, memsets, event
record/wait pairs and synchronisations, with bitmaps for a sample of objects.  Then times, in
this process on one core, `gpulint.dynamic.analyze.analyze` (read, order, histories, every rule,
what-if peak) and the pool planner plus the best-fit simulation, and reports wall time and peak
memory (`ru_maxrss`).  Target: <= 30 s and <= 2 GB.  Before that, `analyze` alone is timed in a
fresh process on the JSON Lines trace and on the same events as a binary trace (`tracebin`),
with the two runs' findings checked identical (issue 19, point 5: <= 8 s CPU, <= 1 GiB).  A
benchmark, not a test: it always exits 0.

    python benchmarks/dynamic_speed.py
    python benchmarks/dynamic_speed.py --events 200000 --objects 2000 --keep /tmp/run.jsonl
"""
from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from harness import machine_description, today  # noqa: E402

TARGET_SECONDS = 30.0
TARGET_BYTES = 2 << 30
# Issue 19, point 5: `analyze` alone, CPU time and peak memory of its process.
TARGET_ANALYZE_CPU = 8.0
TARGET_ANALYZE_BYTES = 1 << 30


def generate(path: Path, events: int, objects: int, seed: int) -> int:
    import numpy as np

    from gpulint.dynamic.trace import TraceWriter

    rng = random.Random(seed)
    files = [f"src/layer{i}.cu" for i in range(40)]
    written = 0
    live: list[int] = []
    next_obj = 0
    # Spread the allocations over the run so about `objects` exist in total.
    alloc_every = max(2, events // (objects + 1))
    with TraceWriter(path, collector="native", argv=["./synthetic"], device="synthetic", granularity=32) as out:
        t = 0
        while written < events:
            t += 1
            site = [[rng.choice(files), rng.randint(10, 900), "step"]]
            if next_obj < objects and (t % alloc_every == 0 or len(live) < 4):
                size = rng.choice([1 << 12, 1 << 16, 1 << 20, 3 << 20, 1 << 24])
                out.write({"ev": "alloc", "t": t, "obj": next_obj, "size": size, "api": "cudaMalloc", "stream": 0,
                           "site": site})
                live.append(next_obj)
                if next_obj % 100 == 0:  # bitmaps for 1% of the objects: a launch touching a prefix
                    granules = size // 32
                    bits = np.zeros(granules, dtype=bool)
                    bits[: granules // rng.choice([1, 2, 4])] = True
                    t += 1
                    out.write({"ev": "launch", "t": t, "kernel": "init", "stream": 1, "reads": [], "writes": [next_obj],
                               "site": site})
                    out.add_bitmap(next_obj, t, None, bits)
                    written += 2
                next_obj += 1
            elif live and len(live) > 64 and rng.random() < 0.02:
                victim = live.pop(rng.randrange(len(live)))
                out.write({"ev": "free", "t": t, "obj": victim, "stream": 0, "site": site})
            else:
                r = rng.random()
                stream = rng.randint(1, 4)
                picks = rng.sample(live, min(len(live), 3))
                if r < 0.80:
                    out.write({"ev": "launch", "t": t, "kernel": f"kernel_{rng.randint(0, 60)}", "stream": stream,
                               "reads": picks[:2], "writes": picks[2:], "site": site})
                elif r < 0.88:
                    out.write({"ev": "memcpy", "t": t, "dst": picks[0], "src": None, "size": 4096, "kind": "h2d",
                               "stream": stream, "site": site})
                elif r < 0.92:
                    out.write({"ev": "memcpy", "t": t, "dst": None, "src": picks[0], "size": 4096, "kind": "d2h",
                               "stream": stream, "site": site})
                elif r < 0.95:
                    out.write({"ev": "memset", "t": t, "obj": picks[0], "size": 4096, "stream": stream, "site": site})
                elif r < 0.98:
                    event = rng.randint(0, 7)
                    out.write({"ev": "event_record", "t": t, "event": event, "stream": stream})
                    t += 1
                    out.write({"ev": "event_wait", "t": t, "event": event, "stream": rng.randint(1, 4)})
                    written += 1
                else:
                    out.write({"ev": "sync", "t": t, "scope": rng.choice(["device", "stream"]), "stream": stream})
            written += 1
        for obj in live[: len(live) // 2]:  # the rest are leaks
            t += 1
            out.write({"ev": "free", "t": t, "obj": obj, "stream": 0, "site": [["src/main.cu", 999, "main"]]})
            written += 1
    return written


def record(result) -> dict:
    """Everything `analyze` tells a user about a run, as plain JSON: the findings shown and hidden
    (message, locations, evidence, properties with the what-if numbers), the peaks, the warnings."""
    from gpulint.findings import finding_to_dict

    peaks = result.peaks
    return {"findings": [finding_to_dict(f) for f in result.findings],
            "hidden": [finding_to_dict(f) for f in result.hidden],
            "peaks": {"actual": int(peaks.actual), "actual_at": int(peaks.actual_at),
                      "all_fixed": int(peaks.all_fixed), "lower_bound": int(peaks.lower_bound)},
            "warnings": list(result.warnings)}


def analyze_once(trace: Path, dump: Path | None) -> dict:
    """Analyse `trace` in this process (a fresh one: its peak memory is the analysis's) and say
    what it cost: CPU seconds (user + system), wall seconds, peak RSS in bytes."""
    import json

    from gpulint.config import Settings
    from gpulint.dynamic.analyze import analyze
    from gpulint.rules import RULES

    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = analyze(trace, Settings(), sorted(RULES))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if dump is not None:
        dump.write_text(json.dumps(record(result), indent=1, sort_keys=True))
    return {"cpu": cpu, "wall": wall, "rss": rss, "findings": len(result.findings), "hidden": len(result.hidden)}


def compare_analysis(path: Path, folder: Path, reference: Path | None) -> Path | None:
    """`analyze` alone in a fresh process (its peak memory is the analysis's): CPU, wall, peak
    RSS against the issue-19 targets, and its findings against `reference`, when given.
    Returns the findings it wrote (JSON), None when the analysis failed."""
    import json
    import subprocess

    dump = folder / f"findings-{path.name}.json"
    cmd = [sys.executable, __file__, "--analyze-only", str(path), "--dump", str(dump)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode:
        print(f"analyze failed: {proc.stderr.strip()[-400:]}")
        return None
    cost = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"analyze alone ({path.name}, {path.stat().st_size / 1e6:.0f} MB): {cost['cpu']:.1f} s CPU "
          f"(target <= {TARGET_ANALYZE_CPU:.0f} s: {'met' if cost['cpu'] <= TARGET_ANALYZE_CPU else 'NOT met'}), "
          f"{cost['wall']:.1f} s wall, peak RSS {cost['rss'] / 2**20:.0f} MiB "
          f"(target <= {TARGET_ANALYZE_BYTES >> 20} MiB: {'met' if cost['rss'] <= TARGET_ANALYZE_BYTES else 'NOT met'}); "
          f"{cost['findings']:,} findings shown, {cost['hidden']:,} hidden")
    if reference is None:
        return dump
    expected, got = json.loads(reference.read_text()), json.loads(dump.read_text())
    if expected == got:
        print(f"findings: identical to {reference}")
        return dump
    print(f"findings: DIFFER from {reference}")
    for key in expected:
        if expected[key] == got.get(key):
            continue
        if isinstance(expected[key], list) and isinstance(got.get(key), list):
            first = next((i for i, (a, b) in enumerate(zip(expected[key], got[key])) if a != b), None)
            print(f"  {key}: {len(expected[key])} expected, {len(got[key])} now; first difference at {first}")
            if first is not None:
                print(f"    expected {json.dumps(expected[key][first])[:600]}")
                print(f"    now      {json.dumps(got[key][first])[:600]}")
        else:
            print(f"  {key}: expected {expected[key]}, now {got.get(key)}")
    return dump


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--keep", type=Path, help="write the trace here and keep it")
    parser.add_argument("--analyze-only", type=Path, metavar="TRACE",
                        help="only analyse TRACE in this process and print CPU s, wall s, peak RSS as JSON")
    parser.add_argument("--dump", type=Path, help="with --analyze-only: write the findings (JSON) here")
    parser.add_argument("--trace", type=Path, help="analyse this trace instead of generating one")
    parser.add_argument("--binary", type=Path, help="write the binary copy of the trace here and keep it")
    parser.add_argument("--reference", type=Path,
                        help="findings (a --dump of the same trace) the analysis must reproduce exactly")
    args = parser.parse_args(argv)
    if args.analyze_only is not None:
        import json

        print(json.dumps(analyze_once(args.analyze_only, args.dump)))
        return 0

    from gpulint.config import Settings
    from gpulint.dynamic.analyze import analyze
    from gpulint.dynamic.planner import alloc_free_sequence, best_fit_pool, plan
    from gpulint.dynamic.whatif import lifetimes
    from gpulint.rules import RULES

    folder = Path(tempfile.mkdtemp(prefix="gpulint-trace-"))
    path = args.trace or args.keep or folder / "run.jsonl"
    if args.trace is None:
        t0 = time.perf_counter()
        written = generate(path, args.events, args.objects, args.seed)
        print(f"generated {written:,} events over {args.objects:,} objects in {time.perf_counter() - t0:.1f} s "
              f"({path.stat().st_size / 1e6:.0f} MB)")
    text_findings = compare_analysis(path, folder, args.reference)
    # The same run as a binary trace (issue 19, point 5: the compact variant for collectors that
    # write many events), analysed the same way; its findings must be the JSON Lines trace's.
    from gpulint.dynamic.tracebin import convert, is_binary

    if not is_binary(path):
        binary = args.binary or folder / (path.name + ".gltrace")
        t0 = time.perf_counter()
        convert(path, binary)
        print(f"the same events as a binary trace: {binary.stat().st_size / 1e6:.0f} MB "
              f"(JSON Lines {path.stat().st_size / 1e6:.0f} MB), written in {time.perf_counter() - t0:.1f} s")
        compare_analysis(binary, folder, args.reference or text_findings)

    t0 = time.perf_counter()
    result = analyze(path, Settings(), sorted(RULES))
    analysed = time.perf_counter() - t0
    t1 = time.perf_counter()
    spans = lifetimes(result.run)
    planning = plan(spans)
    simulation = best_fit_pool(alloc_free_sequence(spans))
    planned = time.perf_counter() - t1
    total = analysed + planned
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    counts: dict[str, int] = {}
    for f in result.findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    print(f"machine: {machine_description()}; date {today()}")
    print(f"analyze (read + order + histories + rules + what-if): {analysed:.1f} s, {len(result.findings):,} findings "
          f"({', '.join(f'{c} {n}' for c, n in sorted(counts.items()))})")
    print(f"peaks: actual {result.peaks.actual:,} B, all fixed {result.peaks.all_fixed:,} B, "
          f"lower bound {result.peaks.lower_bound:,} B")
    print(f"planner ({planning.best.strategy}): {planning.best.pool_bytes:,} B vs lower bound {planning.lower_bound:,} B; "
          f"best-fit simulation {simulation.pool_bytes:,} B ({simulation.restarts} restarts): {planned:.1f} s")
    print(f"total {total:.1f} s (target <= {TARGET_SECONDS:.0f} s: {'met' if total <= TARGET_SECONDS else 'NOT met'}); "
          f"peak memory {rss / 2**20:.0f} MiB (target <= 2048 MiB: {'met' if rss <= TARGET_BYTES else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
