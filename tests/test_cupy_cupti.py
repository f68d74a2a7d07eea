"""The CuPy collector's kernel launches through CUPTI, without a GPU: `cupti` (cupti-python) and
`cupy` are stood in for by fakes with the same calling conventions (the GPU test in
test_python_gpu.py runs the real ones).  Kernel parameters are real host memory, as the driver
would read it, so the scanning of parameters is the real code."""
from __future__ import annotations

import ctypes
import os
import sys
import types
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.collectors import cupti_launches, cupy_collector
from gpulint.dynamic.collectors.recorder import GPULINT_DIR, Recorder, session
from gpulint.dynamic.trace import TraceWriter, read_trace
from gpulint.rules import RULES

DRIVER, RUNTIME, ENTER, EXIT = 1, 2, 0, 1
CU_LAUNCH_KERNEL, CU_LAUNCH_KERNEL_EX, CUDA_LAUNCH_KERNEL = 307, 652, 211
BASE = 0x7F00_0000_0000  # where the fake pool's blocks are


class CuptiError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"CUPTI status {status}")
        self.status = status


class FakeCupti(types.SimpleNamespace):
    """`cupti.cupti` as cupti-python 13.2+ has it: subscribe / enable_callback / unsubscribe,
    the callback ids, and parameter structs whose `from_ptr` reads what `launch` stored."""

    def __init__(self, refuse: Exception | None = None) -> None:
        structs = {}

        class Params:
            @staticmethod
            def from_ptr(ptr, readonly=False):
                return structs[ptr]

        names = [*cupti_launches.DRIVER_LAUNCHES.values(), *filter(None, cupti_launches.RUNTIME_LAUNCHES.values())]
        super().__init__(
            CallbackDomain=types.SimpleNamespace(DRIVER_API=DRIVER, RUNTIME_API=RUNTIME),
            ApiCallbackSite=types.SimpleNamespace(API_ENTER=ENTER, API_EXIT=EXIT),
            DriverApiTraceCbid=types.SimpleNamespace(cuLaunchKernel=CU_LAUNCH_KERNEL, cuLaunchKernel_ptsz=442,
                                                     cuLaunchKernelEx=CU_LAUNCH_KERNEL_EX, cuLaunchKernelEx_ptsz=653,
                                                     cuLaunchCooperativeKernel=477, cuMemAlloc_v2=13),
            RuntimeApiTraceCbid=types.SimpleNamespace(cudaLaunchKernel_v7000=CUDA_LAUNCH_KERNEL,
                                                      cudaLaunchKernel_ptsz_v7000=214),
            Result=lambda status: types.SimpleNamespace(name={39: "ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"}[status]),
            cuptiError=CuptiError, **{name: Params for name in names})
        self.structs, self.refuse = structs, refuse
        self.callback = None
        self.enabled: list[tuple[int, int]] = []
        self.unsubscribed: list[int] = []

    def subscribe(self, callback, userdata):
        if self.refuse is not None:
            raise self.refuse
        self.callback = callback
        return 0xC0FFEE

    def enable_callback(self, enable, subscriber, domain, cbid):
        self.enabled.append((domain, cbid))

    def unsubscribe(self, subscriber):
        self.unsubscribed.append(subscriber)
        self.callback = None


# The CUDA call comes from inside a library (CuPy's own frames are in site-packages), which is
# how the collector finds the program's frame above it: this helper stands for that library.
_LIBRARY = {}
exec(compile("def call_back(cupti, domain, cbid, site, params, name):\n"
             "    cupti.structs[id(params)] = params\n"
             "    data = DATA(callback_site=site, function_params=id(params), symbol_name=name, function_name='cu')\n"
             "    if cupti.callback is not None:\n"
             "        cupti.callback(None, domain, cbid, data)\n"
             "def malloc(cupy, address, size):\n"
             "    cupy.hooks[0].malloc_postprocess(device_id=0, size=size, mem_size=size, mem_ptr=address,\n"
             "                                     pmem_id=0)\n",
             "/usr/lib/python3/site-packages/fakecuda.py", "exec"), _LIBRARY)
