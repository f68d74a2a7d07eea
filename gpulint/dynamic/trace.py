"""Trace format v1: JSON Lines (optionally gzip), one event per line, bitmaps in an `.npz` sidecar.

The contract between collectors (which write) and analyses (which read); `docs/trace-format.md`
describes every event.  The writer flushes each line, so a program that crashes leaves a trace
readable up to the crash; the reader accepts a truncated last line and refuses a major version
it does not know.
"""
from __future__ import annotations

import gzip
import json
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

import numpy as np

from gpulint.dynamic.records import BINARY_PREFIX

VERSION = 1


class TraceError(Exception):
    """A trace that cannot be read; the message says where and why."""


def sidecar_path(trace: Path) -> Path:
    """`app.trace.jsonl` -> `app.trace.jsonl.npz` (the bitmaps of that trace)."""
    return trace.with_name(trace.name + ".npz")


class TraceWriter:
    """Streaming writer: `meta` first, then one line per event, flushed as it goes (or, with
    `flush_interval` seconds, at most that long after it was written: a collector that writes an
    event per tensor op cannot afford a system call for each).

    Bitmaps (`add_bitmap`) and per-element counters (`add_counts`) are kept in memory and saved,
    bit-packed, to the `.npz` sidecar by `close()`.
    """

    def __init__(self, path: str | Path, collector: str, argv: list[str] | None = None, device: str | None = None,
                 granularity: int = 32, compress: bool | None = None, flush_interval: float = 0.0,
                 **meta: Any) -> None:
        self.path = Path(path)
        self._flush_interval = flush_interval
        self._flushed = time.monotonic()
        self._pending: list[str] = []
        self._source: Any = None
        compress = self.path.suffix == ".gz" if compress is None else compress
        raw = open(self.path, "wb")
        self._file: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="wb") if compress else raw
        self._raw = raw
        self._arrays: dict[str, np.ndarray] = {}
        self.write({"ev": "meta", "version": VERSION, "collector": collector, "argv": list(argv or []),
                    "device": device, "granularity": granularity, **meta})

    def write(self, event: dict[str, Any]) -> None:
        self.write_line(json.dumps(event, separators=(",", ":")))

    def write_line(self, line: str) -> None:
        """One event already encoded as a JSON object (a collector's hot path builds its own)."""
        if self._source is not None:
            self._source.append(line)  # after the lines the source holds
        elif not self._flush_interval:
            self._file.write(line.encode("utf-8") + b"\n")
            self.flush()
            return
        else:
            # Lines wait in a list and go out in one write per interval: per-line encoding and
            # writes cost a collector that writes an event per tensor op about 1 us each.
            self._pending.append(line)
        now = time.monotonic()
        if now - self._flushed >= self._flush_interval:
            self._flushed = now
            self.flush()

    def attach(self, source: Any) -> None:
        """Let `source` hold the pending lines (PyTorch's C++ hook, whose events are written
        outside Python): it has `append(line)` and `take() -> bytes`, the lines written since
        the last take, in order.  `None` detaches it."""
        self.flush()
        self._source = source

    def flush(self) -> None:
        if self._pending:
            self._pending.append("")
            self._file.write("\n".join(self._pending).encode("utf-8"))
            self._pending.clear()
        if self._source is not None:
            self._file.write(self._source.take())
        self._file.flush()
        if self._file is not self._raw:
            self._raw.flush()

    def add_bitmap(self, obj: int, launch_t: int, read: np.ndarray | None, write: np.ndarray | None,
                   granularity: int = 32) -> None:
        """Which granules (`granularity` bytes each) of object `obj` launch `launch_t` read / wrote."""
        key = f"o{obj}_t{launch_t}"
        for kind, bits in (("r", read), ("w", write)):
            if bits is not None:
                bits = np.asarray(bits, dtype=bool)
                self._arrays[f"{key}_{kind}"] = np.packbits(bits)
                self._arrays[f"{key}_{kind}_n"] = np.array([bits.size], dtype=np.int64)
        self.write({"ev": "bitmap", "obj": obj, "launch_t": launch_t, "key": key, "granularity": granularity,
                    "read": read is not None, "write": write is not None})

    def add_counts(self, obj: int, launch_t: int | None, counts: np.ndarray, granularity: int = 4) -> None:
        """Per-element access counts of `obj` (one launch, or the whole run when `launch_t` is None)."""
        key = f"c{obj}_t{launch_t if launch_t is not None else 'all'}"
        self._arrays[key] = np.asarray(counts, dtype=np.uint32)
        self.write({"ev": "counts", "obj": obj, "launch_t": launch_t, "key": key, "granularity": granularity})

    def close(self) -> None:
        self.flush()
        self._save_sidecar()
        self._file.close()
        if self._file is not self._raw:
            self._raw.close()

    def _save_sidecar(self) -> None:
        if self._arrays:
            sidecar = sidecar_path(self.path)
            temp = sidecar.with_name(sidecar.name + ".tmp")
            with open(temp, "wb") as out:
                np.savez_compressed(out, **self._arrays)
            temp.replace(sidecar)

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class Trace:
    """A trace read back: its `meta`, its events in file order, and warnings met on the way."""

    path: Path
    meta: dict[str, Any]
    events: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    _sidecar: Any = None

    @property
    def granularity(self) -> int:
        return int(self.meta.get("granularity") or 32)

    def arrays(self):
        """The sidecar's arrays (loaded once), or None when there is none or it cannot be read (a
        truncated or corrupt sidecar costs the bitmap rules, with a warning, not the analysis)."""
        if self._sidecar is None:
            name = self.meta.get("bitmaps")
            path = self.path.parent / name if name else sidecar_path(self.path)
            if not path.is_file():
                return None
            try:
                self._sidecar = np.load(path, allow_pickle=False)
            except Exception as exc:  # zipfile.BadZipFile, OSError, ValueError, EOFError
                self._sidecar_broken(path, exc)
        return self._sidecar or None

    def _sidecar_broken(self, path: Path, exc: BaseException) -> None:
        self.warnings.append(f"{path}: cannot read the bitmap sidecar ({type(exc).__name__}: {exc}); "
                             f"the rules that need bitmaps and counts (GL008 from a run, GL009, GL010) are skipped")
        self._sidecar = False

    def _array(self, key: str) -> np.ndarray | None:
        arrays = self.arrays()
        if arrays is None or key not in arrays.files:
            return None
        try:
            return arrays[key]
        except Exception as exc:  # a member cut short: zlib.error, ValueError, EOFError
            self._sidecar_broken(self.path, exc)
            return None

    def bitmap(self, key: str, kind: str) -> np.ndarray | None:
        """The unpacked read (`kind="r"`) or write (`"w"`) bitmap stored under `key`."""
        packed, count = self._array(f"{key}_{kind}"), self._array(f"{key}_{kind}_n")
        if packed is None or count is None:
            return None
        try:
            n = int(count.reshape(-1)[0])
            if packed.dtype != np.uint8 or not 0 <= n <= packed.size * 8:
                raise ValueError(f"{n} bits in {packed.size} {packed.dtype} elements")
            return np.unpackbits(packed.reshape(-1), count=n).astype(bool)
        except (ValueError, IndexError, TypeError) as exc:
            self._sidecar_broken(self.path, exc)
            return None

    def counts(self, key: str) -> np.ndarray | None:
        counts = self._array(key)
        if counts is not None and (counts.ndim != 1 or counts.dtype.kind not in "ui"):
            self._sidecar_broken(self.path, ValueError(f"`{key}` is not a vector of counts"))
            return None
        return counts


