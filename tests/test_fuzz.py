"""A bounded, seeded fuzz run (issue 15, point 3): Hypothesis drives the harness's mutators
(benchmarks/fuzz_targets.py, shared with benchmarks/fuzz.py, which runs 10,000 inputs) through
every target; no input may give a traceback, an exit code outside {0, 1, 2}, a file neither
analysed nor reported, or a fix that breaks parsing or changes on a second run."""
from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from fuzz_targets import TARGETS  # noqa: E402

import pytest  # noqa: E402

BOUNDED = settings(max_examples=30, derandomize=True, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target(target: str) -> None:
    @BOUNDED
    @given(st.randoms(use_true_random=False))
    def run(rng) -> None:
        outcome = TARGETS[target](rng)
        # "slow" is the benchmark's measure, not a timed test: this machine may be busy.
        failures = [f for f in outcome.failures if f != "slow"]
        assert not failures, f"{target}: {failures}: {outcome.detail}\ninput: {outcome.data[:400]!r}"

    run()
