"""What the Python collectors share: one trace, one clock, one object numbering, the user's
stack; and `session`, which installs every collector whose framework the program imports.

Each framework's collector is installed when the program imports the framework (or at once if it
already has): importing PyTorch, CuPy and Numba up front would add seconds to programs that use
one of them, and Numba's memory manager must be chosen before its first CUDA context.
"""
from __future__ import annotations

import bisect
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Iterable

from gpulint.dynamic.trace import TraceWriter

GPULINT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB = os.path.dirname(os.__file__)
_SKIPPED_PARTS = ("site-packages", "dist-packages")


class Recorder:
    """The trace being written, with the counters every collector draws from."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self._t = 0
        self.next_id = 1
        self._now: Callable[[], int] | None = None
        self.lock = threading.RLock()  # frees and backward ops arrive on other threads
        self.last_site: list = []
        self.last_site_json = "[]"
        self._encoded: dict[tuple, str] = {}
        self.closed = False
        self.notes: list[str] = []  # what the collectors could not see, for the report
        # Collectors that record the kernels launched inside their own operations (PyTorch's
        # hook, whose ops run under no gpulint frame): each says whether this thread is inside
        # one, so that a process-wide launch callback (CUPTI) does not record those twice.
        self.launch_owners: list[Callable[[], bool]] = []

    @property
    def t(self) -> int:
        """The time of the last event."""
        return self._t if self._now is None else self._now()

    def tick(self) -> int:
        self._t += 1
        return self._t

    def new_object(self) -> int:
        oid = self.next_id
        self.next_id += 1
        return oid

    def share_clock(self, tick: Callable[[], int], now: Callable[[], int], new_object: Callable[[], int]) -> None:
        """Draw times and object ids from a collector that counts outside Python (PyTorch's
        C++ hook, which numbers the events of threads that hold no GIL)."""
        self.tick, self.new_object, self._now = tick, new_object, now  # type: ignore[method-assign]

    def launch_owned(self) -> bool:
        """Whether a kernel launched now on this thread is recorded by a collector already."""
        return any(inside() for inside in self.launch_owners)

    def write(self, event: dict[str, Any]) -> None:
        if not self.closed:
            if "t" in event and "ns" not in event:
                event["ns"] = time.monotonic_ns()  # real time for reports (the native tool's clock)
            self.writer.write(event)

    def write_line(self, line: str) -> None:
        """A line an event-per-op collector built itself: the host time goes in front."""
        if not self.closed:
            if line.startswith('{"ev":') and '"t":' in line[:40]:
                line = f'{{"ns":{time.monotonic_ns()},{line[1:]}'
            self.writer.write_line(line)

    def site(self) -> list:
        """The user's frames, innermost first; the last known ones when there are none (a free
        from interpreter internals, an op on autograd's thread)."""
        found = user_stack(2)
        if found:
            self.last_site = found
            return found
        return self.last_site

    def site_json(self, skip: int = 2) -> str:
        """`site()` already encoded as JSON, for collectors that write an event per op: the walk
        keeps (code, line) pairs and each distinct stack is encoded once."""
        key = user_code_stack(skip + 1)
        if not key:
            return self.last_site_json
        text = self._encoded.get(key)
        if text is None:
            text = self._encoded[key] = encode_site([(code_of(code_id), line) for code_id, line in key])
        self.last_site_json = text
        return text


def is_user_file(path: str, cache: dict[str, bool] = {}) -> bool:  # noqa: B006 - a deliberate memo
    found = cache.get(path)
    if found is None:
        found = cache[path] = not (path.startswith((GPULINT_DIR, _STDLIB, "<")) or any(p in path for p in _SKIPPED_PARTS)
                                   or _installed(path))
    return found


