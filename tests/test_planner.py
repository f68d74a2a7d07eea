"""The pool planner's sweep by start time places every object exactly where the general placement
(which looks at every placed object) does, and every plan it makes is valid."""
from __future__ import annotations

import random

import pytest

from gpulint.dynamic import planner
from gpulint.dynamic.planner import _place, _place_by_start, _simulate, alloc_free_sequence, best_fit_pool, plan


def random_lifetimes(rng: random.Random, n: int) -> dict[object, tuple[int, int, int]]:
    spans = {}
    for i in range(n):
        start = rng.randrange(0, 200)
        length = rng.choice([1, 2, 5, 20, 150]) if rng.random() < 0.9 else rng.randrange(1, 300)
        spans[i] = (start, start + length, rng.choice([1, 3, 8, 64, 100, 4096]))
    return spans


def assert_valid(lifetimes, offsets) -> None:
    """No two objects alive together share a byte."""
    keys = list(offsets)
    for i, a in enumerate(keys):
        sa, ea, za = lifetimes[a]
        for b in keys[i + 1:]:
            sb, eb, zb = lifetimes[b]
            if sa < eb and sb < ea:
                assert offsets[a] + za <= offsets[b] or offsets[b] + zb <= offsets[a], (a, b)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("smallest_hole", [False, True])
def test_the_sweep_places_as_the_general_placement_does(seed: int, smallest_hole: bool) -> None:
    rng = random.Random(seed)
    lifetimes = random_lifetimes(rng, rng.randrange(1, 120))
    order = sorted(lifetimes, key=lambda k: (lifetimes[k][0], -lifetimes[k][2]))
    swept = _place_by_start(order, lifetimes, smallest_hole)
    general = _place(order, lifetimes, smallest_hole)
    assert swept.offsets == general.offsets and swept.pool_bytes == general.pool_bytes
    assert_valid(lifetimes, swept.offsets)


def test_many_objects_run_the_orders_by_start_only(monkeypatch: pytest.MonkeyPatch) -> None:
    lifetimes = random_lifetimes(random.Random(7), 300)
    everything = plan(lifetimes)
    assert [p.strategy for p in everything.all] == ["first-fit", "best-fit", "bigger-first", "longer-first"]
    monkeypatch.setattr(planner, "ALL_ORDERS_UP_TO", 100)
    fewer = plan(lifetimes)
    assert [p.strategy for p in fewer.all] == ["first-fit", "best-fit"]
    assert fewer.all == everything.all[:2]
    for p in fewer.all:
        assert_valid(lifetimes, p.offsets)
        assert p.pool_bytes >= fewer.lower_bound


def best_fit_restarting(sequence, max_restarts: int = 10_000) -> tuple[int, int]:
    """The simulation as first written: every failure grows the pool and starts over from the first
    request.  (pool bytes, restarts)."""
    sizes = {key: size for op, key, size in sequence if op == "alloc"}
    live = peak = 0
    for op, key, size in sequence:
        live += size if op == "alloc" else -sizes.get(key, 0)
        peak = max(peak, live)
    pool = peak
    for restart in range(max_restarts):
        failed = _simulate(sequence, pool)
        if failed is None:
            return pool, restart
        request, largest = failed
        pool += max(1, request - largest)
    return pool, max_restarts


@pytest.mark.parametrize("seed", range(60))
def test_resumed_best_fit_gives_the_pool_of_starting_over(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    lifetimes = random_lifetimes(rng, rng.randrange(1, 400))
    sequence = alloc_free_sequence(lifetimes)
    # Snapshots every few steps, so that resuming from one (not only from the start) is exercised.
    monkeypatch.setattr(planner._ResumableBestFit, "__init__", _frequent_snapshots)
    simulation = best_fit_pool(sequence)
    assert (simulation.pool_bytes, simulation.restarts) == best_fit_restarting(sequence)


_original_init = planner._ResumableBestFit.__init__


def _frequent_snapshots(self, sequence) -> None:
    _original_init(self, sequence)
    self.every = 3
