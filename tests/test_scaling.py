"""The stress inputs of `benchmarks/static_speed.py --stress` give exactly the findings (and fixes)
their patterns are built to give, at a small size.

The benchmark times them at full size (20,000 allocations in one function, 4,000 functions in one
file): time targets live there, never here. These tests are not timed; they make sure the inputs
exercise what the benchmark claims (most rules firing, the fix builders running on most objects)
and that the indexes behind the near-linear analysis give the findings a scan gave."""
from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.engine import check_paths

REPO = Path(__file__).resolve().parent.parent


def _benchmark():
    spec = importlib.util.spec_from_file_location("gpulint_static_speed", REPO / "benchmarks" / "static_speed.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _benchmark()


def _check(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    report = check_paths([str(path)], Settings(jobs=1))
    assert report.errors == []
    findings = Counter(f.code for f in report.findings)
    fixes = Counter(f.code for f in report.findings if f.fix is not None)
    return dict(sorted(findings.items())), dict(sorted(fixes.items()))


def test_cuda_one_function(tmp_path):
    # 200 allocations, six variants in turn: 34 plain, 34 unused, 33 leaked, 33 early, 33 late, 33 guarded.
    findings, fixes = _check(tmp_path, "one.cu", bench.stress_cuda_function(200))
    assert findings == {
        "GL001": 33,  # early
        "GL002": 66,  # late, and leaked (the later variants launch kernels before the function ends)
        "GL003": 33,
        "GL004": 67,  # unused (34) and guarded (33)
        "GL005": 33,  # leaked
    }
    # Every GL001, GL004 and GL005 finding has its fix; GL002's is the late ones' (a leak has no free to move).
    assert fixes == {"GL001": 33, "GL002": 33, "GL004": 67, "GL005": 33}


def test_cuda_checked_allocations(tmp_path):
    # 200 allocations each checked with `return 1`, three variants in turn: 67 plain, 67 late, 66 early.
    # No GL005: each exit after an allocation is before its free only on its own failure path.
    findings, fixes = _check(tmp_path, "checked.cu", bench.stress_cuda_checked(200))
    assert findings == {"GL001": 66, "GL002": 67}
    # GL001's move is withheld: the allocation is the condition of an `if`, not a statement of its own.
    assert fixes == {"GL002": 67}


def test_cuda_many_functions(tmp_path):
    # 40 functions: `a` allocated before a launch, used, freed after another (GL001, GL002); `b` used
    # only under a braceless `if`, after two launches, never freed (GL001, GL002, GL004, GL005).
    findings, fixes = _check(tmp_path, "many.cu", bench.stress_cuda_functions(40))
    assert findings == {"GL001": 80, "GL002": 80, "GL003": 40, "GL004": 40, "GL005": 40}
    # GL004 has no fix here: the allocation cannot be moved into a braceless `if`; b's GL002 has no free to move.
    assert fixes == {"GL001": 80, "GL002": 40, "GL005": 40}


def test_python_one_function(tmp_path):
    # 200 tensors, five variants in turn (40 each): plain, unused, early, late, guarded.
    findings, fixes = _check(tmp_path, "one.py", bench.stress_python_function(200))
    assert findings == {
        "GL001": 40,  # early
        "GL002": 159,  # every used tensor but the last (a guarded one, with no loop after it)
        "GL004": 80,  # unused (40) and guarded (40)
    }
    assert fixes == findings


def test_python_many_functions(tmp_path):
    # 40 functions: `a` waits across a loop (GL001) and lives across a later one (GL002), as does
    # `c` (GL002); `b` is never used (GL004).
    findings, fixes = _check(tmp_path, "many.py", bench.stress_python_functions(40))
    assert findings == {"GL001": 40, "GL002": 80, "GL004": 40}
    assert fixes == findings


@pytest.mark.parametrize("size", [6, 12])
def test_cuda_counts_grow_with_the_pattern(tmp_path, size):
    """Each block of six allocations adds the same findings: nothing depends on how far apart objects are."""
    findings, _ = _check(tmp_path, "one.cu", bench.stress_cuda_function(size))
    blocks = size // 6
    assert findings == {"GL001": blocks, "GL002": 2 * blocks, "GL003": blocks, "GL004": 2 * blocks, "GL005": blocks}


def test_long_call_chain_is_lowered(tmp_path):
    """3,000 functions each calling the next, callers defined first: lowering visits callees
    first without recursing (it was 'too deeply nested to analyse')."""
    n = 3000
    lines = ["__global__ void touch(float *p) { p[0] = 1.0f; }", "__global__ void idle() {}"]
    lines += [f"void step{i}(float *p);" for i in range(n)]
    for i in range(n):
        lines += [f"void step{i}(float *p) {{", "  touch<<<1, 1>>>(p);", f"  step{i + 1}(p);" if i + 1 < n else "", "}"]
    lines += ["int main() {", "  float *p;", "  cudaMalloc(&p, 64);", "  idle<<<1, 1>>>();", "  step0(p);",
              "  return 0;", "}"]
    path = tmp_path / "chain.cu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = check_paths([str(path)], Settings(jobs=1))
    assert report.errors == []
    # p (allocated on main's third line) waits for one launch (GL001) and is never freed (GL005).
    alloc_row = 2 + n + 4 * n + 3
    assert sorted((f.code, f.location.row) for f in report.findings) == [("GL001", alloc_row), ("GL005", alloc_row)]


def test_gl003_reuse_search_from_the_nearest_leaf_answers_what_a_scan_answers() -> None:
    """GL003's tree of release times, searched bottom-up (issue 19, point 2), against a scan of
    every position, with positions chosen for reuse (set to -1) along the way."""
    import random

    from gpulint.rules.gl003_redundant_allocation import _MaxTree

    rng = random.Random(19)
    for _ in range(2000):
        n = rng.randint(0, 40)
        values = [float(rng.randint(-1, 10)) for _ in range(n)]
        tree = _MaxTree(values)
        for _ in range(20):
            if n and rng.random() < 0.3:
                i = rng.randrange(n)
                values[i] = float(rng.randint(-1, 10))
                tree.set(i, values[i])
            end, threshold = rng.randint(0, n + 2), float(rng.randint(-1, 11))  # times are >= 0: -1 is "none"
            expected = max((i for i in range(min(end, n)) if values[i] > threshold), default=-1)
            assert tree.rightmost_above(end, threshold) == expected


def test_first_from_climbs_to_the_answer_and_answers_what_a_scan_answers() -> None:
    """`Timeline.first_from` searched from the nearest events upwards, building only the tables it
    climbs to (issue 19, point 2), against a scan of the events."""
    import random

    from gpulint.findings import Location
    from gpulint.history import Event, Op, Timeline

    rng = random.Random(19)
    where = Location("a.cu", 1, 1)
    for _ in range(1500):
        timeline = Timeline(end_t=999)
        times = rng.sample(range(300), rng.randint(0, 140))  # in no order: the table sorts them
        for t in times:
            start = None if rng.random() < 0.2 else rng.randint(0, 100)
            timeline.events.append(Event(t, Op.LAUNCH, "k", where, stmt_start=start,
                                         stmt_end=None if start is None else start + 3))
        for _ in range(15):
            offset, after = rng.randint(-5, 110), rng.randint(-5, 305)
            expected = min((e.t for e in timeline.events if e.t > after and e.stmt_start is not None
                            and e.stmt_start >= offset), default=999)
            assert timeline.first_from(offset, after) == expected