def _lines(path: Path) -> Iterator[bytes]:
    """The lines of a trace file, gunzipped when it is gzip (by its magic bytes, not its name).
    A gzip stream cut off by a crash yields everything that was decompressed before the cut."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        if not compressed:
            yield from raw
            return
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = b""
        while True:
            chunk = raw.read(1 << 20)
            if not chunk:
                break
            try:
                data = inflate.decompress(chunk)
            except zlib.error:
                break  # corrupt from here on: keep what came before
            if inflate.eof and inflate.unused_data:
                # Concatenated gzip members (a writer that reopened the file): go on with the next.
                rest = inflate.unused_data
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                data += inflate.decompress(rest)
            lines = (pending + data).split(b"\n")
            pending = lines.pop()
            for line in lines:
                yield line + b"\n"
        if pending:
            yield pending


def starts_with(path: Path, prefix: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(prefix)) == prefix
    except OSError:
        return False


def finish_native(path: Path) -> str | None:
    """The native collector leaves its raw bitmap words in `<trace>.bits` and the program exits
    at once (`gpulint run` has become the program); the first reader moves them into the `.npz`
    sidecar, in place, once.  Returns a warning when that cannot be done (a read-only folder)."""
    raw = Path(str(path) + ".bits")
    if not raw.is_file():
        return None
    from gpulint.dynamic.collectors.native.finalize import finalize

    try:
        finalize(path, sidecar_path(path))
    except OSError as exc:
        return (f"{path}: cannot move the collector's raw bitmaps ({raw.name}) into the sidecar: "
                f"{exc.strerror or exc}; the analyses that need bitmaps are skipped")
    return None


def open_trace(path: str | Path, decode: bool = True) -> tuple[Trace, Any]:
    """The trace's header (meta, sidecar access) and an iterator over its events, read lazily so
    a run of millions of events is never held as dictionaries.  The iterator raises `TraceError`
    for a bad line and records a cut-off last line in `trace.warnings`."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    if starts_with(path, BINARY_PREFIX):
        raise TraceError(f"{path}: a binary trace: `gpulint analyze` reads it; event by event, only JSON Lines")
    unfinished = finish_native(path)
    lines = enumerate(_lines(path), 1)
    meta = None
    try:
        for number, line in lines:
            if not line.strip():
                continue
            try:
                event = decode_line(line)
            except (ValueError, RecursionError):
                raise TraceError(f"{path}:{number}: not a JSON event: {line[:80]!r}") from None
            if not isinstance(event, dict) or event.get("ev") != "meta":
                raise TraceError(f"{path}:{number}: the first event must be \"meta\"")
            meta = check_version(path, event)
            break
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if meta is None:
        raise TraceError(f"{path}: empty trace (no \"meta\" line)")
    trace = Trace(path, meta, [], [])
    if unfinished:
        trace.warnings.append(unfinished)
    if not decode:  # the numbered lines after `meta`, for a reader of its own
        return trace, lines
    return trace, _events(path, lines, trace.warnings)


