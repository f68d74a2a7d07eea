"""PyTorch collector: a dispatch mode that sees every aten op with the storages it reads and
writes, the way the user's code made them (the CUDA caching allocator hides tensors from a
driver-level tool).  The same on CPU and GPU tensors, so tests run on the CPU build.

* Objects are storages: identified by the storage, alive until `weakref.finalize` on the
  storage's Python object fires (PyTorch keeps one Python object per live storage).
* An op reads the tensors its schema does not mark as written and writes the marked ones.
  Ops that overwrite without reading (`zero_`, `fill_`, `copy_`'s destination, `out=`
  arguments) are recorded as memsets / copies, not uses, so dead writes (GL007) are seen; so are
  the factories that fill what they allocate (`zeros`, `ones`, `full`).
* Transfers between devices (`.to()`, `.cuda()`, `.cpu()`, `copy_` across devices) are copies
  with their direction.
* Stacks are the user's Python frames only.
"""
from __future__ import annotations

import os
import sys
import traceback
import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from gpulint.dynamic.trace import TraceWriter

# Ops that write every element of their first argument without reading it.
_OVERWRITE = {"aten::zero_", "aten::fill_", "aten::normal_", "aten::uniform_", "aten::random_", "aten::bernoulli_",
              "aten::exponential_", "aten::geometric_", "aten::log_normal_", "aten::cauchy_"}
# Factories whose output is filled by the op itself (a write, like a memset), and those that
# leave it uninitialised.
_FILLING = {"aten::zeros", "aten::ones", "aten::full", "aten::zeros_like", "aten::ones_like", "aten::full_like",
            "aten::scalar_tensor", "aten::arange", "aten::linspace", "aten::eye", "aten::rand", "aten::randn",
            "aten::randint", "aten::randperm", "aten::rand_like", "aten::randn_like", "aten::normal",
            "aten::lift_fresh", "aten::_to_copy", "aten::clone", "aten::logspace"}
_UNINITIALISED = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                  "aten::new_empty_strided"}
_COPIES = {"aten::copy_", "aten::_to_copy", "aten::_copy_from", "aten::_copy_from_and_resize"}
_GPULINT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


def user_stack(limit: int = 8) -> list[list]:
    """The caller's frames outside torch, gpulint and the standard library, innermost first."""
    frames = []
    for frame in reversed(traceback.extract_stack()):
        path = frame.filename
        if path.startswith((_GPULINT, _TORCH)) or path.startswith("<") or "site-packages" in path \
                or path.startswith(sys.prefix) and "site-packages" not in path and "/lib/python" in path:
            continue
        frames.append([path, frame.lineno or 0, frame.name])
        if len(frames) >= limit:
            break
    return frames


def _direction(src: torch.device, dst: torch.device) -> str:
    if src.type == "cpu" and dst.type != "cpu":
        return "h2d"
    if src.type != "cpu" and dst.type == "cpu":
        return "d2h"
    return "d2d" if src.type != "cpu" else "h2h"