_LIBRARY["DATA"] = types.SimpleNamespace
call_back, malloc = _LIBRARY["call_back"], _LIBRARY["malloc"]


def fake_cupy() -> types.SimpleNamespace:
    hooks = []

    class MemoryHook:
        def __enter__(self):
            hooks.append(self)
            return self

        def __exit__(self, *exc):
            hooks.remove(self)

    pool = types.SimpleNamespace(total_bytes=lambda: 1 << 22, used_bytes=lambda: 1 << 20)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(MemoryHook=MemoryHook), hooks=hooks,
                                 get_default_memory_pool=lambda: pool)


def start(tmp_path: Path, monkeypatch, cupti: FakeCupti | None, layouts: dict | None = None):
    """The collector installed on a fake CuPy, with `cupti` importable (None: not installed)."""
    if cupti is None:
        monkeypatch.setitem(sys.modules, "cupti", None)  # `import cupti` raises ImportError
    else:
        monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=cupti))
    layouts = layouts if layouts is not None else {}
    monkeypatch.setattr(cupti_launches, "DriverParams", lambda: layouts.get)
    recorder = Recorder(TraceWriter(tmp_path / "t.jsonl", collector="python"))
    cupy = fake_cupy()
    installed = cupy_collector.install(recorder, cupy)
    return recorder, cupy, installed


def finish(recorder: Recorder, installed) -> list[dict]:
    """Uninstall and close as the session does; the events, the notes last (readers move notes
    into the trace's warnings: here they stay events, to be checked)."""
    installed.uninstall()
    recorder.writer.close()
    return read_trace(recorder.writer.path).events + [{"ev": "note", "text": n} for n in dict.fromkeys(recorder.notes)]


class CArray(ctypes.Structure):
    """How CuPy passes a 1-d array to its kernels: data pointer, size, shape, strides."""
    _fields_ = [("data", ctypes.c_uint64), ("size", ctypes.c_int64), ("shape", ctypes.c_int64),
                ("stride", ctypes.c_int64)]


def kernel_params(*values) -> tuple[ctypes.Array, list]:
    """A `void**` kernelParams array pointing at each value, and the values kept alive."""
    array = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    return array, [array, *values]


def launch_params(f: int, params, stream: int = 0, extra: int = 0) -> types.SimpleNamespace:
    return types.SimpleNamespace(f=f, h_stream=stream, kernel_params=ctypes.addressof(params) if params else 0,
                                 extra=extra, grid_dim_x=1, block_dim_x=32)


def test_a_launch_uses_exactly_the_objects_its_parameters_point_into(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    layouts = {0xF00: [(0, 32), (32, 8), (40, 4), (48, 8), (56, 8), (64, 8), (72, 16)]}
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, layouts)
    a, b, unused, c = BASE, BASE + 0x10_0000, BASE + 0x20_0000, BASE + 0x40_0000
    for address in (a, b, unused, c):
        malloc(cupy, address, 4096)
    array = CArray(b + 64, 1024, 1024, 4)  # a struct parameter: its first word points inside b
    params, keep = kernel_params(
        array,
        ctypes.c_uint64(a),  # a pointer-sized parameter: the base of a
        ctypes.c_int32(7),  # not pointer-sized
        ctypes.c_double(2.0),  # 0x4000000000000000: no object there
        ctypes.c_uint64(BASE + 0x30_0000),  # an address in no object
        ctypes.c_uint64(unused + 4096),  # one past the end of `unused`: not inside it
        (ctypes.c_uint64 * 2)(4096, c + 4095))  # a struct with the pointer second: the last byte of c
    for _ in range(2):
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, params), "_Z5scaleP6CArrayPfidPvS1_")
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, EXIT, launch_params(0xF00, params), "_Z5scaleP6CArrayPfidPvS1_")
    events = finish(recorder, installed)
    allocs = [e for e in events if e["ev"] == "alloc"]
    launches = [e for e in events if e["ev"] == "launch"]
    assert [e["addr"] for e in allocs] == [a, b, unused, c]
    ids = {e["addr"]: e["obj"] for e in allocs}
    assert not any("uses_unknown" in e for e in allocs)
    assert len(launches) == 2  # the exits record nothing
    for event in launches:
        assert event["reads"] == [ids[b], ids[a], ids[c]] and event["writes"] == [ids[b], ids[a], ids[c]]
        assert event["stream"] == 0 and "params_unread" not in event
        assert event["site"][0][:3:2] == [__file__, "test_a_launch_uses_exactly_the_objects_its_parameters_point_into"]
    assert not [e for e in events if e["ev"] == "note"]
    findings = analyze(tmp_path / "t.jsonl", Settings(min_bytes=0), sorted(RULES)).findings
    found = {(f.code, f.properties.get("object_id")) for f in findings}
    assert ("GL004", ids[unused]) in found and ("GL004", ids[a]) not in found and ("GL004", ids[b]) not in found
    del keep


