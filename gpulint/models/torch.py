"""PyTorch's APIs, one row each (columns: gpulint/models/api.py).

FUNCTIONS are found by the qualified name the user's imports resolve to; MEMBERS (methods and
attributes of tensors, streams and events) by their name on any object.  The PyTorch collector
reads the `aten::` sets at the end, derived from the same rows.
"""
from __future__ import annotations

from gpulint.history import Op
from gpulint.models.api import ALWAYS, EXTENTS, KEYWORD, TEMPLATE, Api, Role


def _factory(aten: str, *, fills: bool, random: bool = False, device: str = KEYWORD,
             size: str | tuple[int, ...] = EXTENTS) -> Api:
    return Api(Role.FACTORY, initialises=fills, size=size, device=device, aten=(aten,), draws_random=random)


def _overwrite(aten: str, write: Op = Op.MEMSET, random: bool = False) -> Api:
    return Api(Role.FULL_WRITE, write=write, aten=(aten,), draws_random=random)


def _host(*aten: str, read_only: bool = True) -> Api:
    return Api(Role.HOST_RESULT, aten=aten, read_only=read_only)


_VIEW = Api(Role.VIEW)
_RETAINING = Api(Role.RETAINING)
_NO_LAUNCH = Api(Role.PLAIN, launches=False)

FUNCTIONS: dict[str, Api] = {
    "torch.empty": _factory("aten::empty", fills=False),
    "torch.empty_strided": _factory("aten::empty_strided", fills=False, size=(0,)),
    "torch.zeros": _factory("aten::zeros", fills=True),
    "torch.ones": _factory("aten::ones", fills=True),
    "torch.full": _factory("aten::full", fills=True, size=(0,)),
    "torch.arange": _factory("aten::arange", fills=True),
    "torch.linspace": _factory("aten::linspace", fills=True, size=(2,)),
    "torch.logspace": _factory("aten::logspace", fills=True, size=(2,)),
    "torch.eye": _factory("aten::eye", fills=True),
    "torch.scalar_tensor": _factory("aten::scalar_tensor", fills=True),
    "torch.rand": _factory("aten::rand", fills=True, random=True),
    "torch.randn": _factory("aten::randn", fills=True, random=True),
    "torch.randint": _factory("aten::randint", fills=True, random=True, size=(-1,)),
    "torch.randperm": _factory("aten::randperm", fills=True, random=True),
    "torch.normal": _factory("aten::normal", fills=True, random=True),
    # The data (argument 0) are copied in; the static frontend models it as a fill of the new tensor.
    "torch.tensor": Api(Role.FACTORY, initialises=True, size=EXTENTS, device=KEYWORD, aten=("aten::lift_fresh",),
                        source=0),
    "torch.as_tensor": Api(Role.FACTORY, initialises=True, size=EXTENTS, device=KEYWORD, aten=("aten::lift_fresh",),
                           source=0, passes_device=True, converts=True),
    "torch.empty_like": _factory("aten::empty_like", fills=False, device=TEMPLATE),
    "torch.zeros_like": _factory("aten::zeros_like", fills=True, device=TEMPLATE),
    "torch.ones_like": _factory("aten::ones_like", fills=True, device=TEMPLATE),
    "torch.full_like": _factory("aten::full_like", fills=True, device=TEMPLATE),
    "torch.rand_like": _factory("aten::rand_like", fills=True, random=True, device=TEMPLATE),
    "torch.randn_like": _factory("aten::randn_like", fills=True, random=True, device=TEMPLATE),
    "torch.randint_like": _factory("aten::randint_like", fills=True, random=True, device=TEMPLATE),
    # Draws that compute from their input: not factories.
    "torch.bernoulli": Api(Role.PLAIN, aten=("aten::bernoulli",), draws_random=True),
    "torch.multinomial": Api(Role.PLAIN, aten=("aten::multinomial",), draws_random=True),
    "torch.poisson": Api(Role.PLAIN, aten=("aten::poisson",), draws_random=True),
    "torch.nn.functional.dropout": Api(Role.PLAIN, draws_random=True),  # runs as bernoulli_, div_, mul
    "torch.nn.functional.embedding": Api(Role.INDEXED, aten=("aten::embedding",)),
    # What `copy_` runs on backends that copy through another op: writes its second argument.
    "torch._copy_from": Api(Role.COPY, aten=("aten::_copy_from",)),
    "torch._copy_from_and_resize": Api(Role.COPY, aten=("aten::_copy_from_and_resize",)),
    "torch.cuda.empty_cache": Api(Role.FLUSH),
    "torch.cuda.synchronize": _NO_LAUNCH,
    "torch.cuda.set_device": _NO_LAUNCH,
    # Capitalised names are classes that keep what they are given (see `convention`); these two
    # also launch nothing.
    "torch.cuda.Stream": Api(Role.RETAINING, launches=False),
    "torch.cuda.Event": Api(Role.RETAINING, launches=False),
    # Wrappers that keep the module or tensors they are given (DDP/FSDP hold the module).
    "torch.compile": _RETAINING,
    "torch.jit.script": _RETAINING,
    "torch.jit.trace": _RETAINING,
    "torch.export.export": _RETAINING,
    "torch.distributed.fsdp.fully_shard": _RETAINING,
    "torch.distributed._composable.fsdp.fully_shard": _RETAINING,
    "torch.distributed.tensor.parallel.parallelize_module": _RETAINING,
    "torch.cuda.make_graphed_callables": _RETAINING,
    "torch.nn.utils.parametrize.register_parametrization": _RETAINING,
}

