"""PyTorch collector: a dispatch mode that sees every aten op with the storages it reads and
writes, the way the user's code made them (the CUDA caching allocator hides tensors from a
driver-level tool).  The same on CPU and GPU tensors, so tests run on the CPU build.
`OpRecorder` turns an op into events for both drivers: this dispatch mode and the C++ hook of
torch_native.py, whose `install` picks one.  What each `aten::` op does to memory is read from
gpulint/models/torch.py, the table the static frontend reads too.

* Objects are storages: identified by the storage, alive until `weakref.finalize` on the
  storage's Python object fires (PyTorch keeps one Python object per live storage).
* An op reads the tensors its schema does not mark as written and writes the marked ones.
  Ops that overwrite without reading (`zero_`, `fill_`, `copy_`'s destination, `out=`
  arguments) are recorded as memsets / copies, not uses, so dead writes (GL007) are seen; so are
  the factories that fill what they allocate (`zeros`, `ones`, `full`).  View ops (`slice`,
  `view`, `t`, ...) touch no memory and are not recorded; `.item()` is a device-to-host copy.
* Which elements an op touches comes from the tensor's view (storage offset, sizes, strides),
  and for index ops (`index_select`, `embedding`, `gather`, `take`, `index`, `index_put_`,
  `scatter_`, `index_add_`, ...) from the index values: exact rows, with how often each was hit.
  Objects that some op touched only in part get per-op bitmaps and access counts (GL008, GL009,
  GL010) in the trace's sidecar, one bit per element.
* Transfers between devices (`.to()`, `.cuda()`, `.cpu()`, `copy_` across devices) are copies
  with their direction.
* On CUDA, the caching allocator's reserved and allocated bytes are sampled into `pool` events
  (GL104); `torch.cuda.empty_cache()` is a `flush` event (GL101 when it sits in a loop).
* Each alloc names the tensor's device: in a program with CUDA tensors, the CPU ones are host
  memory for the analyses (GL102 looks for those made only to be copied to the device).
* The per-op path is what costs a launch-bound loop: schemas are read once per op overload,
  stacks are cached per distinct stack, events are formatted directly and written in blocks.
* Autograd's backward ops run under the mode too (PyTorch carries it into the engine's
  threads); they are attributed to the user's frame that called `backward()`.
* Stacks are the user's Python frames only.
"""
from __future__ import annotations

import functools
import time
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from gpulint.dynamic.collectors.recorder import Recorder, host_digest
# What each op does to memory is a row of the models table, shared with the static frontend.
from gpulint.models.torch import ATEN_COPIES, ATEN_FILLS, ATEN_INDEXED, ATEN_OVERWRITES, ATEN_TO_HOST, \
    ATEN_UNINITIALISED, traced_api

def _direction(src: torch.device, dst: torch.device) -> str:
    if src.type == "cpu" and dst.type != "cpu":
        return "h2d"
    if src.type != "cpu" and dst.type == "cpu":
        return "d2h"
    return "d2d" if src.type != "cpu" else "h2h"


# ---------------------------------------------------------------------- element masks
def _permuted_contiguous(tensor: torch.Tensor) -> bool:
    """The strides are a permutation of a contiguous layout (`w.t()`, `x.permute(...)`): with
    offset 0 and the storage's size, such a view reaches every element exactly once."""
    stride = tensor.stride()
    if len(stride) == 2:  # `w.t()`, in every linear layer: the transpose of a contiguous matrix
        return stride[0] == 1 and stride[1] == tensor.shape[0]
    expected = 1
    for step, size in sorted((st, sz) for st, sz in zip(stride, tensor.shape) if sz != 1):
        if step != expected:
            return False
        expected *= size
    return True


def _view_of(flat: np.ndarray, tensor: torch.Tensor) -> np.ndarray:
    """The numpy view of `flat` (one entry per storage element) that `tensor` looks at."""
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[tensor.storage_offset():], shape=tuple(tensor.shape),
                                           strides=tuple(s * item for s in tensor.stride()))


def _indices(index: torch.Tensor) -> np.ndarray:
    return index.detach().to("cpu", copy=False).numpy().astype(np.int64, copy=False)