# ------------------------------------------------------------------------- validation
#
# What each field of an event must hold.  An event with a field of the wrong type or range is
# skipped (one warning per kind of problem, with the first line and a count): one bad event must
# not cost the rest of a long run, and no analysis may meet a list where it expects an id.

_U64 = 1 << 64


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _id(value: Any) -> str | None:
    return None if _is_int(value) and -_U64 < value < _U64 else "an integer id"


def _optional_id(value: Any) -> str | None:
    return None if value is None else _id(value)


def _bytes(value: Any) -> str | None:
    return None if _is_int(value) and 0 <= value < _U64 else "a byte count (an integer from 0 to 2**64)"


def _time(value: Any) -> str | None:
    return None if _is_int(value) and 0 <= value < _U64 else "a non-negative integer"


def _optional_time(value: Any) -> str | None:
    return None if value is None else _time(value)


def _ids(value: Any) -> str | None:
    return None if isinstance(value, list) and all(_id(v) is None for v in value) else "a list of integer ids"


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _optional_text(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else "a string"


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) or value is None else "true or false"


def _stream(value: Any) -> str | None:
    return None if value is None or (_is_int(value) and -_U64 < value < _U64) or isinstance(value, str) \
        else "a stream id"


def _fraction(value: Any) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
    return None if ok else "a non-negative number"


def _granularity(value: Any) -> str | None:
    ok = _is_int(value) and 0 < value < _U64 and value & (value - 1) == 0
    return None if ok else "a positive power of two"


def _frame_line(value: Any) -> bool:
    # Python frames carry a line number; native ones a hexadecimal offset ("0x1a2b") to resolve.
    if _is_int(value):
        return 0 <= value < _U64
    return isinstance(value, str) and len(value) > 2 and value[:2] == "0x" and all(
        c in "0123456789abcdefABCDEF" for c in value[2:])


def site_problem(value: Any) -> str | None:
    ok = isinstance(value, list) and all(
        isinstance(frame, list) and 2 <= len(frame) <= 3 and isinstance(frame[0], str) and _frame_line(frame[1])
        and (len(frame) < 3 or frame[2] is None or isinstance(frame[2], str)) for frame in value)
    return None if ok else "a list of [file, line or 0xoffset, function] frames"