def test_extra_buffer_and_the_launch_configs_stream(tmp_path: Path, monkeypatch) -> None:
    """cuLaunchKernelEx: the stream is in the CUlaunchConfig; parameters packed in `extra`."""
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF01: [(0, 4), (8, 8), (16, 32)]})
    a, b = BASE, BASE + 0x10_0000
    malloc(cupy, a, 256)
    malloc(cupy, b, 256)
    buffer = (ctypes.c_uint64 * 6)(5, a + 255, b, 1024, 1024, 4)  # int, a pointer into a, a CArray of b
    size = ctypes.c_size_t(48)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buffer), 2, ctypes.addressof(size), 0)
    configs = []
    for handle in (0x5000, 0x6000, 0x5000, 1):
        config = (ctypes.c_uint64 * 7)()  # CUlaunchConfig: seven 32-bit fields, padding, hStream, attrs, numAttrs
        config[4] = handle
        ex = types.SimpleNamespace(f=0xF01, config=ctypes.addressof(config), kernel_params=0,
                                   extra=ctypes.addressof(extra))
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL_EX, ENTER, ex, "reduce")
        configs.append(config)
    launches = [e for e in finish(recorder, installed) if e["ev"] == "launch"]
    assert [e["stream"] for e in launches] == [1, 2, 1, 0]  # CU_STREAM_LEGACY is the default stream
    assert all(e["reads"] == [1, 2] and e["kernel"] == "reduce" for e in launches)


def test_a_runtime_launch_uses_every_live_object_and_its_driver_launch_is_not_recorded_twice(
        tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF00: [(0, 8)]})
    for i in range(3):
        malloc(cupy, BASE + i * 0x1000, 512)
    pointer = ctypes.c_uint64(BASE)
    params, keep = kernel_params(pointer)
    runtime = types.SimpleNamespace(func=0x1234, stream=0x7000, args=0)
    call_back(cupti, RUNTIME, CUDA_LAUNCH_KERNEL, ENTER, runtime, "_ZN3cub11DeviceReduceKernelEv")
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, params), "nested")  # inside it
    call_back(cupti, RUNTIME, CUDA_LAUNCH_KERNEL, EXIT, runtime, "_ZN3cub11DeviceReduceKernelEv")
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, params), "after")
    events = finish(recorder, installed)
    launches = [e for e in events if e["ev"] == "launch"]
    assert [e["kernel"] for e in launches] == ["cub::DeviceReduceKernel()", "after"] or \
        [e["kernel"] for e in launches] == ["_ZN3cub11DeviceReduceKernelEv", "after"]  # no libstdc++
    assert launches[0]["reads"] == [1, 2, 3] and launches[0]["params_unread"] and launches[0]["stream"] == 1
    assert launches[1]["reads"] == [1] and "params_unread" not in launches[1]
    notes = [e["text"] for e in events if e["ev"] == "note"]
    assert len(notes) == 1 and "1 kernel launch through the runtime API" in notes[0]
    assert "1 kernel launch through the driver API inside them" in notes[0]
    del keep