MEMBERS: dict[str, Api] = {
    "copy_": _overwrite("aten::copy_", Op.COPY),
    "fill_": _overwrite("aten::fill_"),
    "zero_": _overwrite("aten::zero_"),
    # Makes the tensor another storage's view: the old contents are gone, no memory is written.
    "set_": Api(Role.FULL_WRITE, write=Op.COPY),
    "normal_": _overwrite("aten::normal_", random=True),
    "uniform_": _overwrite("aten::uniform_", random=True),
    "random_": _overwrite("aten::random_", random=True),
    "bernoulli_": _overwrite("aten::bernoulli_", random=True),
    "exponential_": _overwrite("aten::exponential_", random=True),
    "geometric_": _overwrite("aten::geometric_", random=True),
    "log_normal_": _overwrite("aten::log_normal_", random=True),
    "cauchy_": _overwrite("aten::cauchy_", random=True),
    "new_empty": _factory("aten::new_empty", fills=False, device=TEMPLATE),
    "new_empty_strided": _factory("aten::new_empty_strided", fills=False, device=TEMPLATE),
    "new_zeros": _factory("aten::new_zeros", fills=True, device=TEMPLATE),
    "new_ones": _factory("aten::new_ones", fills=True, device=TEMPLATE),
    "new_full": _factory("aten::new_full", fills=True, device=TEMPLATE, size=(0,)),
    "new_tensor": _factory("aten::lift_fresh", fills=True, device=TEMPLATE),
    "cuda": Api(Role.TRANSFER, initialises=True, device=ALWAYS, aten=("aten::_to_copy",), read_only=True),
    "to": Api(Role.TRANSFER, initialises=True, device=KEYWORD, aten=("aten::_to_copy",), read_only=True),
    "clone": Api(Role.PLAIN, initialises=True, aten=("aten::clone",)),
    # A copy to the host is recorded as a copy (`aten::_to_copy`, with `to`), `.item()` as one element read.
    "cpu": Api(Role.HOST_RESULT, initialises=True, read_only=True),
    "item": _host("aten::_local_scalar_dense"),
    "tolist": _host(),
    "numpy": _host(),
    "size": _host(),
    "dim": _host(),
    "numel": _host(),
    "shape": _host(),
    "dtype": _host(),
    "stride": _host(),
    "data_ptr": _host(),
    "__len__": _host(read_only=False),
    "is_cuda": _host(read_only=False),
    "device": _host(read_only=False),
    "element_size": _host(read_only=False),
    "nbytes": _host(read_only=False),
    "ndim": _host(read_only=False),
    "T": _VIEW,
    "mT": _VIEW,
    "H": _VIEW,
    "real": _VIEW,
    "imag": _VIEW,
    "data": _VIEW,
    "grad": _VIEW,
    "index_select": Api(Role.INDEXED, aten=("aten::index_select",)),
    "index_add_": Api(Role.INDEXED, aten=("aten::index_add_",)),
    "index_copy_": Api(Role.INDEXED, aten=("aten::index_copy_",)),
    "index_fill_": Api(Role.INDEXED, aten=("aten::index_fill_",)),
    "gather": Api(Role.INDEXED, aten=("aten::gather",)),
    "scatter_": Api(Role.INDEXED, aten=("aten::scatter_",)),
    "scatter_add_": Api(Role.INDEXED, aten=("aten::scatter_add_",)),
    "scatter_reduce_": Api(Role.INDEXED, aten=("aten::scatter_reduce_",)),
    "take": Api(Role.INDEXED, aten=("aten::take",)),
    "__getitem__": Api(Role.INDEXED, aten=("aten::index",)),  # `x[idx]` with a tensor index
    "index_put_": Api(Role.INDEXED, aten=("aten::index_put_", "aten::_index_put_impl_")),  # and `x[idx] = v`
    "index_put": Api(Role.INDEXED, aten=("aten::index_put",)),
    # Streams' and events' methods (CuPy's and Numba's have the same names).
    "synchronize": _NO_LAUNCH,
    "record": _NO_LAUNCH,
    "destroy": _NO_LAUNCH,
}

