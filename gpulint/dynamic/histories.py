"""Trace -> object histories: a run becomes one `Timeline` (events in Kahn order) and one
`ObjectHistory` per allocation, the same shapes static analysis produces, so the same rules run.

Findings point at the allocation site: the innermost frame of the event's host stack that lies
in the user's files (not the Python or CUDA installation, not site-packages, not gpulint).
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from gpulint.dynamic.columns import (ALLOC, BITMAP, COUNTS, FLUSH, FREE, GRAPH_LAUNCH, KINDS, LAUNCH, MEMCPY, MEMSET,
                                     NONE, POOL, Columns, columns_of, concat_ranges, unique_sorted)
from gpulint.dynamic.ordering import column_times
from gpulint.dynamic.runmodel import LazyList, RunHistory, RunTimeline, TouchTable
from gpulint.dynamic.trace import Trace
from gpulint.findings import Location, human_bytes
from gpulint.history import (Access, AccessInfo, Event, Kind, LaunchBits, LaunchCounts, ObjectHistory, Op, PoolSample,
                             Size, Timeline, Unit)

_OPS = {"alloc": Op.ALLOC, "free": Op.FREE, "memcpy": Op.COPY, "memset": Op.MEMSET, "launch": Op.LAUNCH,
        "graph_launch": Op.LAUNCH}
_READ, _WRITE, _BOTH = Access.READ, Access.WRITE, Access.READ | Access.WRITE
_FULL_WRITE = Access.WRITE | Access.FULL
# Paths of code the user did not write: installed packages, system and CUDA toolkit headers and
# libraries (wherever the toolkit lives: `targets/<arch>/include`), nvcc's generated stubs, gpulint.
_SYSTEM_PARTS = ("site-packages", "dist-packages", "/usr/include/", "/usr/lib/", "/usr/lib64/", "/lib64/", "/usr/local/cuda",
                 "/lib/python", "/gpulint/", "/targets/x86_64-linux/", "/targets/sbsa-linux/", "/compute-sanitizer/",
                 "/tmpxft_", ".cudafe1.", "/crt/link.stub", "/nvidia/hpc_sdk/")
# Functions of the toolkit and its libraries, by symbol: what a binary built without `-g` (or the
# static cudart, which has no line table) shows in place of a file.  User code named `cuda_init`
# is not matched: the toolkit's names are camel case after the prefix.
_TOOLKIT_SYMBOL = re.compile(r"(?:^|[\s:*&(])(?:__cuda|cuda[A-Z]|cudart|libcudart|cu[A-Z][a-z]|cublas|cufft|curand|"
                             r"cusparse|cusolver|cudnn|nccl|nvtx|thrust::|cub::|__device_stub|_start$|__libc_)")


@dataclass
class Run:
    """A trace turned into histories, with what the what-if and planner need."""

    unit: Unit
    trace: Trace
    by_obj: dict[int, ObjectHistory]
    access: dict[int, AccessInfo]  # obj id -> measured accesses
    end_t: int
    without_lines: tuple[str, ...] = ()  # binaries whose findings name a function, not a line
    arrays: Any = None  # the columns and touch arrays the histories are built on (what-if reads them)


_PREFIXES = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


@lru_cache(maxsize=1 << 14)
def _system(path: str, roots: tuple[str, ...]) -> bool:
    if not path or path.startswith("<") or any(part in path for part in _SYSTEM_PARTS):
        return True
    return path.startswith(_PREFIXES) and not any(path.startswith(r) for r in roots)


@lru_cache(maxsize=1 << 16)
def _base_name(function: str) -> str:
    """`ns::step<float>(float*, int)` -> `step`."""
    head = function.split("(", 1)[0].strip()
    depth, plain = 0, []
    for char in head:
        depth += char == "<"
        if depth == 0:
            plain.append(char)
        depth -= char == ">" and depth > 0
    return "".join(plain).rsplit("::", 1)[-1].rsplit(" ", 1)[-1]


def user_frame(site: list | None, roots: tuple[str, ...] = (), kernel: str | None = None) -> tuple[str, int, str] | None:
    """The innermost frame of a host stack that is in the user's code: the innermost with a line
    in a user's file; else (a binary without line information) the innermost user's function by
    its symbol, with line 0; else the innermost frame.  For a launch of `kernel`, the host stub
    nvcc generates under the kernel's own name (its line is the kernel's definition) is skipped:
    the launch is where the user wrote `<<<...>>>`."""
    if not site:
        return None
    stub = _base_name(kernel) if kernel else None
    fallback = lineless = None
    for frame in site:
        if not frame:
            continue
        path, line, func = (list(frame) + [None, None, None])[:3]
        path, func = str(path or ""), str(func or "")
        line = int(line or 0) if isinstance(line, int) or str(line).isdigit() else 0
        if fallback is None:
            fallback = (path, line, func)
        if _system(path, roots) or (stub and func and _base_name(func) == stub):
            continue
        if line:
            return path, line, func
        if lineless is None and func and not _TOOLKIT_SYMBOL.search(func):
            lineless = (path, 0, func)
    return lineless or fallback


def _location(site: list | None, fallback: str, roots: tuple[str, ...],
              kernel: str | None = None) -> tuple[Location, str | None]:
    """Where a host stack points, and the module without line information it had to fall back
    to (for the "rebuild with -g" warning)."""
    native = site and any(isinstance(f, list) and len(f) > 1 and isinstance(f[1], str) for f in site)
    if native:
        # Native frames [module, "0x<offset>", symbol]: resolved through DWARF here, once per
        # distinct stack, rather than by `gpulint run` (whose time is the traced program's).
        from gpulint.dynamic.symbols import resolve_frames

        site = [resolved for f in site for resolved in resolve_frames(f)]
    frame = user_frame(site, roots, kernel)
    if frame is None:
        return Location(fallback, 1, 1), None
    path, line, func = frame
    try:
        shown = Path(os.path.abspath(path)).relative_to(os.getcwd()).as_posix() if os.path.isabs(path) else path
    except ValueError:
        shown = path
    if line <= 0:
        return Location(shown or fallback, 0, 0, symbol=func or "an unknown function"), (path if native else None)
    return Location(shown or fallback, line, 1), None


class _Sites:
    """Locations of host stacks, resolved once per distinct stack (a run repeats a few hundred)."""

    def __init__(self, fallback: str, roots: tuple[str, ...]) -> None:
        self.fallback, self.roots = fallback, roots
        self.cache: dict[object, Location] = {}
        self.without_lines: set[str] = set()  # modules whose findings could only name a function
        self.by_id: dict[tuple[int, str | None], Location] = {}

    def location_of(self, site_id: int, site: list | None, kernel: str | None) -> Location:
        """`location` of an interned stack, by its index in the run's table of stacks (the
        reader made equal stacks one entry: no need to compare their frames again)."""
        key = (site_id, kernel)
        found = self.by_id.get(key)
        if found is None:
            found, module = _location(site, self.fallback, self.roots, kernel)
            if module:
                self.without_lines.add(module)
            self.by_id[key] = found
        return found

    def location(self, site: list | None, kernel: str | None = None) -> Location:
        try:
            key = (tuple(map(tuple, site)) if site else None, kernel)
        except TypeError:  # frames that are not lists: key by their text
            key = (repr(site), kernel)
        found = self.cache.get(key)
        if found is None:
            found, module = _location(site, self.fallback, self.roots, kernel)
            self.cache[key] = found
            if module:
                self.without_lines.add(module)
        return found


class _Sizes(dict):
    """One `Size` per distinct byte count."""

    def __missing__(self, n: int) -> Size:
        size = self[n] = Size(n, str(n))
        return size


def build_run(trace: Trace, events: Iterable[dict[str, Any]] | Columns | None = None,
              roots: tuple[str, ...] = ()) -> Run:
    """Histories of a run: `events` (dictionaries, or the columns a reader made; by default
    `trace.events`) become columns, ordered by Kahn timestamps, and one history per allocation
    whose events and touches are built when a rule asks for them."""
    columns = events if isinstance(events, Columns) else columns_of(trace.events if events is None else events)
    return _Builder(trace, columns, roots).run()


class _LaunchesByT:
    """The launch a bitmap or counter names by its `t` (the last launch issued with that `t`)."""

    def __init__(self, rows: np.ndarray, t: np.ndarray, event) -> None:
        order = np.argsort(t[rows], kind="stable")
        self.rows, self.times, self.event = rows[order], t[rows][order], event

    def get(self, t: Any) -> Event | None:
        if not isinstance(t, int) or isinstance(t, bool):
            return None
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        return self.event(int(self.rows[i])) if i >= 0 and self.times[i] == t else None


class _Builder:
    def __init__(self, trace: Trace, columns: Columns, roots: tuple[str, ...]) -> None:
        self.trace, self.c, self.roots = trace, columns, roots
        program = (trace.meta.get("argv") or ["program"])[0]
        self.fallback = str(program)
        self.sites = _Sites(self.fallback, roots)
        self.sizes = _Sizes()
        self.events: dict[int, Event] = {}
        self.exit: Event | None = None

    def event(self, row: int) -> Event:
        """The `Event` of a row (built once: rules compare events by identity); -1: the end."""
        found = self.events.get(row)
        if found is not None:
            return found
        if row < 0:
            return self.exit  # type: ignore[return-value]
        c = self.c
        kind = c.kind.item(row)  # `item`: a Python int, several times cheaper than int(array[i])
        if kind == FLUSH:
            raw = c.extra[row]
            found = Event(t=int(self.flush_t[row]), op=Op.FLUSH, api=str(raw.get("api") or "flush"),
                          location=self.sites.location(raw.get("site")), detail="flush")
        else:
            site = c.site.item(row)
            kernel = c.kernel.item(row) if kind == LAUNCH else NONE
            strings = c.strings
            location = self.sites.location_of(site, c.sites[site] if site >= 0 else None,
                                              strings[kernel] if kernel >= 0 else None)
            op = _OPS[KINDS[kind]]
            direction, digest = c.direction.item(row), c.digest.item(row)
            found = Event(t=self.stamps.item(row), op=op, api=str(strings[c.api.item(row)]), location=location,
                          launches=1 if op is Op.LAUNCH else 0,
                          size=self.sizes[c.size.item(row)] if c.has_size.item(row) else None,
                          direction=strings[direction] if direction >= 0 else None,
                          stream=c.streams[c.stream.item(row)], detail=KINDS[kind],
                          content=strings[digest] if digest >= 0 else None)
        self.events[row] = found
        return found

    def run(self) -> Run:
        c, trace = self.c, self.trace
        n = len(c)
        self.stamps = stamps = column_times(c)
        kinds = c.kind
        work = stamps >= 0
        # A flush is not work: it sits at the timestamp of the work issued before it.
        last_work = np.maximum.accumulate(np.where(work, np.arange(n), -1)) if n else np.zeros(0, dtype=np.int64)
        self.flush_t = np.where(last_work >= 0, stamps[np.maximum(last_work, 0)], 0) if n else last_work
        rows = np.flatnonzero(work | (kinds == FLUSH))
        times = np.where(work, stamps, self.flush_t)[rows]
        order = np.argsort(times, kind="stable")  # issue order within one timestamp
        rows, times = rows[order], times[order]
        timeline = RunTimeline(name=Path(self.fallback).name or "program", observed=True)
        end_t = (int(times[-1]) if len(times) else 0) + 1
        end_location = self.event(int(rows[-1])).location if len(rows) else Location(self.fallback, 1, 1)
        self.exit = Event(t=end_t, op=Op.EXIT, api="end of program", location=end_location, detail="end")
        events = LazyList(np.append(rows, -1), self.event)
        launched = kinds[rows]
        launch_positions = np.flatnonzero((launched == LAUNCH) | (launched == GRAPH_LAUNCH))
        timeline.setup(events, times[launch_positions], launch_positions, self.exit)
        timeline.rows = rows  # the column rows of its events, in order (exports read the columns)
        timeline.end, timeline.end_t = end_location, end_t + 1
        self._native_sites(work | (kinds == FLUSH))

        by_obj, histories = self._histories(timeline)
        table, slices = self._touches()
        for index, history in enumerate(self.all_histories):
            history.attach(table, int(slices[index]), int(slices[index + 1]))
        free_rows = np.flatnonzero((kinds == FREE) & (c.obj >= 0))
        for row, index in zip(free_rows.tolist(), self._history_of(c.obj[free_rows], free_rows).tolist()):
            if index >= 0:
                self.all_histories[index].frees.append(self.event(row))
        access, pools = self._measured(by_obj, table)
        unit = Unit(path=self.fallback, histories=histories, timelines=[timeline], pools=pools,
                    language=_language(trace))
        return Run(unit, trace, by_obj, access, end_t, tuple(sorted(self.sites.without_lines)), self)

    def _native_sites(self, located: np.ndarray) -> None:
        """Resolve now every native stack the run's events name (as building each event did):
        the modules without line information are the run's warnings."""
        c = self.c
        native = [i for i, site in enumerate(c.sites) if _is_native(site)]
        if not native:
            return
        rows = np.flatnonzero(located & np.isin(c.site, native))
        kernels = np.where(c.kind[rows] == LAUNCH, c.kernel[rows], NONE)
        for site, kernel in sorted(set(zip(c.site[rows].tolist(), kernels.tolist()))):
            self.sites.location_of(site, c.sites[site], c.strings[kernel] if kernel >= 0 else None)

    def _histories(self, timeline: Timeline) -> tuple[dict[int, ObjectHistory], list[ObjectHistory]]:
        c = self.c
        self.alloc_rows = alloc_rows = np.flatnonzero(c.kind == ALLOC)
        by_obj: dict[int, ObjectHistory] = {}
        self.all_histories: list[RunHistory] = []
        self.host_tensors: list[ObjectHistory] = []
        self.device_tensors = False
        for row in alloc_rows.tolist():
            raw = c.extra[row]
            event = self.event(row)
            obj: int = raw["obj"]
            nbytes = int(raw.get("size") or 0)
            name = raw.get("name") or f"{event.api}#{obj} ({human_bytes(nbytes)})"
            kind = _kind(raw)
            history = RunHistory(name=str(name), timeline=timeline, alloc=event, size=self.sizes[nbytes], kind=kind,
                                 bytes=nbytes, obj_id=obj, freed_by_statement=kind is Kind.TENSOR,
                                 # a collector that cannot see launches: no lifetime judgement
                                 incomplete=bool(raw.get("uses_unknown")))
            self.all_histories.append(history)
            by_obj[obj] = history
            if raw.get("framework"):
                if raw.get("device") == "cpu":
                    self.host_tensors.append(history)
                elif raw.get("device"):
                    self.device_tensors = True
        # Which history an object id names at a row: the latest allocation of that id before it.
        n = max(len(c), 1)
        keys = c.obj[alloc_rows] * (n + 1) + alloc_rows
        order = np.argsort(keys, kind="stable")
        self.alloc_keys, self.alloc_index, self.alloc_obj = keys[order], order, c.obj[alloc_rows][order]
        # Ids are unique in a trace (the format says so; a collector may still reuse one): then
        # an object's history is a table lookup, not a search.
        allocated = c.obj[alloc_rows]
        self.single_allocations = bool(len(allocated) == len(unique_sorted(allocated)) and (allocated >= 0).all())
        if self.single_allocations:
            self.history_of_object = np.full(len(c.objects) + 1, -1, dtype=np.int64)  # [-1]: no object
            self.history_of_object[allocated] = np.arange(len(allocated))
            self.allocated_at = np.full(len(c.objects) + 1, np.iinfo(np.int64).max, dtype=np.int64)
            self.allocated_at[allocated] = alloc_rows
        self.history_bytes = np.array([h.bytes or 0 for h in self.all_histories], dtype=np.uint64)
        return by_obj, list(by_obj.values())

    def _history_of(self, objs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The history each (object index, row) touches, -1 when that object is not allocated yet."""
        if self.single_allocations:
            objs = np.where(objs >= 0, objs, -1)
            return np.where(self.allocated_at[objs] < rows, self.history_of_object[objs], -1)
        n = max(len(self.c), 1)
        j = np.searchsorted(self.alloc_keys, objs * (n + 1) + rows, side="left") - 1
        valid = (j >= 0) & (objs >= 0)
        j = np.maximum(j, 0)
        valid &= self.alloc_obj[j] == objs if len(self.alloc_obj) else np.zeros(len(objs), dtype=bool)
        return np.where(valid, self.alloc_index[j] if len(self.alloc_index) else 0, -1)

    def _touches(self) -> tuple[TouchTable, np.ndarray]:
        """Every touch as arrays: copies and memsets (their extents), launches' reads and writes,
        in the order `build_run` used to append them, sorted per object by Kahn time."""
        c = self.c
        kinds = c.kind
        nbytes = np.where(c.has_size, c.size, 0).astype(np.uint64)
        parts = []  # (history, row, sub, access, use, size, offset_zero)

        def add(objs, rows, sub, access, use, size, offset_zero, full_offset=None):
            hist = self._history_of(objs, rows)
            keep = hist >= 0
            hist, rows = hist[keep], rows[keep]
            size = size[keep]
            access = np.broadcast_to(access, keep.shape)[keep].copy()
            if full_offset is not None:  # a write from offset 0 of at least the object's bytes
                full = (full_offset[keep] == 0) & (size >= self.history_bytes[hist])
                access[full] = 6
            parts.append((hist, rows, np.broadcast_to(sub, keep.shape)[keep], access,
                          np.broadcast_to(use, keep.shape)[keep], size,
                          np.broadcast_to(offset_zero, keep.shape)[keep]))

        copies = np.flatnonzero(kinds == MEMCPY)
        dst, src = c.dst[copies], c.src[copies]
        add(dst, copies, 0, np.uint8(2), False, nbytes[copies], c.offset[copies] == 0, c.offset[copies])
        add(src, copies, 1, np.uint8(1), False, nbytes[copies], c.src_offset[copies] == 0)
        sets = np.flatnonzero(kinds == MEMSET)
        add(c.obj[sets], sets, 0, np.uint8(2), False, nbytes[sets], c.offset[sets] == 0, c.offset[sets])
        launches = np.flatnonzero((kinds == LAUNCH) | (kinds == GRAPH_LAUNCH))
        lengths = c.access_start[launches + 1] - c.access_start[launches]
        entry_rows = np.repeat(launches, lengths)
        entries = concat_ranges(c.access_start[launches], lengths)
        objs = c.access_obj[entries]
        writes = c.access_write[entries]
        sub = entries - np.repeat(c.access_start[launches], lengths)
        width = max(len(c.objects), 1)
        pair = entry_rows * width + objs
        both = _read_and_written(pair, writes, int(lengths.max()) if len(lengths) else 0)
        reads = ~writes
        read_access = np.where(both[reads], 3, 1).astype(np.uint8)
        hist_reads = self._history_of(objs[reads], entry_rows[reads])
        add(objs[reads], entry_rows[reads], sub[reads], read_access, True,
            self.history_bytes[np.maximum(hist_reads, 0)] if len(self.history_bytes) else np.zeros(0, np.uint64), True)
        lone = writes & ~both
        hist_writes = self._history_of(objs[lone], entry_rows[lone])
        add(objs[lone], entry_rows[lone], sub[lone], np.uint8(2), True,
            self.history_bytes[np.maximum(hist_writes, 0)] if len(self.history_bytes) else np.zeros(0, np.uint64), True)
        hist, rows, subs, access, use, size, offset_zero = (np.concatenate(column) for column in zip(*parts))
        t = self.stamps[rows]
        order = np.lexsort((subs, rows, t, hist))
        hist, rows, access, use, size, offset_zero, t = (a[order] for a in (hist, rows, access, use, size,
                                                                            offset_zero, t))
        slices = np.concatenate(([0], np.cumsum(np.bincount(hist, minlength=len(self.all_histories)))))
        self.touch_hist = hist
        op_code = {Op.COPY: [MEMCPY], Op.MEMSET: [MEMSET], Op.LAUNCH: [LAUNCH, GRAPH_LAUNCH]}
        table = TouchTable(rows, t, access, use, size, offset_zero, c.kind[rows], c.digest[rows] >= 0, op_code,
                           self.event, self.sizes.__getitem__)
        return table, slices

    def _extents(self, table: TouchTable, wanted: set[int]) -> dict[int, list[tuple[int, int]]]:
        """Byte ranges copies and memsets touched, per object id of `wanted`, in issue order."""
        c = self.c
        ops = table.op
        candidates = np.flatnonzero(((ops == MEMCPY) | (ops == MEMSET)) & (table.size > 0))
        ids = [self.all_histories[h].obj_id for h in self.touch_hist[candidates].tolist()]
        chosen = [(int(table.row[k]), int(k)) for k, obj in zip(candidates.tolist(), ids) if obj in wanted]
        out: dict[int, list[tuple[int, int]]] = {}
        for row, k in sorted(chosen, key=lambda rk: (rk[0], table.access[rk[1]] == 1)):
            obj = self.all_histories[int(self.touch_hist[k])].obj_id
            start = int(c.src_offset[row] if table.access[k] == 1 and c.kind[row] == MEMCPY else c.offset[row])
            out.setdefault(obj, []).append((start, start + int(table.size[k])))  # type: ignore[arg-type]
        return out

    def _measured(self, by_obj: dict[int, ObjectHistory], table: TouchTable) -> tuple[dict[int, AccessInfo],
                                                                                     list[PoolSample]]:
        c, trace = self.c, self.trace
        pools = [_pool_sample(c.extra[row]) for row in np.flatnonzero(c.kind == POOL).tolist()]
        later = np.flatnonzero((c.kind == BITMAP) | (c.kind == COUNTS)).tolist()
        access: dict[int, AccessInfo] = {}
        if later:
            launches_by_t = _LaunchesByT(np.flatnonzero((c.kind == LAUNCH) | (c.kind == GRAPH_LAUNCH)), c.t,
                                         self.event)
            granularity = trace.granularity
            unreadable: set[int] = set()  # objects whose bitmaps the sidecar does not have
            for row in later:
                raw = c.extra[row]
                if raw["ev"] == "bitmap":
                    _add_bitmap(trace, raw, by_obj, access, launches_by_t, granularity, unreadable)  # type: ignore[arg-type]
                    continue
                history = by_obj.get(raw.get("obj"))  # type: ignore[arg-type]
                counts = trace.counts(raw.get("key", ""))
                if history is not None and counts is not None and raw["obj"] not in unreadable:
                    info = access.setdefault(raw["obj"], AccessInfo(granularity, history.bytes or 0))
                    info.counts = counts if info.counts is None else info.counts + counts
                    info.count_granularity = int(raw.get("granularity") or 4)
                    launch = launches_by_t.get(raw.get("launch_t"))
                    if launch is not None:
                        from gpulint.measures import count_variation  # numpy: only for a run with counts

                        info.launch_counts.append(LaunchCounts(launch, *count_variation(counts)))
        if self.device_tensors:
            # A program with device tensors: its CPU tensors are host memory, which no GPU memory rule
            # judges (they stay objects, so a host tensor made only to be copied over shows, GL102).
            for history in self.host_tensors:
                history.kind = Kind.HOST
                history.freed_by_statement = False
        self._withhold_unobserved(access)
        extents = self._extents(table, set(access)) if access else {}
        for obj, info in access.items():
            info.extents = extents.get(obj, [])
            if by_obj[obj].kind is not Kind.HOST:
                by_obj[obj].measured = info
        return access, pools

    def _withhold_unobserved(self, access: dict[int, AccessInfo]) -> None:
        """An object that a launch left uninstrumented also used (`--sample`, `--kernels`, or a
        launch the collector could not prepare: `args_only`) was touched where no bitmap saw: its
        bitmaps say what it at least touched, not what it never did.  What they would claim
        (GL008's accessed fraction, GL010's slices) is not judged for it; each instrumented
        launch's access counts are exact and stay (GL009)."""
        c = self.c
        rows = np.flatnonzero(c.args_only & ((c.kind == LAUNCH) | (c.kind == GRAPH_LAUNCH)))
        if not len(rows) or not any(info.per_launch for info in access.values()):
            return
        entries = concat_ranges(c.access_start[rows], c.access_start[rows + 1] - c.access_start[rows])
        objects = c.objects
        unobserved = {objects[i] for i in unique_sorted(c.access_obj[entries]).tolist() if i >= 0}
        withheld = [obj for obj, info in access.items() if info.per_launch and obj in unobserved]
        for obj in withheld:
            access[obj].per_launch = []
        if withheld:
            self.trace.warnings.append(
                f"{len(withheld)} object{'s' if len(withheld) != 1 else ''} with access bitmaps also went through "
                f"{len(rows)} launch{'es' if len(rows) != 1 else ''} the run did not instrument (`--sample`, "
                "`--kernels`, or a launch the collector could not prepare): what those touched is unknown, so "
                "GL008 (accessed fraction) and GL010 (slices) do not judge them")


def _read_and_written(pair: np.ndarray, writes: np.ndarray, longest: int) -> np.ndarray:
    """Which launch entries name an object their launch both reads and writes (`pair`: launch
    row and object as one key, entries of one launch adjacent; `longest`: the most entries one
    launch has).  A launch names a few objects: comparing each entry with its neighbours is a
    few passes over the arrays, where a set lookup of every key would sort them all."""
    if longest > 16:  # a launch that lists every live object: the sort is cheaper
        out = np.zeros(len(pair), dtype=bool)
        out[~writes] = np.isin(pair[~writes], pair[writes], kind="sort")
        out[writes] = np.isin(pair[writes], pair[~writes], kind="sort")
        return out
    out = np.zeros(len(pair), dtype=bool)
    for d in range(1, longest):
        same = pair[:-d] == pair[d:]
        mixed = same & (writes[:-d] != writes[d:])
        out[:-d] |= mixed
        out[d:] |= mixed
    return out


def _is_native(site: Any) -> bool:
    return bool(site) and isinstance(site, list) and any(
        isinstance(f, list) and len(f) > 1 and isinstance(f[1], str) for f in site)


def _kind(raw: dict[str, Any]) -> Kind:
    if raw.get("segment"):
        return Kind.SEGMENT
    if raw.get("framework"):
        return Kind.TENSOR
    api = str(raw.get("api") or "")
    if "Managed" in api:
        return Kind.MANAGED
    if "Host" in api or raw.get("pinned"):
        return Kind.PINNED
    if "Async" in api or "Pool" in api:
        return Kind.ASYNC
    return Kind.DEVICE


def _add_bitmap(trace: Trace, raw: dict[str, Any], by_obj: dict[int, ObjectHistory], access: dict[int, AccessInfo],
                launches_by_t: dict[int, Event], granularity: int, unreadable: set[int]) -> None:
    history = by_obj.get(raw.get("obj"))
    launch = launches_by_t.get(raw.get("launch_t"))
    if history is None or launch is None:
        return
    key = raw.get("key", "")
    read = trace.bitmap(key, "r") if raw.get("read") else None
    write = trace.bitmap(key, "w") if raw.get("write") else None
    if raw["obj"] in unreadable or (raw.get("read") and read is None) or (raw.get("write") and write is None):
        # A bitmap the event promises is not in the sidecar (cut short, corrupt): what this object's
        # launches touched is unknown, which is not "nothing" (GL008 would say 0% accessed).
        unreadable.add(raw["obj"])
        access.pop(raw["obj"], None)
        return
    info = access.setdefault(raw["obj"], AccessInfo(int(raw.get("granularity") or granularity), history.bytes or 0))
    info.per_launch.append(LaunchBits(launch, read, write))
    if raw.get("counts_cv") is not None:
        info.launch_counts.append(LaunchCounts(launch, float(raw["counts_cv"]), int(raw.get("counts_accessed") or 0)))


def _language(trace: Trace) -> str:
    """A run of a Python program (any collector, the native one included) is judged as Python."""
    program = str((trace.meta.get("argv") or [""])[0])
    python = trace.meta.get("collector") not in (None, "native") or Path(program).name.startswith("python")
    return "python" if python else "cuda"


def _pool_sample(raw: dict[str, Any]) -> PoolSample:
    return PoolSample(int(raw.get("t") or 0), str(raw.get("pool", "default")), int(raw.get("reserved") or 0),
                      int(raw.get("allocated") or 0), int(raw.get("allocated_peak") or 0))


def without_line_warnings(run: Run) -> list[str]:
    """One warning per binary of the run that has no host line table at all (built without `-g`,
    or with `-lineinfo` alone, which is device-side only); or one saying that no line table can
    be read at all."""
    from gpulint.dynamic.elf import line_warning
    from gpulint.dynamic.symbols import has_host_lines, reader_missing

    if run.without_lines and reader_missing():
        return ["pyelftools is not installed, so the line tables of native programs cannot be read and findings "
                "name no lines: install it (`pip install pyelftools`, one of gpulint's dependencies)"]
    return [line_warning(m) for m in run.without_lines if has_host_lines(m) is False]

