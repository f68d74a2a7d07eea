"""Multi-stream order (DrGPUM §5.3): a dependency graph over the trace's API events, numbered by
Kahn's algorithm with a global counter, so distances mean "how much work could not overlap".

Vertices are the events that do something to memory or run work (alloc, free, memcpy, memset,
launch, graph_launch).  Edges:

* stream order: consecutive events on one stream;
* data: RAW (write -> later read of the object), WAW (alloc/write -> later write/free),
  WAR (read -> later write/free);
* `event_record` on stream A then `event_wait` on stream B: the last event on A before the record
  precedes the next event on B after the wait;
* a device synchronisation: everything before precedes everything after; a stream
  synchronisation: everything before on that stream precedes everything the host issues after;
* the legacy default stream (0) is a barrier for the others, as CUDA's implicit synchronisation
  makes it for blocking streams; so are `cudaMalloc` and `cudaFree` (host-synchronous), but not
  the stream-ordered `cudaMallocAsync` / `cudaFreeAsync`.

Kahn's algorithm with a global counter: all vertices of in-degree zero get the same timestamp T,
are removed, T += 1.  That timestamp is the length of the longest dependency path into the
vertex, and every edge goes from an earlier-issued event to a later one, so it is computed in one
forward pass without building the graph: T(v) = 1 + max T over v's predecessors (0 for none).
Only the latest timestamp per stream, per object and per recorded event is kept, so a trace of
millions of events is ordered in memory proportional to its objects and streams.
Invocation order (`t`) and topological order differ when streams overlap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    import numpy as np

WORK = frozenset({"alloc", "free", "memcpy", "memset", "launch", "graph_launch"})
_DEFAULT_WORK = frozenset({"launch", "memcpy", "memset", "graph_launch"})


def _objects(event: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(objects read, objects written) by an event."""
    ev = event["ev"]
    if ev == "launch" or ev == "graph_launch":
        return list(event.get("reads") or ()), list(event.get("writes") or ())
    if ev == "memcpy":
        src, dst = event.get("src"), event.get("dst")
        return ([src] if src is not None else []), ([dst] if dst is not None else [])
    if ev in ("memset", "alloc", "free"):
        obj = event.get("obj")
        return [], ([obj] if obj is not None else [])
    return [], []


class Orderer:
    """Kahn timestamps, one event at a time, in the order the host issued them."""

    def __init__(self) -> None:
        self.last_on_stream: dict[Any, int] = {}
        self.last_write: dict[int, int] = {}
        self.last_read: dict[int, int] = {}  # latest reader since the last write
        self.recorded: dict[Any, int] = {}
        self.waits: dict[Any, int] = {}  # event waits owed to a stream's next work
        # Host synchronisations and barriers: every later work event follows this timestamp.
        self.floor = -1

    def stamp(self, event: dict[str, Any]) -> int | None:
        """The event's timestamp; None for what is not work (syncs, event record/wait, markers)."""
        ev = event.get("ev")
        stream = event.get("stream", 0) or 0
        if ev == "sync":
            scope = event.get("scope", "device")
            if scope == "device":
                self.floor = max(self.floor, max(self.last_on_stream.values(), default=-1))
            elif scope == "stream":
                self.floor = max(self.floor, self.last_on_stream.get(stream, -1))
            elif scope == "event":
                self.floor = max(self.floor, self.recorded.get(event.get("event"), -1))
            return None
        if ev == "event_record":
            if stream in self.last_on_stream:
                self.recorded[event.get("event")] = self.last_on_stream[stream]
            return None
        if ev == "event_wait":
            source = self.recorded.get(event.get("event"))
            if source is not None:
                self.waits[stream] = max(self.waits.get(stream, -1), source)
            return None
        if ev not in WORK:
            return None
        before = max(self.floor, self.last_on_stream.get(stream, -1), self.waits.pop(stream, -1))
        # cudaMalloc / cudaFree are host-synchronous (cudaFree waits for the device), and the
        # legacy default stream waits for the others: such events follow all earlier work and
        # precede all later work.
        barrier = (ev in ("alloc", "free") and "Async" not in str(event.get("api") or "")) or \
            (stream == 0 and ev in _DEFAULT_WORK)
        if barrier and self.last_on_stream:
            before = max(before, max(self.last_on_stream.values()))
        if ev == "launch":
            reads, writes = event.get("reads") or (), event.get("writes") or ()
        else:
            reads, writes = _objects(event)
        last_write, last_read = self.last_write, self.last_read
        for obj in reads:
            before = max(before, last_write.get(obj, -1))  # RAW
        for obj in writes:
            before = max(before, last_write.get(obj, -1), last_read.pop(obj, -1))  # WAW, WAR
        stamp = before + 1
        for obj in reads:
            if last_read.get(obj, -1) < stamp:
                last_read[obj] = stamp
        for obj in writes:
            last_write[obj] = stamp
        self.last_on_stream[stream] = stamp
        if barrier:
            self.floor = max(self.floor, stamp)
        return stamp


