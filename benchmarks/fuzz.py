"""Fuzz gpulint: `python benchmarks/fuzz.py --inputs 10000 --seed 0 [--targets a,b] [--markdown] [--save DIR]`.

Runs mutated inputs (benchmarks/fuzz_targets.py: the same mutators and oracles as
tests/test_fuzz.py) through the command line in this process, spread evenly over the targets,
and prints inputs tried and failures per class and target.  With --save, every failing input is
written to DIR for a test to reproduce.  Exits 1 when anything failed.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_targets import FAILURE_CLASSES, TARGETS  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    names = [t for t in args.targets.split(",") if t]
    rng = random.Random(args.seed)
    tried: Counter = Counter()
    failed: dict[str, Counter] = {name: Counter() for name in names}
    seconds: Counter = Counter()
    slowest: dict[str, float] = {name: 0.0 for name in names}
    for i in range(args.inputs):
        name = names[i % len(names)]
        started = time.perf_counter()
        outcome = TARGETS[name](random.Random(rng.getrandbits(64)))
        elapsed = time.perf_counter() - started
        tried[name] += 1
        seconds[name] += elapsed
        slowest[name] = max(slowest[name], elapsed)
        for failure in outcome.failures:
            failed[name][failure] += 1
            if args.save is not None:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{name}-{failure}-{i}{outcome.suffix}").write_bytes(outcome.data)
                (args.save / f"{name}-{failure}-{i}.txt").write_text(outcome.detail)
        if (i + 1) % 500 == 0:
            print(f"{i + 1} inputs, {sum(sum(c.values()) for c in failed.values())} failures", file=sys.stderr)
    header = ["target", "inputs", *FAILURE_CLASSES, "seconds", "slowest input (s)"]
    rows = [[name, str(tried[name]), *(str(failed[name][c]) for c in FAILURE_CLASSES), f"{seconds[name]:.1f}",
             f"{slowest[name]:.2f}"] for name in names]
    rows.append(["all", str(sum(tried.values())), *(str(sum(failed[n][c] for n in names)) for c in FAILURE_CLASSES),
                 f"{sum(seconds.values()):.1f}", f"{max(slowest.values()):.2f}"])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
    return 1 if any(failed[n] for n in names) else 0


if __name__ == "__main__":
    sys.exit(main())
