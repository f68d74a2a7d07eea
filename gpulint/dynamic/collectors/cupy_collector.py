"""CuPy collector: a `cupy.cuda.MemoryHook` sees every block CuPy's memory pool hands out
(`malloc`) and takes back (`free`), and every segment the pool itself gets from the driver
(`alloc`), which are written as the pool's reserved bytes (GL104).

Kernel launches come from CUPTI callbacks with their parameters (`cupti-python` 13.2 or newer,
`cupti_launches`): a launch uses the live blocks its parameters point into.  CuPy says nothing
about launches itself, so without CUPTI (not installed, or another tool holds CUPTI's one
subscription) the trace is object level without launches: its allocations are marked
`uses_unknown` (no lifetime rule judges them), and the report's note says why.
"""
from __future__ import annotations

from typing import Any

from gpulint.dynamic.collectors import cupti_launches
from gpulint.dynamic.collectors.recorder import LiveObjects, Recorder


def without_launches(reason: str) -> str:
    return (f"CuPy: kernel launches are not in this trace ({reason}): allocation, lifetime and pool "
            f"findings only")


def install(recorder: Recorder, cupy: Any) -> Any:
    objects = LiveObjects()  # what launch parameters are matched against
    # Subscribed before the hook: whether allocations' uses are seen must be known at the first.
    launches, reason = cupti_launches.attach(recorder, objects, "CuPy")
    uses_unknown = {"uses_unknown": True} if launches is None else {}

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
                if launches is not None:
                    objects.add(mem_ptr, oid, int(size))
                recorder.write({"ev": "alloc", "t": recorder.tick(), "obj": oid, "addr": mem_ptr, "size": int(size),
                                "stream": 0, "api": "cupy.cuda.alloc", "framework": "cupy", **uses_unknown,
                                "device": f"cuda:{device_id}", "site": recorder.site()})
                self._pool()

        def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id, **_):
            with recorder.lock:
                oid = self.live.pop(mem_ptr, None)
                if oid is None:
                    return
                objects.remove(mem_ptr, oid)
                recorder.write({"ev": "free", "t": recorder.tick(), "obj": oid, "stream": 0, "site": recorder.site()})
                self._pool()

        def _pool(self) -> None:
            recorder.write({"ev": "pool", "t": recorder.t, "pool": "cupy", "reserved": int(self.pool.total_bytes()),
                            "allocated": int(self.pool.used_bytes())})

    try:
        hook = GpulintMemoryHook()
        hook.__enter__()
    except BaseException:
        if launches is not None:  # CUPTI's one subscription is not kept by a collector that failed
            launches.uninstall()
        raise
    if launches is None:
        recorder.notes.append(without_launches(reason))

    class _Installed:
        def stop(self) -> None:
            if launches is not None:
                launches.stop()

        def uninstall(self) -> None:
            hook.__exit__(None, None, None)
            if launches is not None:
                launches.uninstall()

    return _Installed()