def topological_times(events: Iterable[dict[str, Any]]) -> list[int | None]:
    """The Kahn timestamp of each event (None for events that are not work)."""
    orderer = Orderer()
    return [orderer.stamp(e) for e in events]


def column_times(columns) -> "np.ndarray":
    """The Kahn timestamp of each row of `columns` (-1 for rows that are not work): what
    `Orderer.stamp` gives event by event, in one loop over plain integers (the per-event
    dictionary lookups were most of its cost on a run of millions of events)."""
    import numpy as np

    from gpulint.dynamic.columns import ALLOC, FREE, GRAPH_LAUNCH, LAUNCH, MEMCPY, RECORD, SYNC, WAIT

    n = len(columns)
    out = np.full(n, -1, dtype=np.int64)
    if not n:
        return out
    # A stream's key is its value as written, `null` and absent alike meaning 0.
    keys = [value or 0 for value in columns.streams]
    stream_of = [keys[i] for i in range(len(keys))]
    streams = columns.stream.tolist()
    kinds = columns.kind.tolist()
    objs, dsts, srcs = columns.obj.tolist(), columns.dst.tolist(), columns.src.tolist()
    starts, access_obj, access_write = columns.access_start.tolist(), columns.access_obj.tolist(), \
        columns.access_write.tolist()
    asynchronous = [s is not None and "Async" in str(s) for s in columns.strings]
    raw_api = columns.raw_api.tolist()
    extra = columns.extra
    last_on_stream: dict[Any, int] = {}
    # Object indices are dense (0 .. objects - 1): lists, not dictionaries.  -1: none (a write
    # clears the reads it had to follow).
    last_write = [-1] * len(columns.objects)
    last_read = [-1] * len(columns.objects)
    top = -1  # the largest stamp so far: the latest work of every stream (a stream's stamps rise)
    recorded: dict[Any, int] = {}
    waits: dict[Any, int] = {}
    floor = -1
    stamps = [-1] * n
    for i, kind, stream_index in zip(range(n), kinds, streams):
        stream = stream_of[stream_index]
        if kind > GRAPH_LAUNCH:  # not work
            if kind == SYNC:
                event = extra[i]
                scope = event.get("scope", "device")
                if scope == "device":
                    floor = max(floor, top)
                elif scope == "stream":
                    floor = max(floor, last_on_stream.get(stream, -1))
                elif scope == "event":
                    floor = max(floor, recorded.get(event.get("event"), -1))
            elif kind == RECORD:
                if stream in last_on_stream:
                    recorded[extra[i].get("event")] = last_on_stream[stream]
            elif kind == WAIT:
                source = recorded.get(extra[i].get("event"))
                if source is not None:
                    waits[stream] = max(waits.get(stream, -1), source)
            continue
        before = last_on_stream.get(stream, -1)
        if floor > before:
            before = floor
        if waits:
            owed = waits.pop(stream, -1)
            if owed > before:
                before = owed
        if kind == ALLOC or kind == FREE:
            api = raw_api[i]
            barrier = api < 0 or not asynchronous[api]
        else:
            barrier = stream == 0
        if barrier and top > before:
            before = top
        # The object edges (RAW, WAW, WAR) inline, kind by kind: lists of reads and writes made
        # per event were a third of this loop's time.
        if kind == LAUNCH or kind == GRAPH_LAUNCH:
            lo, hi = starts[i], starts[i + 1]
            for k in range(lo, hi):
                obj = access_obj[k]
                w = last_write[obj]  # RAW, WAW
                if w > before:
                    before = w
                if access_write[k]:
                    r = last_read[obj]  # WAR
                    last_read[obj] = -1
                    if r > before:
                        before = r
            stamp = before + 1
            for k in range(lo, hi):
                obj = access_obj[k]
                if access_write[k]:
                    last_write[obj] = stamp
                elif last_read[obj] < stamp:
                    last_read[obj] = stamp
        elif kind == MEMCPY:
            source, target = srcs[i], dsts[i]
            if source >= 0:
                w = last_write[source]  # RAW
                if w > before:
                    before = w
            if target >= 0:
                w = last_write[target]  # WAW
                r = last_read[target]  # WAR
                last_read[target] = -1
                if w > before:
                    before = w
                if r > before:
                    before = r
            stamp = before + 1
            if source >= 0 and last_read[source] < stamp:
                last_read[source] = stamp
            if target >= 0:
                last_write[target] = stamp
        else:
            target = objs[i]
            if target >= 0:
                w = last_write[target]  # WAW
                r = last_read[target]  # WAR
                last_read[target] = -1
                if w > before:
                    before = w
                if r > before:
                    before = r
            stamp = before + 1
            if target >= 0:
                last_write[target] = stamp
        last_on_stream[stream] = stamp
        if stamp > top:
            top = stamp
        if barrier and stamp > floor:
            floor = stamp
        stamps[i] = stamp
    out[:] = stamps
    return out
