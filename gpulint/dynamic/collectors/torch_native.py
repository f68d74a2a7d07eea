"""The PyTorch collector's C++ hook (`torch_hook/gpulint_torch_hook.cpp`): built once per
PyTorch and Python version with the system's C++ compiler against PyTorch's own headers, then
loaded into the program.  It records the ops whose tensors are whole storages and hands the
others to `OpRecorder` (see the C++ file for what and why).  `install`, the PyTorch entry of a
tracing session, picks it, or torch_collector.py's dispatch mode where it cannot be built.

The build goes to `~/.cache/gpulint/torch/<key>/` (the key covers PyTorch's version and ABI,
Python's version and the sources' hash) through a temporary name, so concurrent runs never load
a half-written library.  `GPULINT_TORCH_HOOK=mode` skips it (the dispatch mode records every op).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from gpulint.dynamic.collectors import recorder as _recorder
from gpulint.dynamic.collectors.native.build import cache_root
from gpulint.dynamic.collectors.torch_collector import ARG_OVERWRITE, ModeInstalled, OpRecorder, flush_recorder, plan_of
from gpulint.models.torch import ATEN_COPIES, ATEN_FILLS, ATEN_TO_HOST, ATEN_UNINITIALISED

HOOK_FOLDER = Path(__file__).resolve().parent / "torch_hook"
# Compiled together; python_frames.cpp alone sees the interpreter's internal frame layout.
SOURCES = tuple(HOOK_FOLDER / name for name in ("gpulint_torch_hook.cpp", "python_frames.cpp", "python_frames.h"))
# What the hook hands to Python whatever the views: copies, index ops (and ops with out=).
_IN_PYTHON = ATEN_COPIES | ATEN_TO_HOST


class Unavailable(Exception):
    """The hook cannot be built or loaded here; the message says why."""


def _key() -> str:
    digest = hashlib.sha256()
    for source in SOURCES:
        digest.update(source.read_bytes())
    digest.update(f"{torch.__version__} {torch._C._GLIBCXX_USE_CXX11_ABI} {sys.version}".encode())
    return f"torch{torch.__version__.split('+')[0]}-py{sys.version_info[0]}{sys.version_info[1]}-" \
           f"{digest.hexdigest()[:12]}"


def build(force: bool = False) -> Path:
    """The compiled hook, built now if it is not in the cache."""
    folder = cache_root() / "torch" / _key()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    library = folder / f"gpulint_torch_hook{suffix}"
    if library.is_file() and not force:
        return library
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if compiler is None:
        raise Unavailable("no C++ compiler (g++, c++ or clang++; or set CXX) to build gpulint's PyTorch hook")
    root = Path(torch.__file__).resolve().parent
    include = [root / "include", root / "include" / "torch" / "csrc" / "api" / "include",
               Path(sysconfig.get_paths()["include"])]
    if not (include[0] / "ATen" / "record_function.h").is_file():
        raise Unavailable(f"this PyTorch has no C++ headers ({include[0]})")
    folder.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkstemp(dir=folder, prefix=".build-", suffix=suffix)[1])
    command = [compiler, "-O2", "-DNDEBUG", "-std=c++20", "-shared", "-fPIC", "-w",
               f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
               *(f"-I{path}" for path in include),
               *(str(source) for source in SOURCES if source.suffix == ".cpp"), "-o", str(temp), f"-L{root / 'lib'}",
               "-lc10", "-ltorch_cpu", "-ltorch_python", f"-Wl,-rpath,{root / 'lib'}"]
    started = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise Unavailable(f"cannot run the C++ compiler {compiler}: {exc}") from exc
    if proc.returncode != 0:
        temp.unlink(missing_ok=True)
        raise Unavailable(f"building gpulint's PyTorch hook failed ({compiler}):\n"
                          f"{(proc.stderr or proc.stdout).strip()[-1500:]}")
    os.replace(temp, library)
    (folder / "build.json").write_text(json.dumps({"command": command, "seconds": round(time.monotonic() - started, 1)}))
    return library


def load() -> Any:
    library = build()
    spec = importlib.util.spec_from_file_location("gpulint_torch_hook", library)
    if spec is None or spec.loader is None:
        raise Unavailable(f"cannot load {library}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise Unavailable(f"cannot load {library}: {exc}") from exc
    return module


def _decomposed(qualified: str) -> bool:
    """CompositeImplicitAutograd turns the op into others before any backend sees it (`linear`
    into `t` and `addmm`): a dispatch mode never sees it, and neither does the hook."""
    try:
        table = torch._C._dispatch_dump_table(qualified)
    except RuntimeError:
        return False
    for line in table.splitlines():
        if line.startswith("AutogradCPU:"):
            return "[math kernel]" in line
    return False


def native_plan(name: str, overload: str) -> tuple:
    """What the hook does with an op overload: (kind, name, api, ((position, role), ...), plan).
    Kinds: 0 not recorded (decomposed), 1 a view, 2 recorded by the hook when every tensor is a
    whole storage, 3 always handed to Python, 4 and 5 factories that fill what they make or
    leave it uninitialised (recorded by the hook when whole, as OpRecorder.record would)."""
    qualified = f"{name}.{overload}" if overload else name
    if _decomposed(qualified):
        return (0, name, "", (), None)
    plan = plan_of(torch._C._get_schema(name, overload))
    if plan.view:
        kind = 1
    elif plan.name in _IN_PYTHON or plan.indexed or any(role == ARG_OVERWRITE for _, _, role in plan.tensors):
        kind = 3
    elif plan.name in ATEN_FILLS:
        kind = 4
    elif plan.name in ATEN_UNINITIALISED:
        kind = 5
    else:
        kind = 2
    return (kind, plan.name, plan.api, tuple((position, role) for position, _, role in plan.tensors), plan)


class NativeInstalled:
    """The hook installed for one session."""

    def __init__(self, recorder: _recorder.Recorder) -> None:
        self.hook = load()
        self.recorder = recorder
        self.ops = OpRecorder(recorder, self.hook)
        recorder.writer.attach(self.hook)
        # GPULINT_TORCH_HOOK_STAGE: the overhead benchmark's breakdown (1: RecordFunction only,
        # 2: no Python stacks); traces made so are incomplete.
        self.hook.install(native_plan, self._op, self._periodic, _recorder.frame_kind, _recorder.encode_site, recorder.t,
                          recorder.next_id, int(os.environ.get("GPULINT_TORCH_HOOK_STAGE", "0")))
        recorder.share_clock(self.hook.tick, self.hook.now, self.hook.new_object)
        recorder.launch_owners.append(self.hook.inside_op)
        self.empty_cache = flush_recorder(self.ops)
        torch.cuda.empty_cache = torch.cuda.memory.empty_cache = self.empty_cache

    def _op(self, plan: Any, args: list, outputs: list, site: str) -> None:
        with self.ops.lock:
            self.ops.record(plan, args, {}, outputs, site)

    def _periodic(self) -> None:
        """Every 50 ms: frees nobody reported, the pool's state, the file."""
        with self.ops.lock:
            self.hook.sweep()
            if torch.cuda.is_initialized():
                self.ops.pool_state(force=True)
            self.recorder.writer.flush()

    def uninstall(self) -> None:
        self.hook.uninstall()
        self.recorder.launch_owners.remove(self.hook.inside_op)
        torch.cuda.empty_cache = torch.cuda.memory.empty_cache = self.empty_cache.__wrapped__
        if torch.cuda.is_initialized():
            self.ops.pool_state(force=True)
        self.recorder.writer.attach(None)
        self.ops.write_accesses()


def install(recorder: _recorder.Recorder, module: Any = None) -> Any:
    """Start recording the PyTorch ops of this thread (and of the autograd threads it starts):
    through the C++ hook, or through a dispatch mode where it cannot be built (said in a note)."""
    if os.environ.get("GPULINT_TORCH_HOOK", "native") != "mode":
        try:
            return NativeInstalled(recorder)
        except Unavailable as exc:
            recorder.notes.append(f"PyTorch ops were recorded through a dispatch mode, about twice as slow on a "
                                  f"GPU loop: {exc}")
    return ModeInstalled(recorder)
