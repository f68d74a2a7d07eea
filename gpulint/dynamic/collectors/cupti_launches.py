"""Kernel launches seen through CUPTI callbacks (`cupti-python` 13.2 or newer), for a collector
whose framework does not say what its kernels receive: CuPy.

CUPTI calls back at the entry of every driver-API launch (`cuLaunchKernel`, `cuLaunchKernelEx`,
`cuLaunchCooperativeKernel` and their per-thread-stream `_ptsz` forms, which is how CuPy launches)
with the launch's arguments: the function, its stream and `kernelParams`, an array of pointers
to each parameter's bytes (or `extra`, one packed buffer).  How many parameters the function has,
and where and how big each is, comes from the driver (`cuFuncGetParamInfo`, CUDA 12.4).  Every
8-byte word of a parameter that holds an address inside a live object names that object.  Whole
parameters are scanned, not only pointer-sized ones, because CuPy passes an array as a struct
(data pointer, size, shape, strides); sizes, strides and scalars do not fall inside an allocation.

A parameter does not say whether the kernel reads or writes through it, so each object found is
listed in both `reads` and `writes`, as the Numba and cuda-python collectors do.

Runtime-API launches (`cudaLaunchKernel` and variants, made by libraries CuPy calls: CUB,
cuBLAS) name a host stub, not a driver function, so their parameters cannot be sized from here.
Such a launch is recorded as using every live object: it may use any of them, and no lifetime
finding should rest on what gpulint could not read.  The trace's note says how many there were.

Only API_ENTER records.  A runtime launch's exit only ends "inside a runtime launch", during
which the driver launch it makes (if CUPTI reports one) is not recorded a second time.  Launches
made while gpulint's own code runs are not the program's and are left out.  A failure inside
the callback never reaches the program: it is caught and counted, and the note names the first.
CUPTI takes one subscriber per process, so subscribing fails while another tool (a profiler)
holds it; the caller then falls back to a trace without launches.
"""
from __future__ import annotations

import ctypes
import struct
import sys
import threading
from typing import Any, Callable

from gpulint.dynamic.collectors.recorder import GPULINT_DIR, LiveObjects, Recorder, is_user_file

# cbid name in cupti.DriverApiTraceCbid -> its parameter struct in cupti-python
DRIVER_LAUNCHES = {
    "cuLaunchKernel": "CuLaunchKernelParams",
    "cuLaunchKernel_ptsz": "CuLaunchKernelPtszParams",
    "cuLaunchKernelEx": "CuLaunchKernelExParams",
    "cuLaunchKernelEx_ptsz": "CuLaunchKernelExPtszParams",
    "cuLaunchCooperativeKernel": "CuLaunchCooperativeKernelParams",
    "cuLaunchCooperativeKernel_ptsz": "CuLaunchCooperativeKernelPtszParams",
}
# cbid name in cupti.RuntimeApiTraceCbid -> its parameter struct (None: cupti-python has none;
# CUDA 13's `__cudaLaunchKernel`, whose leading underscores Python's class-private mangling
# turns into the `_RuntimeApiTraceCbid` prefix)
RUNTIME_LAUNCHES = {
    "cudaLaunchKernel_v7000": "CudaLaunchKernelV7000Params",
    "cudaLaunchKernel_ptsz_v7000": "CudaLaunchKernelPtszV7000Params",
    "cudaLaunchKernelExC_v11060": "CudaLaunchKernelExCV11060Params",
    "cudaLaunchKernelExC_ptsz_v11060": "CudaLaunchKernelExCPtszV11060Params",
    "cudaLaunchCooperativeKernel_v9000": "CudaLaunchCooperativeKernelV9000Params",
    "cudaLaunchCooperativeKernel_ptsz_v9000": "CudaLaunchCooperativeKernelPtszV9000Params",
    "_RuntimeApiTraceCbid__cudaLaunchKernel_v13000": None,
    "_RuntimeApiTraceCbid__cudaLaunchKernel_ptsz_v13000": None,
}
_CONFIG_STREAM = 32  # offset of hStream in CUlaunchConfig / cudaLaunchConfig_t: 7 x 32-bit (or 2 dim3 + size_t), padded
_MAX_PARAMS = 8192  # the driver's parameter space is 32 KB: a loop past this is reading garbage
_EXTRA_END, _EXTRA_BUFFER, _EXTRA_SIZE = 0, 1, 2  # CU_LAUNCH_PARAM_END / BUFFER_POINTER / BUFFER_SIZE
_CUDA_ERROR_INVALID_VALUE = 1
_UNKNOWN_LAYOUT = object()