# ev -> {field: check}; fields listed in _REQUIRED must be present.  Unknown events and fields are
# ignored (a newer minor version may add them).
_COMMON = {"t": _time, "ns": _time, "stream": _stream, "site": site_problem, "api": _text}
_FIELDS: dict[str, dict[str, Any]] = {
    "alloc": {**_COMMON, "obj": _id, "addr": _bytes, "size": _bytes, "name": _optional_text, "pinned": _flag,
              "uses_unknown": _flag, "segment": _optional_text, "device": _optional_text, "framework": _optional_text},
    "free": {**_COMMON, "obj": _id},
    "memcpy": {**_COMMON, "dst": _optional_id, "src": _optional_id, "size": _bytes, "kind": _text,
               "dst_offset": _bytes, "src_offset": _bytes, "digest": _optional_text},
    "memset": {**_COMMON, "obj": _id, "size": _bytes, "offset": _bytes},
    "launch": {**_COMMON, "kernel": _text, "reads": _ids, "writes": _ids, "args_only": _flag, "params_unread": _flag},
    "sync": {**_COMMON, "scope": _text},
    "event_record": {**_COMMON},
    "event_wait": {**_COMMON},
    "bitmap": {"obj": _id, "launch_t": _time, "key": _text, "granularity": _granularity, "read": _flag,
               "write": _flag, "counts_cv": _fraction, "counts_accessed": _bytes},
    "counts": {"obj": _id, "launch_t": _optional_time, "key": _text, "granularity": _granularity},
    "pool": {"t": _time, "ns": _time, "pool": _text, "reserved": _bytes, "allocated": _bytes, "allocated_peak": _bytes},
    "flush": {**_COMMON, "pool": _optional_text},
    "note": {"text": _text},
    "device": {"t": _time, "device": _optional_text},
    "end": {"t": _time},
}
_FIELDS["graph_launch"] = _FIELDS["launch"]
_REQUIRED = {"alloc": ("t", "obj", "size"), "free": ("t", "obj"), "memcpy": ("t", "size"), "memset": ("t", "obj"),
             "launch": ("t",), "graph_launch": ("t",), "sync": ("t",), "event_record": ("t",),
             "event_wait": ("t",), "bitmap": ("obj", "launch_t", "key"), "counts": ("obj", "key"),
             "pool": ("t", "reserved", "allocated"), "flush": ("t",)}


def event_problem(event: dict[str, Any]) -> str | None:
    """What is wrong with an event (`ev` known), or None when every field it has is well formed."""
    kind = event.get("ev")
    if not isinstance(kind, str):
        return "`ev` should be a string"
    checks = _FIELDS.get(kind)
    if checks is None:
        return None
    for name in _REQUIRED.get(kind, ()):
        if name not in event:
            return f"a {kind} event needs `{name}`"
    for name, value in event.items():
        check = checks.get(name)
        expected = check(value) if check is not None else None
        if expected is not None:
            return f"`{name}` of a {kind} event should be {expected}, not {json.dumps(value)[:40]}"
    return None


class Skipped:
    """Malformed events skipped, one warning per kind of problem (its first line and a count)."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}
        self.count: dict[str, int] = {}

    def add(self, problem: str, line: int) -> None:
        self.first.setdefault(problem, line)
        self.count[problem] = self.count.get(problem, 0) + 1

    def warnings(self, path: Path) -> list[str]:
        return [f"{path}:{self.first[p]}: {p}; {n} such event{'s' if n != 1 else ''} skipped"
                for p, n in self.count.items()]


def decode_line(line: bytes) -> Any:
    """One JSON line: orjson (about 3.5 times faster than the standard library on trace lines), with
    the standard library deciding whatever orjson refuses (`NaN`, integers beyond 64 bits), so that
    the set of readable traces is the standard library's."""
    try:
        return _fast_loads(line)
    except ValueError:
        return json.loads(line)


_fast_loads: Callable[[bytes], Any]
try:
    import orjson

    _fast_loads = orjson.loads
except ImportError:  # a machine without the wheel (no network to install it): the standard library alone
    _fast_loads = json.loads


def _events(path: Path, lines, warnings: list[str]) -> Iterator[dict[str, Any]]:
    loads = decode_line
    pending_error: str | None = None
    last_complete = True
    number = 0
    skipped = Skipped()
    kept = 0
    try:
        for number, line in lines:
            if pending_error is not None:
                raise TraceError(pending_error)
            if not line.strip():
                continue
            try:
                event = loads(line)
            except (ValueError, RecursionError):
                # Only the last line may be cut short; decide when we know whether more follow.
                pending_error = f"{path}:{number}: not a JSON event: {line[:80]!r}"
                last_complete = line.endswith(b"\n")
                continue
            if not isinstance(event, dict) or "ev" not in event:
                raise TraceError(f"{path}:{number}: not an event (no \"ev\" field)")
            problem = event_problem(event)
            if problem is not None:
                skipped.add(problem, number)
                continue
            kept += 1
            yield event
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    finally:
        warnings.extend(skipped.warnings(path))
    if pending_error is not None:
        if last_complete:
            raise TraceError(pending_error)
        warnings.append(f"{path}:{number}: the last line is cut short (the program stopped mid-write); ignored")
    if skipped.count and not kept:
        raise TraceError(f"{path}: no well-formed event: {'; '.join(skipped.warnings(path))}")


