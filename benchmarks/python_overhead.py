#!/usr/bin/env python3
"""Overhead of the PyTorch collector on small training loops (an MLP and a small CNN), natively
and under `gpulint.trace`, on the CPU and, when there is one, on the GPU, in one run.  Each
figure is the median of `--repeat` timed loops after a warm-up loop; the configurations take
turns within each round, in an order that rotates from round to round.  Target: <= 1.5x on the GPU.
A benchmark: it always exits 0.

    python benchmarks/python_overhead.py --repeat 9 --steps 100 --json out.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def models(torch):
    nn = torch.nn
    mlp = (lambda: nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)),
           lambda device: (torch.randn(256, 784, device=device), torch.randint(0, 10, (256,), device=device)))
    cnn = (lambda: nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(64 * 8 * 8, 10)),
           lambda device: (torch.randn(64, 3, 32, 32, device=device), torch.randint(0, 10, (64,), device=device)))
    return {"mlp": mlp, "cnn": cnn}


def train(torch, model, batch, steps: int, device: str) -> float:
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = batch
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        optimiser.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimiser.step()
    float(loss.detach())
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started


def empty_mode(torch):
    """A dispatch mode that does nothing: the floor for any collector built on one (DESIGN §6)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Empty(TorchDispatchMode):
        count = 0

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # as gpulint's collector: no `_disable_dynamo` wrapper per op

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Empty.count += 1
            return func(*args, **(kwargs or {}))

    return Empty


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import torch

    import gpulint
    from gpulint.dynamic.collectors import torch_native

    print(f"gpulint's PyTorch hook: {torch_native.build()}", flush=True)  # built before any timing
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="gpulint-pyoverhead-"))
    for device in devices:
        for name, (make, data) in models(torch).items():
            torch.manual_seed(0)
            model, batch = make().to(device), data(device)
            train(torch, model, batch, 2, device)  # warm-up: kernels, allocator, autograd
            Empty = empty_mode(torch)
            with Empty():
                train(torch, model, batch, 1, device)
            ops = Empty.count  # aten ops per step (forward, backward, optimiser)

            def traced_with(env: dict, label: str):
                """`gpulint.trace` with these environment settings (GPULINT_TORCH_HOOK...)."""
                @contextlib.contextmanager
                def context(i: int):
                    saved = {k: os.environ.get(k) for k in env}
                    os.environ.update(env)
                    try:
                        with gpulint.trace(str(folder / f"{device}-{name}-{label}-{i}.jsonl")):
                            yield
                    finally:
                        for k, v in saved.items():
                            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
                return context

            # Every configuration once per round, rounds repeated: drift in the machine's speed
            # (another tenant, clocks) then touches all of them alike.
            configurations = {
                "native": lambda i: contextlib.nullcontext(),
                "empty_mode": lambda i: Empty(),
                # PyTorch's profiler recording every op's input shapes: a C++ RecordFunction
                # observer with inputs, the mechanism the hook is built on.
                "profiler_shapes": lambda i: torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True),
                "traced": traced_with({}, "traced"),  # the collector as it ships: the C++ hook
                "dispatch_mode_collector": traced_with({"GPULINT_TORCH_HOOK": "mode"}, "mode"),  # its fallback
                # where the hook's time goes: RecordFunction with inputs and outputs alone, then
                # everything but the Python stacks
                "hook_record_function_only": traced_with({"GPULINT_TORCH_HOOK_STAGE": "1"}, "stage1"),
                "hook_without_stacks": traced_with({"GPULINT_TORCH_HOOK_STAGE": "2"}, "stage2"),
            }
            times: dict[str, list[float]] = {label: [] for label in configurations}
            labels = list(configurations)
            for i in range(args.repeat):
                # Each round starts one configuration later: what one leaves behind (the
                # profiler's threads, the dispatch mode's garbage) slows a different one each time.
                for label in labels[i % len(labels):] + labels[:i % len(labels)]:
                    with configurations[label](i):
                        times[label].append(train(torch, model, batch, args.steps, device))
            median = {label: statistics.median(values) for label, values in times.items()}
            native = median["native"]
            ratio = median["traced"] / native
            slowdowns = {label: round(value / native, 2) for label, value in median.items() if label != "native"}
            events = sum(1 for _ in open(folder / f"{device}-{name}-traced-0.jsonl"))
            per_op = lambda seconds: seconds / (args.steps * ops) * 1e6  # noqa: E731
            rows.append({"device": device, "model": name, "steps": args.steps, "ops_per_step": ops,
                         "native_s": round(native, 4), "traced_s": round(median["traced"], 4),
                         "slowdown": round(ratio, 2), **{f"{k}_slowdown": v for k, v in slowdowns.items()},
                         "native_us_per_op": round(per_op(native), 1),
                         "added_us_per_op": round(per_op(median["traced"] - native), 1),
                         "events_per_loop": events})
            print(f"{device:<5} {name:<4} {args.steps} steps x {ops} ops: native {native:.4f}s ({per_op(native):.1f} us/op)"
                  f"  traced {ratio:.2f}x (+{per_op(median['traced'] - native):.1f} us/op, {events} trace lines); "
                  + ", ".join(f"{k} {v:.2f}x" for k, v in slowdowns.items() if k != "traced"), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "device": torch.cuda.get_device_name() if "cuda" in devices
                                         else os.uname().machine}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
