"""`gpulint run -- ./app args`: run an unmodified CUDA program under the injection library.

The program keeps its exit code, output and signals.  At the object level gpulint replaces
itself with the program (exec), so the program is the process the shell waits for, with the
terminal and environment it would have had plus `CUDA_INJECTION64_PATH` and the `GPULINT_*`
settings; the library says where it wrote the trace when the program ends.  The access levels
leave raw bitmaps to convert afterwards, so there the program runs as a child; one that dies of
a signal is reported as the shell does (128 + signal) and its trace is finished anyway.

Each process of a multi-process program writes its own trace: with a world size above one (MPI
ranks, torchrun workers) `<trace>.rank<R>`; otherwise the first process takes the name and the
others write `<trace>.<pid>`.  In a path given with `%p` / `%r` those become the pid / rank.

The library is loaded through `CUDA_INJECTION64_PATH`.  When that already names another tool, it
is loaded with `LD_PRELOAD` instead and initialises from its constructor (set GPULINT_INJECTION=
preload to choose that path).
"""
from __future__ import annotations

import glob
import os
import sys
import time
from pathlib import Path
from typing import NoReturn

from gpulint.dynamic.collectors.native import build as builder

LEVELS = ("object", "access", "full")


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


def program_environment(built: builder.Built, trace: str, level: str = "object", sample: int = 1,
                        kernels: str | None = None, granularity: int = 32) -> dict[str, str]:
    """The environment the program runs in: the user's, plus what loads and configures the collector."""
    env = dict(os.environ)
    other_tool = env.get("CUDA_INJECTION64_PATH")
    if os.environ.get("GPULINT_INJECTION") == "preload" or (other_tool and Path(other_tool).name != built.tool.name):
        if other_tool:
            print(f"gpulint: CUDA_INJECTION64_PATH already loads {other_tool}; loading the collector with LD_PRELOAD",
                  file=sys.stderr)
        env["LD_PRELOAD"] = " ".join(p for p in (str(built.tool), env.get("LD_PRELOAD")) if p)
        env["GPULINT_PRELOAD"] = "1"
    else:
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
    return env


def run(argv: list[str], trace: str, level: str = "object", sample: int = 1, kernels: str | None = None,
        granularity: int = 32) -> NoReturn:
    """Replace this process with the program, under the collector.  The collector says which
    traces it wrote when the program ends (GPULINT_ANNOUNCE)."""
    started = time.perf_counter()
    built = prepare()
    started = _phase("device check and build", started)
    env = program_environment(built, trace, level, sample, kernels, granularity)
    target = env["GPULINT_TRACE"]
    if "%" not in target:
        for old in _matching(target):
            # The first process of this run takes the name; a raw-bitmap file or sidecar left by
            # an earlier run must not be taken for this run's.
            for stale in (old, old + ".bits", old + ".npz"):
                Path(stale).unlink(missing_ok=True)
    # Nothing to do after the program (the raw bitmaps of the access and full levels move into
    # the sidecar when the trace is first read): become it, so its exit status, signals and wall
    # time are its own (a waiting Python process added 0.1-0.25 s to every run).
    env["GPULINT_ANNOUNCE"] = "1"
    _phase("starting the program", started)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(argv[0], argv, env)


def _matching(pattern: str) -> list[str]:
    """The traces a run wrote: the name itself, `<name>.rank<R>` of ranks and `<name>.<pid>` of
    later processes."""
    if "%" not in pattern:
        found = [pattern] if os.path.exists(pattern) else []
        more = glob.glob(glob.escape(pattern) + ".[0-9]*") + glob.glob(glob.escape(pattern) + ".rank[0-9]*")
        return found + sorted(p for p in more if not p.endswith((".npz", ".bits")))
    return sorted(p for p in glob.glob(pattern.replace("%p", "*").replace("%r", "*")) if not p.endswith((".npz", ".bits")))
