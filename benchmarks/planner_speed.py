#!/usr/bin/env python3
"""How fast are the pool planner and the best-fit simulation on many objects? (issue 19, point 6)

Generates lifetimes shaped like a training run: a few hundred weights alive from start to end, and
steps whose activations are allocated one after another in the forward pass and freed in reverse in
the backward pass, with short temporaries between them; plus 10% of the objects with random spans.
Times `planner.plan` (the offset plan, best of its greedy orders) and `planner.best_fit_pool`
(the allocator simulation) in CPU time for 1,000, 10,000 and 100,000 objects, and prints the pool
each gives against the peak of live bytes.  Target: 100,000 objects in <= 10 s.  A benchmark, not a
test: it always exits 0.

    python benchmarks/planner_speed.py
    python benchmarks/planner_speed.py --objects 1000 5000 --seed 3
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from harness import machine_description, today  # noqa: E402

TARGET_SECONDS = 10.0
TARGET_OBJECTS = 100_000


def training_lifetimes(objects: int, seed: int) -> dict[object, tuple[int, int, int]]:
    """`objects` lifetimes (start, end, bytes) of a training-like run."""
    rng = random.Random(seed)
    weights = min(300, max(1, objects // 20))
    per_step = 64  # activations and temporaries per step
    steps = max(1, (objects - weights) * 9 // 10 // per_step)
    end_of_run = steps * 1000 + 1000
    spans: dict[object, tuple[int, int, int]] = {}
    for w in range(weights):
        spans[("weight", w)] = (w, end_of_run, rng.choice([1 << 16, 1 << 20, 4 << 20, 16 << 20]))
    for step in range(steps):
        base = 500 + step * 1000
        layers = per_step // 2
        for layer in range(layers):  # activation kept for backward, freed in reverse order
            size = rng.choice([1 << 20, 2 << 20, 8 << 20])
            spans[("act", step, layer)] = (base + 2 * layer, base + 4 * layers - 2 * layer, size)
        for t in range(per_step - layers):  # temporaries: a few ticks each
            start = base + rng.randrange(0, 4 * layers)
            spans[("tmp", step, t)] = (start, start + rng.randrange(1, 4), rng.choice([1 << 12, 1 << 18, 1 << 20]))
    for i in range(objects - len(spans)):
        start = rng.randrange(0, end_of_run)
        spans[("random", i)] = (start, min(end_of_run, start + rng.randrange(1, 5000)), rng.choice([1 << 10, 1 << 20]))
    return spans


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args(argv)

    from gpulint.dynamic.planner import alloc_free_sequence, best_fit_pool, plan

    print(f"machine: {machine_description()}; date {today()}")
    for objects in args.objects:
        spans = training_lifetimes(objects, args.seed)
        t0 = time.process_time()
        planning = plan(spans)
        planned = time.process_time() - t0
        t0 = time.process_time()
        simulation = best_fit_pool(alloc_free_sequence(spans))
        simulated = time.process_time() - t0
        total = planned + simulated
        verdict = ""
        if objects >= TARGET_OBJECTS:
            verdict = f" -> target {TARGET_SECONDS:g} s for {TARGET_OBJECTS:,}: {'met' if total <= TARGET_SECONDS else 'NOT met'}"
        print(f"{len(spans):>7,} objects: plan {planned:6.2f} s CPU ({planned / len(spans) * 1e6:5.0f} us/object, "
              f"{'/'.join(p.strategy for p in planning.all)}; best {planning.best.strategy} "
              f"{planning.best.pool_bytes / planning.lower_bound:.3f}x the live peak), best-fit simulation "
              f"{simulated:6.2f} s CPU ({simulation.restarts} restarts, {simulation.pool_bytes / simulation.aggregate_peak:.3f}x "
              f"the live peak); total {total:.2f} s{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
