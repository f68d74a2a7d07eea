"""`gpulint run -- ./app args`: run an unmodified CUDA program under the injection library.

The program keeps its exit code, output and signals: it runs as a child with the terminal and
environment it would have had, plus `CUDA_INJECTION64_PATH` (and the `GPULINT_*` settings).  A
program that dies of a signal is reported as the shell does (128 + signal) and its trace is
finished anyway.  Each process of a multi-process program (MPI ranks, torchrun workers) writes
its own trace: the path's `%p` is the pid and `%r` the rank.
"""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gpulint.dynamic.collectors.native import build as builder

LEVELS = ("object", "access", "full")


@dataclass
class Outcome:
    exit_code: int
    traces: list[Path]


def prepare() -> builder.Built:
    """Check the machine and build the collector; `builder.Unavailable` says what is missing."""
    device = builder.detect_device()  # before anything is built: no GPU, no point
    if device.driver_version and device.driver_version < 12040:
        raise builder.Unavailable(f"gpulint run needs an NVIDIA driver for CUDA 12.4 or newer; this one supports "
                                  f"{device.driver_version // 1000}.{device.driver_version % 1000 // 10}.")
    chain = builder.toolchain()
    return builder.build(chain, device.compute_capability)


def _phase(name: str, started: float) -> float:
    """With GPULINT_TIMING=1, say how long each phase of `gpulint run` took (stderr)."""
    now = time.perf_counter()
    if os.environ.get("GPULINT_TIMING"):
        print(f"gpulint: {name} {now - started:.3f} s", file=sys.stderr)
    return now


def run(argv: list[str], trace: str, level: str = "object", sample: int = 1, kernels: str | None = None,
        granularity: int = 32) -> Outcome:
    started = time.perf_counter()
    built = prepare()
    started = _phase("device check and build", started)
    env = dict(os.environ)
    env["CUDA_INJECTION64_PATH"] = str(built.tool)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(built.sanitizer_lib), env.get("LD_LIBRARY_PATH")) if p)
    env["GPULINT_TRACE"] = str(Path(trace).resolve()) if "%" not in trace else os.path.abspath(trace)
    env["GPULINT_LEVEL"] = level
    env["GPULINT_GRANULARITY"] = str(granularity)
    env["GPULINT_SAMPLE"] = str(max(1, sample))
    if level != "object":
        env["GPULINT_PATCH"] = str(built.patch)
    if kernels:
        env["GPULINT_KERNELS"] = kernels
    target = env["GPULINT_TRACE"]
    if "%" not in target:
        for old in [target, *glob.glob(glob.escape(target) + ".[0-9]*")]:
            Path(old).unlink(missing_ok=True)  # the first process of this run takes the name
    before = set(_matching(target))
    # The child gets the terminal's signals itself (same process group); gpulint only waits.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.run(argv, env=env)
    finally:
        signal.signal(signal.SIGINT, previous)
    started = _phase("program", started)
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    traces = [Path(p) for p in _matching(target) if p not in before]
    for path in traces:
        # Only access-level runs leave raw bitmap words to convert; an object-level trace is
        # complete as written (its stacks resolve when analysed), so nothing delays the exit.
        if path.is_file() and Path(str(path) + ".bits").is_file():
            from gpulint.dynamic.collectors.native.finalize import finalize

            finalize(path)
    _phase("finishing the trace", started)
    return Outcome(code, [p for p in traces if p.is_file()])


def _matching(pattern: str) -> list[str]:
    """The traces a run wrote: the name itself and `<name>.<pid>` of later processes."""
    if "%" not in pattern:
        found = [pattern] if os.path.exists(pattern) else []
        return found + sorted(p for p in glob.glob(glob.escape(pattern) + ".[0-9]*") if not p.endswith((".npz", ".bits")))
    return sorted(p for p in glob.glob(pattern.replace("%p", "*").replace("%r", "*")) if not p.endswith((".npz", ".bits")))