def test_launches_gpulint_makes_are_not_the_programs(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF00: []})
    own = {"call_back": call_back}
    exec(compile("def sample(cupti, params):\n    call_back(cupti, 1, 307, 0, params, 'gpulint_probe')\n",
                 os.path.join(GPULINT_DIR, "dynamic", "collectors", "_probe.py"), "exec"), own)
    own["sample"](cupti, launch_params(0xF00, None))
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, None), "users")
    launches = [e for e in finish(recorder, installed) if e["ev"] == "launch"]
    assert [e["kernel"] for e in launches] == ["users"]


def test_launches_inside_another_collectors_ops_are_not_recorded_twice(tmp_path: Path, monkeypatch) -> None:
    """PyTorch's hook records its ops' kernels itself, and its ops run under no gpulint frame:
    while it says this thread is inside one, CUPTI's launches are its, not the program's."""
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF00: []})
    inside = []
    recorder.launch_owners.append(lambda: bool(inside))
    inside.append("torch op")
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, None), "torch_kernel")
    call_back(cupti, RUNTIME, CUDA_LAUNCH_KERNEL, ENTER, types.SimpleNamespace(func=1, stream=0, args=0), "cublas")
    call_back(cupti, RUNTIME, CUDA_LAUNCH_KERNEL, EXIT, types.SimpleNamespace(func=1, stream=0, args=0), "cublas")
    inside.clear()
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, None), "cupy_kernel")
    events = finish(recorder, installed)
    assert [e["kernel"] for e in events if e["ev"] == "launch"] == ["cupy_kernel"]
    assert not [e for e in events if e["ev"] == "note" and "runtime API" in e["text"]]


def test_a_failing_subscribe_keeps_todays_trace_and_says_why(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti(refuse=CuptiError(39))  # another tool holds CUPTI's one subscription
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti)
    malloc(cupy, BASE, 4096)
    events = finish(recorder, installed)
    assert events[0]["uses_unknown"] is True
    notes = [e["text"] for e in events if e["ev"] == "note"]
    assert len(notes) == 1 and notes[0].startswith("CuPy: kernel launches are not in this trace (subscribing to "
                                                   "CUPTI failed: ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
    assert "a profiler or another tool holds it" in notes[0]
    assert cupti.enabled == [] and cupti.unsubscribed == []


def test_a_callback_this_cupti_does_not_know_is_left_out(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    enable = cupti.enable_callback

    def only_the_driver(enable_, subscriber, domain, cbid):
        if domain == RUNTIME or cbid == CU_LAUNCH_KERNEL_EX:
            raise CuptiError(1)
        enable(enable_, subscriber, domain, cbid)

    cupti.enable_callback = only_the_driver
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF00: []})
    malloc(cupy, BASE, 4096)
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, None), "k")
    events = finish(recorder, installed)
    assert (DRIVER, CU_LAUNCH_KERNEL) in cupti.enabled and not [e for e in events if e["ev"] == "note"]
    assert "uses_unknown" not in events[0] and [e["kernel"] for e in events if e["ev"] == "launch"] == ["k"]


def test_a_refused_callback_unsubscribes_and_falls_back(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()

    def refuse(enable, subscriber, domain, cbid):
        raise CuptiError(39)

    cupti.enable_callback = refuse
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti)
    malloc(cupy, BASE, 4096)
    events = finish(recorder, installed)
    assert cupti.unsubscribed == [0xC0FFEE] and events[0]["uses_unknown"] is True


def test_without_cupti_the_trace_is_todays(tmp_path: Path, monkeypatch) -> None:
    recorder, cupy, installed = start(tmp_path, monkeypatch, None)
    recorder.site = lambda: [["prog.py", 3, "<module>"]]
    malloc(cupy, BASE, 4096)
    cupy.hooks[0].free_postprocess(device_id=0, mem_size=4096, mem_ptr=BASE, pmem_id=0)
    events = finish(recorder, installed)
    assert isinstance(events[0].pop("ns"), int)  # the host's clock at the call
    assert events[0] == {"ev": "alloc", "t": 1, "obj": 1, "addr": BASE, "size": 4096, "stream": 0,
                         "api": "cupy.cuda.alloc", "framework": "cupy", "uses_unknown": True, "device": "cuda:0",
                         "site": [["prog.py", 3, "<module>"]]}
    assert [e["ev"] for e in events] == ["alloc", "pool", "free", "pool", "note"]
    assert events[-1]["text"] == ("CuPy: kernel launches are not in this trace (cupti-python is not installed "
                                  "(`pip install 'cupti-python>=13.2'`)): allocation, lifetime and pool findings only")