class TorchCollector(TorchDispatchMode):
    """Writes every aten op's storages to a trace (see module docstring)."""

    def __init__(self, writer: TraceWriter) -> None:
        super().__init__()
        self.writer = writer
        self.t = 0
        self.ids: dict[int, int] = {}  # storage address key -> object id
        self.next_id = 1

    # ------------------------------------------------------------------ objects
    def _key(self, tensor: torch.Tensor) -> int:
        return tensor.untyped_storage()._cdata

    def _object(self, tensor: torch.Tensor, site: list, api: str) -> int:
        storage = tensor.untyped_storage()
        key = storage._cdata
        oid = self.ids.get(key)
        if oid is not None:
            return oid
        oid = self.next_id
        self.next_id += 1
        self.ids[key] = oid
        self.t += 1
        self.writer.write({"ev": "alloc", "t": self.t, "obj": oid, "size": int(storage.nbytes()),
                           "stream": 0, "api": api, "framework": "torch", "device": str(tensor.device),
                           "site": site})
        weakref.finalize(storage, self._freed, key, oid)
        return oid

    def _freed(self, key: int, oid: int) -> None:
        if self.ids.get(key) == oid:
            del self.ids[key]
        self.t += 1
        try:
            self.writer.write({"ev": "free", "t": self.t, "obj": oid, "stream": 0, "site": user_stack()})
        except ValueError:
            pass  # the trace was closed first (objects alive at the end)

    # ------------------------------------------------------------------ ops
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        site = user_stack()
        reads: list[int] = []
        writes: list[int] = []
        overwritten: list[tuple[int, torch.Tensor]] = []
        schema_args = func._schema.arguments
        for index, spec in enumerate(schema_args):
            value = args[index] if index < len(args) else kwargs.get(spec.name)
            tensors = [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]
            write = spec.alias_info is not None and spec.alias_info.is_write
            for tensor in tensors:
                oid = self._object(tensor, site, "tensor")
                if write and (spec.name == "out" or (index == 0 and name in _OVERWRITE)):
                    overwritten.append((oid, tensor))
                elif write and index == 0 and name == "aten::copy_":
                    overwritten.append((oid, tensor))
                elif write:
                    writes.append(oid)
                    reads.append(oid)
                else:
                    reads.append(oid)
        known = set(self.ids)
        out = func(*args, **kwargs)
        new = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and self._key(t) not in known]
        created = [(self._object(t, site, f"torch.{name.split('::')[-1]}"), t) for t in new]
        self.t += 1
        if name in _COPIES:
            src = args[1] if name == "aten::copy_" and len(args) > 1 else args[0]
            dst_oid, dst = (overwritten[0] if name == "aten::copy_" and overwritten else
                            created[0] if created else (None, None))
            if dst is not None and isinstance(src, torch.Tensor):
                src_oid = self.ids.get(self._key(src))
                self.writer.write({"ev": "memcpy", "t": self.t, "dst": dst_oid, "src": src_oid,
                                   "size": int(dst.untyped_storage().nbytes()), "kind": _direction(src.device, dst.device),
                                   "stream": 0, "site": site})
                return out
        if overwritten and not writes and not created:
            for oid, tensor in overwritten:  # zero_, fill_, out=: a full write, not a use
                self.writer.write({"ev": "memset", "t": self.t, "obj": oid, "size": int(tensor.untyped_storage().nbytes()),
                                   "stream": 0, "site": site})
            if reads and name not in _OVERWRITE:  # `torch.add(a, b, out=c)` also reads a and b
                self.t += 1
                self.writer.write({"ev": "launch", "t": self.t, "kernel": name, "stream": 0, "reads": reads,
                                   "writes": [], "site": site})
            return out
        if name in _FILLING and created and not reads:
            for oid, tensor in created:
                self.writer.write({"ev": "memset", "t": self.t, "obj": oid, "size": int(tensor.untyped_storage().nbytes()),
                                   "stream": 0, "site": site})
            return out
        if name in _UNINITIALISED and not reads:
            return out
        self.writer.write({"ev": "launch", "t": self.t, "kernel": name, "stream": 0, "reads": reads,
                           "writes": writes + [oid for oid, _ in created] + [oid for oid, _ in overwritten],
                           "site": site})
        return out


class trace:
    """`with gpulint.trace("out.trace.jsonl"): ...` records the PyTorch ops of the block."""

    def __init__(self, path: str = "gpulint.trace.jsonl") -> None:
        self.path = path
        self.writer: TraceWriter | None = None
        self.mode: TorchCollector | None = None

    def __enter__(self) -> "trace":
        device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        self.writer = TraceWriter(self.path, collector="torch", argv=list(sys.argv), device=device,
                                  granularity=4, pid=os.getpid())
        self.mode = TorchCollector(self.writer)
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.mode is not None and self.writer is not None
        self.mode.__exit__(*exc)
        self.writer.close()
