"""CuPy collector: a `cupy.cuda.MemoryHook` sees every block CuPy's memory pool hands out
(`malloc`) and takes back (`free`), and every segment the pool itself gets from the driver
(`alloc`), which are written as the pool's reserved bytes (GL104).

Kernel launches need CUPTI callbacks with their parameters (`cupti-python` 13.2 or newer);
without it the trace is object level without launches, and the report says so: allocation,
lifetime and pool findings only.
"""
from __future__ import annotations

from typing import Any

from gpulint.dynamic.collectors.recorder import Recorder

_WITHOUT_LAUNCHES = ("CuPy: kernel launches are not in this trace (CUPTI with kernel parameters needs cupti-python "
                     ">= 13.2, which this gpulint does not use yet): allocation, lifetime and pool findings only")


def install(recorder: Recorder, cupy: Any) -> Any:
    class GpulintMemoryHook(cupy.cuda.MemoryHook):
        name = "gpulint"

        def __init__(self) -> None:
            super().__init__()
            self.live: dict[int, int] = {}  # pointer -> object id
            self.pool = cupy.get_default_memory_pool()

        def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id, **_):
            with recorder.lock:
                oid = recorder.new_object()
                self.live[mem_ptr] = oid
                recorder.write({"ev": "alloc", "t": recorder.tick(), "obj": oid, "addr": mem_ptr, "size": int(size),
                                "stream": 0, "api": "cupy.cuda.alloc", "framework": "cupy", "uses_unknown": True,
                                "device": f"cuda:{device_id}", "site": recorder.site()})
                self._pool()

        def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id, **_):
            with recorder.lock:
                oid = self.live.pop(mem_ptr, None)
                if oid is None:
                    return
                recorder.write({"ev": "free", "t": recorder.tick(), "obj": oid, "stream": 0, "site": recorder.site()})
                self._pool()

        def _pool(self) -> None:
            recorder.write({"ev": "pool", "t": recorder.t, "pool": "cupy", "reserved": int(self.pool.total_bytes()),
                            "allocated": int(self.pool.used_bytes())})

    hook = GpulintMemoryHook()
    hook.__enter__()
    recorder.notes.append(_WITHOUT_LAUNCHES)

    class _Installed:
        def uninstall(self) -> None:
            hook.__exit__(None, None, None)

    return _Installed()
