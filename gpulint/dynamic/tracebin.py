"""The binary trace variant: the same events as the JSON Lines format, in records that a reader
turns into columns without decoding an object per event.

A collector that writes millions of launches and copies spends most of its output, and the
analysis most of its reading, on the same dozen fields spelt out as JSON again and again; here
those events are fixed-size rows (`ROW`), their host stacks and strings written once each and
named by index.  Everything else (allocations, which carry names and flags; synchronisations;
bitmaps; anything a newer collector adds) is one JSON object per record, read and validated as a
JSON Lines event is.  `docs/trace-format.md` ("The binary variant") is the specification.

The file: `MAGIC`, then records, each an 8-byte header (payload length, tag) and its payload.
The first record is the `meta` event; records are appended as the program runs, so a crash
leaves every complete record readable and the reader drops a cut-short last one with a warning.
"""
from __future__ import annotations

import json
import math
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np

from gpulint.dynamic import trace as jsonl
from gpulint.dynamic.columns import concat_ranges, unique_sorted
from gpulint.dynamic.records import (EVENT, HEADER, MAGIC, META, ROWS, STACKS, STRINGS, TIMES,  # noqa: F401
                                     is_binary, pack_record, walk_records)
from gpulint.dynamic.trace import (VERSION, Skipped, Trace, TraceError, TraceWriter, check_version, decode_line,
                                   event_problem, header_event, site_problem)

# Events that travel as rows, by their code in a row (fixed by the format, not by gpulint's
# internal numbering).
ROW_KINDS = ("free", "memcpy", "memset", "launch", "graph_launch", "sync", "event_record", "event_wait")
# Rows whose `obj` holds a CUDA event's id (`event`), not an object.
EVENT_KINDS = ("sync", "event_record", "event_wait")
ROW_CODE = {name: code for code, name in enumerate(ROW_KINDS, 1)}
ROW = np.dtype([
    ("kind", "<u1"), ("flags", "<u1"), ("pad", "<u2"), ("nreads", "<u4"),
    ("stream", "<i8"), ("t", "<i8"), ("obj", "<i8"), ("dst", "<i8"), ("src", "<i8"),
    ("size", "<u8"), ("offset", "<u8"), ("src_offset", "<u8"),
    ("api", "<i4"), ("kernel", "<i4"), ("site", "<i4"), ("text", "<i4"), ("digest", "<i4"), ("nwrites", "<u4"),
])
assert ROW.itemsize == 96
# `flags` bits: which optional fields a row has, and two launch flags.
HAS_SIZE, HAS_OBJ, HAS_DST, HAS_SRC, ARGS_ONLY, PARAMS_UNREAD, STREAM_TEXT, HAS_STREAM = (1 << b for b in range(8))

_I64 = 1 << 63
_U64 = 1 << 64
# The fields a row can hold, per kind; an event with any other field is written as JSON.
_COMMON = {"ev", "t", "ns", "stream", "site", "api"}
_ROW_FIELDS = {
    "free": _COMMON | {"obj"},
    "memcpy": _COMMON | {"dst", "src", "size", "kind", "dst_offset", "src_offset", "digest"},
    "memset": _COMMON | {"obj", "size", "offset"},
    "launch": _COMMON | {"kernel", "reads", "writes", "args_only", "params_unread"},
}
_ROW_FIELDS["graph_launch"] = _ROW_FIELDS["launch"]
_ROW_FIELDS["sync"] = _COMMON | {"scope", "event"}
_ROW_FIELDS["event_record"] = _ROW_FIELDS["event_wait"] = _COMMON | {"event"}
# The text a row's `text` holds: a copy's `kind`, a synchronisation's `scope`.
_TEXT_FIELD = {"memcpy": "kind", "sync": "scope"}


def read(path: str | Path):
    """A trace of either encoding, told apart by its first bytes: its header and its events as
    `Columns` (what `gpulint analyze` reads)."""
    return read_columns(path) if is_binary(path) else jsonl.read_columns(path)


