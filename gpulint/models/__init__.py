"""What framework APIs do to GPU memory, as tables: one row per API (gpulint/models/api.py says
what a row means), one module per framework: torch, cupy, numba, cuda_python, and Python's own
python_builtins.  The static Python frontend and the PyTorch collector both read them; they
import nothing of either.

The look-ups here are the only way in: `function` for a call by the qualified name its imports
resolve to, `member` for a method or attribute by name.
"""
from __future__ import annotations

from collections.abc import Iterable

from gpulint.models import cuda_python, cupy, host_libraries, numba, python_builtins, torch
from gpulint.models.api import Api

_TABLES = (torch, cupy, numba, cuda_python, python_builtins)


def _merged(tables: Iterable[dict[str, Api]]) -> dict[str, Api]:
    out: dict[str, Api] = {}
    for table in tables:
        for name, row in table.items():
            if out.setdefault(name, row) != row:
                raise ValueError(f"two models of `{name}` disagree: {out[name]} and {row}")
    return out


FUNCTIONS = _merged(t.FUNCTIONS for t in _TABLES)
MEMBERS = _merged(t.MEMBERS for t in _TABLES)
# Rows also matched by their last name under some module prefixes: last name -> rows.
_BY_LAST_NAME: dict[str, list[Api]] = {}
for _name, _row in FUNCTIONS.items():
    if _row.modules:
        _BY_LAST_NAME.setdefault(_name.rsplit(".", 1)[-1], []).append(_row)

# Functions under these modules compute device results from device arguments.
COMPUTING_MODULES = ("torch.", "cupy.")
# Functions under these modules change none of their arguments (`out=` aside).
READ_ONLY_MODULES = ("torch.", "cupy.", "numpy.", "numba.")
# What these modules make is an allocation of theirs, never a value derived from other objects.
ALLOCATING_MODULES = ("torch.", "cupy.", "numba.")
# Modules whose functions give host values (and whose values' methods do too).
HOST_MODULES = host_libraries.HOST_MODULES
NO_LAUNCH_PREFIXES = python_builtins.NO_LAUNCH_PREFIXES + cuda_python.NO_LAUNCH_PREFIXES + HOST_MODULES
CONTAINER_STORES = python_builtins.CONTAINER_STORES
# Context managers that select the current device (`with cupy.cuda.Device(i):`, `torch.cuda.device`),
# by the last name of what is called.
DEVICE_SELECTORS = frozenset({"Device", "device", "use_device", "gpus"})


def function(qual: str, last: str) -> Api | None:
    """The row of a call of `qual` (`torch.zeros`; "" when the callee is no name) whose last
    name is `last`."""
    row = FUNCTIONS.get(qual)
    if row is None:
        row = next((r for r in _BY_LAST_NAME.get(last, ()) if qual.startswith(r.modules)), None)
    return row if row is not None else torch.convention(qual, last)


def member(name: str) -> Api | None:
    """The row of a method or attribute `name`, on whatever object."""
    return MEMBERS.get(name)


def launches_nothing(qual: str, method: str) -> bool:
    """A call that never launches GPU work: `print(...)`, `time.time()`, `stream.synchronize()`."""
    called, method_row = FUNCTIONS.get(qual), MEMBERS.get(method)
    return ((called is not None and not called.launches) or (method_row is not None and not method_row.launches)
            or qual.startswith(NO_LAUNCH_PREFIXES))
