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
from pathlib import Path
from typing import Any, Iterable

from gpulint.dynamic.ordering import Orderer
from gpulint.dynamic.trace import Trace
from gpulint.findings import Location, human_bytes
from gpulint.history import (Access, AccessInfo, Event, Kind, LaunchBits, LaunchCounts, ObjectHistory, Op, PoolSample,
                             Size, Timeline, Touch, Unit)

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


_PREFIXES = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


def _system(path: str, roots: tuple[str, ...]) -> bool:
    if not path or path.startswith("<") or any(part in path for part in _SYSTEM_PARTS):
        return True
    return path.startswith(_PREFIXES) and not any(path.startswith(r) for r in roots)


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


def build_run(trace: Trace, events: Iterable[dict[str, Any]] | None = None, roots: tuple[str, ...] = ()) -> Run:
    """Histories of a run, in one pass over its events (`trace.events` unless `events` streams
    them): each work event gets its Kahn timestamp as it is read."""
    events = trace.events if events is None else events
    orderer = Orderer()
    program = (trace.meta.get("argv") or ["program"])[0]
    fallback = str(program)
    timeline = Timeline(name=Path(fallback).name or "program", observed=True)
    by_obj: dict[int, ObjectHistory] = {}
    access: dict[int, AccessInfo] = {}
    pools: list[PoolSample] = []
    later: list[dict[str, Any]] = []  # bitmaps and counters, read once every launch is known
    launches_by_t: dict[int, Event] = {}
    granularity = trace.granularity
    sites = _Sites(fallback, roots)
    sizes = _Sizes()
    last_stamp = 0
    extents: dict[int, list[tuple[int, int]]] = {}  # obj -> bytes copies and memsets touched
    host_tensors: list[ObjectHistory] = []
    device_tensors = False
    for raw in events:
        ev = raw["ev"]
        stamp = orderer.stamp(raw)
        if stamp is None:
            if ev in ("bitmap", "counts"):
                later.append(raw)
            elif ev == "pool":
                pools.append(_pool_sample(raw))
            elif ev == "flush":  # not work on the device, but where the program emptied a cache
                timeline.events.append(Event(t=last_stamp, op=Op.FLUSH, api=str(raw.get("api") or "flush"),
                                             location=sites.location(raw.get("site")), detail=ev))
            continue
        last_stamp = stamp
        location = sites.location(raw.get("site"), raw.get("kernel") if ev == "launch" else None)
        op = _OPS[ev]
        api = raw.get("api") or (raw.get("kernel") if ev in ("launch", "graph_launch") else ev)
        size = raw.get("size")
        event = Event(t=stamp, op=op, api=str(api), location=location, launches=1 if op is Op.LAUNCH else 0,
                      size=sizes[size] if isinstance(size, int) else None,
                      direction=raw.get("kind"), stream=raw.get("stream", 0), detail=ev, content=raw.get("digest"))
        timeline.events.append(event)
        if ev == "alloc":
            obj = raw.get("obj")
            nbytes = int(raw.get("size") or 0)
            name = raw.get("name") or f"{api}#{obj} ({human_bytes(nbytes)})"
            kind = _kind(raw)
            history = ObjectHistory(name=str(name), timeline=timeline, alloc=event, size=sizes[nbytes],
                                    kind=kind, bytes=nbytes, obj_id=obj, freed_by_statement=kind is Kind.TENSOR,
                                    # a collector that cannot see launches: no lifetime judgement
                                    incomplete=bool(raw.get("uses_unknown")))
            by_obj[obj] = history
            if raw.get("framework"):
                if raw.get("device") == "cpu":
                    host_tensors.append(history)
                elif raw.get("device"):
                    device_tensors = True
        elif ev == "free":
            history = by_obj.get(raw.get("obj"))
            if history is not None:
                history.frees.append(event)
        elif ev == "memcpy":
            nbytes = int(size or 0)
            dst, src = by_obj.get(raw.get("dst")), by_obj.get(raw.get("src"))
            for key, offset in (("dst", "dst_offset"), ("src", "src_offset")):
                if by_obj.get(raw.get(key)) is not None and nbytes > 0:
                    start = int(raw.get(offset) or 0)
                    extents.setdefault(raw[key], []).append((start, start + nbytes))
            if dst is not None:
                full = (raw.get("dst_offset") or 0) == 0 and nbytes >= (dst.bytes or 0)
                dst.touches.append(Touch(event, _FULL_WRITE if full else _WRITE, use=False,
                                         size=sizes[nbytes], offset_zero=(raw.get("dst_offset") or 0) == 0))
            if src is not None:
                src.touches.append(Touch(event, _READ, use=False, size=sizes[nbytes],
                                         offset_zero=(raw.get("src_offset") or 0) == 0))
        elif ev == "memset":
            target = by_obj.get(raw.get("obj"))
            if target is not None:
                nbytes = int(size or 0)
                offset = raw.get("offset") or 0
                if nbytes > 0:
                    extents.setdefault(raw["obj"], []).append((int(offset), int(offset) + nbytes))
                full = offset == 0 and nbytes >= (target.bytes or 0)
                target.touches.append(Touch(event, _FULL_WRITE if full else _WRITE, use=False,
                                            size=sizes[nbytes], offset_zero=offset == 0))
        else:  # launch
            reads, writes = raw.get("reads") or (), raw.get("writes") or ()
            for obj in reads:
                target = by_obj.get(obj)
                if target is not None:
                    target.touches.append(Touch(event, _BOTH if obj in writes else _READ, True, target.size))
            for obj in writes:
                target = by_obj.get(obj)
                if target is not None and obj not in reads:
                    target.touches.append(Touch(event, _WRITE, True, target.size))
            launches_by_t[raw.get("t")] = event
    timeline.events.sort(key=lambda e: e.t)  # stable: issue order within one timestamp
    end_t = (max((e.t for e in timeline.events), default=0)) + 1
    end_location = timeline.events[-1].location if timeline.events else Location(fallback, 1, 1)
    timeline.events.append(Event(t=end_t, op=Op.EXIT, api="end of program", location=end_location, detail="end"))
    timeline.end, timeline.end_t = end_location, end_t + 1
    unreadable: set[int] = set()  # objects whose bitmaps the sidecar does not have
    for raw in later:
        ev = raw["ev"]
        if ev == "bitmap":
            _add_bitmap(trace, raw, by_obj, access, launches_by_t, granularity, unreadable)
        elif ev == "counts":
            history = by_obj.get(raw.get("obj"))
            counts = trace.counts(raw.get("key", ""))
            if history is not None and counts is not None and raw["obj"] not in unreadable:
                info = access.setdefault(raw["obj"], AccessInfo(granularity, history.bytes or 0))
                info.counts = counts if info.counts is None else info.counts + counts
                info.count_granularity = int(raw.get("granularity") or 4)
                launch = launches_by_t.get(raw.get("launch_t"))
                if launch is not None:
                    from gpulint.measures import count_variation  # numpy: only for a run with counts

                    info.launch_counts.append(LaunchCounts(launch, *count_variation(counts)))
    if device_tensors:
        # A program with device tensors: its CPU tensors are host memory, which no GPU memory rule
        # judges (they stay objects, so a host tensor made only to be copied over shows, GL102).
        for history in host_tensors:
            history.kind = Kind.HOST
            history.freed_by_statement = False
    for obj, info in access.items():
        info.extents = extents.get(obj, [])
        if by_obj[obj].kind is not Kind.HOST:
            by_obj[obj].measured = info
    for history in by_obj.values():
        history.touches.sort(key=lambda touch: touch.event.t)  # issue order -> topological order
    histories = list(by_obj.values())
    unit = Unit(path=fallback, histories=histories, timelines=[timeline], pools=pools, language=_language(trace))
    return Run(unit, trace, by_obj, access, end_t, tuple(sorted(sites.without_lines)))


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
    or with `-lineinfo` alone, which is device-side only)."""
    from gpulint.dynamic.elf import line_warning
    from gpulint.dynamic.symbols import has_host_lines

    return [line_warning(m) for m in run.without_lines if has_host_lines(m) is False]