class BinaryTraceWriter(TraceWriter):
    """`TraceWriter` for the binary variant: same calls, same sidecar.  Rows wait in memory and go
    out as one record when a JSON event must follow them, every `flush_interval` seconds, every
    `batch` rows and at `close()`; with `flush_interval=0` every event is written at once (a
    crash then loses nothing, at a record per event)."""

    def __init__(self, path: str | Path, collector: str, argv: list[str] | None = None, device: str | None = None,
                 granularity: int = 32, flush_interval: float = 0.0, batch: int = 1 << 14, **meta: Any) -> None:
        self.path = Path(path)
        self._flush_interval = flush_interval
        self._flushed = time.monotonic()
        self._batch = batch
        self._source = None
        self._raw = self._file = open(self.path, "wb")
        self._arrays: dict[str, np.ndarray] = {}
        self._strings: dict[str, int] = {}
        self._new_strings: list[str] = []
        self._stacks: dict[Any, int] = {}
        self._new_stacks: list[Any] = []
        self._rows: list[tuple] = []
        self._times: list[int] = []  # each row's `ns`, -1 when it has none
        self._accesses: list[int] = []
        self._file.write(MAGIC)
        self._record(META, _json({"ev": "meta", "version": VERSION, "collector": collector, "argv": list(argv or []),
                                  "device": device, "granularity": granularity, **meta}))
        self._file.flush()

    def write(self, event: dict[str, Any]) -> None:
        row = self._row(event)
        if row is None:
            self._write_rows()
            self._write_tables()
            self._record(EVENT, _json(event))
        else:
            self._rows.append(row)
            self._times.append(event.get("ns", -1))
        if not self._flush_interval or len(self._rows) >= self._batch:
            self.flush()
        else:
            now = time.monotonic()
            if now - self._flushed >= self._flush_interval:
                self._flushed = now
                self.flush()

    def write_line(self, line: str) -> None:
        self.write(json.loads(line))

    def attach(self, source: Any) -> None:
        raise TraceError("a binary trace cannot take JSON lines from an attached source; write JSON Lines instead")

    def flush(self) -> None:
        self._write_rows()
        self._file.flush()

    def close(self) -> None:
        self.flush()
        self._save_sidecar()
        self._file.close()

    # ----------------------------------------------------------------- encoding

    def _record(self, tag: bytes, payload: bytes) -> None:
        self._file.write(pack_record(tag, payload))

    def _write_tables(self) -> None:
        """Strings and stacks first named since the last record, before any record that uses them."""
        if self._new_strings:
            self._record(STRINGS, _json(self._new_strings))
            self._new_strings = []
        if self._new_stacks:
            self._record(STACKS, _json(self._new_stacks))
            self._new_stacks = []

    def _write_rows(self) -> None:
        if not self._rows:
            return
        self._write_tables()
        rows = np.array(self._rows, dtype=ROW)
        accesses = np.array(self._accesses, dtype="<i8")
        self._record(ROWS, struct.pack("<I", len(rows)) + rows.tobytes() + accesses.tobytes())
        if any(ns >= 0 for ns in self._times):  # the rows' host times, in the record right after them
            self._record(TIMES, np.array(self._times, dtype="<i8").tobytes())
        self._rows, self._times, self._accesses = [], [], []

    def _string(self, value: str) -> int:
        found = self._strings.get(value)
        if found is None:
            found = self._strings[value] = len(self._strings)
            self._new_strings.append(value)
        return found

    def _row(self, event: dict[str, Any]) -> tuple | None:
        """The event as a row, or None when it must be written as JSON (a kind rows do not hold,
        a field they cannot, or a value the reader would reject: JSON keeps its warning)."""
        kind = event.get("ev")
        fields = _ROW_FIELDS.get(kind) if type(kind) is str else None
        if fields is None or not event.keys() <= fields:
            return None
        t = event.get("t")
        if not _int(t, 0, _I64) or ("ns" in event and not _int(event["ns"], 0, _I64)):
            return None
        flags = 0
        stream = event.get("stream", 0)
        if "stream" in event:
            if type(stream) is str:
                stream, flags = self._string(stream), flags | STREAM_TEXT | HAS_STREAM
            elif _int(stream, -_I64, _I64):
                flags |= HAS_STREAM
            else:
                return None
        site = -1
        if "site" in event:
            stack = event["site"]
            if site_problem(stack) is not None:
                return None
            key = json.dumps(stack, separators=(",", ":"))
            site = self._stacks.get(key, -1)
            if site < 0:
                site = self._stacks[key] = len(self._stacks)
                self._new_stacks.append(stack)
        texts = []
        for name in ("api", "kernel", _TEXT_FIELD.get(kind, "kind"), "digest"):
            value = event.get(name)
            if value is None and (name == "digest" or name not in event):
                texts.append(-1)
            elif type(value) is str:
                texts.append(self._string(value))
            else:
                return None
        api, kernel, direction, digest = texts
        size = event.get("size")
        if "size" in event:
            if not _int(size, 0, _U64):
                return None
            flags |= HAS_SIZE
        ids = []
        for name, bit in ((("event" if kind in EVENT_KINDS else "obj"), HAS_OBJ), ("dst", HAS_DST), ("src", HAS_SRC)):
            value = event.get(name)
            if value is None and name != "obj" or name not in event:
                ids.append(0)
            elif _int(value, -_I64, _I64):
                ids.append(value)
                flags |= bit
            else:
                return None
        if kind in ("free", "memset") and not flags & HAS_OBJ:
            return None
        if kind == "memcpy" and not flags & HAS_SIZE:
            return None
        offsets = []
        for name in (("offset" if kind == "memset" else "dst_offset"), "src_offset"):
            value = event.get(name, 0)
            if not _int(value, 0, _U64):
                return None
            offsets.append(value)
        reads = event.get("reads") or []
        writes = event.get("writes") or []
        if not (type(reads) is list and type(writes) is list and all(_int(v, -_I64, _I64) for v in reads)
                and all(_int(v, -_I64, _I64) for v in writes)):
            return None
        for name, bit in (("args_only", ARGS_ONLY), ("params_unread", PARAMS_UNREAD)):
            value = event.get(name)
            if value not in (None, True, False) or type(value) is int:
                return None
            if value:
                flags |= bit
        self._accesses.extend(reads)
        self._accesses.extend(writes)
        return (ROW_CODE[kind], flags, 0, len(reads), stream, t, ids[0], ids[1], ids[2], size or 0, offsets[0],
                offsets[1], api, kernel, site, direction, digest, len(writes))