def test_uninstall_unsubscribes(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF00: []})
    assert (DRIVER, CU_LAUNCH_KERNEL) in cupti.enabled and (DRIVER, CU_LAUNCH_KERNEL_EX) in cupti.enabled
    assert (RUNTIME, CUDA_LAUNCH_KERNEL) in cupti.enabled and (DRIVER, 13) not in cupti.enabled
    callback = cupti.callback
    installed.uninstall()
    assert cupti.unsubscribed == [0xC0FFEE] and cupy.hooks == []
    callback(None, DRIVER, CU_LAUNCH_KERNEL, types.SimpleNamespace(callback_site=ENTER, function_params=0,
                                                                      symbol_name="late"))
    recorder.writer.close()
    assert [e for e in read_trace(tmp_path / "t.jsonl").events if e["ev"] == "launch"] == []


def test_a_failing_callback_never_breaks_the_program_and_is_reported_once(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti)

    def broken(function):
        raise RuntimeError("driver says no")

    installed_launches = cupti.callback.__self__
    installed_launches.layouts = broken
    for _ in range(3):
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, None), "k")
    events = finish(recorder, installed)
    assert [e for e in events if e["ev"] == "launch"] == []
    notes = [e["text"] for e in events if e["ev"] == "note"]
    assert notes == ["CuPy: the CUPTI launch callback failed 3 times (first: RuntimeError: driver says no); the "
                     "launches it failed on are missing from the trace"]


def test_a_kernel_the_driver_cannot_size_uses_every_live_object(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {})  # no layout for any function
    malloc(cupy, BASE, 64)
    malloc(cupy, BASE + 4096, 64)
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, None), "mystery")
    events = finish(recorder, installed)
    launch = next(e for e in events if e["ev"] == "launch")
    assert launch["reads"] == [1, 2] and launch["params_unread"]
    assert any("`mystery`" in e["text"] for e in events if e["ev"] == "note")


def test_freed_blocks_are_not_matched(tmp_path: Path, monkeypatch) -> None:
    cupti = FakeCupti()
    recorder, cupy, installed = start(tmp_path, monkeypatch, cupti, {0xF00: [(0, 8)]})
    malloc(cupy, BASE, 64)
    cupy.hooks[0].free_postprocess(device_id=0, mem_size=64, mem_ptr=BASE, pmem_id=0)
    malloc(cupy, BASE, 64)  # the pool hands the same block out again: a new object
    params, keep = kernel_params(ctypes.c_uint64(BASE + 8))
    call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, params), "k")
    launch = next(e for e in finish(recorder, installed) if e["ev"] == "launch")
    assert launch["reads"] == [2]
    del keep


def test_parameter_sizes_from_the_driver() -> None:
    """cuFuncGetParamInfo is asked for index 0, 1, ... until CUDA_ERROR_INVALID_VALUE."""
    def getter(sizes, error_first=0):
        def get(function, index, offset, size):
            if index == 0 and error_first:
                return error_first
            if index >= len(sizes):
                return 1
            offset._obj.value, size._obj.value = sum(sizes[:index]), sizes[index]
            return 0
        return get

    assert cupti_launches._param_info(getter([8, 32, 4]), 0xF00) == [(0, 8), (8, 32), (40, 4)]
    assert cupti_launches._param_info(getter([]), 0xF00) == []
    assert cupti_launches._param_info(getter([8], error_first=400), 0xF00) is None  # not a function handle
    params = cupti_launches.DriverParams()
    params.getters = [getter([], error_first=400), getter([8, 8])]  # a library kernel handle
    assert params(0xF00) == [(0, 8), (8, 8)]
    asked = []
    params = cupti_launches.DriverParams()
    params.getters = [getter([]), lambda *args: asked.append(args) or 0]  # a function with no parameters
    assert params(0xF00) == [] and params(0xF00) == [] and asked == []


