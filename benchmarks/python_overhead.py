#!/usr/bin/env python3
"""Overhead of the PyTorch collector on small training loops (an MLP and a small CNN), natively
and under `gpulint.trace`, on the CPU and, when there is one, on the GPU, in one run.  Each
figure is the median of `--repeat` timed loops after a warm-up loop.  Target: <= 1.5x on the GPU.
A benchmark: it always exits 0.

    python benchmarks/python_overhead.py --repeat 3 --json out.json
"""
from __future__ import annotations

import argparse
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
            native = statistics.median(train(torch, model, batch, args.steps, device) for _ in range(args.repeat))
            Empty = empty_mode(torch)
            with Empty():
                train(torch, model, batch, 1, device)
            ops = Empty.count  # aten ops per step (forward, backward, optimiser)
            with Empty():
                floor = statistics.median(train(torch, model, batch, args.steps, device) for _ in range(args.repeat))
            # PyTorch's profiler recording every op's input shapes: a C++ RecordFunction observer
            # with inputs, the mechanism that could go below the dispatch mode's floor.
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True):
                observed = statistics.median(train(torch, model, batch, args.steps, device) for _ in range(args.repeat))
            # The collector as it ships (the C++ hook), and its fallback (the dispatch mode).
            traced, through_mode = [], []
            for i in range(args.repeat):
                with gpulint.trace(str(folder / f"{device}-{name}-{i}.jsonl")):
                    traced.append(train(torch, model, batch, args.steps, device))
            os.environ["GPULINT_TORCH_HOOK"] = "mode"
            for i in range(args.repeat):
                with gpulint.trace(str(folder / f"{device}-{name}-mode-{i}.jsonl")):
                    through_mode.append(train(torch, model, batch, args.steps, device))
            del os.environ["GPULINT_TORCH_HOOK"]
            mode_ratio = statistics.median(through_mode) / native
            # Where the hook's time goes: RecordFunction with inputs and outputs alone (stage 1),
            # everything but the Python stacks (stage 2).
            stages = {}
            for stage in (1, 2):
                os.environ["GPULINT_TORCH_HOOK_STAGE"] = str(stage)
                timed = []
                for i in range(args.repeat):
                    with gpulint.trace(str(folder / f"{device}-{name}-stage{stage}-{i}.jsonl")):
                        timed.append(train(torch, model, batch, args.steps, device))
                stages[stage] = statistics.median(timed) / native
            del os.environ["GPULINT_TORCH_HOOK_STAGE"]
            ratio = statistics.median(traced) / native
            events = sum(1 for _ in open(folder / f"{device}-{name}-0.jsonl"))
            per_op = lambda seconds: seconds / (args.steps * ops) * 1e6  # noqa: E731
            rows.append({"device": device, "model": name, "steps": args.steps, "ops_per_step": ops,
                         "native_s": round(native, 4), "empty_mode_s": round(floor, 4),
                         "traced_s": round(statistics.median(traced), 4), "slowdown": round(ratio, 2),
                         "empty_mode_slowdown": round(floor / native, 2),
                         "profiler_shapes_slowdown": round(observed / native, 2),
                         "dispatch_mode_collector_slowdown": round(mode_ratio, 2),
                         "hook_record_function_only_slowdown": round(stages[1], 2),
                         "hook_without_stacks_slowdown": round(stages[2], 2),
                         "native_us_per_op": round(per_op(native), 1),
                         "added_us_per_op": round(per_op(statistics.median(traced) - native), 1),
                         "events_per_loop": events})
            print(f"{device:<5} {name:<4} {args.steps} steps x {ops} ops: native {native:.3f}s ({per_op(native):.1f} us/op)"
                  f"  empty mode {floor / native:.2f}x  profiler {observed / native:.2f}x  dispatch-mode collector {mode_ratio:.2f}x  hook: RecordFunction {stages[1]:.2f}x, no stacks {stages[2]:.2f}x  traced {statistics.median(traced):.3f}s  {ratio:.2f}x"
                  f"  (+{per_op(statistics.median(traced) - native):.1f} us/op, {events} trace lines)", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "device": torch.cuda.get_device_name() if "cuda" in devices
                                         else os.uname().machine}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
