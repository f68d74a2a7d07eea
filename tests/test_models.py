"""The models tables (gpulint/models/): what the static frontend does with a row, and that the
`aten::` ops a PyTorch row names are the ops PyTorch runs for it."""
from __future__ import annotations

import textwrap

import pytest

from gpulint.history import Access, Op
from gpulint.models import torch as torch_models
from gpulint.models.api import Role
from gpulint.static.python import analyse


def histories(source: str) -> dict:
    unit, _ = analyse("t.py", textwrap.dedent(source).encode())
    return {h.name: h for h in unit.histories}


@pytest.mark.parametrize("call", ["torch.randperm(n, device=dev)", "torch.scalar_tensor(3.0, device=dev)",
                                  "torch.randint_like(x, 5)", "torch.zeros(n, device=dev)"])
def test_initialising_factories_write_what_they_make(call: str) -> None:
    made = histories(f"""\
        import torch
        def f(n, dev):
            x = torch.ones(n, device=dev)
            y = {call}
            return y
        """)["y"]
    assert [(t.event.op, t.use) for t in made.touches][0] == (Op.MEMSET, False)


def test_new_empty_strided_is_an_uninitialised_allocation_on_the_receivers_device() -> None:
    made = histories("""\
        import torch
        def f(x, dev):
            x = torch.ones(4, device=dev)
            y = x.new_empty_strided((2, 2), (2, 1))
            return y
        """)["y"]
    assert made.alloc.api == ".new_empty_strided()" and made.alloc.detail == ""  # an allocation, not derived
    assert [t.event.api for t in made.touches] == ["return"]  # no fill: uninitialised


@pytest.mark.parametrize("draw", ["normal_()", "uniform_()", "bernoulli_(0.5)", "cauchy_()"])
def test_in_place_draws_overwrite_without_reading(draw: str) -> None:
    made = histories(f"""\
        import torch
        def f(n, dev):
            w = torch.empty(n, device=dev)
            w.{draw}
            return w
        """)["w"]
    first = made.touches[0]
    assert first.event.op is Op.MEMSET and not first.use and first.access == Access.WRITE | Access.FULL


# ---------------------------------------------------------------------- the aten column, against PyTorch
def test_every_aten_op_named_exists() -> None:
    torch = pytest.importorskip("torch")
    rows = {**torch_models.FUNCTIONS, **torch_models.MEMBERS}
    missing = [(name, op) for name, row in rows.items() for op in row.aten
               if not torch._C._jit_get_schemas_for_operator(op)]
    assert not missing


def test_factories_run_the_aten_op_their_row_names() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(func._schema.name)
            return func(*args, **(kwargs or {}))

    x = torch.ones(4, 3)
    # One call per factory row: a shape, a fill value or data where the API needs them.
    arguments = {"full": ((4,), 2.0), "full_like": (x, 2.0), "new_full": ((4,), 2.0), "randint": (0, 5, (4,)),
                 "randint_like": (x, 5), "linspace": (0, 1, 4), "logspace": (0, 1, 4), "normal": (0.0, 1.0, (4,)),
                 "tensor": ([1.0],), "as_tensor": ([1.0],), "new_tensor": ([1.0],), "scalar_tensor": (3.0,),
                 "empty_strided": ((2, 2), (2, 1)), "new_empty_strided": ((2, 2), (2, 1))}
    checked = 0
    for table, call in ((torch_models.FUNCTIONS, lambda name: getattr(torch, name.removeprefix("torch."))),
                        (torch_models.MEMBERS, lambda name: getattr(x, name))):
        for name, row in table.items():
            if row.role is not Role.FACTORY:
                continue
            short = name.rsplit(".", 1)[-1]
            args = arguments.get(short, (x,) if short.endswith("_like") else (4,))
            mode = Ops()
            with mode:
                call(name)(*args)
            assert list(row.aten) == mode.seen, name
            checked += 1
    assert checked == 30  # every factory row