def _index_counts(name: str, args: tuple, kwargs: dict) -> tuple[int, np.ndarray] | None:
    """For an index op: (position of the indexed argument, per-element hit counts over its view).
    None when the op is not one, or its indices cannot be read."""
    try:
        if name in ("aten::index_select", "aten::index_add_", "aten::index_copy_", "aten::index_fill_"):
            self, dim, index = args[0], args[1], args[2]
            counts = np.zeros(tuple(self.shape), dtype=np.uint32)
            hits = np.bincount(_indices(index).reshape(-1) % max(1, self.shape[dim]), minlength=self.shape[dim])
            shape = [1] * self.dim()
            shape[dim] = self.shape[dim]
            counts += hits.astype(np.uint32).reshape(shape)
            return 0, counts
        if name == "aten::embedding":
            weight, index = args[0], args[1]
            counts = np.zeros(tuple(weight.shape), dtype=np.uint32)
            hits = np.bincount(_indices(index).reshape(-1), minlength=weight.shape[0])[: weight.shape[0]]
            counts += hits.astype(np.uint32).reshape(-1, *([1] * (weight.dim() - 1)))
            return 0, counts
        if name in ("aten::gather", "aten::scatter_", "aten::scatter_add_", "aten::scatter_reduce_"):
            self, dim, index = args[0], args[1], args[2]
            counts = np.zeros(tuple(self.shape), dtype=np.uint32)
            idx = _indices(index)
            region = counts[tuple(slice(0, idx.shape[d]) if d != dim % self.dim() else slice(None)
                                  for d in range(self.dim()))]
            grid = list(np.indices(idx.shape, sparse=True))
            grid[dim % self.dim()] = idx
            np.add.at(region, tuple(grid), 1)
            return 0, counts
        if name == "aten::take":
            self, index = args[0], args[1]
            counts = np.zeros(self.numel(), dtype=np.uint32)
            np.add.at(counts, _indices(index).reshape(-1) % max(1, self.numel()), 1)
            return 0, counts.reshape(tuple(self.shape))
        if name in ("aten::index", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_"):
            self, indices = args[0], args[1]
            counts = np.zeros(tuple(self.shape), dtype=np.uint32)
            key = tuple(slice(None) if i is None else
                        (i.detach().cpu().numpy() if i.dtype == torch.bool else _indices(i)) for i in indices)
            np.add.at(counts, key, 1)
            return 0, counts
    except (IndexError, ValueError, TypeError, RuntimeError):
        return None
    return None


# ---------------------------------------------------------------------- objects
class _Touches:
    """How ops touched one storage: per op, the elements read and written, and the per-element
    hit counts once some op touched it only in part.  An op that touched every element is kept
    as one int, `t << 2 | read << 1 | write` (the common case, kept small); one that touched a
    part as `(t, read, write)` with packed bits (False: not touched, True: every element)."""

    __slots__ = ("elements", "itemsize", "nbytes", "ops", "partial", "counts")

    def __init__(self, elements: int, itemsize: int) -> None:
        self.elements, self.itemsize, self.nbytes = elements, itemsize, elements * itemsize
        self.ops: list = []
        self.partial = False
        self.counts: np.ndarray | None = None

    def each_op(self):
        """(launch t, read, write) of every op, in order."""
        for op in self.ops:
            yield (op >> 2, bool(op & 2), bool(op & 1)) if isinstance(op, int) else op


# Roles of a tensor argument in an op (the C++ hook's `Role`).
ARG_READ, ARG_READ_WRITE, ARG_OVERWRITE = 0, 1, 2


@dataclass(frozen=True)
class Plan:
    """What the collector needs from an op's schema, worked out once per op overload (reading
    the schema on every call cost more than the op itself on a launch-bound loop)."""

    name: str
    api: str  # the allocation API its outputs are recorded with
    view: bool  # every return aliases an input without writing it: no memory is touched
    tensors: tuple[tuple[int, str, int], ...]  # (position, keyword, role) of each tensor argument
    indexed: bool


def plan_of(schema) -> Plan:
    name = schema.name
    returns = schema.returns
    view = bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)
    tensors = []
    for index, spec in enumerate(schema.arguments):
        if "Tensor" not in str(spec.type):
            continue
        write = spec.alias_info is not None and spec.alias_info.is_write
        if write and (spec.name == "out" or (index == 0 and name in ATEN_OVERWRITES)):
            role = ARG_OVERWRITE
        else:
            role = ARG_READ_WRITE if write else ARG_READ
        tensors.append((index, spec.name, role))
    return Plan(name, traced_api(name), view, tuple(tensors), name in ATEN_INDEXED)