_CLASS = _RETAINING


def convention(qual: str, last: str) -> Api | None:
    """Rows by PyTorch's naming: a capitalised name under `torch.` is a class (an optimizer, a
    module, DDP, a DataLoader) whose instances keep what they are given."""
    return _CLASS if qual.startswith("torch.") and last[:1].isupper() else None


def in_place(method: str) -> bool:
    """PyTorch names a method that modifies its receiver with a trailing underscore (`add_`)."""
    return method.endswith("_")


def traced_api(aten: str) -> str:
    """The allocation API a run records for the storages an op makes: `aten::zeros` -> `torch.zeros`."""
    return "torch." + aten.split("::")[-1]


# ---------------------------------------------------------------------- derived
_ROWS = (*FUNCTIONS.values(), *MEMBERS.values())


def _aten(keep) -> frozenset[str]:
    return frozenset(op for row in _ROWS if keep(row) for op in row.aten)


# `torch.<name>` factories, by name (host staging: a factory's tensor moved to the device).
FACTORY_NAMES = frozenset(name.removeprefix("torch.") for name, row in FUNCTIONS.items() if row.role is Role.FACTORY)
# What a run names the factories that take `device=` and make their values themselves (GL102).
TRACED_FACTORIES = frozenset(traced_api(op) for row in FUNCTIONS.values() if row.role is Role.FACTORY
                             and row.device == KEYWORD and row.source is None for op in row.aten)
# Names (the last part) of what draws from a random generator.
RANDOM_DRAWS = frozenset(name.rsplit(".", 1)[-1] for name, row in (*FUNCTIONS.items(), *MEMBERS.items())
                         if row.draws_random)

# The collector's view: ops that write every element of their first argument without reading it,
ATEN_OVERWRITES = _aten(lambda row: row.role is Role.FULL_WRITE)
# ops that make a tensor and write all of it, and factories that leave theirs as it is,
ATEN_FILLS = _aten(lambda row: row.initialises)
ATEN_UNINITIALISED = _aten(lambda row: row.role is Role.FACTORY and not row.initialises)
# copies between storages (a direction from the devices), one element read by the host,
ATEN_COPIES = _aten(lambda row: row.role in (Role.COPY, Role.TRANSFER) or row.write is Op.COPY)
ATEN_TO_HOST = _aten(lambda row: row.role is Role.HOST_RESULT) - ATEN_COPIES
# and ops whose index argument says which elements they touch.
ATEN_INDEXED = _aten(lambda row: row.role is Role.INDEXED)
