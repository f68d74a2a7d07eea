"""cuda-python collector: wraps the allocation, free, copy, memset, launch and synchronisation
entry points of `cuda.bindings.runtime` and `cuda.bindings.driver` so that a program written
against them is traced like a native one.

Only calls made from the user's code are recorded: frameworks built on cuda-python (Numba) call
the same functions and have collectors of their own.  A launch is recorded as using every known
allocation its arguments point into (cuda-python does not say which it writes).  Kernel names
come from `cuModuleGetFunction` / `cuLibraryGetKernel` when the program looked them up while
traced.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable

from gpulint.dynamic.collectors.recorder import LiveObjects, Recorder, is_user_file, host_digest

_ALLOCS = ("cudaMalloc", "cudaMallocAsync", "cudaMallocManaged", "cudaMallocHost", "cuMemAlloc", "cuMemAllocManaged",
           "cuMemAllocAsync", "cuMemAllocHost")
_FREES = ("cudaFree", "cudaFreeAsync", "cudaFreeHost", "cuMemFree", "cuMemFreeAsync", "cuMemFreeHost")
# name -> (kind or None when given by a cudaMemcpyKind argument, dst index, src index, size index)
_COPIES = {"cudaMemcpy": (None, 0, 1, 2), "cudaMemcpyAsync": (None, 0, 1, 2),
           "cuMemcpyHtoD": ("h2d", 0, 1, 2), "cuMemcpyDtoH": ("d2h", 0, 1, 2), "cuMemcpyDtoD": ("d2d", 0, 1, 2),
           "cuMemcpyHtoDAsync": ("h2d", 0, 1, 2), "cuMemcpyDtoHAsync": ("d2h", 0, 1, 2),
           "cuMemcpyDtoDAsync": ("d2d", 0, 1, 2), "cuMemcpy": ("default", 0, 1, 2),
           "cuMemcpyAsync": ("default", 0, 1, 2)}
# name -> (dst index, count index, bytes per element)
_MEMSETS = {"cudaMemset": (0, 2, 1), "cudaMemsetAsync": (0, 2, 1), "cuMemsetD8": (0, 2, 1), "cuMemsetD8Async": (0, 2, 1),
            "cuMemsetD16": (0, 2, 2), "cuMemsetD16Async": (0, 2, 2), "cuMemsetD32": (0, 2, 4),
            "cuMemsetD32Async": (0, 2, 4)}
_SYNCS = {"cudaDeviceSynchronize": "device", "cuCtxSynchronize": "device", "cudaStreamSynchronize": "stream",
          "cuStreamSynchronize": "stream"}
_LAUNCHES = ("cuLaunchKernel", "cudaLaunchKernel")
_LOOKUPS = ("cuModuleGetFunction", "cuLibraryGetKernel")
_STREAM_ARG = {"cudaMallocAsync": 1, "cudaFreeAsync": 1, "cuMemAllocAsync": 1, "cuMemFreeAsync": 1,
               "cudaMemcpyAsync": 4, "cudaMemsetAsync": 3, "cuMemcpyHtoDAsync": 3, "cuMemcpyDtoHAsync": 3,
               "cuMemcpyDtoDAsync": 3, "cuMemcpyAsync": 3, "cuMemsetD8Async": 3, "cuMemsetD16Async": 3,
               "cuMemsetD32Async": 3, "cudaStreamSynchronize": 0, "cuStreamSynchronize": 0, "cuLaunchKernel": 8,
               "cudaLaunchKernel": 5}


def _ok(result: Any) -> bool:
    error = result[0] if isinstance(result, tuple) else result
    try:
        return int(error) == 0
    except (TypeError, ValueError):
        return False


def _address(value: Any) -> int | None:
    """An address from an int, a CUdeviceptr-like object or a cuda-python pointer wrapper."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:
        return int(value.getPtr())
    except Exception:
        return None


