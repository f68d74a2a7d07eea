"""cuda-python's runtime and driver APIs, one row each (columns: gpulint/models/api.py).

Found by their last name under any `cuda.` module (`cuda.bindings.runtime`, `cuda.cudart`,
`cuda.bindings.driver`, ...); frees under any name at all.  What the C/C++ frontends know of the
same calls is gpulint/static/cuda_api.py.
"""
from __future__ import annotations

from gpulint.history import Kind
from gpulint.models.api import EXTENTS, Api, Role

# `err, ptr = cudaMalloc(n)`: the pointer is the second element of the result.
_MALLOC = Api(Role.RAW_ALLOC, size=EXTENTS, kind=Kind.DEVICE, returns_status=True, modules=("cuda.",))
_FREE = Api(Role.FREE, modules=("",))

FUNCTIONS: dict[str, Api] = {
    "cuda.bindings.runtime.cudaMalloc": _MALLOC,
    "cuda.bindings.runtime.cudaMallocManaged": _MALLOC,
    "cuda.bindings.driver.cuMemAlloc": _MALLOC,
    "cuda.bindings.driver.cuMemAlloc_v2": _MALLOC,
    # Written without a module (`from cuda.bindings.runtime import *`).
    "cudaMalloc": _MALLOC,
    "cuMemAlloc": _MALLOC,
    "cuda.bindings.runtime.cudaFree": _FREE,
    "cuda.bindings.runtime.cudaFreeAsync": _FREE,
    "cuda.bindings.driver.cuMemFree": _FREE,
    "cuda.bindings.driver.cuMemFree_v2": _FREE,
}

MEMBERS: dict[str, Api] = {}

# Stream and event calls launch nothing.
NO_LAUNCH_PREFIXES = ("cuda.bindings.runtime.cudaStream", "cuda.bindings.runtime.cudaEvent", "cuda.cudart.cudaStream",
                      "cuda.cudart.cudaEvent")
