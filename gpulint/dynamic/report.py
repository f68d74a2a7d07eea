"""`gpulint report TRACE`: a terminal summary (peak, what-if, pool plan, top objects, findings),
a Perfetto / Chrome-trace timeline, and a memory-over-time plot."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import numpy as np

from gpulint.dynamic.analyze import Analysis
from gpulint.dynamic.columns import KIND
from gpulint.dynamic.runmodel import RunSpans, RunTimeline
from gpulint.dynamic.planner import Planning, Simulation, alloc_free_sequence, best_fit_pool, plan
from gpulint.dynamic.whatif import lifetimes
from gpulint.findings import human_bytes


def planning(analysis: Analysis) -> tuple[Planning, Simulation]:
    spans = lifetimes(analysis.run)
    return plan(spans), best_fit_pool(alloc_free_sequence(spans))


def summary(analysis: Analysis, console: Any, top: int = 10) -> None:
    """Rich tables: the peaks, the pool plan, the largest objects, the findings by saving."""
    from rich.table import Table

    peaks = analysis.peaks
    pool_plan, simulation = planning(analysis)
    meta = analysis.run.trace.meta
    console.print(f"[bold]{' '.join(meta.get('argv') or ['?'])}[/bold] on {meta.get('device') or 'an unknown device'} "
                  f"({meta.get('collector', '?')} collector)")
    table = Table(title="Peak device memory", show_header=True)
    table.add_column("what")
    table.add_column("bytes", justify="right")
    table.add_column("vs. actual", justify="right")
    rows = [("actual peak", peaks.actual),
            ("with every finding fixed", peaks.all_fixed),
            ("tight liveness (lower bound for lifetime fixes)", peaks.lower_bound),
            (f"offset plan, one pool ({pool_plan.best.strategy})", pool_plan.best.pool_bytes),
            ("best-fit allocator needs", simulation.pool_bytes)]
    for label, value in rows:
        share = f"{100 * value / peaks.actual:.1f}%" if peaks.actual else "-"
        table.add_row(label, human_bytes(value), share)
    console.print(table)
    console.print(f"best-fit fragmentation overhead: {human_bytes(simulation.overhead)} over the aggregate peak "
                  f"({simulation.restarts} restarts); plan strategies: "
                  + ", ".join(f"{p.strategy} {human_bytes(p.pool_bytes)}" for p in pool_plan.all))

    objects = Table(title=f"Largest objects (top {top})")
    numeric = ("bytes", f"offset ({pool_plan.best.strategy} plan)", "lifetime (launch steps)")
    for column in ("object", "bytes", "allocated at", numeric[1], numeric[2], "findings"):
        objects.add_column(column, justify="right" if column in numeric else "left")
    codes: dict[int, list[str]] = {}
    for f in analysis.findings:
        if f.properties.get("object_id") is not None:
            codes.setdefault(f.properties["object_id"], []).append(f.code)
    spans = lifetimes(analysis.run)
    for obj, h in sorted(analysis.run.by_obj.items(), key=lambda kv: -(kv[1].bytes or 0))[:top]:
        start, end, _ = spans.get(obj, (h.alloc.t, h.alloc.t, 0))
        loc = h.alloc.location
        offset = pool_plan.best.offsets.get(obj)
        objects.add_row(h.name, human_bytes(h.bytes or 0), loc.where, "-" if offset is None else human_bytes(offset),
                        str(end - start),
                        " ".join(sorted(set(codes.get(obj, [])))))
    console.print(objects)

    findings = Table(title="Findings by peak saved")
    for column in ("rule", "where", "object", "saves", "message"):
        findings.add_column(column, overflow="fold")
    for f in analysis.findings[: max(top * 2, 20)]:
        saved = f.properties.get("peak_saved_bytes", 0)
        findings.add_row(f.code, f.location.where, f.obj or "",
                         f"{human_bytes(saved)} ({f.properties.get('peak_saved_percent', 0)}%)" if saved else "-",
                         f.message)
    console.print(findings)
    if len(analysis.findings) > max(top * 2, 20):
        console.print(f"... and {len(analysis.findings) - max(top * 2, 20)} more (`gpulint analyze` lists all)")


def perfetto(analysis: Analysis, path: Path, max_objects: int = 2000) -> int:
    """A Chrome-trace JSON (ui.perfetto.dev, chrome://tracing): a track per stream with its API
    slices, a track per object with live and idle slices, findings as instant events, and a
    counter track of live device memory and the every-finding-fixed curve.  Where every event of
    the trace has its host time (`ns`), the time axis is real (microseconds since the first
    event); otherwise one step of the topological order is drawn as 1 ms.  Returns the number of
    trace events."""
    import numpy as np

    clock = host_clock(analysis)
    if clock is None:
        def times(steps: np.ndarray) -> np.ndarray:
            return steps.astype(np.float64) * 1000.0  # microseconds per Kahn step
        note = "1 ms = one step of the topological launch order (the trace has no host times)"
    else:
        last = len(clock) - 1

        def times(steps: np.ndarray) -> np.ndarray:
            return clock[np.minimum(steps, last)]
        note = ("real time: microseconds since the first event, each event at the host clock when the collector "
                "saw the call; an API slice lasts until the next step (the GPU's own timing is not traced)")

    def at(step: int) -> float:
        return float(times(np.asarray([step]))[0])

    def slices(starts: np.ndarray, ends: np.ndarray) -> tuple[list[float], list[float]]:
        """Start and length of each slice; at least a nanosecond long, so every slice is drawn."""
        begin = times(starts)
        return begin.tolist(), np.maximum(0.001, times(ends) - begin).tolist()

    # A million API calls are a million trace events: written as text from the columns, one JSON
    # prefix per distinct (kind, name, stack, stream) and the times per call, not a dictionary and
    # an `Event` each (26 s for 1M events that way).
    out: list[str] = [json.dumps({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "streams"}}),
                      json.dumps({"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "objects"}})]
    calls = _api_calls(analysis)
    starts, lengths = slices(calls.steps, calls.steps + 1)
    for prefix, ts, dur in zip([calls.prefixes[k] for k in calls.kinds.tolist()], starts, lengths):
        out.append(f'{prefix}, "ts": {ts!r}, "dur": {dur!r}}}')
    for stream in sorted(calls.streams, key=str):
        out.append(json.dumps({"ph": "M", "pid": 1, "tid": stream, "name": "thread_name",
                               "args": {"name": f"stream {stream}"}}))
    spans = lifetimes(analysis.run)
    findings_of: dict[Any, list] = {}
    for f in analysis.findings:
        findings_of.setdefault(f.properties.get("object_id"), []).append(f)
    chosen = sorted(analysis.run.by_obj.items(), key=lambda kv: -(kv[1].bytes or 0))[:max_objects]
    for tid, (obj, h) in enumerate(sorted(chosen, key=lambda kv: kv[1].alloc.t), start=1):
        start, end, size = spans.get(obj, (h.alloc.t, h.alloc.t + 1, h.bytes or 0))
        out.append(json.dumps({"ph": "M", "pid": 2, "tid": tid, "name": "thread_name",
                               "args": {"name": f"{h.name} @ {h.alloc.location.where}"}}))
        (ts,), (dur,) = slices(np.asarray([start]), np.asarray([max(end, start + 1)]))
        out.append(json.dumps({"ph": "X", "pid": 2, "tid": tid, "ts": ts, "dur": dur, "name": f"live {human_bytes(size)}",
                               "cat": "live", "args": {"bytes": size}}))
        uses = h.use_spans()
        assert isinstance(uses, RunSpans)  # a run's histories answer from their arrays
        idle_from, idle_to = _idle_gaps(uses)
        head = f'{{"ph": "X", "pid": 2, "tid": {tid}, "name": "idle", "cat": "idle", '
        for ts, dur in zip(*slices(idle_from, idle_to)):
            out.append(f'{head}"ts": {ts!r}, "dur": {dur!r}}}')
        for f in findings_of.get(obj, ()):
            out.append(json.dumps({"ph": "i", "s": "t", "pid": 2, "tid": tid, "ts": at(start), "name": f.code,
                                   "cat": "finding", "args": {"message": f.message,
                                                              "peak_saved_bytes": f.properties.get("peak_saved_bytes", 0)}}))
    out.extend(_memory_counters(analysis, times))
    other = json.dumps({"gpulint": note, "time": "real" if clock is not None else "steps"})
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"traceEvents": [')
        handle.write(", ".join(out))
        handle.write(f'], "displayTimeUnit": "ms", "otherData": {other}}}')
    return len(out)


class _ApiCalls:
    """The run's API calls in timeline order: the step of each, and which of the distinct calls
    (same kind, name, stack and stream: one JSON prefix each) it is."""

    def __init__(self, steps: np.ndarray, kinds: np.ndarray, prefixes: list[str], streams: set) -> None:
        self.steps, self.kinds, self.prefixes, self.streams = steps, kinds, prefixes, streams


def _api_calls(analysis: Analysis) -> _ApiCalls:
    import numpy as np

    def prefix(e) -> str:
        stream = e.stream or 0
        return json.dumps({"ph": "X", "pid": 1, "tid": stream, "name": e.api, "cat": e.op.value,
                           "args": {"at": e.location.where}})[:-1]

    built = analysis.run.arrays  # the run's builder: its columns, and the `Event` of a row
    timeline = analysis.run.unit.timelines[0]
    assert isinstance(timeline, RunTimeline) and timeline.rows is not None
    rows = timeline.rows
    c = built.c
    steps = np.where(built.stamps[rows] >= 0, built.stamps[rows], built.flush_t[rows])
    # What decides an event's name, category, stack and stream; a flush (its own dictionary) is
    # its own key.
    kernel = np.where(c.kind[rows] == KIND["launch"], c.kernel[rows], -1)
    flush = c.kind[rows] == KIND["flush"]
    keys = np.stack([c.kind[rows].astype(np.int64), c.api[rows], c.site[rows], kernel, c.stream[rows],
                     np.where(flush, rows, -1)], axis=1)
    _, first, kinds = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    events = [built.event(int(rows[i])) for i in first.tolist()]
    return _ApiCalls(steps, kinds.reshape(-1), [prefix(e) for e in events], {e.stream or 0 for e in events})


def _idle_gaps(uses: RunSpans) -> tuple["np.ndarray", "np.ndarray"]:
    """(start, end) steps of the idle slices between an object's uses: gaps of more than a step."""
    import numpy as np

    starts, ends = np.asarray(uses.starts, dtype=np.int64), np.asarray(uses.ends, dtype=np.int64)
    before_end, after_start = ends[:-1], starts[1:]
    idle = after_start - before_end > 1
    return before_end[idle] + 1, after_start[idle]


def host_clock(analysis: Analysis) -> "np.ndarray | None":
    """Microseconds since the run's first event at each step of the topological order, from the
    events' host times (`ns`); None when some work event has none (an older trace, a collector
    that does not write them).  A step's time is the earliest of its events'; the times are made
    non-decreasing, since a step the order puts later may have been issued earlier on another
    stream."""
    import numpy as np

    built = analysis.run.arrays
    columns, stamps = getattr(built, "c", None), getattr(built, "stamps", None)
    if columns is None or stamps is None:
        return None
    work = stamps >= 0
    if not work.any():
        return None
    ns = columns.ns[work]
    if (ns < 0).any():
        return None
    steps = stamps[work]
    never = np.iinfo(np.int64).max
    first = np.full(int(analysis.run.end_t) + 2, never, dtype=np.int64)
    np.minimum.at(first, steps, ns)
    origin = int(ns.min())
    first[first == never] = origin  # steps no event has (before the first, the end): filled forward below
    return (np.maximum.accumulate(first) - origin) / 1000.0


def _memory_counters(analysis: Analysis, times: Callable[["np.ndarray"], "np.ndarray"]) -> list[str]:
    """A counter track of live device bytes and the every-finding-fixed curve (what memory_viz
    users look for first): one counter event where either value changes."""
    import numpy as np

    peaks = analysis.peaks
    if peaks.times is None or peaks.live is None:
        return []
    live = np.asarray(peaks.live, dtype=np.int64)
    fixed = np.asarray(peaks.live_fixed if peaks.live_fixed is not None else peaks.live, dtype=np.int64)
    changed = np.ones(len(live), dtype=bool)
    changed[1:] = (live[1:] != live[:-1]) | (fixed[1:] != fixed[:-1])
    out = [json.dumps({"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "device memory"}})]
    stamps = times(np.asarray(peaks.times, dtype=np.int64)[changed]).tolist()
    for ts, value, best in zip(stamps, live[changed].tolist(), fixed[changed].tolist()):
        out.append(f'{{"ph": "C", "pid": 3, "name": "live bytes", "ts": {ts!r}, '
                   f'"args": {{"live": {value}, "every finding fixed": {best}}}}}')
    return out


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def plot(analysis: Analysis, path: Path, top: int = 8) -> None:
    """Memory over (topological) time: the largest objects stacked, the rest as one band, and the
    all-fixed what-if curve."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'gpulint[report]'") from exc
    import numpy as np

    peaks = analysis.peaks
    times = peaks.times if peaks.times is not None else np.array([0])
    spans = lifetimes(analysis.run)
    largest = sorted(spans.items(), key=lambda kv: -kv[1][2])[:top]
    layers = []
    for _obj, (start, end, size) in largest:
        layers.append(np.where((times >= start) & (times < end), size, 0))
    total = peaks.live if peaks.live is not None else np.zeros_like(times)
    rest = total - (np.sum(layers, axis=0) if layers else 0)
    fig, ax = plt.subplots(figsize=(10, 5))
    labels = [analysis.run.by_obj[obj].name for obj, _ in largest] + ["other objects"]
    ax.stackplot(times, *[layer / 2**20 for layer in layers], rest / 2**20, labels=labels, step="post", alpha=0.8)
    if peaks.live_fixed is not None:
        ax.step(times, peaks.live_fixed / 2**20, where="post", color="black", linestyle="--",
                label=f"every finding fixed (peak {human_bytes(peaks.all_fixed)})")
    ax.set_xlabel("topological launch order")
    ax.set_ylabel("live device memory (MiB)")
    ax.set_title(f"peak {human_bytes(peaks.actual)}; fixed {human_bytes(peaks.all_fixed)}; "
                 f"tight liveness {human_bytes(peaks.lower_bound)}")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