class DriverParams:
    """Each function's parameters as (offset, size) pairs, asked of the driver once per function
    (`cuFuncGetParamInfo`, or `cuKernelGetParamInfo` for a library kernel handle launched as a
    function).  ctypes on the already-loaded libcuda: no Python bindings sit in the callback."""

    def __init__(self) -> None:
        self.cache: dict[int, list[tuple[int, int]] | None] = {}
        self.getters: list[Callable] | None = None

    def __call__(self, function: int) -> list[tuple[int, int]] | None:
        found = self.cache.get(function, _UNKNOWN_LAYOUT)
        if found is _UNKNOWN_LAYOUT:
            found = self.cache[function] = self._ask(function)
        return found

    def _ask(self, function: int) -> list[tuple[int, int]] | None:
        """The kernel getter only when the function getter refuses the handle: a handle is never
        handed to a getter that has accepted it as the other kind."""
        for getter in self._getters():
            layout = _param_info(getter, function)
            if layout is not None:
                return layout
        return None

    def _getters(self) -> list[Callable]:
        if self.getters is None:
            self.getters = []
            try:
                libcuda = ctypes.CDLL("libcuda.so.1")
            except OSError:
                return self.getters
            for name in ("cuFuncGetParamInfo", "cuKernelGetParamInfo"):  # CUDA 12.4 and newer
                getter = getattr(libcuda, name, None)
                if getter is not None:
                    getter.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                       ctypes.POINTER(ctypes.c_size_t)]
                    getter.restype = ctypes.c_int
                    self.getters.append(getter)
        return self.getters


def _param_info(getter: Callable, function: int) -> list[tuple[int, int]] | None:
    """Ask for parameter 0, 1, ... until the driver says the index is past the last one
    (CUDA_ERROR_INVALID_VALUE); any other error on the first means the handle is not this kind."""
    layout: list[tuple[int, int]] = []
    offset, size = ctypes.c_size_t(), ctypes.c_size_t()
    for index in range(_MAX_PARAMS):
        error = getter(function, index, ctypes.byref(offset), ctypes.byref(size))
        if error == _CUDA_ERROR_INVALID_VALUE:  # no parameter `index`: the last one was index - 1
            return layout
        if error != 0:
            return None if index == 0 else layout
        layout.append((offset.value, size.value))
    return None


def param_words(address: int, size: int) -> tuple[int, ...]:
    """The 8-byte words of one parameter's `size` bytes at host `address` (what the driver is
    about to copy to the device; a pointer inside a struct parameter sits at a multiple of 8)."""
    whole = size - size % 8
    if not address or whole <= 0:
        return ()
    return struct.unpack(f"<{whole // 8}Q", ctypes.string_at(address, whole))


def parameter_regions(layout: list[tuple[int, int]], kernel_params: int, extra: int) -> list[tuple[int, int]]:
    """(host address, size) of each parameter: through the `kernelParams` pointer array, or at
    its offset in the buffer that `extra` hands over."""
    if kernel_params:
        pointers = (ctypes.c_uint64 * len(layout)).from_address(kernel_params) if layout else ()
        return [(int(pointer), size) for pointer, (_, size) in zip(pointers, layout)]
    buffer, buffer_size = _extra_buffer(extra)
    if not buffer:
        return []
    return [(buffer + offset, size) for offset, size in layout if buffer_size is None or offset + size <= buffer_size]


def _extra_buffer(extra: int) -> tuple[int, int | None]:
    """The buffer and its size from an `extra` array of (key, value) pointers ended by END."""
    if not extra:
        return 0, None
    buffer, size = 0, None
    entries = (ctypes.c_uint64 * 32).from_address(extra)
    for i in range(0, 32, 2):
        key = entries[i]
        if key == _EXTRA_END:
            break
        if key == _EXTRA_BUFFER:
            buffer = int(entries[i + 1])
        elif key == _EXTRA_SIZE and entries[i + 1]:
            size = ctypes.c_size_t.from_address(int(entries[i + 1])).value
    return buffer, size