def _int(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value < high


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


# --------------------------------------------------------------------------- reading


class _Records:
    """A binary trace's records, parsed: meta, tables, row blocks and JSON events, each with the
    position of its first event among all the trace's events."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data = path.read_bytes()
        except OSError as exc:
            raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        if self.data[:len(MAGIC) - 1] != MAGIC[:-1]:
            raise TraceError(f"{path}: not a binary gpulint trace")
        if self.data[len(MAGIC) - 1] != MAGIC[-1]:
            raise TraceError(f"{path}: binary trace container version {self.data[len(MAGIC) - 1]} is not supported "
                             f"by this gpulint (it reads version {MAGIC[-1]}); upgrade gpulint or re-record the trace")
        self.meta: dict[str, Any] | None = None
        self.strings: list[Any] = []
        self.stacks: list[Any] = []
        # (position of the first row, rows, offset of the rows, offset of the accesses, end, record number)
        self.blocks: list[tuple[int, int, int, int, int, int]] = []
        self.times: dict[int, int] = {}  # block index -> offset of its rows' host times (a `T` record)
        self.events: list[tuple[int, int, dict[str, Any]]] = []  # (position, record number, event)
        self.cut: str | None = None
        self.count = 0  # events (rows and JSON) so far
        self._parse()

    def _parse(self) -> None:
        data, path = self.data, self.path
        previous = -1
        for number, tag, start, pos in walk_records(data):
            if tag < 0:
                return self._cut_short(number)
            length = pos - start
            follows_rows, previous = previous == ROWS[0], tag
            if tag == TIMES[0]:
                if not follows_rows or length != 8 * self.blocks[-1][1]:
                    raise TraceError(f"{path}: record {number}: a times record must follow a row record and hold "
                                     f"one time per row")
                self.times[len(self.blocks) - 1] = start
                continue
            if self.meta is None and tag != META[0]:
                raise TraceError(f"{path}: record {number}: the first record must be the meta event")
            if tag == ROWS[0]:
                (n,) = struct.unpack_from("<I", data, start) if length >= 4 else (-1,)
                if n < 0 or 4 + n * ROW.itemsize > length or (length - 4 - n * ROW.itemsize) % 8:
                    raise TraceError(f"{path}: record {number}: a row record of {length} bytes cannot hold its rows")
                self.blocks.append((self.count, n, start + 4, start + 4 + n * ROW.itemsize, pos, number))
                self.count += n
                continue
            if tag not in (META[0], STRINGS[0], STACKS[0], EVENT[0]):
                continue  # a record a newer minor version added: skipped, as unknown JSON events are
            payload = bytes(data[start:pos])
            try:
                value = decode_line(payload)
            except (ValueError, RecursionError):
                raise TraceError(f"{path}: record {number}: not JSON: {payload[:80]!r}") from None
            if tag == META[0]:
                if self.meta is not None:
                    raise TraceError(f"{path}: record {number}: a second meta record")
                if not isinstance(value, dict) or value.get("ev") != "meta":
                    raise TraceError(f"{path}: record {number}: the first record must be the meta event")
                self.meta = check_version(path, value)
            elif tag == EVENT[0]:
                if not isinstance(value, dict) or "ev" not in value:
                    raise TraceError(f"{path}: record {number}: not an event (no \"ev\" field)")
                self.events.append((self.count, number, value))
                self.count += 1
            elif not isinstance(value, list):
                raise TraceError(f"{path}: record {number}: a table record must hold a JSON list")
            else:
                (self.strings if tag == STRINGS[0] else self.stacks).extend(value)
        if self.meta is None:
            raise TraceError(f"{path}: empty trace (no meta record)")

    def _cut_short(self, number: int) -> None:
        if self.meta is None:
            raise TraceError(f"{self.path}: empty trace (no meta record)")
        self.cut = (f"{self.path}: record {number}: the last record is cut short (the program stopped mid-write); "
                    f"ignored")

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every row (file order), its position among the events, its record number, each row's
        accesses (object ids: its reads, then its writes) with where they begin, and each row's
        host time (`ns`, -1 where its block has no times record)."""
        data = memoryview(self.data)
        if not self.blocks:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(0, dtype=ROW), empty, empty, empty, np.zeros(1, dtype=np.int64), empty
        rows = np.frombuffer(b"".join(data[a:b] for _, _, a, b, _, _ in self.blocks), dtype=ROW)
        accesses = np.frombuffer(b"".join(data[b:e] for _, _, _, b, e, _ in self.blocks), dtype="<i8")
        firsts = np.array([b[0] for b in self.blocks], dtype=np.int64)
        counts = np.array([b[1] for b in self.blocks], dtype=np.int64)
        positions = concat_ranges(firsts, counts)
        numbers = np.repeat(np.array([b[5] for b in self.blocks], dtype=np.int64), counts)
        per_row = rows["nreads"].astype(np.int64) + rows["nwrites"]
        starts = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(per_row, out=starts[1:])
        # Each record's accesses must be exactly its rows' reads and writes.
        held = np.array([(e - b) // 8 for _, _, _, b, e, _ in self.blocks], dtype=np.int64)
        ends = np.cumsum(counts)
        named = starts[ends] - starts[ends - counts]
        wrong = np.flatnonzero(named != held)
        if len(wrong):
            k = int(wrong[0])
            raise TraceError(f"{self.path}: record {self.blocks[k][5]}: its rows name {int(named[k])} objects "
                             f"but it holds {int(held[k])}")
        times = np.full(len(rows), -1, dtype=np.int64)
        for k, at in self.times.items():
            first = int(ends[k] - counts[k])
            times[first:first + int(counts[k])] = np.frombuffer(data[at:at + 8 * int(counts[k])], dtype="<i8")
        return rows, positions, numbers, accesses, starts, times


def _unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)`; for ids that are small non-negative integers (a
    collector numbers its objects and streams from 0) through a lookup table instead of a sort."""
    if not len(values):
        return values, np.zeros(0, dtype=np.int64)
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= 4 * len(values) + 1024:
        uniques = unique_sorted(values)
        return uniques, np.searchsorted(uniques, values)
    seen = np.zeros(high + 1, dtype=bool)
    seen[values] = True
    uniques = np.flatnonzero(seen)
    rank = np.zeros(high + 1, dtype=np.int64)
    rank[uniques] = np.arange(len(uniques))
    return uniques.astype(values.dtype), rank[values]


def _row_problems(records: _Records, rows: np.ndarray, numbers: np.ndarray, skipped: Skipped) -> np.ndarray:
    """Which rows are well formed; the others are counted in `skipped`, by problem."""
    kinds = rows["kind"]
    good = np.ones(len(rows), dtype=bool)
    text = np.array([type(s) is str for s in records.strings] + [True], dtype=bool)  # [-1]: "none"
    stack_ok = np.array([site_problem(s) is None for s in records.stacks] + [True], dtype=bool)
    n_strings, n_stacks = len(records.strings), len(records.stacks)

    def name(code: int) -> str:
        return ROW_KINDS[code - 1] if 1 <= code <= len(ROW_KINDS) else f"row kind {code}"

    def check(bad: np.ndarray, problem: str) -> None:
        if not bad.any():
            return
        bad &= good
        for code in unique_sorted(kinds[bad]).tolist():
            where = np.flatnonzero(bad & (kinds == code))
            for number in numbers[where].tolist():
                skipped.add(problem.format(kind=name(code)), number)
        good[bad] = False

    check((kinds < 1) | (kinds > len(ROW_KINDS)), "a {kind} (not known to this gpulint)")
    check(rows["t"] < 0, "`t` of a {kind} event should be an integer from 0 to 2**64")
    all_text = bool(text.all())
    for field in ("api", "kernel", "text", "digest"):
        ids = rows[field]
        if all_text and (not len(ids) or (ids.min() >= -1 and ids.max() < n_strings)):
            continue  # the usual case, in two passes
        bad = (ids < -1) | (ids >= n_strings)
        bad |= ~text[np.where(bad, -1, ids)]
        check(bad, f"`{field}` of a {{kind}} row should name a string of the trace's table")
    streams = rows["stream"]
    named = (rows["flags"] & STREAM_TEXT) != 0
    bad = named & ((streams < 0) | (streams >= n_strings))
    bad |= named & ~text[np.where(bad | ~named, -1, streams)]
    check(bad, "`stream` of a {kind} row should name a string of the trace's table")
    sites = rows["site"]
    bad = (sites < -1) | (sites >= n_stacks)
    if not stack_ok.all():
        bad |= ~stack_ok[np.where(bad, -1, sites)]
    check(bad, "`site` of a {kind} row should name a [file, line or 0xoffset, function] stack of the trace's table")
    flags = rows["flags"]
    check(np.isin(kinds, (ROW_CODE["free"], ROW_CODE["memset"])) & ((flags & HAS_OBJ) == 0), "a {kind} event needs `obj`")
    check((kinds == ROW_CODE["memcpy"]) & ((flags & HAS_SIZE) == 0), "a {kind} event needs `size`")
    return good


def read_columns(path: str | Path):
    """A binary trace's header and its events as `Columns`: rows straight into arrays, JSON events
    as the JSON Lines reader takes them, all in file order.  Malformed rows and events are skipped
    with one warning per kind of problem, as in a JSON Lines trace."""
    from gpulint.dynamic.columns import GRAPH_LAUNCH, KIND, LAUNCH, MEMCPY, MEMSET, NONE, ColumnBuilder, Columns

    path = Path(path)
    unfinished = jsonl.finish_native(path)
    records = _Records(path)
    trace = Trace(path, records.meta or {}, [], [])
    if unfinished:
        trace.warnings.append(unfinished)
    skipped = Skipped()

    # JSON events: validated and turned into columns as the JSON Lines reader does; the rows'
    # strings, stacks, streams and objects are then interned into the same tables.
    builder = ColumnBuilder()
    json_events, json_positions = [], []
    for position, number, event in records.events:
        problem = event_problem(event)
        if problem is not None:
            skipped.add(problem, number)
        elif event["ev"] not in ("device", "note", "end") or not header_event(trace, event):
            json_events.append(event)
            json_positions.append(position)
    builder.add(json_events)

    rows, positions, numbers, accesses, access_starts, times = records.rows()
    good = _row_problems(records, rows, numbers, skipped)
    if not good.all():
        keep = np.flatnonzero(good)
        counts = np.diff(access_starts)[keep]
        accesses = accesses[concat_ranges(access_starts[keep], counts)]
        access_starts = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(counts, out=access_starts[1:])
        rows, positions, times = rows[keep], positions[keep], times[keep]
    trace.warnings.extend(skipped.warnings(path))
    if records.cut:
        trace.warnings.append(records.cut)
    if skipped.count and not len(rows) and not json_events:
        raise TraceError(f"{path}: no well-formed event: {'; '.join(skipped.warnings(path))}")

    strings = builder.strings.index
    string_id = np.array([strings(s) if type(s) is str else NONE for s in records.strings] + [NONE], dtype=np.int32)
    stack_id = np.array([builder.intern_site(s) for s in records.stacks] + [NONE], dtype=np.int32)
    kinds_in_row = np.array([0] + [KIND[k] for k in ROW_KINDS], dtype=np.uint8)[rows["kind"]]
    flags = rows["flags"]
    launch = (kinds_in_row == LAUNCH) | (kinds_in_row == GRAPH_LAUNCH)

    # Objects: every id a row names, interned in one go.
    has_obj, has_dst, has_src = (flags & HAS_OBJ) != 0, (flags & HAS_DST) != 0, (flags & HAS_SRC) != 0
    copy = kinds_in_row == MEMCPY
    event_rows = np.isin(kinds_in_row, [KIND[k] for k in EVENT_KINDS])
    named = [has_obj & ~event_rows, has_dst & copy, has_src & copy]
    values, inverse = _unique(np.concatenate([rows["obj"][named[0]], rows["dst"][named[1]], rows["src"][named[2]],
                                              accesses]))
    object_id = np.array([builder.objects.index(v) for v in values.tolist()], dtype=np.int64)[inverse]
    ids, taken = [], 0
    for mask in named:
        column = np.full(len(rows), NONE, dtype=np.int64)
        count = int(mask.sum())
        column[mask] = object_id[taken:taken + count]
        ids.append(column)
        taken += count
    obj, dst, src = ids
    access_obj = object_id[taken:]
    nreads = rows["nreads"].astype(np.int64)
    within = np.arange(len(access_obj)) - np.repeat(access_starts[:-1], np.diff(access_starts))
    access_write = within >= np.repeat(nreads, np.diff(access_starts))

    # Streams: the value as written (a number, or a string of the table), absent meaning 0.
    text_stream = (flags & STREAM_TEXT) != 0
    stream_value = np.where((flags & HAS_STREAM) != 0, rows["stream"], 0)
    numbers_seen, number_inverse = _unique(np.where(text_stream, 0, stream_value))
    stream = np.array([builder.streams.index(v) for v in numbers_seen.tolist()], dtype=np.int32)[number_inverse]
    for i in np.flatnonzero(text_stream).tolist():
        stream[i] = builder.streams.index(records.strings[int(rows["stream"][i])])

    raw_api = string_id[rows["api"]]
    kernel_any = string_id[rows["kernel"]]
    # The name an `Event` carries: the api, else (a launch) the kernel, else the kind.
    empty = builder.strings.get("")
    usable = (raw_api >= 0) & (raw_api != (empty if empty is not None else NONE))
    fallback = np.where(launch, np.where(kernel_any >= 0, kernel_any, strings("None")),
                        np.array([0] + [strings(k) for k in ROW_KINDS], dtype=np.int32)[rows["kind"]])
    row_columns = {
        "kind": kinds_in_row, "t": rows["t"].astype(np.int64), "ns": np.where(times >= 0, times, -1), "obj": obj, "dst": dst, "src": src,
        "size": np.where((flags & HAS_SIZE) != 0, rows["size"], 0).astype(np.uint64),
        "has_size": (flags & HAS_SIZE) != 0,
        "offset": np.where((kinds_in_row == MEMCPY) | (kinds_in_row == MEMSET), rows["offset"], 0).astype(np.uint64),
        "src_offset": np.where(kinds_in_row == MEMCPY, rows["src_offset"], 0).astype(np.uint64),
        "stream": stream, "api": np.where(usable, raw_api, fallback).astype(np.int32), "raw_api": raw_api,
        "kernel": np.where(kinds_in_row == LAUNCH, kernel_any, NONE).astype(np.int32),
        "site": stack_id[rows["site"]], "direction": np.where(kinds_in_row == MEMCPY, string_id[rows["text"]], NONE),
        "digest": string_id[rows["digest"]],
        "args_only": launch & ((flags & ARGS_ONLY) != 0),
    }

    # JSON events and rows together, in file order.
    from_json = builder.build()
    order = np.argsort(np.concatenate([np.array(json_positions, dtype=np.int64), positions]), kind="stable")
    joined = {name: np.concatenate([getattr(from_json, name), column])[order] for name, column in row_columns.items()}
    pool_obj = np.concatenate([from_json.access_obj, access_obj])
    pool_write = np.concatenate([from_json.access_write, access_write])
    pool_start = np.concatenate([from_json.access_start[:-1], access_starts[:-1] + len(from_json.access_obj)])
    pool_count = np.concatenate([np.diff(from_json.access_start), np.diff(access_starts)])[order]
    take = concat_ranges(pool_start[order], pool_count)
    starts = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(pool_count, out=starts[1:])
    final_row = np.empty(len(order), dtype=np.int64)
    final_row[order] = np.arange(len(order))
    extra = {int(final_row[k]): event for k, event in from_json.extra.items()}
    extra.update(_event_dictionaries(records, rows, final_row[len(from_json):], event_rows, times))
    columns = Columns(access_start=starts, access_obj=pool_obj[take], access_write=pool_write[take],
                      objects=builder.objects.values, strings=builder.strings.values, streams=builder.streams.values,
                      sites=builder.sites, extra=extra, **joined)
    return trace, columns


def _event_dictionaries(records: _Records, rows: np.ndarray, final_rows: np.ndarray,
                        event_rows: np.ndarray, times: np.ndarray) -> dict[int, dict[str, Any]]:
    """The dictionaries the analyses keep for synchronisations and event records and waits
    (`Columns.extra`), by final row, as a JSON Lines reader would have them."""
    out: dict[int, dict[str, Any]] = {}
    strings, stacks = records.strings, records.stacks
    chosen = np.flatnonzero(event_rows)
    picked = rows[chosen]
    columns = zip(final_rows[chosen].tolist(), picked["kind"].tolist(), picked["flags"].tolist(),
                  picked["t"].tolist(), picked["stream"].tolist(), picked["api"].tolist(), picked["text"].tolist(),
                  picked["site"].tolist(), picked["obj"].tolist(), times[chosen].tolist())
    for final, kind, flags, t, stream, api, text, site, event_id, ns in columns:
        event: dict[str, Any] = {"ev": ROW_KINDS[kind - 1], "t": t}
        if ns >= 0:
            event["ns"] = ns
        if flags & HAS_STREAM:
            event["stream"] = strings[stream] if flags & STREAM_TEXT else stream
        if api >= 0:
            event["api"] = strings[api]
        if text >= 0:
            event["scope"] = strings[text]
        if site >= 0:
            event["site"] = stacks[site]
        if flags & HAS_OBJ:
            event["event"] = event_id
        out[final] = event
    return out


def convert(source: str | Path, target: str | Path) -> int:
    """Write the JSON Lines trace `source` as a binary trace `target` (its sidecar copied along);
    returns the number of events.  For tests and for a user with a large JSON Lines trace."""
    import shutil

    from gpulint.dynamic.trace import open_trace, sidecar_path

    trace, events = open_trace(source)
    meta = {k: v for k, v in trace.meta.items() if k not in ("ev", "version")}
    count = 0
    with BinaryTraceWriter(target, flush_interval=math.inf, **meta) as out:
        for event in events:
            out.write(event)
            count += 1
    if sidecar_path(Path(source)).is_file() and not trace.meta.get("bitmaps"):
        shutil.copyfile(sidecar_path(Path(source)), sidecar_path(Path(target)))
    return count
