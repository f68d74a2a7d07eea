"""CuPy's APIs, one row each (columns: gpulint/models/api.py).

CuPy allocates on the current device, whatever the arguments: its factories are always on the
device.  FUNCTIONS are found by qualified name, MEMBERS by their name on any object.
"""
from __future__ import annotations

from gpulint.history import Kind, Op
from gpulint.models.api import ALWAYS, EXTENTS, Api, Role


def _factory(*, fills: bool, source: int | None = None, size: str | tuple[int, ...] = EXTENTS,
             passes_device: bool = False) -> Api:
    return Api(Role.FACTORY, initialises=fills, size=size, device=ALWAYS, source=source, passes_device=passes_device,
               converts=passes_device)


_RAW = Api(Role.RAW_ALLOC, size=EXTENTS, kind=Kind.RAW)
_NO_LAUNCH = Api(Role.PLAIN, launches=False)
# On pools (`cupy.get_default_memory_pool()`, any name it is bound to): matched by its last name.
_FLUSH = Api(Role.FLUSH, modules=("",))

FUNCTIONS: dict[str, Api] = {
    "cupy.empty": _factory(fills=False, size=(0,)),
    "cupy.empty_like": _factory(fills=False),
    "cupy.zeros": _factory(fills=True, size=(0,)),
    "cupy.zeros_like": _factory(fills=True),
    "cupy.ones": _factory(fills=True, size=(0,)),
    "cupy.ones_like": _factory(fills=True),
    "cupy.full": _factory(fills=True, size=(0,)),
    "cupy.full_like": _factory(fills=True),
    "cupy.arange": _factory(fills=True),
    "cupy.linspace": _factory(fills=True, size=(2,)),
    # Copy their argument up from the host (when it is on the device already: `array` copies it
    # there, `asarray` gives it back as it is).
    "cupy.array": _factory(fills=True, source=0),
    "cupy.asarray": _factory(fills=True, source=0, passes_device=True),
    # Returns its argument when it is contiguous already; the copy it makes otherwise is not modelled.
    "cupy.ascontiguousarray": _factory(fills=False),
    "cupy.cuda.alloc": _RAW,
    "cupy.cuda.memory.alloc": _RAW,
    "cupy.cuda.Memory": _RAW,
    "cupy.cuda.MemoryPointer": _RAW,
    "cupy.copyto": Api(Role.FULL_WRITE, write=Op.COPY, modules=("cupy",)),  # copyto(dst, src): dst is written
    "cupy.cuda.MemoryPool.free_all_blocks": _FLUSH,
    "cupy.cuda.MemoryPool.free_all_free": _FLUSH,
    "cupy.cuda.Stream": _NO_LAUNCH,
    "cupy.cuda.Event": _NO_LAUNCH,
    "cupy.cuda.Device": _NO_LAUNCH,
}

MEMBERS: dict[str, Api] = {
    "get": Api(Role.HOST_RESULT, launches=False, read_only=True),  # `a.get()`: to the host (and `dict.get`)
}