def demangle(name: str, cache: dict[str, str] = {}) -> str:  # noqa: B006 - a deliberate memo
    """A C++ kernel's readable name (`__cxa_demangle` from libstdc++); other names as they are."""
    if not name.startswith("_Z"):
        return name
    found = cache.get(name)
    if found is None:
        found = cache[name] = _cxa_demangle(name) or name
    return found


def _cxa_demangle(name: str) -> str | None:
    try:
        libstdcxx = ctypes.CDLL("libstdc++.so.6")
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    function = libstdcxx.__cxa_demangle
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    function.restype = ctypes.c_void_p
    status = ctypes.c_int(-1)
    text = function(name.encode(), None, None, ctypes.byref(status))
    if not text:
        return None
    try:
        return ctypes.string_at(text).decode(errors="replace") if status.value == 0 else None
    finally:
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free(ctypes.c_void_p(text))


def _launched_by_gpulint(frame: Any) -> bool:
    """Whether the innermost frame that is the program's or gpulint's is gpulint's (the
    framework's own Python frames and the standard library's are looked through)."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(GPULINT_DIR + "/"):
            return True
        if is_user_file(path):
            return False
        frame = frame.f_back
    return False


def _caller() -> Any:
    """The frame that made the CUDA call (the callback's caller's caller: CUPTI's trampoline is
    compiled and adds no frame), or None when CUPTI called back on a thread without Python frames."""
    try:
        return sys._getframe(2)
    except ValueError:
        return None


def error_text(cupti: Any, exc: BaseException) -> str:
    """`ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (cuptiError: ...)`: CUPTI's result name when the
    exception carries one."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    status = getattr(exc, "status", None)
    if status is None:
        return text
    try:
        return f"{cupti.Result(status).name} ({text})"
    except Exception:
        return text


