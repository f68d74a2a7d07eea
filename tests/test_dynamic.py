"""The dynamic core on traces built by hand: format, ordering, the DrGPUM analyses, what-if peak,
pool planning and `gpulint analyze`."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.ordering import topological_times
from gpulint.dynamic.planner import _simulate, best_fit_pool, plan
from gpulint.dynamic.trace import TraceError, TraceWriter, read_trace, write_events
from gpulint.rules import RULES
from test_cli import run

CODES = sorted(RULES)


def site(line: int) -> list:
    return [["app.cu", line, "main"]]


def alloc(t: int, obj: int, size: int, line: int | None = None, stream: int = 0) -> dict:
    return {"ev": "alloc", "t": t, "obj": obj, "size": size, "api": "cudaMalloc", "stream": stream,
            "site": site(line or 100 + obj)}


def launch(t: int, reads=(), writes=(), stream: int = 0, kernel: str = "k") -> dict:
    return {"ev": "launch", "t": t, "kernel": kernel, "stream": stream, "reads": list(reads), "writes": list(writes),
            "site": site(200 + t)}


def free(t: int, obj: int) -> dict:
    return {"ev": "free", "t": t, "obj": obj, "site": site(300 + obj)}


def findings(tmp_path: Path, events: list, name: str = "t.jsonl", **settings) -> list:
    path = write_events(tmp_path / name, events)
    return analyze(path, Settings(**{"min_bytes": 0, **settings}), CODES).findings


def by_code(found: list, code: str) -> list:
    return [f for f in found if f.code == code]


def worked_example() -> list:
    """DESIGN §7: allocated at T=2, first accessed at T=7, last at T=9, freed at T=12; T=3..6 and
    T=10..11 are launches that do not touch it."""
    events = [alloc(1, 1, 1024), alloc(2, 7, 4096)]
    events += [launch(t, [1], [1]) for t in range(3, 7)]
    events += [launch(7, [7]), launch(8, [1], [1]), launch(9, [7])]
    events += [launch(t, [1], [1]) for t in (10, 11)]
    return events + [free(12, 7), free(13, 1)]


def test_worked_example_distances(tmp_path: Path) -> None:
    found = findings(tmp_path, worked_example())
    early, late = by_code(found, "GL001"), by_code(found, "GL002")
    assert [(f.properties["object_id"], f.properties["distance"]) for f in early] == [(7, 4)]
    assert [(f.properties["object_id"], f.properties["distance"]) for f in late] == [(7, 2)]
    assert early[0].location.path == "app.cu" and early[0].location.row == 107  # the allocation site
    assert early[0].properties["size"] == 4096


def test_reuse_takes_the_nearest_initial_object_and_never_one_twice(tmp_path: Path) -> None:
    # A, B, C of one size allocated up front; A used at t=4, B at t=5..7, C at t=6.
    events = [alloc(1, 1, 1000), alloc(2, 2, 1000), alloc(3, 3, 1050), launch(4, [1]), launch(5, [2]),
              launch(6, [3]), launch(7, [2]), free(8, 1), free(9, 2), free(10, 3)]
    reuse = by_code(findings(tmp_path, events), "GL003")
    # C's first use follows A's last (B is still in use): C reuses A; B could only have reused A,
    # which C took.
    assert [(f.properties["object_id"], f.properties["reuses_object_id"]) for f in reuse] == [(3, 1)]
    # With B done before C starts, the nearest Initial object left of C is B, and B takes A.
    events = [alloc(1, 1, 1000), alloc(2, 2, 1000), alloc(3, 3, 1000), launch(4, [1]), launch(5, [2]),
              launch(6, [3]), free(8, 1), free(9, 2), free(10, 3)]
    reuse = by_code(findings(tmp_path, events, "u.jsonl"), "GL003")
    assert sorted((f.properties["object_id"], f.properties["reuses_object_id"]) for f in reuse) == [(2, 1), (3, 2)]


def test_reuse_needs_the_earlier_buffer_still_allocated(tmp_path: Path) -> None:
    events = [alloc(1, 1, 1000), launch(2, [1]), free(3, 1), alloc(4, 2, 1000), launch(5, [2]), free(6, 2)]
    assert by_code(findings(tmp_path, events), "GL003") == []


def test_other_streams_work_is_not_a_gap(tmp_path: Path) -> None:
    """Invocation order puts three launches between X's allocation and its use; they run on
    another stream on another object, so in topological order there are none."""
    events = [alloc(1, 1, 512), alloc(2, 2, 4096), launch(3, [1], [1], stream=2), launch(4, [1], [1], stream=2),
              launch(5, [1], [1], stream=2), launch(6, [2], stream=1), free(7, 2), free(8, 1)]
    times = topological_times(events)
    assert times[:6] == [0, 1, 2, 3, 4, 2]
    assert by_code(findings(tmp_path, events), "GL001") == []
    # The same launches on X's stream do delay its first use.
    serial = [dict(e, stream=1) if e["ev"] == "launch" else e for e in events]
    assert [f.properties["distance"] for f in by_code(findings(tmp_path, serial, "s.jsonl"), "GL001")] == [3]


def test_event_wait_orders_streams(tmp_path: Path) -> None:
    events = [alloc(1, 1, 64), launch(2, [], [1], stream=1), {"ev": "event_record", "t": 3, "event": 9, "stream": 1},
              {"ev": "event_wait", "t": 4, "event": 9, "stream": 2}, launch(5, [], [], stream=2)]
    times = topological_times(events)
    assert times[4] > times[1]
    no_wait = [e for e in events if not e["ev"].startswith("event")]
    assert topological_times(no_wait)[2] == topological_times(no_wait)[1]  # concurrent without the wait


@pytest.mark.parametrize("seed", range(12))
def test_column_ordering_is_the_event_by_event_ordering(seed: int) -> None:
    """`column_times` (the analysis's one loop over columns) gives each event the stamp
    `Orderer.stamp` gives it: random runs over four streams with synchronisations, recorded and
    awaited events, stream-ordered allocations and copies to and from the host."""
    import random

    from gpulint.dynamic.columns import columns_of
    from gpulint.dynamic.ordering import column_times

    rng = random.Random(seed)
    events: list[dict] = []
    live: list[int] = []
    next_obj = 1
    for t in range(1, 400):
        stream = rng.choice([0, 1, 2, 3, None])
        roll = rng.random()
        some = lambda: rng.sample(live, min(len(live), rng.randint(0, 3)))  # noqa: E731
        if roll < 0.15 or not live:
            live.append(next_obj)
            events.append({"ev": "alloc", "t": t, "obj": next_obj, "size": 64, "stream": stream,
                           "api": rng.choice(["cudaMalloc", "cudaMallocAsync", None])})
            next_obj += 1
        elif roll < 0.22:
            obj = live.pop(rng.randrange(len(live)))
            events.append({"ev": "free", "t": t, "obj": obj, "stream": stream,
                           "api": rng.choice(["cudaFree", "cudaFreeAsync"])})
        elif roll < 0.55:
            events.append({"ev": "launch", "t": t, "kernel": "k", "stream": stream, "reads": some(), "writes": some()})
        elif roll < 0.7:
            events.append({"ev": "memcpy", "t": t, "size": 64, "kind": "d2d", "stream": stream,
                           "dst": rng.choice([None, *live]), "src": rng.choice([None, *live])})
        elif roll < 0.77:
            events.append({"ev": "memset", "t": t, "obj": rng.choice(live), "size": 8, "stream": stream})
        elif roll < 0.84:
            events.append({"ev": "sync", "t": t, "scope": rng.choice(["device", "stream", "event"]),
                           "stream": stream, "event": rng.randint(1, 3)})
        elif roll < 0.92:
            events.append({"ev": "event_record", "t": t, "event": rng.randint(1, 3), "stream": stream})
        else:
            events.append({"ev": "event_wait", "t": t, "event": rng.randint(1, 3), "stream": stream})
    expected = [-1 if stamp is None else stamp for stamp in topological_times(events)]
    assert column_times(columns_of(events)).tolist() == expected


def test_what_if_savings_and_bounds(tmp_path: Path) -> None:
    # A (4000 B) is last used at t=2 but freed at t=6; B (1000 B) is allocated at t=3 and used
    # then: the peak 5000 B drops to 4000 B when A is freed right after its last use.
    events = [alloc(1, 1, 4000), launch(2, [1]), alloc(3, 2, 1000), launch(4, [2]), launch(5, []), free(6, 1),
              free(7, 2)]
    result = analyze(write_events(tmp_path / "w.jsonl", events), Settings(min_bytes=0), CODES)
    assert result.peaks.actual == 5000 and result.peaks.all_fixed == 4000 and result.peaks.lower_bound == 4000
    late = by_code(result.findings, "GL002")
    saved = {f.properties["object_id"]: f.properties["peak_saved_bytes"] for f in late}
    assert saved[1] == 1000
    assert result.findings[0].properties["peak_saved_bytes"] == max(f.properties["peak_saved_bytes"]
                                                                     for f in result.findings)  # ranked


def test_planner_and_best_fit_are_not_monotone() -> None:
    sequence = [("alloc", "A1", 5), ("alloc", "A2", 2), ("alloc", "A3", 1), ("free", "A2", 0), ("alloc", "A4", 1),
                ("free", "A1", 0), ("free", "A3", 0), ("alloc", "A5", 8)]
    assert _simulate(sequence, 9) is None
    assert _simulate(sequence, 11) is not None
    assert best_fit_pool(sequence).pool_bytes == 9
    planning = plan({"a": (0, 10, 5), "b": (2, 4, 3), "c": (5, 9, 3), "d": (10, 12, 8)})
    assert planning.lower_bound == 8 and planning.best.pool_bytes == 8
    offsets = planning.best.offsets
    assert offsets["b"] == offsets["c"] == 5  # b and c never live together: they share bytes


def bitmap_trace(tmp_path: Path, touched: list[np.ndarray], counts: np.ndarray | None = None) -> Path:
    path = tmp_path / "b.jsonl"
    with TraceWriter(path, collector="test", granularity=32) as writer:
        writer.write(alloc(1, 1, 32 * len(touched[0])))
        for i, bits in enumerate(touched):
            writer.write(launch(2 + i, [1]))
            writer.add_bitmap(1, 2 + i, bits, None)
        if counts is not None:
            writer.add_counts(1, None, counts)
        writer.write(free(2 + len(touched), 1))
    return path


def test_quarter_of_a_buffer_is_overallocated(tmp_path: Path) -> None:
    bits = np.zeros(128, dtype=bool)
    bits[:32] = True
    found = analyze(bitmap_trace(tmp_path, [bits]), Settings(min_bytes=0), CODES).findings
    over = by_code(found, "GL008")
    assert len(over) == 1
    props = over[0].properties
    assert props["accessed_percent"] == 25.0 and props["fragmentation"] == 0.0
    assert props["untouched_ranges"] == [[1024, 4096]] and props["peak_saved_bytes"] == 3072


@pytest.mark.parametrize("copied, expected", [(4096, None), (2048, 50.0), (0, 25.0)])
def test_copies_and_memsets_count_as_accesses(tmp_path: Path, copied: int, expected: float | None) -> None:
    """A buffer a copy fills (simpleMultiCopy's 256 MiB inputs) is used that far, whatever its
    kernels touch: GL008 and the what-if shrink count copy and memset extents."""
    bits = np.zeros(128, dtype=bool)
    bits[:32] = True  # the kernel touches the first quarter
    path = tmp_path / "c.jsonl"
    with TraceWriter(path, collector="test", granularity=32) as writer:
        writer.write(alloc(1, 1, 4096))
        if copied:
            writer.write({"ev": "memcpy", "t": 2, "dst": 1, "src": None, "size": copied // 2, "kind": "h2d",
                          "dst_offset": 0, "stream": 0, "site": site(50)})
            writer.write({"ev": "memset", "t": 3, "obj": 1, "size": copied // 2, "offset": copied // 2, "stream": 0,
                          "site": site(51)})
        writer.write(launch(4, [1]))
        writer.add_bitmap(1, 4, bits, None)
        writer.write(free(5, 1))
    over = by_code(analyze(path, Settings(min_bytes=0), CODES).findings, "GL008")
    assert [f.properties["accessed_percent"] for f in over] == ([] if expected is None else [expected])
    if expected is not None:
        assert over[0].properties["peak_saved_bytes"] == 4096 - max(copied, 1024)


@pytest.mark.parametrize("binary", [False, True])
def test_launches_left_uninstrumented_withhold_what_bitmaps_would_claim(tmp_path: Path, binary: bool) -> None:
    """`--sample 2`: launch 1 instrumented (a quarter touched), launch 2 left out (`args_only`:
    it may touch the rest).  The quarter is what the object at least saw, so GL008 does not claim
    75% unused, and the report says why; an object no uninstrumented launch used is judged."""
    from gpulint.dynamic import tracebin

    bits = np.zeros(128, dtype=bool)
    bits[:32] = True
    path = tmp_path / "s.jsonl"
    with TraceWriter(path, collector="test", granularity=32) as writer:
        writer.write(alloc(1, 1, 4096))
        writer.write(alloc(2, 2, 4096))
        writer.write(launch(3, [1, 2]))
        writer.add_bitmap(1, 3, bits, None)
        writer.add_bitmap(2, 3, bits, None)
        writer.write({**launch(4, [1], [1]), "args_only": True})
        writer.write(free(5, 1))
        writer.write(free(6, 2))
    if binary:
        tracebin.convert(path, tmp_path / "s.gltrace")
        path = tmp_path / "s.gltrace"
    result = analyze(path, Settings(min_bytes=0), CODES)
    assert [f.obj for f in by_code(result.findings, "GL008")] == [result.run.by_obj[2].name]
    assert any("did not instrument" in w and "1 object " in w for w in result.warnings), result.warnings


def test_scattered_holes_are_not_offered_a_shrink(tmp_path: Path) -> None:
    bits = np.zeros(128, dtype=bool)
    bits[::4] = True  # 25% touched, in 96 one-granule holes
    assert by_code(analyze(bitmap_trace(tmp_path, [bits]), Settings(min_bytes=0), CODES).findings, "GL008") == []


def test_disjoint_slices_are_structured_access(tmp_path: Path) -> None:
    slices = []
    for i in range(4):
        bits = np.zeros(64, dtype=bool)
        bits[16 * i:16 * (i + 1)] = True
        slices.append(bits)
    found = analyze(bitmap_trace(tmp_path, slices), Settings(min_bytes=0), CODES).findings
    assert [f.properties["slices"] for f in by_code(found, "GL010")] == [4]
    overlapping = [s | np.roll(s, 1) for s in slices]
    assert by_code(analyze(bitmap_trace(tmp_path, overlapping), Settings(min_bytes=0), CODES).findings, "GL010") == []


def test_hot_elements_are_non_uniform_access(tmp_path: Path) -> None:
    bits = np.ones(8, dtype=bool)
    hot = np.full(64, 2, dtype=np.uint32)
    hot[:4] = 200
    found = by_code(analyze(bitmap_trace(tmp_path, [bits], hot), Settings(min_bytes=0), CODES).findings, "GL009")
    assert len(found) == 1 and found[0].properties["coefficient_of_variation"] > 0.2
    assert any("#" in line for line in found[0].properties["histogram"])
    even = np.full(64, 7, dtype=np.uint32)
    assert by_code(analyze(bitmap_trace(tmp_path, [bits], even), Settings(min_bytes=0), CODES).findings, "GL009") == []


def test_pool_reserving_much_more_than_live(tmp_path: Path) -> None:
    events = [alloc(1, 1, 100), {"ev": "pool", "t": 2, "pool": "torch", "reserved": 2 << 20, "allocated": 1 << 20},
              {"ev": "pool", "t": 3, "pool": "torch", "reserved": 2 << 20, "allocated": 1 << 19}, free(4, 1)]
    pool = by_code(findings(tmp_path, events), "GL104")
    assert [(f.properties["reserved_peak"], f.properties["live_peak"]) for f in pool] == [(2 << 20, 1 << 20)]


def test_truncated_last_line_is_tolerated_and_bad_middle_line_is_not(tmp_path: Path) -> None:
    path = write_events(tmp_path / "t.jsonl", worked_example())
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"ev":"launch","t":14,"ker')
    trace = read_trace(path)
    assert len(trace.events) == len(worked_example()) and "cut short" in trace.warnings[0]
    path.write_bytes(whole.replace(b'"t":5,', b'"t":5,,', 1))
    with pytest.raises(TraceError, match=r"t\.jsonl:\d+: not a JSON event"):
        read_trace(path)


def test_gzip_round_trip(tmp_path: Path) -> None:
    path = write_events(tmp_path / "t.jsonl.gz", worked_example())
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert len(read_trace(path).events) == len(worked_example())
    with gzip.open(path, "rb") as f:
        data = f.read()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(data)[:-30])  # a crash mid-stream
    assert 0 < len(read_trace(cut).events) <= len(worked_example())


def test_unknown_major_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    path.write_text(json.dumps({"ev": "meta", "version": 2, "collector": "native"}) + "\n")
    with pytest.raises(TraceError, match="version 2 is not supported"):
        read_trace(path)
    result = run("analyze", "--min-bytes", "0", str(path))
    assert result.exit_code == 2 and "version 2 is not supported" in result.output
    path.write_text(json.dumps({"ev": "meta", "version": "1.3", "collector": "native"}) + "\n")
    assert read_trace(path).events == []  # a newer minor version still loads


def test_analyze_cli_formats(tmp_path: Path) -> None:
    import jsonschema

    path = write_events(tmp_path / "w.jsonl", worked_example())
    text = run("analyze", "--min-bytes", "0", str(path))
    assert text.exit_code == 1 and "GL001" in text.output and "peak" in text.output
    data = json.loads(run("analyze", "--min-bytes", "0", "--format", "json", str(path)).stdout)
    assert {f["code"] for f in data} >= {"GL001", "GL002"}
    assert all("peak_saved_bytes" in f["properties"] for f in data)
    sarif = json.loads(run("analyze", "--min-bytes", "0", "--format", "sarif", str(path)).stdout)
    schema = json.loads((Path(__file__).resolve().parents[2] / "shared/schemas/sarif-schema-2.1.0.json").read_text()) \
        if (Path(__file__).resolve().parents[2] / "shared/schemas/sarif-schema-2.1.0.json").exists() else None
    if schema is not None:
        jsonschema.validate(sarif, schema)
    assert all("peak_saved_bytes" in r["properties"] for r in sarif["runs"][0]["results"])
    github = run("analyze", "--min-bytes", "0", "--format", "github", str(path)).stdout
    assert github.startswith("::warning file=app.cu,line=") and "peak" in github
    assert run("analyze", "--min-bytes", "0", "--exit-zero", str(path)).exit_code == 0


def test_the_documented_example_trace(tmp_path: Path) -> None:
    """docs/trace-format.md's example says what `gpulint analyze` reports on it."""
    repo = Path(__file__).resolve().parents[1]
    result = analyze(repo / "examples/trace/heat.jsonl", Settings(min_bytes=0), CODES)
    assert (result.peaks.actual, result.peaks.all_fixed, result.peaks.lower_bound) == (8 << 20, 5 << 20, 8 << 20)
    assert [(f.code, f.properties["object_id"], f.properties["peak_saved_bytes"]) for f in result.findings] == [
        ("GL008", 2, 3 << 20), ("GL002", 1, 0), ("GL001", 2, 0)]  # object 2 is read back at t=8: no GL002
    doc = (repo / "docs/trace-format.md").read_text()
    shown = doc.split('```\n{"ev":"meta"', 1)[1].split("```", 1)[0]
    assert shown.strip().splitlines()[0].startswith('","version":1') or '"version":1' in shown
    assert len(('{"ev":"meta"' + shown).strip().splitlines()) == len(read_trace(repo / "examples/trace/heat.jsonl").events) + 1


def late_trace(tmp_path: Path, name: str, free_early: bool) -> Path:
    """A run of test_cli.LATE_FREE (late.cu): d_a allocated at line 5, used at 6; d_b at 7, used
    at 8; frees at 9 (d_b) and 10 (d_a)."""
    s = lambda line: [["late.cu", line, "main"]]  # noqa: E731
    events = [{"ev": "alloc", "t": 1, "obj": 1, "size": 1024, "api": "cudaMalloc", "site": s(5)},
              {"ev": "launch", "t": 2, "kernel": "phase1", "reads": [], "writes": [1], "site": s(6)}]
    if free_early:
        events.append({"ev": "free", "t": 3, "obj": 1, "site": s(10)})
    events += [{"ev": "alloc", "t": 4, "obj": 2, "size": 1024, "api": "cudaMalloc", "site": s(7)},
               {"ev": "launch", "t": 5, "kernel": "phase2", "reads": [2], "writes": [2], "site": s(8)},
               {"ev": "free", "t": 6, "obj": 2, "site": s(9)}]
    if not free_early:
        events.append({"ev": "free", "t": 7, "obj": 1, "site": s(10)})
    return write_events(tmp_path / name, events)


def test_confirm_marks_static_findings(tmp_path: Path) -> None:
    from test_cli import LATE_FREE

    (tmp_path / "late.cu").write_text(LATE_FREE)

    def marks(trace: Path) -> dict:
        result = run("check", "--format", "json", "--no-cache", "--min-bytes", "0", "--confirm", str(trace), "late.cu", cwd=tmp_path)
        assert result.exit_code == 1, result.output
        return {(f["code"], f["object"]): f["properties"].get("confirmation")
                for f in json.loads(result.stdout)}

    assert marks(late_trace(tmp_path, "same.jsonl", free_early=False)) == {("GL002", "d_a"): "confirmed",
                                                                          ("GL003", "d_b"): "confirmed"}
    assert marks(late_trace(tmp_path, "early.jsonl", free_early=True)) == {("GL002", "d_a"): "refuted",
                                                                          ("GL003", "d_b"): "refuted"}
    empty = write_events(tmp_path / "none.jsonl", [])
    assert marks(empty) == {("GL002", "d_a"): "unobserved", ("GL003", "d_b"): "unobserved"}
    data = json.loads(run("check", "--format", "json", "--no-cache", "--min-bytes", "0", "--confirm", str(tmp_path / "same.jsonl"),
                          "late.cu", cwd=tmp_path).stdout)
    confirmed = next(f for f in data if f["code"] == "GL002")
    assert confirmed["properties"]["measured_distance"] == 1 and "peak_saved_bytes" in confirmed["properties"]
    text = run("check", "--no-cache", "--min-bytes", "0", "--confirm", str(tmp_path / "same.jsonl"), "late.cu", cwd=tmp_path).stdout
    assert "confirmed by the run" in text
    sarif = json.loads(run("check", "--format", "sarif", "--no-cache", "--min-bytes", "0", "--confirm", str(tmp_path / "early.jsonl"),
                           "late.cu", cwd=tmp_path).stdout)
    assert {r["properties"]["confirmation"] for r in sarif["runs"][0]["results"]} == {"refuted"}


def test_confirm_adds_what_only_the_run_shows(tmp_path: Path) -> None:
    from test_cli import LATE_FREE

    (tmp_path / "late.cu").write_text(LATE_FREE)
    bits = np.zeros(32, dtype=bool)
    bits[:4] = True
    path = tmp_path / "run.jsonl"
    with TraceWriter(path, collector="test") as writer:
        for event in json.loads(json.dumps([e for e in read_trace(late_trace(tmp_path, "x.jsonl", False)).events])):
            writer.write(event)
        writer.add_bitmap(2, 5, bits, bits)
    data = json.loads(run("check", "--format", "json", "--no-cache", "--min-bytes", "0", "--confirm", str(path), "late.cu",
                          cwd=tmp_path).stdout)
    extra = [f for f in data if f["properties"].get("confirmation") == "trace-only"]
    assert [(f["code"], f["properties"]["accessed_percent"]) for f in extra] == [("GL008", 12.5)]


def test_report_summary_perfetto_and_plot(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    trace = repo / "examples/trace/heat.jsonl"
    out = run("report", str(trace), "--perfetto", str(tmp_path / "t.json"), cwd=tmp_path)
    assert out.exit_code == 0, out.output
    for text in ("Peak device memory", "actual peak", "8.0 MiB", "offset plan", "best-fit allocator", "Largest objects",
                 "Findings by peak saved", "GL008"):
        assert text in out.stdout, text
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "stream 0" in names and any(n.startswith("cudaMalloc#2") for n in names)
    assert {e["cat"] for e in events if e["ph"] == "X"} >= {"launch", "alloc", "free", "copy", "live"}
    assert {e["name"] for e in events if e["ph"] == "i"} == {"GL001", "GL002", "GL008"}
    # The memory counter track: its highest value is the run's peak, the fixed curve never above it.
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and {e["name"] for e in counters} == {"live bytes"}
    assert max(e["args"]["live"] for e in counters) == 8 << 20  # the summary's "8.0 MiB" peak
    assert all(e["args"]["every finding fixed"] <= e["args"]["live"] for e in counters)
    assert [e["ts"] for e in counters] == sorted(e["ts"] for e in counters)
    worked = write_events(tmp_path / "w.jsonl", worked_example())
    assert run("report", str(worked), "--perfetto", str(tmp_path / "w.json"), cwd=tmp_path).exit_code == 0
    idle = [e for e in json.loads((tmp_path / "w.json").read_text())["traceEvents"] if e.get("cat") == "idle"]
    assert idle and all(e["dur"] > 0 for e in idle)
    pytest.importorskip("matplotlib")
    plotted = run("report", str(trace), "--plot", str(tmp_path / "m.svg"), cwd=tmp_path)
    assert plotted.exit_code == 0 and (tmp_path / "m.svg").read_text().lstrip().startswith("<?xml")


def test_perfetto_is_in_real_time_where_every_event_has_its_host_time(tmp_path: Path) -> None:
    events = worked_example()
    for e in events:  # one step every 2 ms, the first at 5 s on the host's clock; step 4 took 10 ms
        e["ns"] = 5 * 10**9 + 2_000_000 * e["t"] + (8_000_000 if e["t"] >= 5 else 0)
    trace = write_events(tmp_path / "real.jsonl", events)
    assert run("report", str(trace), "--perfetto", str(tmp_path / "real.json"), cwd=tmp_path).exit_code == 0
    exported = json.loads((tmp_path / "real.json").read_text())
    assert exported["otherData"]["time"] == "real"
    slices = {e["args"]["at"]: e for e in exported["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    # The first event (t=1) is at 0; t=3 is 4 ms later, t=4 6 ms, t=5 16 ms (microseconds on the axis).
    assert slices["app.cu:101"]["ts"] == 0.0
    launches = sorted(e["ts"] for e in exported["traceEvents"] if e["ph"] == "X" and e.get("cat") == "launch")
    assert launches[:3] == [4000.0, 6000.0, 16000.0]
    assert slices["app.cu:101"]["dur"] == 2000.0  # until the next step
    counters = [e["ts"] for e in exported["traceEvents"] if e["ph"] == "C"]
    assert counters == sorted(counters) and counters[-1] <= (2_000_000 * 13 + 8_000_000 - 2_000_000) / 1000
    live = [e for e in exported["traceEvents"] if e.get("cat") == "live"]
    assert live and all(e["dur"] > 0 for e in live)
    # One event without a host time: the whole export stays in steps (1 ms each).
    del events[3]["ns"]
    partial = write_events(tmp_path / "partial.jsonl", events)
    assert run("report", str(partial), "--perfetto", str(tmp_path / "p.json"), cwd=tmp_path).exit_code == 0
    stepped = json.loads((tmp_path / "p.json").read_text())
    assert stepped["otherData"]["time"] == "steps"
    assert {e["ts"] % 1000 for e in stepped["traceEvents"] if e["ph"] == "X"} == {0}


def test_perfetto_api_slices_are_the_timelines_events(tmp_path: Path) -> None:
    """The stream tracks are written from the trace's columns, one JSON prefix per distinct call:
    each slice must still be its event's (name, category, stream, stack, time), flushes included."""
    from gpulint.dynamic.report import perfetto

    events = worked_example()
    events += [launch(14, [1], [1], stream=3, kernel="other"), launch(15, [1], stream=3, kernel="k"),
               {"ev": "flush", "t": 15, "api": "torch.cuda.empty_cache", "site": site(140)},
               {"ev": "flush", "t": 15, "api": "gc", "site": site(141)}]
    path = write_events(tmp_path / "s.jsonl", events)
    analysis = analyze(path, Settings(min_bytes=0), sorted(RULES))
    count = perfetto(analysis, tmp_path / "s.json")
    exported = json.loads((tmp_path / "s.json").read_text())["traceEvents"]
    assert len(exported) == count
    slices = [(e["name"], e["cat"], e["tid"], e["args"]["at"], e["ts"]) for e in exported
              if e["ph"] == "X" and e["pid"] == 1]
    timeline = [e for e in analysis.run.unit.timelines[0].events if e.op.value != "exit"]
    assert slices == [(e.api, e.op.value, e.stream or 0, e.location.where, e.t * 1000.0) for e in timeline]
    assert {"torch.cuda.empty_cache", "gc", "other", "k"} <= {name for name, *_ in slices}
    assert {tid for _, _, tid, _, _ in slices} == {0, 3}


def test_plot_without_matplotlib_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    repo = Path(__file__).resolve().parents[1]
    out = run("report", str(repo / "examples/trace/heat.jsonl"), "--plot", str(tmp_path / "m.png"), cwd=tmp_path)
    assert out.exit_code == 2 and "pip install 'gpulint[report]'" in out.output


def test_peak_with_matches_a_brute_force_sweep() -> None:
    import random

    from gpulint.dynamic.whatif import Profile

    rng = random.Random(7)
    for _ in range(100):
        intervals = {i: (s := rng.randint(0, 50), s + rng.randint(1, 30), rng.randint(1, 100))
                     for i in range(rng.randint(1, 30))}
        changes = [[((s := rng.randint(0, 80), s + rng.randint(1, 20), rng.randint(1, 100)), rng.choice([-1, 1]))
                    for _ in range(rng.randint(1, 4))] for _ in range(4)]
        profile = Profile(intervals, [x for change in changes for (s, e, _), _ in change for x in (s, e)])
        for change in changes:
            every = list(intervals.values()) + [(s, e, sign * size) for (s, e, size), sign in change]
            brute = max(0, max(sum(size for s, e, size in every if s <= t < e) for t in range(120)))
            assert profile.peak_with(change) == brute


def test_caching_allocator_segments_are_not_the_programs_objects(tmp_path: Path) -> None:
    """A segment the torch allocator took from the driver is never freed and no launch names it:
    no GL004 / GL005 on it, but it counts towards the peak."""
    events = [dict(alloc(1, 1, 2 << 20), segment="torch"), alloc(2, 2, 1024), launch(3, [2]), free(4, 2)]
    result = analyze(write_events(tmp_path / "s.jsonl", events), Settings(min_bytes=0), CODES)
    assert [f for f in result.findings if f.properties.get("object_id") == 1] == []
    assert result.peaks.actual == (2 << 20) + 1024


def realloc_trace(tmp_path: Path, iterations: int, free_each: bool) -> Path:
    events, t = [], 0
    for i in range(iterations):
        t += 1
        events.append({"ev": "alloc", "t": t, "obj": i + 1, "size": 4 << 20, "api": "cudaMalloc", "site": site(7)})
        t += 1
        events.append(launch(t, [], [i + 1]))
        if free_each:
            t += 1
            events.append({"ev": "free", "t": t, "obj": i + 1, "site": site(9)})
    if not free_each:
        for i in range(iterations):
            t += 1
            events.append({"ev": "free", "t": t, "obj": i + 1, "site": site(9)})
    return write_events(tmp_path / "r.jsonl", events)


@pytest.mark.parametrize("iterations, free_each, expected", [(5, True, [5]), (2, True, []), (5, False, [])])
def test_alloc_in_loop_from_a_trace_alone(tmp_path: Path, iterations: int, free_each: bool, expected: list) -> None:
    found = by_code(analyze(realloc_trace(tmp_path, iterations, free_each), Settings(), CODES).findings, "GL101")
    assert [f.properties["allocations"] for f in found] == expected
    if expected:
        assert found[0].location.row == 7 and "allocated 4.0 MiB 5 times" in found[0].message


def upload_trace(tmp_path: Path, digests: list[str]) -> Path:
    events = [{"ev": "alloc", "t": 1, "obj": 1, "size": 4 << 20, "api": "cudaMalloc", "site": site(5)}]
    t = 1
    for digest in digests:
        t += 1
        events.append({"ev": "memcpy", "t": t, "dst": 1, "src": None, "size": 4 << 20, "kind": "h2d", "stream": 0,
                       "dst_offset": 0, "src_offset": 0, "digest": digest, "site": site(12)})
        t += 1
        events.append(launch(t, [1], []))
    events.append(free(t + 1, 1))
    return write_events(tmp_path / "u.jsonl", events)


def test_repeated_upload_from_a_trace_alone(tmp_path: Path) -> None:
    same = by_code(analyze(upload_trace(tmp_path, ["ab" * 8] * 4), Settings(), CODES).findings, "GL103")
    assert [(f.location.row, f.properties["uploads"], f.properties["repeated_uploads"]) for f in same] == [(12, 4, 3)]
    assert "4 uploads carrying only 1 distinct contents" in same[0].message
    assert "the same 4.0 MiB 4 times" in same[0].message
    cycling = analyze(upload_trace(tmp_path, ["ab" * 8, "cd" * 8] * 3), Settings(), CODES).findings
    assert [f.properties["distinct"] for f in by_code(cycling, "GL103")] == [2]  # one finding for the site
    changing = analyze(upload_trace(tmp_path, [f"{i:016x}" for i in range(4)]), Settings(), CODES).findings
    assert by_code(changing, "GL103") == []


def test_confirm_refutes_a_loop_upload_whose_bytes_change(tmp_path: Path) -> None:
    """A static GL103 at a line whose uploads carried other bytes each time is refuted."""
    from gpulint.dynamic.confirm import confirm
    from gpulint.findings import Finding, Location

    static = Finding("GL103", "loop-invariant-transfer", "copies the same data", Location("app.cu", 12, 5))
    analysis = analyze(upload_trace(tmp_path, [f"{i:016x}" for i in range(4)]), Settings(), CODES)
    confirm([static], analysis)
    assert static.properties["confirmation"] == "refuted"
    static = Finding("GL103", "loop-invariant-transfer", "copies the same data", Location("app.cu", 12, 5))
    analysis = analyze(upload_trace(tmp_path, ["ab" * 8] * 4), Settings(), CODES)
    marked = confirm([static], analysis)
    assert static.properties["confirmation"] == "confirmed"
    assert [f for f in marked if f.code == "GL103"] == [static]  # the run's own GL103 is this one


def test_host_digest_samples_large_buffers() -> None:
    import ctypes

    from gpulint.dynamic.collectors.recorder import DIGEST_WHOLE, host_digest

    small = ctypes.create_string_buffer(b"x" * 1000)
    assert host_digest(ctypes.addressof(small), 1000) == host_digest(ctypes.addressof(small), 1000)
    assert host_digest(ctypes.addressof(small), 1000) != host_digest(ctypes.addressof(small), 999)
    big = (ctypes.c_ubyte * (4 * DIGEST_WHOLE))()
    before = host_digest(ctypes.addressof(big), len(big))
    big[0] = 1  # inside the first window
    assert host_digest(ctypes.addressof(big), len(big)) != before
    assert host_digest(0, 10) is None


def gramschmidt_trace(tmp_path: Path, n: int = 32) -> Path:
    """R of Gram-Schmidt (n x n floats, one row = 4 granules of 32 bytes): iteration k's kernel1
    writes r[k][k], kernel2 reads it, kernel3 writes r[k][j] for j > k, reading q and a over n
    rows each (2n accesses per element).  Counts per launch, as the native collector records."""
    path = tmp_path / "g.jsonl"
    row_granules = n * 4 // 32
    t = 1
    with TraceWriter(path, collector="test", granularity=32) as writer:
        writer.write(alloc(t, 1, n * n * 4))
        for k in range(n):
            for kernel in ("gramschmidt_kernel1", "gramschmidt_kernel2", "gramschmidt_kernel3"):
                t += 1
                writer.write(launch(t, [1], [1], kernel=kernel))
                counts = np.zeros(n * n, dtype=np.uint32)
                if kernel == "gramschmidt_kernel3":
                    counts[k * n + k + 1:(k + 1) * n] = 2 * n
                else:
                    counts[k * n + k] = 1
                bits = np.zeros(n * row_granules, dtype=bool)
                touched = np.flatnonzero(counts)
                bits[np.unique(touched * 4 // 32)] = True
                writer.add_bitmap(1, t, bits, None)
                writer.add_counts(1, t, counts)
        writer.write(free(t + 1, 1))
    return path


def test_gramschmidt_rows_are_structured_and_non_uniform(tmp_path: Path) -> None:
    """DrGPUM's GRAMSCHM R_gpu rows: structure per kernel (the three kernels of an iteration share
    row k), and the access totals per row fall linearly: a coefficient of variation near 58%."""
    found = analyze(gramschmidt_trace(tmp_path), Settings(min_bytes=0), CODES).findings
    structured = by_code(found, "GL010")
    assert [(f.properties["kernel"], f.properties["slices"]) for f in structured] == [("gramschmidt_kernel3", 31)]
    hot = by_code(found, "GL009")
    assert len(hot) == 1 and hot[0].properties["measure"] == "slices"
    assert 0.5 < hot[0].properties["coefficient_of_variation"] < 0.65


def test_frequency_is_per_launch(tmp_path: Path) -> None:
    """Two launches, each hot on its own half: the run's totals are uniform, each launch is not
    (DrGPUM zeroes the counts at every GPU API)."""
    path = tmp_path / "p.jsonl"
    bits = np.ones(8, dtype=bool)
    with TraceWriter(path, collector="test", granularity=32) as writer:
        writer.write(alloc(1, 1, 256))
        for t, hot in ((2, slice(0, 32)), (3, slice(32, 64))):
            counts = np.ones(64, dtype=np.uint32)
            counts[hot] = 20
            writer.write(launch(t, [1], [1], kernel="k"))
            writer.add_bitmap(1, t, bits, None)
            writer.add_counts(1, t, counts)
        writer.write(free(4, 1))
    hot = by_code(analyze(path, Settings(min_bytes=0), CODES).findings, "GL009")
    assert len(hot) == 1 and hot[0].properties["measure"] == "per-launch"
    assert hot[0].properties["coefficient_of_variation"] > 0.8


def test_a_launch_points_at_its_launch_not_at_the_kernels_host_stub(tmp_path: Path) -> None:
    """nvcc's host stub has the kernel's name and its definition's line: the launch's location
    is the user's `<<<...>>>` line below it."""
    stack = [["3mm.cu", 103, "mm3_kernel1"], ["3mm.cu", 249, "mm3Cuda"], ["3mm.cu", 300, "main"]]
    events = [alloc(1, 1, 4096),
              {"ev": "launch", "t": 2, "kernel": "mm3_kernel1(int, float*)", "stream": 0, "reads": [1], "writes": [],
               "site": stack},
              {"ev": "launch", "t": 3, "kernel": "other<float>(float*)", "stream": 0, "reads": [1], "writes": [],
               "site": stack}, free(4, 1)]
    result = analyze(write_events(tmp_path / "k.jsonl", events), Settings(min_bytes=0), CODES)
    launches = [e for e in result.run.unit.timelines[0].events if e.op.value == "launch"]
    assert [e.location.row for e in launches] == [249, 103]


def test_range_maxima_match_numpy() -> None:
    from gpulint.dynamic.whatif import RangeMax

    rng = np.random.default_rng(3)
    for n in (1, 2, 15, 16, 17, 100, 1000):
        values = rng.integers(-50, 1000, n)
        ranges = RangeMax(values)
        lo = rng.integers(0, n, 300)
        hi = lo + 1 + rng.integers(0, n, 300) % (n - lo)
        expected = [int(values[a:b].max()) for a, b in zip(lo, hi)]
        assert ranges.many(lo, hi).tolist() == expected
        assert [ranges.one(int(a), int(b)) for a, b in zip(lo, hi)] == expected


def test_many_window_fixes_match_a_brute_force_sweep() -> None:
    """The array path of the what-if (an object idle in many gaps) and its batch for every such
    finding at once give the peaks a sweep over every time step gives."""
    import random

    from gpulint.dynamic.whatif import Change, Profile, Signed, WhatIf, _signed_one

    rng = random.Random(11)
    for _ in range(40):
        intervals = {i: (s := rng.randint(0, 100), s + rng.randint(1, 80), rng.randint(1, 100))
                     for i in range(rng.randint(1, 20))}
        changes = []
        for obj, (start, end, _) in intervals.items():
            cuts = sorted(rng.sample(range(start - 5, end + 5), min(24, end - start + 10)))
            windows = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if b > a]
            if len(windows) > 8:
                changes.append(Change(obj, [], starts=np.array([w[0] for w in windows]),
                                      ends=np.array([w[1] for w in windows])))
        bounds = [x for c in changes for x in (*c.starts.tolist(), *c.ends.tolist())]
        profile = Profile(intervals, bounds)
        model = WhatIf.__new__(WhatIf)
        model.intervals, model.profile = intervals, profile
        batch = model.peaks_without(changes)
        for change, batched in zip(changes, batch):
            start, end, size = intervals[change.obj]
            signed = _signed_one(intervals, change)
            assert isinstance(signed, Signed) and signed.small is None  # the array path
            removed = [(max(a, start), min(b, end)) for a, b in zip(change.starts.tolist(), change.ends.tolist())]
            every = [(s, e, z) for o, (s, e, z) in intervals.items()] + [(a, b, -size) for a, b in removed if b > a]
            brute = max(0, max(sum(z for s, e, z in every if s <= t < e) for t in range(200)))
            assert profile.peak_with(signed) == brute
            assert batched in (brute, None)  # None: windows that overlap, computed one by one
