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
are removed, T += 1.  Invocation order (`t`) and topological order differ when streams overlap.
"""
from __future__ import annotations

from typing import Any

WORK = frozenset({"alloc", "free", "memcpy", "memset", "launch", "graph_launch"})


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


def topological_times(events: list[dict[str, Any]]) -> list[int | None]:
    """The Kahn timestamp of each event (None for events that are not work: syncs, markers)."""
    n = len(events)
    preds: list[list[int]] = [[] for _ in range(n)]
    last_on_stream: dict[Any, int] = {}
    last_writer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    recorded: dict[Any, int | None] = {}
    owed_stream: dict[Any, list[int]] = {}  # event waits: edges owed to a stream's next work
    # Host synchronisations: per source stream, the event the host waited for and the sync's
    # number; each stream's next work takes the edges of syncs newer than its last work.
    host_syncs: dict[Any, tuple[int, int]] = {}
    sync_count = 0
    seen_sync: dict[Any, int] = {}
    barrier: int | None = None  # the last default-stream event: later work on any stream follows it
    for i, event in enumerate(events):
        ev = event.get("ev")
        stream = event.get("stream", 0) or 0
        if ev == "sync":
            scope = event.get("scope", "device")
            sources: dict[Any, int] = {}
            if scope == "device":
                sources = dict(last_on_stream)
            elif scope == "stream" and stream in last_on_stream:
                sources = {stream: last_on_stream[stream]}
            elif scope == "event" and recorded.get(event.get("event")) is not None:
                sources = {("event", event.get("event")): recorded[event.get("event")]}
            if sources:
                sync_count += 1
                for key, source in sources.items():
                    host_syncs[key] = (source, sync_count)
            continue
        if ev == "event_record":
            recorded[event.get("event")] = last_on_stream.get(stream)
            continue
        if ev == "event_wait":
            source = recorded.get(event.get("event"))
            if source is not None:
                owed_stream.setdefault(stream, []).append(source)
            continue
        if ev not in WORK:
            continue
        p = preds[i]
        if stream in last_on_stream:
            p.append(last_on_stream[stream])
        p.extend(owed_stream.pop(stream, ()))
        if host_syncs and seen_sync.get(stream, 0) < sync_count:
            since = seen_sync.get(stream, 0)
            p.extend(source for source, number in host_syncs.values() if number > since)
        seen_sync[stream] = sync_count
        # cudaMalloc / cudaFree are host-synchronous (cudaFree waits for the device): ordered
        # after all earlier work and before all later work, like the legacy default stream.
        host_sync = ev in ("alloc", "free") and "Async" not in str(event.get("api") or "")
        default_work = host_sync or (stream == 0 and ev in ("launch", "memcpy", "memset", "graph_launch"))
        if default_work:
            p.extend(last_on_stream.values())  # the legacy default stream waits for the others
        elif barrier is not None:
            p.append(barrier)
        reads, writes = _objects(event)
        for obj in reads:
            if obj in last_writer:
                p.append(last_writer[obj])  # RAW
        for obj in writes:
            if obj in last_writer:
                p.append(last_writer[obj])  # WAW
            p.extend(readers.pop(obj, ()))  # WAR
        for obj in reads:
            readers.setdefault(obj, []).append(i)
        for obj in writes:
            last_writer[obj] = i
        last_on_stream[stream] = i
        if default_work:
            barrier = i
    return _kahn(preds, [e.get("ev") in WORK for e in events])


def _kahn(preds: list[list[int]], is_work: list[bool]) -> list[int | None]:
    n = len(preds)
    indegree = [0] * n
    succs: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        unique = set(ps)
        unique.discard(v)
        indegree[v] = len(unique)
        for u in unique:
            succs[u].append(v)
    times: list[int | None] = [None] * n
    frontier = [v for v in range(n) if is_work[v] and indegree[v] == 0]
    stamp = 0
    while frontier:
        nxt: list[int] = []
        for v in frontier:
            times[v] = stamp
        for v in frontier:
            for w in succs[v]:
                indegree[w] -= 1
                if indegree[w] == 0:
                    nxt.append(w)
        frontier = nxt
        stamp += 1
    return times