class CuptiLaunches:
    """A CUPTI subscriber writing the program's kernel launches into `recorder`, with the objects
    in `objects` that their parameters point into."""

    def __init__(self, recorder: Recorder, objects: LiveObjects, cupti: Any, framework: str = "CuPy",
                 layouts: Callable[[int], list[tuple[int, int]] | None] | None = None) -> None:
        self.recorder, self.objects, self.cupti, self.framework = recorder, objects, cupti, framework
        self.layouts = layouts or DriverParams()
        self.driver = _launch_table(cupti, "DriverApiTraceCbid", DRIVER_LAUNCHES)
        self.runtime = _launch_table(cupti, "RuntimeApiTraceCbid", RUNTIME_LAUNCHES)
        self.driver_domain = cupti.CallbackDomain.DRIVER_API
        self.runtime_domain = cupti.CallbackDomain.RUNTIME_API
        self.enter = cupti.ApiCallbackSite.API_ENTER
        self.subscriber: int | None = None
        self.callback: Callable | None = None
        self.active = False
        self.inside = threading.local()  # runtime launches under way on this thread
        self.streams: dict[int, int] = {}
        self.failure: str | None = None  # the first exception inside the callback
        self.failures = 0
        self.runtime_launches = 0  # recorded as using every live object
        self.nested_driver_launches = 0  # driver launches CUPTI reported inside a runtime launch
        self.unsized: dict[str, int] = {}  # kernel -> launches whose parameters the driver could not size

    # ------------------------------------------------------------------ subscription
    def subscribe(self) -> None:
        """Subscribe and enable the launch callbacks; raises (after unsubscribing) if CUPTI refuses
        the subscription or every driver launch callback.  A callback this CUPTI library does not
        know (a library older than the cupti-python) is left out."""
        self.callback = self._on_callback  # CUPTI holds it by address: it must outlive the subscription
        self.subscriber = self.cupti.subscribe(self.callback, None)
        try:
            self.driver = self._enable(self.driver_domain, self.driver, required=True)
            self.runtime = self._enable(self.runtime_domain, self.runtime, required=False)
        except BaseException:
            self._unsubscribe()
            raise
        self.active = True

    def _enable(self, domain: Any, table: dict[int, Any], required: bool) -> dict[int, Any]:
        enabled, refused = {}, None
        for cbid, params_type in table.items():
            try:
                self.cupti.enable_callback(1, self.subscriber, domain, cbid)
            except Exception as exc:
                refused = refused or exc
                continue
            enabled[cbid] = params_type
        if required and not enabled and refused is not None:
            raise refused
        return enabled

    def stop(self) -> None:
        """Stop the callbacks.  Called without the recorder's lock: a callback on another thread
        may be waiting for that lock, and unsubscribing waits for callbacks in flight."""
        self.active = False
        self._unsubscribe()

    def uninstall(self) -> None:
        self.stop()
        self.recorder.notes.extend(self.notes())

    def _unsubscribe(self) -> None:
        if self.subscriber is None:
            return
        subscriber, self.subscriber = self.subscriber, None
        try:
            self.cupti.unsubscribe(subscriber)
        except Exception as exc:  # the program is ending: say so, do not raise from its exit
            self.recorder.notes.append(f"{self.framework}: unsubscribing from CUPTI failed "
                                       f"({error_text(self.cupti, exc)})")

    def notes(self) -> list[str]:
        """What the trace should say about the launches it holds."""
        notes = []
        if self.runtime_launches:
            nested = (f"; CUPTI also reported {_launches(self.nested_driver_launches)} through the driver API "
                      f"inside them, not recorded again" if self.nested_driver_launches else "")
            notes.append(f"{self.framework}: {_launches(self.runtime_launches)} through the runtime API (libraries "
                         f"such as CUB or cuBLAS) recorded as using every live object, because their parameters "
                         f"cannot be read: lifetime findings are not judged across them{nested}")
        if self.unsized:
            names = ", ".join(f"`{name}`" for name in sorted(self.unsized)[:5])
            more = f" and {len(self.unsized) - 5} more" if len(self.unsized) > 5 else ""
            notes.append(f"{self.framework}: the driver did not size the parameters of {names}{more} "
                         f"(cuFuncGetParamInfo needs a CUDA 12.4 driver): those launches are recorded as "
                         f"using every live object")
        if self.failures:
            notes.append(f"{self.framework}: the CUPTI launch callback failed {_times(self.failures)} (first: "
                         f"{self.failure}); the launches it failed on are missing from the trace")
        return notes

    # ------------------------------------------------------------------ the callback
    def _on_callback(self, _userdata: Any, domain: Any, cbid: Any, data: Any) -> None:
        """CUPTI's entry: never raises into the CUDA call it interrupts."""
        try:
            if not self.active:
                return
            caller = _caller()
            if domain == self.runtime_domain:
                self._runtime(int(cbid), data, caller)
            elif domain == self.driver_domain and data.callback_site == self.enter:
                if getattr(self.inside, "depth", 0):
                    self.nested_driver_launches += 1
                    return
                self._driver(int(cbid), data, caller)
        except Exception as exc:
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        """Remember the first failure (the note names it) and count them all."""
        self.failures += 1
        if self.failure is None:
            self.failure = error_text(self.cupti, exc)

    def _runtime(self, cbid: int, data: Any, caller: Any) -> None:
        depth = getattr(self.inside, "depth", 0)
        if data.callback_site != self.enter:
            self.inside.depth = max(0, depth - 1)  # the exit records nothing
            return
        self.inside.depth = depth + 1
        if _launched_by_gpulint(caller) or self.recorder.launch_owned():
            return
        params_type = self.runtime.get(cbid)
        params = params_type.from_ptr(data.function_params, readonly=True) if params_type is not None else None
        stream = getattr(params, "stream", None)
        if stream is None and getattr(params, "config", 0):
            stream = ctypes.c_uint64.from_address(int(params.config) + _CONFIG_STREAM).value
        with self.recorder.lock:
            self.runtime_launches += 1
            self._write(_kernel_name(data), int(stream or 0), self._every_live_object(), unread=True)

    def _driver(self, cbid: int, data: Any, caller: Any) -> None:
        if _launched_by_gpulint(caller) or self.recorder.launch_owned():
            return
        params = self.driver[cbid].from_ptr(data.function_params, readonly=True)
        stream = getattr(params, "h_stream", None)
        if stream is None:  # cuLaunchKernelEx: the stream is in the launch config
            config = int(getattr(params, "config", 0) or 0)
            stream = ctypes.c_uint64.from_address(config + _CONFIG_STREAM).value if config else 0
        name = _kernel_name(data)
        with self.recorder.lock:
            layout = self.layouts(int(params.f))
            if layout is None:
                self.unsized[name] = self.unsized.get(name, 0) + 1
                self._write(name, int(stream), self._every_live_object(), unread=True)
                return
            regions = parameter_regions(layout, int(params.kernel_params or 0), int(getattr(params, "extra", 0) or 0))
            self._write(name, int(stream), self._pointed_into(regions))

    # ------------------------------------------------------------------ objects and events
    def _pointed_into(self, regions: list[tuple[int, int]]) -> list[int]:
        ids: list[int] = []
        find = self.objects.find
        for address, size in regions:
            for word in param_words(address, size):
                found = find(word)
                if found is not None and found[0] not in ids:
                    ids.append(found[0])
        return ids

    def _every_live_object(self) -> list[int]:
        return sorted(oid for oid, _ in self.objects.items.values())

    def _write(self, kernel: str, stream: int, ids: list[int], unread: bool = False) -> None:
        rec = self.recorder
        # The kernel's parameters do not say which it reads and which it writes: both.
        event = {"ev": "launch", "t": rec.tick(), "kernel": kernel, "stream": self._stream_id(stream),
                 "reads": ids, "writes": list(ids), "args_only": True, "site": rec.site()}
        if unread:
            event["params_unread"] = True
        rec.write(event)

    def _stream_id(self, handle: int) -> int:
        """Small stream numbers: 0 for the null and legacy default streams, then in order of first use."""
        if handle in (0, 1):  # CU_STREAM_LEGACY is 0x1
            return 0
        return self.streams.setdefault(handle, len(self.streams) + 1)


