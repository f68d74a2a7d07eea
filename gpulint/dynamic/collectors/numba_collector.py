"""Numba collector: an External Memory Management plugin that records every device allocation
(and its end, when the last array using it is dropped), wrappers of Numba's copy and memset
entry points, and a kernel-launch wrapper that records the arrays each launch receives.

A launch is recorded as reading and writing every device array among its arguments (Numba does
not say which it writes); host arrays passed to a kernel are copied in and out by Numba, and
those copies are recorded as such.  The plugin must be chosen before Numba creates its CUDA
context: when the program already has one, allocations made before gpulint attached are not
known and the trace says so.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from gpulint.dynamic.collectors.recorder import LiveObjects, Recorder, host_digest


def _pointer(obj: Any) -> int | None:
    """The device address of a Numba array / pointer / `__cuda_array_interface__` object."""
    interface = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        return int(interface["data"][0] or 0)
    from numba.cuda.cudadrv import driver

    try:
        return int(driver.device_pointer(obj))
    except Exception:
        return None


def _host_pointer(obj: Any) -> int | None:
    """The host address of a NumPy array or of what Numba's driver takes as host memory."""
    interface = getattr(obj, "__array_interface__", None)
    if isinstance(interface, dict):
        return int(interface["data"][0] or 0)
    from numba.cuda.cudadrv import driver

    try:
        return int(driver.host_pointer(obj))
    except Exception:
        return None


