"""What the CUDA runtime, driver and library calls do to device memory.

One table per kind of call, by function name: which argument is the object, which the size,
which the direction.  The lowering reads these; nothing else knows CUDA API names.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpulint.history import Kind


@dataclass(frozen=True)
class AllocApi:
    target: int  # argument holding `&ptr`
    size: tuple[int, ...]  # arguments whose product is the size in bytes
    kind: Kind


@dataclass(frozen=True)
class CopyApi:
    dst: int | None
    src: int | None
    size: tuple[int, ...]
    kind_arg: int | None = None  # argument holding the cudaMemcpyKind
    direction: str | None = None  # fixed direction for APIs that encode it in the name


@dataclass(frozen=True)
class MemsetApi:
    dst: int
    size: tuple[int, ...]
    element: int = 1  # bytes per counted element (cuMemsetD32 counts 4-byte words)


ALLOC: dict[str, AllocApi] = {
    "cudaMalloc": AllocApi(0, (1,), Kind.DEVICE),
    "cudaMallocManaged": AllocApi(0, (1,), Kind.MANAGED),
    "cudaMallocPitch": AllocApi(0, (2, 3), Kind.DEVICE),
    "cudaMallocAsync": AllocApi(0, (1,), Kind.ASYNC),
    "cudaMallocFromPoolAsync": AllocApi(0, (1,), Kind.ASYNC),
    "cuMemAlloc": AllocApi(0, (1,), Kind.DEVICE),
    "cuMemAlloc_v2": AllocApi(0, (1,), Kind.DEVICE),
    "cuMemAllocManaged": AllocApi(0, (1,), Kind.MANAGED),
    "cuMemAllocAsync": AllocApi(0, (1,), Kind.ASYNC),
    "cudaMallocHost": AllocApi(0, (1,), Kind.PINNED),
    "cudaHostAlloc": AllocApi(0, (1,), Kind.PINNED),
    "cuMemAllocHost": AllocApi(0, (1,), Kind.PINNED),
    "cuMemAllocHost_v2": AllocApi(0, (1,), Kind.PINNED),
}

FREE: dict[str, int] = {
    "cudaFree": 0, "cudaFreeAsync": 0, "cuMemFree": 0, "cuMemFree_v2": 0, "cuMemFreeAsync": 0,
    "cudaFreeHost": 0, "cuMemFreeHost": 0,
}

COPY: dict[str, CopyApi] = {
    "cudaMemcpy": CopyApi(0, 1, (2,), kind_arg=3),
    "cudaMemcpyAsync": CopyApi(0, 1, (2,), kind_arg=3),
    "cudaMemcpy2D": CopyApi(0, 2, (4, 5), kind_arg=6),
    "cudaMemcpy2DAsync": CopyApi(0, 2, (4, 5), kind_arg=6),
    "cudaMemcpyToSymbol": CopyApi(None, 1, (2,), direction="h2d"),
    "cudaMemcpyToSymbolAsync": CopyApi(None, 1, (2,), direction="h2d"),
    "cudaMemcpyFromSymbol": CopyApi(0, None, (2,), direction="d2h"),
    "cudaMemcpyFromSymbolAsync": CopyApi(0, None, (2,), direction="d2h"),
    "cudaMemcpyPeer": CopyApi(0, 2, (4,), direction="d2d"),
    "cudaMemcpyPeerAsync": CopyApi(0, 2, (4,), direction="d2d"),
    "cuMemcpyHtoD": CopyApi(0, 1, (2,), direction="h2d"),
    "cuMemcpyHtoD_v2": CopyApi(0, 1, (2,), direction="h2d"),
    "cuMemcpyHtoDAsync": CopyApi(0, 1, (2,), direction="h2d"),
    "cuMemcpyHtoDAsync_v2": CopyApi(0, 1, (2,), direction="h2d"),
    "cuMemcpyDtoH": CopyApi(0, 1, (2,), direction="d2h"),
    "cuMemcpyDtoH_v2": CopyApi(0, 1, (2,), direction="d2h"),
    "cuMemcpyDtoHAsync": CopyApi(0, 1, (2,), direction="d2h"),
    "cuMemcpyDtoHAsync_v2": CopyApi(0, 1, (2,), direction="d2h"),
    "cuMemcpyDtoD": CopyApi(0, 1, (2,), direction="d2d"),
    "cuMemcpyDtoD_v2": CopyApi(0, 1, (2,), direction="d2d"),
    "cuMemcpyDtoDAsync": CopyApi(0, 1, (2,), direction="d2d"),
}

MEMSET: dict[str, MemsetApi] = {
    "cudaMemset": MemsetApi(0, (2,)),
    "cudaMemsetAsync": MemsetApi(0, (2,)),
    "cudaMemset2D": MemsetApi(0, (3, 4)),
    "cudaMemset2DAsync": MemsetApi(0, (3, 4)),
    "cuMemsetD8": MemsetApi(0, (2,), 1),
    "cuMemsetD8_v2": MemsetApi(0, (2,), 1),
    "cuMemsetD16": MemsetApi(0, (2,), 2),
    "cuMemsetD16_v2": MemsetApi(0, (2,), 2),
    "cuMemsetD32": MemsetApi(0, (2,), 4),
    "cuMemsetD32_v2": MemsetApi(0, (2,), 4),
    "cuMemsetD8Async": MemsetApi(0, (2,), 1),
    "cuMemsetD32Async": MemsetApi(0, (2,), 4),
}

MEMCPY_KINDS = {
    "cudaMemcpyHostToDevice": "h2d",
    "cudaMemcpyDeviceToHost": "d2h",
    "cudaMemcpyDeviceToDevice": "d2d",
    "cudaMemcpyHostToHost": "h2h",
    "cudaMemcpyDefault": "default",
}

# Calls that bind memory to a texture: kernels read it through the texture, so the call is a
# use, and the texture keeps the pointer (an escape).
TEXTURE_BIND = {"cudaBindTexture", "cudaBindTexture2D", "cuTexRefSetAddress", "cuTexRefSetAddress_v2",
                "cuTexRefSetAddress2D", "cuTexRefSetAddress2D_v3"}

# Launches through the API rather than `<<<>>>`: kernel unknown, arguments packed in an array.
LAUNCH = {"cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchCooperativeKernel", "cuLaunchKernel",
          "cuLaunchKernelEx", "cuLaunchCooperativeKernel"}

# Graph launches run whatever was captured or added to the graph earlier: any live object.
GRAPH_LAUNCH = {"cudaGraphLaunch", "cuGraphLaunch"}

# Expressions that store what they contain in an aggregate gpulint does not follow.
AGGREGATES = {"initializer_list", "lambda_expression", "new_expression", "compound_literal_expression",
              "initializer_pair", "init_list"}

# Stream capture: work issued between these is recorded into a graph, not run in program order.
CAPTURE_BEGIN = {"cudaStreamBeginCapture", "cuStreamBeginCapture", "cuStreamBeginCapture_v2",
                 "cudaStreamBeginCaptureToGraph"}
CAPTURE_END = {"cudaStreamEndCapture", "cuStreamEndCapture"}

SWAP = {"swap", "std::swap", "thrust::swap", "cuda::std::swap"}

# Calls that end the program: not an exit of the scope that would need frees.
PROGRAM_EXIT = {"exit", "abort", "std::exit", "std::abort", "_exit", "quick_exit", "std::quick_exit", "MPI_Abort"}

# Calls that receive pointers but never access device memory through them.
NO_ACCESS = {
    "printf", "fprintf", "sprintf", "snprintf", "puts", "assert", "sizeof", "memset", "memcpy", "free",
    "malloc", "std::printf", "std::fprintf", "fflush",
}

# Host functions that read or write the memory their pointer arguments point to and keep no
# pointer: on managed memory, an access by the host (a use) right there.
HOST_MEMORY = {
    "memcpy", "memset", "memmove", "memcmp", "std::memcpy", "std::memset", "std::memmove", "std::memcmp",
    "fread", "fwrite", "std::fill", "std::fill_n", "std::copy", "std::copy_n", "std::accumulate",
    "std::sort", "qsort",
}

# Libraries that read and write device memory they are given, and keep no pointer to it.
LIBRARY_PREFIXES = (
    "cublas", "cusparse", "cufft", "cusolver", "curand", "cudnn", "nccl", "ncclAll", "thrust::", "cub::",
    "cutlass::", "nvshmem", "cutensor", "npp", "nvjpeg", "cuda::",
)


def is_runtime_api(name: str) -> bool:
    """CUDA runtime/driver entry points that do not access memory through pointer arguments
    unless they are allocators, frees, copies or memsets (handled by the tables above)."""
    return (name.startswith("cuda") and len(name) > 4 and name[4].isupper()) or (
        name.startswith("cu") and len(name) > 2 and name[2].isupper()
    )


def is_library_call(qualified: str) -> bool:
    return qualified.startswith(LIBRARY_PREFIXES)


def keeps_pointer(qualified: str) -> bool:
    """Library calls that store a device pointer in a descriptor for later calls
    (`cusparseCreateCsr`, `cusparseCreateDnVec`, `cusparseCsrSetPointers`, `cudnnSetTensor...`)."""
    name = qualified.rsplit("::", 1)[-1]
    return is_library_call(qualified) and ("Create" in name or "Set" in name or "Attach" in name)
