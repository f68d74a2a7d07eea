"""What one row of a models table means.

A row says what one framework API does to GPU memory, in the columns below; nothing else in
gpulint knows an API's name.  The static Python frontend finds a row by the name the user wrote
(`torch.zeros`, `x.copy_`) and dispatches on its role; the PyTorch collector finds rows by the
`aten::` ops a run shows.  So "a filling factory is a write" is stated once, for both.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from gpulint.history import Kind, Op


class Role(enum.Enum):
    FACTORY = "factory"  # makes a new array on the device `device` says, filled or not (`initialises`)
    RAW_ALLOC = "raw allocation"  # a driver-level allocation: no caching allocator absorbs it (GL101)
    FREE = "free"  # frees the pointer in its first argument
    FLUSH = "cache flush"  # hands a caching allocator's free memory back to the driver (GL101)
    TRANSFER = "transfer"  # copies host data (its `source`, or the receiver) into a new device object
    COPY = "copy"  # copies one existing tensor's elements into another
    FULL_WRITE = "full write"  # writes every element of its target without reading it (GL007)
    HOST_RESULT = "host result"  # what it gives lives on the host (`.item()`, `.shape`)
    VIEW = "view"  # an attribute that views the same device memory (`.T`, `.data`)
    INDEXED = "indexed"  # touches only the elements an index argument names (a run's bitmaps)
    RETAINING = "retaining"  # what it gives keeps references to what it is given (an optimizer)
    PLAIN = "plain"  # none of these: reads what it is given (the row exists for its other columns)


# Sizes: the positional arguments whose product is the element count (bytes for raw allocations),
# counted from the end when negative (`randint(low, high, size)`).  EXTENTS: every positional
# argument is an extent (`zeros(n, m)`), or the only one is the shape (`zeros((n, m))`).  Rows
# whose size is no such product (`arange(start, end)`, `eye(n)`, a `_like` template, the data of
# `tensor(data)`) say EXTENTS too: an approximation that keeps the size as written.
EXTENTS = "extents"

# Where a factory or transfer puts what it makes.
KEYWORD = "device="  # on the device its `device=` keyword (or a transfer's first argument) names; else the host
ALWAYS = "device"  # on the (current) device, whatever the arguments say: CuPy, Numba, `.cuda()`
TEMPLATE = "like"  # where its template lives (first argument, or the receiver), unless `device=` says
DEVICE_KEYWORD = "device"  # PyTorch's name for that keyword, in every API that takes one


@dataclass(frozen=True)
class Api:
    """What a library call does to GPU memory: its role, size, device and data flow."""

    role: Role
    initialises: bool = False  # writes every element of what it makes (a fill, a random draw, a copy)
    size: str | tuple[int, ...] | None = None  # EXTENTS, or positions whose product is the size
    device: str | None = None  # KEYWORD, ALWAYS or TEMPLATE, for what makes a new object
    aten: tuple[str, ...] = ()  # the `aten::` ops a PyTorch run records it as
    source: int | None = None  # argument whose data it copies in (`cupy.asarray(h)`)
    # Gives its `source` itself, allocating nothing, when that is already a device array
    # (`cupy.asarray(d)`, `torch.as_tensor(d)`, Numba's `to_device(d)`).
    passes_device: bool = False
    # Array-agnostic code calls it on whatever it is given (`cupy.asarray(a)`, `torch.as_tensor(x)`):
    # a parameter given to it may be the caller's device array already (Numba's `to_device` is
    # called on host arrays: not this).
    converts: bool = False
    # A keyword that, when False, makes the call allocate without copying its source in
    # (Numba's `to_device(h, copy=False)`: an array shaped like `h`, contents unset).
    copy_keyword: str | None = None
    write: Op | None = None  # a full write's event: a copy or a memset
    kind: Kind = Kind.TENSOR  # the object history's kind: tensor, raw or device
    returns_status: bool = False  # returns `(error, result)` (cuda-python)
    draws_random: bool = False  # moving it past another draw changes the numbers the program gets
    launches: bool = True  # False: never launches GPU work (a loop of these is no launch site)
    read_only: bool = False  # known to change neither its receiver nor its arguments
    modules: tuple[str, ...] = ()  # also matched by its last name under these module prefixes ("": any)