def _installed(path: str, roots: dict[str, bool] = {}) -> bool:  # noqa: B006 - a deliberate memo
    """The file is in a folder on `sys.path` that pip installed into (`pip install --target DIR`,
    a `PYTHONPATH` of wheels): one that holds `*.dist-info` folders.  A project's own source
    folder holds none (an editable install leaves `*.egg-info` there, which does not count), so
    its files stay the user's."""
    for entry in sys.path:
        if not entry or not path.startswith(entry.rstrip(os.sep) + os.sep):
            continue
        found = roots.get(entry)
        if found is None:
            try:
                found = roots[entry] = any(name.endswith(".dist-info") for name in os.listdir(entry))
            except OSError:
                found = roots[entry] = False
        if found:
            return True
    return False


# id of a code object -> (the code object, its kind: 0 not the user's, 1 the user's, _ENTRY).
# Keeping the code objects alive keeps their ids unique.
_CODES: dict[int, tuple[Any, int]] = {}


def user_code_stack(skip: int = 1, limit: int = 8) -> tuple:
    """`user_stack` as (id of the code object, line) pairs, for callers that cache by stack: no
    lists or strings built per call, and code objects are looked up by id because hashing one
    hashes its whole body."""
    frames = []
    try:
        frame = sys._getframe(skip)
    except ValueError:  # a shallow stack (an op on autograd's engine thread): no user frames
        return ()
    get = _CODES.get
    while frame is not None:
        code = frame.f_code
        known = get(id(code))
        if known is None:
            known = _CODES[id(code)] = (code, frame_kind(code))
        if known[1]:
            if known[1] is _ENTRY:
                break  # the frame that runs the program: nothing older is the user's
            frames.append((id(code), frame.f_lineno))
            if len(frames) == limit:
                break
        frame = frame.f_back
    return tuple(frames)


_ENTRY = 2
_entries: set[tuple[str, str]] = set()  # (file, function) of frames that run the user's program


def program_entry(path: str, function: str) -> None:
    """Stop stack walks at this frame (`runpy` running the program under `gpulint run`): its
    callers are never the user's, and walking them cost every event about 2 us."""
    _entries.add((path, function))
    _CODES.clear()  # kinds worked out before this entry was known


def frame_kind(code: Any) -> int:
    if (code.co_filename, code.co_name) in _entries:
        return _ENTRY
    return int(is_user_file(code.co_filename))


def code_of(code_id: int) -> Any:
    """The code object `user_code_stack` named by its id."""
    return _CODES[code_id][0]


def encode_site(frames: Iterable[tuple[Any, int]]) -> str:
    """(code, line) pairs, innermost first, as a trace event's `site` (compact JSON)."""
    return json.dumps([[code.co_filename, line, code.co_name] for code, line in frames], separators=(",", ":"))


def user_stack(skip: int = 1, limit: int = 8) -> list[list]:
    """The caller's frames outside gpulint, the standard library and installed packages,
    innermost first (walking frames directly: `traceback` would read every source line)."""
    return [[code_of(code_id).co_filename, line, code_of(code_id).co_name]
            for code_id, line in user_code_stack(skip + 1, limit)]


class LiveObjects:
    """Live device allocations by base address, for "which object does this pointer point into"
    (collectors that see raw addresses: Numba, cuda-python)."""

    def __init__(self) -> None:
        self.bases: list[int] = []
        self.items: dict[int, tuple[int, int]] = {}  # base -> (object id, size)

    def add(self, base: int, oid: int, size: int) -> None:
        bisect.insort(self.bases, base)
        self.items[base] = (oid, size)

    def remove(self, base: int, oid: int) -> None:
        if self.items.get(base, (None,))[0] == oid:
            del self.items[base]
            self.bases.pop(bisect.bisect_left(self.bases, base))

    def find(self, address: int) -> tuple[int, int] | None:
        """(object id, offset) of the allocation containing `address`."""
        i = bisect.bisect_right(self.bases, address) - 1
        if i < 0:
            return None
        base = self.bases[i]
        oid, size = self.items[base]
        return (oid, address - base) if address < base + max(size, 1) else None


