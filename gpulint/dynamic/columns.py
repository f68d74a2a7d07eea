"""A run's events as columns: one numpy array per field, one row per event in file order.

A trace of a million events read as a million dictionaries (and then a million `Event`s and
several million `Touch`es) costs gigabytes and most of the analysis's time; the same events as
a dozen integer arrays cost tens of megabytes, and the work over every object (ordering, use
spans, gaps, the memory curve) becomes array arithmetic.  Strings (APIs, kernels, copy kinds,
digests), streams, host stacks and object ids are interned into tables; a row holds their
indices.  Both trace encodings end here: JSON Lines through `ColumnBuilder.add` (dictionaries,
decoded in chunks and dropped), the binary one (`tracebin`) array by array.

Events that are rare or carry free-form data (allocations' names and flags, bitmaps, counters,
pool samples, flushes, synchronisations, event record/wait) keep their dictionaries in `extra`,
keyed by row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

# Row kinds: the work events first (their codes are what ordering and histories switch on).
KINDS = ("alloc", "free", "memcpy", "memset", "launch", "graph_launch", "sync", "event_record", "event_wait",
         "flush", "pool", "bitmap", "counts", "other")
KIND = {name: code for code, name in enumerate(KINDS)}
ALLOC, FREE, MEMCPY, MEMSET, LAUNCH, GRAPH_LAUNCH, SYNC, RECORD, WAIT, FLUSH, POOL, BITMAP, COUNTS, OTHER = \
    range(len(KINDS))
WORK_KINDS = (ALLOC, FREE, MEMCPY, MEMSET, LAUNCH, GRAPH_LAUNCH)
# Kinds whose whole dictionary is kept (rare, or read by few).
_KEEP = frozenset({ALLOC, SYNC, RECORD, WAIT, FLUSH, POOL, BITMAP, COUNTS})
NONE = -1  # "absent" in an index column


class Table:
    """Interned values: `index(value)` gives the same small integer for equal values."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[Any, int] = {}

    def index(self, value: Any) -> int:
        found = self._index.get(value)
        if found is None:
            found = self._index[value] = len(self.values)
            self.values.append(value)
        return found

    def get(self, value: Any) -> int | None:
        """The index of `value`, None when it was never interned."""
        return self._index.get(value)

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Columns:
    """The events of a run, one row each, in the order the trace holds them."""

    kind: np.ndarray  # uint8, KIND codes
    t: np.ndarray  # int64, the event's `t` (host invocation order); -1 when absent
    ns: np.ndarray  # int64, the event's `ns` (host clock when the collector saw it); -1 when absent
    obj: np.ndarray  # int64, object index (alloc, free, memset); -1 none
    dst: np.ndarray  # int64, object index (memcpy); -1 none
    src: np.ndarray  # int64, object index (memcpy); -1 none
    size: np.ndarray  # uint64, `size` when it is an integer
    has_size: np.ndarray  # bool
    offset: np.ndarray  # uint64, memset `offset` / memcpy `dst_offset` (absent or null: 0)
    src_offset: np.ndarray  # uint64, memcpy `src_offset` (absent or null: 0)
    stream: np.ndarray  # int32, index into `streams` (the `stream` value as written; absent: 0)
    api: np.ndarray  # int32, index into `strings`: the name an `Event` carries (api, kernel, or the kind)
    raw_api: np.ndarray  # int32, index into `strings`: the `api` field; -1 absent
    kernel: np.ndarray  # int32, index into `strings` (launches); -1 none
    site: np.ndarray  # int32, index into `sites`; -1 none
    direction: np.ndarray  # int32, index into `strings` (`kind` of a memcpy); -1 none
    digest: np.ndarray  # int32, index into `strings`; -1 none
    args_only: np.ndarray  # bool, launches: what they touched is their arguments (not instrumented)
    access_start: np.ndarray  # int64, launches: where their objects begin in `access_obj` (n + 1 entries)
    access_obj: np.ndarray  # int64, object indices launches read then wrote, per row
    access_write: np.ndarray  # bool, per entry of `access_obj`: a write (else a read)
    objects: list[int]  # object index -> the trace's object id
    strings: list[str | None]
    streams: list[Any]
    sites: list[Any]  # host stacks as the trace has them (lists of frames)
    extra: dict[int, dict[str, Any]] = field(default_factory=dict)  # row -> the event's dictionary

    def __len__(self) -> int:
        return len(self.kind)