# ------------------------------------------------------------------------- columnar reading
#
# `gpulint analyze` reads a trace into columns (`columns.Columns`): lines decoded by orjson (the
# standard library's decoder only for what orjson refuses and Python accepts: NaN, Infinity,
# integers beyond 64 bits, which validation then rejects as it always did), validated a chunk at
# a time field by field, and turned into arrays chunk by chunk, so no more than a chunk of
# dictionaries is ever alive.  Warnings and errors are those of `open_trace`, in the same order.

_MISSING = object()
# Events per chunk: validation and column building pass over a chunk's dictionaries about twenty
# times, so a chunk should stay in the processor's caches.  Decoding, validation and columns of
# the 1M-event trace of benchmarks/dynamic_speed.py (2-core EPYC, 2026-11-29): 32,768 events per
# chunk 12.7 s, 8,192 10.6 s, 2,048 6.0 s, 1,024 5.4 s, 512 5.2 s.
_CHUNK = 1 << 10
_HEADER_KINDS = frozenset({"device", "note", "end"})


def _int_values(values: list, low: int, high: int) -> bool:
    """Every value an int (not a bool) with low < value < high."""
    return set(map(type, values)) <= {int} and (not values or (low < min(values) and max(values) < high))


def _fast_time(values: list) -> bool:
    return _int_values(values, -1, _U64)


def _fast_id(values: list) -> bool:
    return _int_values(values, -_U64, _U64)


def _fast_optional_id(values: list) -> bool:
    return _fast_id([v for v in values if v is not None])


def _fast_optional_time(values: list) -> bool:
    return _fast_time([v for v in values if v is not None])


def _fast_ids(values: list) -> bool:
    from itertools import chain

    return set(map(type, values)) <= {list} and _fast_id(list(chain.from_iterable(values)))


def _fast_types(*types: type):
    allowed = set(types)
    return lambda values: set(map(type, values)) <= allowed


def _fast_stream(values: list) -> bool:
    return set(map(type, values)) <= {int, str, type(None)} and _fast_id([v for v in values if type(v) is int])


class _SiteCheck:
    """`site_problem` once per distinct stack (a run repeats a few hundred thousand times the same few)."""

    def __init__(self) -> None:
        self.known: dict[Any, bool] = {}

    def __call__(self, values: list) -> bool:
        known = self.known
        for value in values:
            if type(value) is not list:
                return False
            key = (tuple(map(type, value)), tuple(map(tuple, value)))
            ok = known.get(key)
            if ok is None:
                ok = known[key] = site_problem(value) is None
            if not ok:
                return False
        return True


_FAST = {_time: _fast_time, _id: _fast_id, _optional_id: _fast_optional_id, _bytes: _fast_time,
         _optional_time: _fast_optional_time, _ids: _fast_ids, _text: _fast_types(str),
         _optional_text: _fast_types(str, type(None)), _flag: _fast_types(bool, type(None)), _stream: _fast_stream}