# ---------------------------------------------------------------------- post-import hooks
class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs a callback once a named module has been imported (Python has no post-import hook)."""

    def __init__(self, name: str, callback: Callable[[Any], None]) -> None:
        self.name, self.callback, self.busy = name, callback, False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return None
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.callback(module)


def when_imported(name: str, callback: Callable[[Any], None]) -> Callable[[], None]:
    """Call `callback(module)` now if `name` is imported, else right after the program imports
    it.  Returns a function that cancels the hook."""
    if name in sys.modules:
        callback(sys.modules[name])
        return lambda: None
    hook = _AfterImport(name, callback)
    sys.meta_path.insert(0, hook)
    return lambda: hook in sys.meta_path and sys.meta_path.remove(hook)


# ---------------------------------------------------------------------- the session
class session:
    """`with gpulint.trace("out.trace.jsonl"): ...`: record what the block does with PyTorch,
    CuPy, Numba and cuda-python (each as soon as the block imports it)."""

    FRAMEWORKS = (
        ("torch", "gpulint.dynamic.collectors.torch_native"),  # the C++ hook, or the dispatch mode
        ("cupy", "gpulint.dynamic.collectors.cupy_collector"),
        ("numba.cuda", "gpulint.dynamic.collectors.numba_collector"),
        ("cuda.bindings.runtime", "gpulint.dynamic.collectors.cuda_python_collector"),
        ("cuda.bindings.driver", "gpulint.dynamic.collectors.cuda_python_collector"),
    )

    def __init__(self, path: str = "gpulint.trace.jsonl") -> None:
        self.path = path
        self.recorder: Recorder | None = None
        self.installed: list[Any] = []  # collectors with an uninstall()
        self.cancels: list[Callable[[], None]] = []

    def __enter__(self) -> "session":
        writer = TraceWriter(self.path, collector="python", argv=list(sys.argv), device=None, granularity=4,
                             pid=os.getpid(), flush_interval=0.05)
        self.recorder = Recorder(writer)
        for module_name, collector in self.FRAMEWORKS:
            self.cancels.append(when_imported(module_name, lambda module, c=collector: self._install(c, module)))
        return self

    def _install(self, collector: str, module: Any) -> None:
        import importlib

        assert self.recorder is not None
        try:
            installed = importlib.import_module(collector).install(self.recorder, module)
        except Exception as exc:  # a framework version we do not know: say so, never break the program
            print(f"gpulint: could not attach to {module.__name__} ({type(exc).__name__}: {exc}); "
                  f"its work is not in the trace", file=sys.stderr)
            return
        if installed is not None:
            self.installed.append(installed)

    def __exit__(self, *exc: Any) -> None:
        assert self.recorder is not None
        for cancel in self.cancels:
            cancel()
        for collector in reversed(self.installed):
            stop = getattr(collector, "stop", None)
            if stop is not None:
                stop()  # outside the lock: see CuptiLaunches.stop
        with self.recorder.lock:
            for collector in reversed(self.installed):
                collector.uninstall()
            for note in dict.fromkeys(self.recorder.notes):
                self.recorder.write({"ev": "note", "text": note})
            self.recorder.closed = True
            self.recorder.writer.close()


# A host-to-device copy's digest: every byte up to this size, else this many windows of this
# size spread evenly over the buffer (a 1 GiB upload costs 64 KiB of hashing).
DIGEST_WHOLE = 64 * 1024
DIGEST_WINDOWS = 64
DIGEST_WINDOW = 1024


def host_digest(address: int, size: int) -> str | None:
    """16 hex digits of a hash of `size` host bytes at `address` (sampled above 64 KiB) and the
    size.  Digests are compared within one trace only: equal digests at one site are the same
    data uploaded again (GL103)."""
    import ctypes
    import hashlib

    if not address or size <= 0:
        return None
    digest = hashlib.blake2b(size.to_bytes(8, "little"), digest_size=8)
    if size <= DIGEST_WHOLE:
        digest.update(ctypes.string_at(address, size))
    else:
        step = (size - DIGEST_WINDOW) // (DIGEST_WINDOWS - 1)
        for i in range(DIGEST_WINDOWS):
            digest.update(ctypes.string_at(address + i * step, DIGEST_WINDOW))
    return digest.hexdigest()