def test_demangled_kernel_names() -> None:
    try:
        ctypes.CDLL("libstdc++.so.6")
    except OSError:
        pytest.skip("no libstdc++ here")
    assert cupti_launches.demangle("_Z5scalePfi") == "scale(float*, int)"
    assert cupti_launches.demangle("cupy_add__float32_float32_float32") == "cupy_add__float32_float32_float32"
    assert cupti_launches.demangle("_Znot a name") == "_Znot a name"


def test_with_the_real_cupti_python_structs(tmp_path: Path, monkeypatch) -> None:
    """The field names this collector reads, against the installed cupti-python (skipped
    without it; subscribing needs a driver, so only that is stood in for)."""
    real = pytest.importorskip("cupti.cupti")
    subscribed = {}
    monkeypatch.setattr(real, "subscribe", lambda callback, userdata: subscribed.setdefault("callback", callback) and 7)
    monkeypatch.setattr(real, "enable_callback", lambda *args: None)
    monkeypatch.setattr(real, "unsubscribe", lambda subscriber: subscribed.pop("callback"))
    monkeypatch.setattr(cupti_launches, "DriverParams", lambda: {0xF00: [(0, 32), (32, 4)]}.get)
    recorder = Recorder(TraceWriter(tmp_path / "t.jsonl", collector="python"))
    cupy = fake_cupy()
    installed = cupy_collector.install(recorder, cupy)
    malloc(cupy, BASE, 4096)
    params, keep = kernel_params(CArray(BASE + 16, 4, 4, 4), ctypes.c_int32(4))
    launch = real.CuLaunchKernelParams()
    launch.f, launch.kernel_params, launch.h_stream = 0xF00, ctypes.addressof(params), 0x9000
    data = real.CallbackData()
    data.callback_site, data.function_params, data.symbol_name = int(real.ApiCallbackSite.API_ENTER), launch.ptr, "k"
    subscribed["callback"](None, real.CallbackDomain.DRIVER_API, real.DriverApiTraceCbid.cuLaunchKernel, data)
    events = finish(recorder, installed)
    assert "callback" not in subscribed
    launches = [e for e in events if e["ev"] == "launch"]
    assert [(e["kernel"], e["reads"], e["stream"]) for e in launches] == [("k", [1], 1)]
    del keep


def test_a_traced_session_finds_an_early_allocation(tmp_path: Path, monkeypatch) -> None:
    """The whole path: `gpulint.trace` attaches to the imported (fake) CuPy, CUPTI's launches
    make `early` used only after two unrelated launches (GL001), and the trace has no note."""
    cupti, cupy = FakeCupti(), fake_cupy()
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=cupti))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(cupti_launches, "DriverParams", lambda: {0xF00: [(0, 8)]}.get)
    monkeypatch.setattr(session, "FRAMEWORKS", (("cupy", "gpulint.dynamic.collectors.cupy_collector"),))
    with session(str(tmp_path / "t.jsonl")):
        malloc(cupy, BASE, 4096)  # early
        malloc(cupy, BASE + 0x10000, 4096)  # work
        work, keep = kernel_params(ctypes.c_uint64(BASE + 0x10000))
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, work), "scale")
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, work), "scale")
        early, keep2 = kernel_params(ctypes.c_uint64(BASE + 8))
        call_back(cupti, DRIVER, CU_LAUNCH_KERNEL, ENTER, launch_params(0xF00, early), "scale")
    assert cupti.unsubscribed == [0xC0FFEE]
    trace = read_trace(tmp_path / "t.jsonl")
    assert trace.warnings == []
    assert [e["reads"] for e in trace.events if e["ev"] == "launch"] == [[2], [2], [1]]
    found = analyze(tmp_path / "t.jsonl", Settings(min_bytes=0), sorted(RULES)).findings
    early_allocation = [f for f in found if f.code == "GL001"]
    assert [(f.properties["object_id"], f.properties["distance"]) for f in early_allocation] == [(1, 2)]
    assert Path(early_allocation[0].location.path).name == "test_cupy_cupti.py"
    del keep, keep2