class NumbaCollector:
    def __init__(self, recorder: Recorder, cuda: Any) -> None:
        from numba.cuda import dispatcher
        from numba.cuda.cudadrv import driver

        self.recorder, self.driver, self.dispatcher = recorder, driver, dispatcher
        self.objects = LiveObjects()
        self.saved: list[tuple[Any, str, Any]] = []
        collector = self

        class GpulintMemoryManager(driver.NumbaCUDAMemoryManager):
            """Numba's own manager, telling gpulint what it allocates."""

            def memalloc(self, size):
                mem = super().memalloc(size)
                collector.allocated(mem, int(size))
                return mem

        self.streams: dict[Any, int] = {}
        self.kernel = threading.local()  # the kernel being launched on this thread
        self._replace(driver, "_memory_manager", GpulintMemoryManager)
        for name, kind in (("host_to_device", "h2d"), ("device_to_host", "d2h"), ("device_to_device", "d2d")):
            self._replace(driver, name, self._copy_wrapper(getattr(driver, name), kind))
        self._replace(driver, "device_memset", self._memset_wrapper(driver.device_memset))
        self._replace(dispatcher.CUDADispatcher, "call", self._call_wrapper(dispatcher.CUDADispatcher.call))
        if hasattr(dispatcher, "launch"):  # numba-cuda on cuda.core: launch(stream, config, kernel, *args)
            self._replace(dispatcher, "launch", self._launch_wrapper(dispatcher.launch, first_arg=3))
        else:  # older numba-cuda: driver.launch_kernel(function, grid..., block..., shared, stream, args)
            self._replace(driver, "launch_kernel", self._launch_wrapper(driver.launch_kernel, first_arg=None))

    def _replace(self, owner: Any, name: str, value: Any) -> None:
        self.saved.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, value)

    def uninstall(self) -> None:
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)

    # ------------------------------------------------------------------ objects
    def allocated(self, mem: Any, size: int) -> None:
        base = _pointer(mem)
        if base is None:
            return
        with self.recorder.lock:
            oid = self.recorder.new_object()
            self.objects.add(base, oid, size)
            self.recorder.write({"ev": "alloc", "t": self.recorder.tick(), "obj": oid, "addr": base, "size": size,
                                 "stream": 0, "api": "numba.cuda.device_array", "framework": "numba",
                                 "site": self.recorder.site()})
        weakref.finalize(mem, self.freed, base, oid)

    def freed(self, base: int, oid: int) -> None:
        with self.recorder.lock:
            self.objects.remove(base, oid)
            self.recorder.write({"ev": "free", "t": self.recorder.tick(), "obj": oid, "stream": 0,
                                 "site": self.recorder.site()})

    def _find(self, obj: Any) -> tuple[int, int] | None:
        address = _pointer(obj)
        return self.objects.find(address) if address else None

    # ------------------------------------------------------------------ work
    def _copy_wrapper(self, original, kind: str):
        collector = self

        def copy(dst, src, size, stream=0):
            result = original(dst, src, size, stream)
            with collector.recorder.lock:
                target = collector._find(dst) if kind != "d2h" else None
                source = collector._find(src) if kind != "h2d" else None
                if target or source:
                    event = {
                        "ev": "memcpy", "t": collector.recorder.tick(), "dst": target[0] if target else None,
                        "src": source[0] if source else None, "size": int(size), "kind": kind,
                        "stream": collector.stream_id(stream), "dst_offset": target[1] if target else 0,
                        "src_offset": source[1] if source else 0, "site": collector.recorder.site()}
                    if kind == "h2d":
                        digest = host_digest(_host_pointer(src) or 0, int(size))
                        if digest:
                            event["digest"] = digest
                    collector.recorder.write(event)
            return result

        return copy

    def _memset_wrapper(self, original):
        collector = self

        def memset(dst, val, size, stream=0):
            result = original(dst, val, size, stream)
            with collector.recorder.lock:
                target = collector._find(dst)
                if target:
                    collector.recorder.write({"ev": "memset", "t": collector.recorder.tick(), "obj": target[0],
                                              "size": int(size), "offset": target[1], "stream": collector.stream_id(stream),
                                              "site": collector.recorder.site()})
            return result

        return memset

    def _call_wrapper(self, original):
        collector = self

        def call(dispatcher, args, launch_config):
            collector.kernel.name = getattr(getattr(dispatcher, "py_func", None), "__name__", None) or str(dispatcher)
            collector.kernel.config = launch_config
            try:
                return original(dispatcher, args, launch_config)
            finally:
                collector.kernel.name = None

        return call

    def _launch_wrapper(self, original, first_arg: int | None):
        """The launch itself, once Numba has copied host arguments in: its flattened arguments
        are scanned for addresses inside known allocations (as the native collector does)."""
        collector = self

        def launch(*call_args, **call_kwargs):
            result = original(*call_args, **call_kwargs)
            if first_arg is None:  # launch_kernel(..., hstream, args, cooperative)
                stream, kernelargs = (call_args[8] if len(call_args) > 8 else 0), (call_args[9] if len(call_args) > 9 else ())
            else:
                stream, kernelargs = call_args[0], call_args[first_arg:]
            with collector.recorder.lock:
                ids: list[int] = []
                for arg in kernelargs:
                    value = getattr(arg, "value", arg)
                    found = collector.objects.find(value) if isinstance(value, int) and value > 4096 else None
                    if found and found[0] not in ids:
                        ids.append(found[0])
                launch_config = getattr(collector.kernel, "config", None)
                collector.recorder.write({
                    "ev": "launch", "t": collector.recorder.tick(),
                    "kernel": getattr(collector.kernel, "name", None) or "numba kernel",
                    "stream": collector.stream_id(stream), "reads": ids, "writes": ids, "args_only": True,
                    "grid": list(_dims(getattr(launch_config, "griddim", 1))),
                    "block": list(_dims(getattr(launch_config, "blockdim", 1))), "site": collector.recorder.site()})
            return result

        return launch

    def stream_id(self, stream: Any) -> int:
        """Small stream numbers: 0 for the default stream, then in order of first use."""
        handle = getattr(stream, "handle", stream)
        key = getattr(handle, "value", handle)
        if not key:
            return 0
        if isinstance(key, (int, str, bytes)) or hasattr(key, "__hash__"):
            try:
                return self.streams.setdefault(key, len(self.streams) + 1)
            except TypeError:
                return 0
        return 0


def _dims(dims: Any) -> tuple[int, int, int]:
    if isinstance(dims, int):
        return dims, 1, 1
    values = list(dims) + [1, 1, 1]
    return int(values[0]), int(values[1]), int(values[2])


def install(recorder: Recorder, module: Any = None) -> NumbaCollector:
    return NumbaCollector(recorder, module)