def _tensors(value: Any) -> tuple | list:
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (list, tuple)):
        return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]
    return ()


class _PyObjects:
    """Storages as objects for the dispatch mode: identified by the storage, freed when the
    weak reference to the storage's Python object (PyTorch keeps one per live storage) dies."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.ids: dict[int, int] = {}  # storage address key -> object id
        # id of a weak reference to a storage -> (the reference, storage key, object id): the
        # reference's callback is the free
        self.refs: dict[int, tuple[weakref.ref, int, int]] = {}
        self.shapes: dict[int, tuple[int, int]] = {}  # object id -> (elements, itemsize)
        self.devices: dict[int, str] = {}  # device index -> name

    def object(self, tensor: torch.Tensor, site: str, api: str) -> int:
        """The id of the tensor's storage, recorded (an alloc event) when it is new."""
        storage = tensor.untyped_storage()
        key = storage._cdata
        oid = self.ids.get(key)
        if oid is not None:
            return oid
        oid = self.recorder.new_object()
        self.ids[key] = oid
        t = self.recorder.tick()
        nbytes = storage.nbytes()
        itemsize = tensor.element_size()
        index = tensor.get_device()
        device = self.devices.get(index)
        if device is None:
            device = self.devices[index] = str(tensor.device)
        self.recorder.write_line(f'{{"ev":"alloc","t":{t},"obj":{oid},"size":{nbytes},"stream":0,"api":"{api}",'
                                 f'"framework":"torch","device":"{device}","site":{site}}}')
        self.shapes[oid] = (nbytes // max(1, itemsize), itemsize)
        ref = weakref.ref(storage, self._freed)
        self.refs[id(ref)] = (ref, key, oid)
        return oid

    def known(self, tensor: torch.Tensor) -> int | None:
        return self.ids.get(tensor.untyped_storage()._cdata)

    def shape(self, oid: int) -> tuple[int, int] | None:
        return self.shapes.get(oid)

    def whole_ops(self, oid: int) -> list[int]:
        return []  # every op is in the object's _Touches

    def _freed(self, ref: weakref.ref) -> None:
        with self.recorder.lock:
            entry = self.refs.pop(id(ref), None)
            if entry is None:
                return
            _, key, oid = entry
            if self.ids.get(key) == oid:
                del self.ids[key]
            t = self.recorder.tick()
            # Dropped by no user frame (the program's globals at its end): its last statement.
            self.recorder.write_line(f'{{"ev":"free","t":{t},"obj":{oid},"stream":0,"site":{self.recorder.site_json()}}}')


class OpRecorder:
    """What each op did to the storages it was given: the trace events of an op, once it ran.
    Driven by the C++ hook (the ops it hands over) or by the dispatch mode (every op).  The
    objects come from `objects`: the hook's table, or `_PyObjects`."""

    def __init__(self, recorder: Recorder, objects: Any) -> None:
        self.recorder = recorder
        self.objects = objects
        self.touches: dict[int, _Touches] = {}
        self.lock = recorder.lock  # backward ops may run on the autograd engine's threads
        self.pool = (-1, -1, -1)
        self.pool_sampled = 0.0

    def _info(self, oid: int) -> _Touches | None:
        info = self.touches.get(oid)
        if info is None:
            shape = self.objects.shape(oid)
            if shape is None:
                return None
            info = self.touches[oid] = _Touches(*shape)
        return info

    # ------------------------------------------------------------------ element accesses
    def _mask(self, oid: int, tensor: torch.Tensor, counts: np.ndarray | None = None) -> np.ndarray | None:
        """The storage elements `tensor` touches (None: all); `counts` (over the view) when the
        op is an index op.  Partial accesses also add to the object's hit counts."""
        info = self._info(oid)
        if info is None or tensor.element_size() != info.itemsize:
            return None  # unknown, or a view with another dtype: counted as a whole access
        if counts is None and self._whole(oid, tensor):
            return None
        flat = np.zeros(info.elements, dtype=np.uint32)
        try:
            view = _view_of(flat, tensor)
            if counts is None:
                view[...] = 1
            else:
                np.add.at(view, tuple(np.nonzero(counts)), counts[np.nonzero(counts)])
        except ValueError:
            return None
        if not info.partial:
            info.partial = True
            info.counts = np.zeros(info.elements, dtype=np.uint32)
            for _ in info.ops:  # the whole-object accesses before the first partial one
                info.counts += 1
        info.counts += flat
        return flat > 0

    def _note(self, oid: int, t: int, read: Any, write: Any) -> None:
        info = self._info(oid)
        if info is None:
            return
        if info.partial and not isinstance(read, np.ndarray) and not isinstance(write, np.ndarray):
            info.counts += 1  # a whole-object access (partial ones were counted by _mask)
        info.ops.append((t, _packed(read), _packed(write)))

    # ------------------------------------------------------------------ ops
    def record(self, plan: Plan, args: tuple | list, kwargs: dict, out: Any, site: str) -> None:
        """The events of an op that ran with `args` / `kwargs` and returned `out`."""
        reads: list[tuple[int, torch.Tensor]] = []
        writes: list[tuple[int, torch.Tensor]] = []
        overwritten: list[tuple[int, torch.Tensor]] = []
        count = len(args)
        objects = self.objects
        for position, keyword, role in plan.tensors:
            value = args[position] if position < count else kwargs.get(keyword)
            if value is None:
                continue
            for tensor in _tensors(value):
                oid = objects.object(tensor, site, "tensor")
                if role == ARG_READ:
                    reads.append((oid, tensor))
                elif role == ARG_READ_WRITE:
                    writes.append((oid, tensor))
                    reads.append((oid, tensor))
                else:
                    overwritten.append((oid, tensor))
        name = plan.name
        indexed = _index_counts(name, args, kwargs) if plan.indexed and reads else None
        # Every input is known by now, so an output whose storage is not is new.
        created = [(objects.object(t, site, plan.api), t) for t in _tensors(out) if objects.known(t) is None]
        t = self.recorder.tick()
        if name in ATEN_COPIES and self._copy(t, name, args, overwritten, created, site):
            return
        if name in ATEN_TO_HOST and reads:  # .item(): the host reads one element
            oid, tensor = reads[0]
            self.recorder.write_line(f'{{"ev":"memcpy","t":{t},"dst":null,"src":{oid},"size":{tensor.element_size()},'
                                     f'"kind":"d2h","stream":0,"src_offset":'
                                     f'{tensor.storage_offset() * tensor.element_size()},"site":{site}}}')
            return
        if overwritten and not writes and not created:
            for oid, tensor in overwritten:  # zero_, fill_, out=: a write, not a use
                self._memset(t, oid, tensor, site)
            if reads and name not in ATEN_OVERWRITES:  # `torch.add(a, b, out=c)` also reads a and b
                self._launch(self.recorder.tick(), name, reads, [], site, indexed)
            return
        if name in ATEN_FILLS and created and not reads:  # `zeros`: a write, like a memset
            for oid, tensor in created:
                self._memset(t, oid, tensor, site)
            return
        if name in ATEN_UNINITIALISED and not reads:
            return
        self._launch(t, name, reads, writes + created + overwritten, site, indexed)

    def _copy(self, t: int, name: str, args: tuple, overwritten: list, created: list, site: str) -> bool:
        src = args[1] if name == "aten::copy_" and len(args) > 1 else args[0]
        dst_oid, dst = (overwritten[0] if name == "aten::copy_" and overwritten else
                        created[0] if created else (None, None))
        if dst is None or not isinstance(src, torch.Tensor):
            return False
        src_oid = self.objects.known(src)
        kind = _direction(src.device, dst.device)
        digest = ""
        if kind == "h2d" and src.is_contiguous():  # what GL103 compares: the host bytes uploaded
            found = host_digest(src.data_ptr(), src.numel() * src.element_size())
            digest = f',"digest":"{found}"' if found else ""
        self.recorder.write_line(
            f'{{"ev":"memcpy","t":{t},"dst":{dst_oid},"src":{"null" if src_oid is None else src_oid},'
            f'"size":{dst.numel() * dst.element_size()},"kind":"{kind}","stream":0,'
            f'"dst_offset":{dst.storage_offset() * dst.element_size()},'
            f'"src_offset":{src.storage_offset() * src.element_size()}{digest},"site":{site}}}')
        return True

    def _memset(self, t: int, oid: int, tensor: torch.Tensor, site: str) -> None:
        info = self._info(oid)
        if info is not None and tensor.storage_offset() == 0 and tensor.numel() == info.elements \
                and tensor.element_size() == info.itemsize:
            size, offset = info.elements * info.itemsize, 0  # every element written: the whole object
        else:
            size, offset = tensor.numel() * tensor.element_size(), tensor.storage_offset() * tensor.element_size()
        self.recorder.write_line(f'{{"ev":"memset","t":{t},"obj":{oid},"size":{size},"offset":{offset},"stream":0,'
                                 f'"site":{site}}}')

    def _whole(self, oid: int, tensor: torch.Tensor) -> bool:
        """The view reaches every element of its storage exactly once (the common case, checked
        cheaply): offset 0, the storage's size, and contiguous or a permutation of contiguous."""
        info = self._info(oid)
        if info is None or tensor.storage_offset() != 0 or tensor.nbytes != info.nbytes:
            return False
        return tensor.is_contiguous() or _permuted_contiguous(tensor)

    def _launch(self, t: int, name: str, reads: list, writes: list, site: str, indexed) -> None:
        read_ids = dict.fromkeys(oid for oid, _ in reads)
        write_ids = dict.fromkeys(oid for oid, _ in writes)
        self.recorder.write_line(f'{{"ev":"launch","t":{t},"kernel":"{name}","stream":0,'
                                 f'"reads":[{",".join(map(str, read_ids))}],'
                                 f'"writes":[{",".join(map(str, write_ids))}],"site":{site}}}')
        if indexed is None and all(self._whole(oid, tensor) for oid, tensor in reads) \
                and all(self._whole(oid, tensor) for oid, tensor in writes):
            for oid in {**read_ids, **write_ids}:
                info = self._info(oid)
                if info is None:
                    continue
                if info.partial:
                    info.counts += 1
                info.ops.append(t << 2 | (oid in read_ids) << 1 | (oid in write_ids))
            return
        # Per object and role (read, write): False (not touched), True (every element) or a mask.
        touched: dict[int, list] = {}
        for role, group in ((0, reads), (1, writes)):
            for position, (oid, tensor) in enumerate(group):
                counts = indexed[1] if indexed is not None and role == 0 and position == indexed[0] else None
                if counts is None and indexed is not None and role == 1 and position == 0 and reads \
                        and reads[0][0] == oid:
                    counts = indexed[1]  # index_put_ / scatter_: the rows written are the rows indexed
                mask = self._mask(oid, tensor, counts)
                entry = touched.setdefault(oid, [False, False])
                part = True if mask is None else mask
                if entry[role] is False:
                    entry[role] = part
                elif entry[role] is not True:
                    entry[role] = True if part is True else entry[role] | part
        for oid, (read, write) in touched.items():
            self._note(oid, t, read, write)

    def pool_state(self, force: bool = False) -> None:
        """The caching allocator's reserved bytes and its peak of allocated bytes (CUDA only).
        Reading them builds PyTorch's whole statistics dict, so they are sampled at most every
        50 ms, at each `empty_cache()` and at the end: reserved bytes only fall on `empty_cache()`, and the peak of
        allocated bytes is kept by PyTorch, so the samples still give both peaks."""
        now = time.monotonic()
        if not force and now - self.pool_sampled < 0.05:
            return
        self.pool_sampled = now
        # The raw statistics: `torch.cuda.memory_reserved()` and friends flatten the whole nested
        # dict on every call (~0.3 ms each on the H100 host).
        stats = torch._C._cuda_memoryStats(torch.cuda.current_device())
        state = (stats["reserved_bytes"]["all"]["current"], stats["allocated_bytes"]["all"]["current"],
                 stats["allocated_bytes"]["all"]["peak"])
        if state != self.pool:
            self.pool = state
            self.recorder.write({"ev": "pool", "t": self.recorder.t, "pool": "torch.cuda", "reserved": state[0],
                                 "allocated": state[1], "allocated_peak": state[2]})

    # ------------------------------------------------------------------ the end
    def write_accesses(self) -> None:
        """Bitmaps and counts of the objects some op touched only in part (one bit per element)."""
        writer = self.recorder.writer
        for oid, info in self.touches.items():
            if not info.partial:
                continue
            elsewhere = self.objects.whole_ops(oid)  # the ops the C++ hook recorded itself
            ops = sorted([*info.each_op(), *((op >> 2, bool(op & 2), bool(op & 1)) for op in elsewhere)],
                         key=lambda op: op[0])
            for t, read, write in ops:
                writer.add_bitmap(oid, t, _unpacked(read, info.elements), _unpacked(write, info.elements),
                                  granularity=info.itemsize)
            assert info.counts is not None
            writer.add_counts(oid, None, info.counts + len(elsewhere), granularity=info.itemsize)


def _packed(part: Any) -> Any:
    """False (not touched), True (every element) or the packed bits of the elements touched."""
    return np.packbits(part) if isinstance(part, np.ndarray) else part


def _unpacked(part: Any, elements: int) -> np.ndarray | None:
    if part is False:
        return None
    if part is True:
        return np.ones(elements, dtype=bool)
    return np.unpackbits(part, count=elements).astype(bool)


class TorchCollector(TorchDispatchMode):
    """The dispatch-mode driver: every aten op passes through `__torch_dispatch__` (the
    fallback when the C++ hook cannot be built; about 2x slower per op on a GPU loop)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # PyTorch would wrap `__torch_dispatch__` in `torch._disable_dynamo`, about 2 us per op;
        # the mode's ops run eagerly whatever the wrapper says.
        return False

    def __init__(self, ops: OpRecorder) -> None:
        super().__init__()
        self.ops = ops
        self.recorder = ops.recorder
        self.plans: dict[Any, Plan] = {}
        self.cuda_seen = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        plan = self.plans.get(func)
        if plan is None:
            plan = self.plans[func] = plan_of(func._schema)
        if kwargs is None:
            kwargs = {}
        if plan.view:
            return func(*args, **kwargs)  # a view: no memory is touched
        with self.ops.lock:
            site = self.recorder.site_json()  # on autograd's engine thread: the frame that called backward()
            out = func(*args, **kwargs)
            try:
                self.ops.record(plan, args, kwargs, out, site)
            finally:
                if self.cuda_seen or torch.cuda.is_initialized():
                    self.cuda_seen = True
                    self.ops.pool_state()
            return out


class ModeInstalled:
    """The dispatch mode installed for one session."""

    def __init__(self, recorder: Recorder) -> None:
        self.ops = OpRecorder(recorder, _PyObjects(recorder))
        self.mode = TorchCollector(self.ops)
        self.empty_cache = flush_recorder(self.ops)
        torch.cuda.empty_cache = torch.cuda.memory.empty_cache = self.empty_cache
        self.mode.__enter__()

    def uninstall(self) -> None:
        self.mode.__exit__(None, None, None)
        torch.cuda.empty_cache = torch.cuda.memory.empty_cache = self.empty_cache.__wrapped__
        if torch.cuda.is_initialized():
            self.ops.pool_state(force=True)
        self.ops.write_accesses()


def flush_recorder(ops: OpRecorder):
    """`torch.cuda.empty_cache` that also writes a `flush` event (GL101: a flush in a loop sends
    every later allocation back to the driver)."""
    original = torch.cuda.memory.empty_cache

    @functools.wraps(original)
    def empty_cache() -> None:
        original()
        with ops.lock:
            ops.recorder.write({"ev": "flush", "t": ops.recorder.t, "api": "torch.cuda.empty_cache",
                                "pool": "torch.cuda", "site": ops.recorder.site()})
            if torch.cuda.is_initialized():
                ops.pool_state(force=True)

    return empty_cache