def _launch_table(cupti: Any, enum_name: str, names: dict[str, str | None]) -> dict[int, Any]:
    """cbid -> parameter struct class (None where cupti-python has none), for the callbacks this
    cupti-python knows (an older one lacks some)."""
    ids = getattr(cupti, enum_name)
    table = {}
    for cbid_name, params_name in names.items():
        cbid = getattr(ids, cbid_name, None)
        params_type = getattr(cupti, params_name, None) if params_name is not None else None
        if cbid is not None and (params_type is not None or params_name is None):
            table[int(cbid)] = params_type
    return table


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _launches(n: int) -> str:
    return f"{n} kernel launch" if n == 1 else f"{n} kernel launches"


def _kernel_name(data: Any) -> str:
    name = getattr(data, "symbol_name", None) or getattr(data, "function_name", None) or "kernel"
    return demangle(name if isinstance(name, str) else name.decode(errors="replace"))


def attach(recorder: Recorder, objects: LiveObjects, framework: str = "CuPy") -> tuple[CuptiLaunches | None, str]:
    """Subscribe to CUPTI's launch callbacks: (the subscriber, "") or (None, why launches are not seen)."""
    try:
        from cupti import cupti
    except ImportError:
        return None, "cupti-python is not installed (`pip install 'cupti-python>=13.2'`)"
    except Exception as exc:  # installed but its library does not load
        return None, f"cupti-python could not be loaded ({type(exc).__name__}: {exc})"
    if not hasattr(cupti, "CuLaunchKernelParams") or not hasattr(cupti, "subscribe"):
        return None, "cupti-python is older than 13.2 and does not give kernel-launch parameters"
    launches = CuptiLaunches(recorder, objects, cupti, framework)
    if not launches.driver:
        return None, "this cupti-python names no kernel-launch callbacks"
    try:
        launches.subscribe()
    except Exception as exc:
        text = error_text(cupti, exc)
        held = ("; CUPTI takes one subscriber per process, and a profiler or another tool holds it"
                if "MULTIPLE_SUBSCRIBERS" in text else "")
        return None, f"subscribing to CUPTI failed: {text}{held}"
    return launches, ""
