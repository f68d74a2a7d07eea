"""Numba's CUDA APIs, one row each (columns: gpulint/models/api.py).

Numba's device arrays come straight from the driver (no caching allocator): raw allocations.
FUNCTIONS are found by qualified name (the raw allocators under any `numba.cuda.` module),
MEMBERS by their name on any object.
"""
from __future__ import annotations

from gpulint.history import Kind, Op
from gpulint.models.api import ALWAYS, EXTENTS, Api, Role

_RAW = Api(Role.RAW_ALLOC, size=(0,), kind=Kind.RAW, modules=("numba.cuda.",))
_NO_LAUNCH = Api(Role.PLAIN, launches=False)

FUNCTIONS: dict[str, Api] = {
    "numba.cuda.device_array": _RAW,
    "numba.cuda.device_array_like": _RAW,
    "numba.cuda.mapped_array": _RAW,
    "numba.cuda.pinned_array": _RAW,  # host memory, counted with the raw allocations as before
    "numba.cuda.to_device": Api(Role.TRANSFER, initialises=True, size=EXTENTS, device=ALWAYS, source=0,
                                passes_device=True, copy_keyword="copy"),
    "numba.cuda.stream": _NO_LAUNCH,
    "numba.cuda.event": _NO_LAUNCH,
}

MEMBERS: dict[str, Api] = {
    "copy_to_host": Api(Role.HOST_RESULT),
    "copy_to_device": Api(Role.FULL_WRITE, write=Op.COPY),  # `d.copy_to_device(h)`: all of d
}