def _all_well_formed(events: list[dict[str, Any]], sites: _SiteCheck) -> bool:
    """True when no event of `events` has a problem (`event_problem` would say None for each);
    False when some may (the caller then asks `event_problem` event by event)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    try:
        for event in events:
            kind = event["ev"]
            if type(kind) is not str:
                return False
            group = groups.get(kind)
            if group is None:
                group = groups[kind] = []
            group.append(event)
        for kind, group in groups.items():
            checks = _FIELDS.get(kind)
            if checks is None:
                continue
            required = _REQUIRED.get(kind, ())
            for name, check in checks.items():
                values = [e.get(name, _MISSING) for e in group]
                if any(v is _MISSING for v in values):
                    if name in required:
                        return False
                    values = [v for v in values if v is not _MISSING]
                if not values:
                    continue
                fast = sites if check is site_problem else _FAST.get(check)
                if not (fast(values) if fast is not None else all(check(v) is None for v in values)):
                    return False
    except (TypeError, ValueError, RecursionError):  # unhashable or unordered values: the slow way
        return False
    return True


def read_columns(path: str | Path):
    """The trace's header and its events as `Columns` (JSON Lines, gzip or not; `tracebin.read`
    takes either encoding).  Same checks, warnings and errors as `open_trace`."""
    from gpulint.dynamic.columns import ColumnBuilder

    path = Path(path)
    trace, lines = open_trace(path, decode=False)
    builder = ColumnBuilder()
    pending_error: str | None = None
    last_complete = True
    number = 0
    skipped = Skipped()
    kept = 0
    sites = _SiteCheck()
    chunk: list[dict[str, Any]] = []
    numbers: list[int] = []

    def flush() -> None:
        nonlocal kept, chunk, numbers
        good = chunk
        if not _all_well_formed(chunk, sites):
            good = []
            for event, line_number in zip(chunk, numbers):
                problem = event_problem(event)
                if problem is None:
                    good.append(event)
                else:
                    skipped.add(problem, line_number)
        kept += len(good)
        builder.add([e for e in good if e["ev"] not in _HEADER_KINDS or not header_event(trace, e)])
        chunk, numbers = [], []

    try:
        for number, line in lines:
            if pending_error is not None:
                raise TraceError(pending_error)
            if not line.strip():
                continue
            try:
                event = decode_line(line)
            except (ValueError, RecursionError):
                # Only the last line may be cut short; decide when we know whether more follow.
                pending_error = f"{path}:{number}: not a JSON event: {line[:80]!r}"
                last_complete = line.endswith(b"\n")
                continue
            if not isinstance(event, dict) or "ev" not in event:
                raise TraceError(f"{path}:{number}: not an event (no \"ev\" field)")
            chunk.append(event)
            numbers.append(number)
            if len(chunk) >= _CHUNK:
                flush()
        flush()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    finally:
        trace.warnings.extend(skipped.warnings(path))
    if pending_error is not None:
        if last_complete:
            raise TraceError(pending_error)
        trace.warnings.append(f"{path}:{number}: the last line is cut short (the program stopped mid-write); ignored")
    if skipped.count and not kept:
        raise TraceError(f"{path}: no well-formed event: {'; '.join(skipped.warnings(path))}")
    return trace, builder.build()


def read_trace(path: str | Path) -> Trace:
    """Read a whole trace.  A truncated last line (a crash mid-write) is dropped with a warning;
    any other bad line, a missing `meta` or an unknown major version is a `TraceError`."""
    trace, events = open_trace(path)
    trace.events = [e for e in events if not header_event(trace, e)]
    return trace


def header_event(trace: Trace, event: dict[str, Any]) -> bool:
    """Events that describe the run rather than happen in it (the native collector names the
    device once a context exists) go into `meta`."""
    if event.get("ev") == "device":
        trace.meta.setdefault("device", None)
        trace.meta["device"] = trace.meta["device"] or event.get("device")
        trace.meta["compute_capability"] = event.get("compute_capability")
        return True
    if event.get("ev") == "note":  # what a collector could not see: the report says it
        trace.warnings.append(str(event.get("text")))
        return True
    return event.get("ev") == "end"


def _strings(value: Any) -> str | None:
    return None if isinstance(value, list) and all(isinstance(v, str) for v in value) else "a list of strings"


# A bad meta field is an error, not a skip: every event is read in its light.
_META = {"argv": _strings, "collector": _text, "device": _optional_text, "bitmaps": _optional_text,
         "granularity": lambda v: None if v is None else _granularity(v), "pid": _optional_time,
         "rank": _optional_time}


def check_version(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    for name, check in _META.items():
        expected = check(meta[name]) if name in meta else None
        if expected is not None:
            raise TraceError(f"{path}:1: `{name}` of meta should be {expected}, not {json.dumps(meta[name])[:40]}")
    version = meta.get("version")
    if isinstance(version, bool) or not isinstance(version, (int, str)):
        raise TraceError(f"{path}:1: `version` of meta should be a number, not {json.dumps(version)[:40]}")
    try:
        major = int(str(version).split(".", 1)[0])
    except ValueError:
        raise TraceError(f"{path}: trace version {version!r} is not a number") from None
    if major != VERSION:
        raise TraceError(f"{path}: trace format version {version} is not supported by this gpulint "
                         f"(it reads version {VERSION}.x); upgrade gpulint or re-record the trace")
    return meta


def write_events(path: str | Path, events: Iterable[dict[str, Any]], **meta: Any) -> Path:
    """Write a complete trace in one go (tests, converters)."""
    meta.setdefault("collector", "test")
    with TraceWriter(path, **meta) as writer:
        for event in events:
            writer.write(event)
    return Path(path)