class ColumnBuilder:
    """Builds `Columns` from event dictionaries given in chunks (each chunk becomes arrays at once,
    so no more than a chunk of dictionaries is ever alive)."""

    def __init__(self) -> None:
        self.strings = Table()
        self.streams = Table()
        self.objects = Table()
        self.sites: list[Any] = []
        self._site_index: dict[Any, int] = {}
        self.parts: list[dict[str, np.ndarray]] = []
        self.extra: dict[int, dict[str, Any]] = {}
        self.rows = 0
        self.accesses = 0

    def intern_site(self, site: Any) -> int:
        """The index of a host stack in `sites`, equal stacks one entry."""
        if site is None:
            return NONE
        try:
            key: Any = tuple(map(tuple, site))
        except TypeError:
            key = ("<unhashable>", repr(site))
        found = self._site_index.get(key)
        if found is None:
            found = self._site_index[key] = len(self.sites)
            self.sites.append(site)
        return found

    def add(self, events: list[dict[str, Any]]) -> None:
        """Append well-formed events (validated, header events removed)."""
        n = len(events)
        if not n:
            return
        base = self.rows
        strings, objects = self.strings.index, self.objects.index
        stream_index = self.streams.index
        kind = np.fromiter((KIND.get(e["ev"], OTHER) for e in events), dtype=np.uint8, count=n)
        t = np.fromiter((_int_or(e.get("t"), -1) for e in events), dtype=np.int64, count=n)
        ns = np.fromiter((_int_or(e.get("ns"), -1) for e in events), dtype=np.int64, count=n)
        size_values = [e.get("size") for e in events]
        has_size = np.fromiter((type(v) is int for v in size_values), dtype=bool, count=n)
        size = np.fromiter((v if type(v) is int else 0 for v in size_values), dtype=np.uint64, count=n)
        obj = np.full(n, NONE, dtype=np.int64)
        dst = np.full(n, NONE, dtype=np.int64)
        src = np.full(n, NONE, dtype=np.int64)
        offset = np.zeros(n, dtype=np.uint64)
        src_offset = np.zeros(n, dtype=np.uint64)
        kernel = np.full(n, NONE, dtype=np.int32)
        args_only = np.zeros(n, dtype=bool)
        starts = np.zeros(n, dtype=np.int64)
        access_obj: list[int] = []
        access_write: list[bool] = []
        for i, e in enumerate(events):
            code = kind[i]
            if code == LAUNCH or code == GRAPH_LAUNCH:
                starts[i] = len(access_obj)
                reads, writes = e.get("reads") or (), e.get("writes") or ()
                access_obj.extend(map(objects, reads))
                access_obj.extend(map(objects, writes))
                access_write.extend([False] * len(reads))
                access_write.extend([True] * len(writes))
                if code == LAUNCH and e.get("kernel") is not None:
                    kernel[i] = strings(e["kernel"])
                if e.get("args_only"):
                    args_only[i] = True
                continue
            starts[i] = len(access_obj)
            if code == MEMCPY:
                value = e.get("dst")
                if value is not None:
                    dst[i] = objects(value)
                value = e.get("src")
                if value is not None:
                    src[i] = objects(value)
                offset[i] = e.get("dst_offset") or 0
                src_offset[i] = e.get("src_offset") or 0
            elif code == MEMSET or code == ALLOC or code == FREE:
                value = e.get("obj")
                if value is not None:
                    obj[i] = objects(value)
                if code == MEMSET:
                    offset[i] = e.get("offset") or 0
            if code in _KEEP:
                self.extra[base + i] = e
        launch_api = (LAUNCH, GRAPH_LAUNCH)
        api = np.fromiter((strings(str(e.get("api") or (e.get("kernel") if KIND.get(e["ev"]) in launch_api
                                                         else e["ev"]))) for e in events), dtype=np.int32, count=n)
        raw_api = np.fromiter((NONE if e.get("api") is None else strings(e["api"]) for e in events),
                              dtype=np.int32, count=n)
        # Unknown kinds' fields are not validated: only what a known kind has is interned.
        known = kind != OTHER
        stream = np.fromiter((stream_index(e.get("stream", 0)) if k else stream_index(0)
                              for e, k in zip(events, known.tolist())), dtype=np.int32, count=n)
        site = np.fromiter((self.intern_site(e.get("site")) if k else NONE for e, k in zip(events, known.tolist())),
                           dtype=np.int32, count=n)
        direction = np.fromiter((_text(strings, e.get("kind")) for e in events), dtype=np.int32, count=n)
        digest = np.fromiter((_text(strings, e.get("digest")) for e in events), dtype=np.int32, count=n)
        self.parts.append({
            "kind": kind, "t": t, "ns": ns, "obj": obj, "dst": dst, "src": src, "size": size, "has_size": has_size,
            "offset": offset, "src_offset": src_offset, "stream": stream, "api": api, "raw_api": raw_api,
            "kernel": kernel, "site": site, "direction": direction, "digest": digest, "args_only": args_only,
            "access_start": starts + self.accesses,
            "access_obj": np.array(access_obj, dtype=np.int64),
            "access_write": np.array(access_write, dtype=bool)})
        self.rows += n
        self.accesses += len(access_obj)

    def add_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Append rows given as arrays already (the binary trace); index columns must already
        refer to this builder's tables."""
        n = len(arrays["kind"])
        arrays = dict(arrays)
        arrays["access_start"] = arrays["access_start"] + self.accesses
        self.parts.append(arrays)
        self.rows += n
        self.accesses += len(arrays["access_obj"])

    def build(self) -> Columns:
        names = ("kind", "t", "ns", "obj", "dst", "src", "size", "has_size", "offset", "src_offset", "stream", "api",
                 "raw_api", "kernel", "site", "direction", "digest", "args_only", "access_obj", "access_write")
        dtypes = {"kind": np.uint8, "t": np.int64, "ns": np.int64, "obj": np.int64, "dst": np.int64, "src": np.int64,
                  "size": np.uint64, "has_size": bool, "offset": np.uint64, "src_offset": np.uint64,
                  "stream": np.int32, "api": np.int32, "raw_api": np.int32, "kernel": np.int32, "site": np.int32,
                  "direction": np.int32, "digest": np.int32, "args_only": bool, "access_obj": np.int64,
                  "access_write": bool}
        joined = {name: np.concatenate([p[name] for p in self.parts]).astype(dtypes[name], copy=False)
                  if self.parts else np.zeros(0, dtype=dtypes[name]) for name in names}
        starts = [p["access_start"] for p in self.parts] + [np.array([self.accesses], dtype=np.int64)]
        self.parts = []
        return Columns(access_start=np.concatenate(starts).astype(np.int64, copy=False), objects=self.objects.values,
                       strings=self.strings.values, streams=self.streams.values, sites=self.sites,
                       extra=self.extra, **joined)


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of arange(s, s + n) for each start s and length n."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + (np.arange(total) - offsets)


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` by a sort and a comparison of neighbours: for the integer arrays of a
    run (millions of bounds), ten times faster than numpy 2's hashing `unique`."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _text(strings, value: Any) -> int:
    return strings(value) if isinstance(value, str) else NONE


def _int_or(value: Any, default: int) -> int:
    return value if type(value) is int and -(1 << 63) <= value < (1 << 63) else default


def columns_of(events: Iterable[dict[str, Any]], chunk: int = 1 << 16) -> Columns:
    """Columns of event dictionaries (already validated, header events removed)."""
    builder = ColumnBuilder()
    pending: list[dict[str, Any]] = []
    for event in events:
        pending.append(event)
        if len(pending) >= chunk:
            builder.add(pending)
            pending = []
    builder.add(pending)
    return builder.build()