class CudaPythonCollector:
    def __init__(self, recorder: Recorder, modules: list[Any]) -> None:
        self.recorder = recorder
        self.objects = LiveObjects()
        self.names: dict[int, str] = {}  # CUfunction / CUkernel address -> kernel name
        self.streams: dict[int, int] = {}
        self.saved: list[tuple[Any, str, Any]] = []
        for module in modules:
            self.attach(module)

    def attach(self, module: Any) -> None:
        """Wrap the entry points of one module (the runtime's and the driver's share this state:
        memory allocated through one is launched on through the other)."""
        for name in (*_ALLOCS, *_FREES, *_COPIES, *_MEMSETS, *_SYNCS, *_LAUNCHES, *_LOOKUPS):
            original = getattr(module, name, None)
            if original is not None and callable(original):
                self.saved.append((module, name, original))
                setattr(module, name, self._wrap(name, original))

    def uninstall(self) -> None:
        for module, name, original in reversed(self.saved):
            setattr(module, name, original)

    # ------------------------------------------------------------------ bookkeeping
    def _find(self, value: Any) -> tuple[int, int] | None:
        address = _address(value)
        return self.objects.find(address) if address is not None else None

    def _stream(self, args: tuple, name: str) -> int:
        index = _STREAM_ARG.get(name)
        value = _address(args[index]) if index is not None and index < len(args) else 0
        if not value:
            return 0
        return self.streams.setdefault(value, len(self.streams) + 1)

    def _wrap(self, name: str, original: Callable) -> Callable:
        collector = self

        def wrapper(*args, **kwargs):
            result = original(*args, **kwargs)
            # Only the user's own calls: frameworks built on cuda-python have their own collectors.
            if is_user_file(sys._getframe(1).f_code.co_filename) and _ok(result):
                with collector.recorder.lock:
                    try:
                        collector._record(name, args, result)
                    except Exception:  # never let the record break the program
                        pass
            return result

        wrapper.__name__ = name
        wrapper.__wrapped__ = original
        return wrapper

    def _record(self, name: str, args: tuple, result: Any) -> None:
        rec = self.recorder
        if name in _ALLOCS:
            base = _address(result[1])
            size = _address(args[0]) or 0
            if base is None:
                return
            oid = rec.new_object()
            self.objects.add(base, oid, size)
            rec.write({"ev": "alloc", "t": rec.tick(), "obj": oid, "addr": base, "size": size,
                       "stream": self._stream(args, name), "api": name, "library": "cuda-python",  # not refcounted: leaks count
                       **({"pinned": True} if "Host" in name else {}), "site": rec.site()})
        elif name in _FREES:
            base = _address(args[0])
            if base in self.objects.items:
                oid, _ = self.objects.items[base]
                self.objects.remove(base, oid)
                rec.write({"ev": "free", "t": rec.tick(), "obj": oid, "stream": self._stream(args, name),
                           "site": rec.site()})
        elif name in _COPIES:
            kind, dst_i, src_i, size_i = _COPIES[name]
            if kind is None:
                kind = {0: "h2h", 1: "h2d", 2: "d2h", 3: "d2d"}.get(_address(args[3]) or 4, "default")
            dst, src = self._find(args[dst_i]), self._find(args[src_i])
            if dst or src:
                size = _address(args[size_i]) or 0
                event = {"ev": "memcpy", "t": rec.tick(), "dst": dst[0] if dst else None,
                         "src": src[0] if src else None, "size": size, "kind": kind,
                         "stream": self._stream(args, name), "dst_offset": dst[1] if dst else 0,
                         "src_offset": src[1] if src else 0, "site": rec.site()}
                if kind == "h2d" and not src:
                    digest = host_digest(_address(args[src_i]) or 0, size)
                    if digest:
                        event["digest"] = digest
                rec.write(event)
        elif name in _MEMSETS:
            dst_i, count_i, unit = _MEMSETS[name]
            target = self._find(args[dst_i])
            if target:
                rec.write({"ev": "memset", "t": rec.tick(), "obj": target[0], "size": (_address(args[count_i]) or 0) * unit,
                           "offset": target[1], "stream": self._stream(args, name), "site": rec.site()})
        elif name in _SYNCS:
            rec.write({"ev": "sync", "t": rec.tick(), "scope": _SYNCS[name], "stream": self._stream(args, name)})
        elif name in _LOOKUPS:
            handle = _address(result[1])
            text = args[1]
            if handle is not None:
                self.names[handle] = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
        elif name in _LAUNCHES:
            function = _address(args[0])
            params = args[9] if name == "cuLaunchKernel" and len(args) > 9 else args[3] if len(args) > 3 else None
            ids = list(dict.fromkeys(found[0] for found in map(self._find, _argument_values(params)) if found))
            rec.write({"ev": "launch", "t": rec.tick(), "kernel": self.names.get(function or 0, name),
                       "stream": self._stream(args, name), "reads": ids, "writes": ids, "args_only": True,
                       "site": rec.site()})


def _argument_values(params: Any) -> list[Any]:
    """The values a launch's kernel parameters hold: cuda-python's `(values, types)` form, or an
    array / sequence of addresses of the values (each read as 8 bytes)."""
    if params is None or isinstance(params, int):
        return []  # no parameters, or a raw void** that cannot be read safely
    if isinstance(params, tuple) and len(params) == 2 and isinstance(params[0], (tuple, list)):
        return list(params[0])
    try:
        import numpy as np

        addresses = np.asarray(params).reshape(-1).astype(np.uint64)
    except Exception:
        return []
    values = []
    for address in addresses.tolist():
        if address:
            values.append(ctypes.c_uint64.from_address(int(address)).value)
    return values


def install(recorder: Recorder, module: Any) -> CudaPythonCollector | None:
    existing = getattr(recorder, "cuda_python", None)
    if existing is not None:
        existing.attach(module)
        return None  # already in the session's list
    recorder.cuda_python = CudaPythonCollector(recorder, [module])
    return recorder.cuda_python
