"""Find what the native collector needs, and build it once per toolkit and GPU architecture.

The injection library (`gpulint_tool.cpp`) and the device patch (`gpulint_patch.cu`) ship as
sources inside the package.  They are compiled with nvcc against the Sanitizer API headers and
library of the CUDA toolkit (`<toolkit>/compute-sanitizer`) or of the `nvidia-cuda-sanitizer-api`
wheel, into `~/.cache/gpulint/native/<key>/`, where the key covers the toolkit version, the
compute capability and the sources' hash.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path(__file__).resolve().parent
TOOL_SOURCES = ("gpulint_tool.cpp", "gpulint_access.inc", "gpulint_binary.h", "gpulint_layout.h", "gpulint_patch.cu")


class Unavailable(Exception):
    """Something the native collector needs is missing; the message says what and how to get it."""


@dataclass(frozen=True)
class Sanitizer:
    include: Path
    lib: Path  # the folder with libsanitizer-public.so


@dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    version: str  # "13.0"
    sanitizer: Sanitizer


@dataclass(frozen=True)
class Device:
    name: str
    compute_capability: tuple[int, int]
    driver_version: int  # e.g. 13000


@dataclass(frozen=True)
class Built:
    tool: Path  # libgpulint_tool.so
    patch: Path  # gpulint_patch.fatbin
    sanitizer_lib: Path


def find_nvcc() -> Path:
    found = shutil.which("nvcc")
    candidates = [found] if found else []
    candidates += [os.environ.get("CUDA_HOME", "") + "/bin/nvcc", "/usr/local/cuda/bin/nvcc"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise Unavailable("gpulint run needs nvcc (the CUDA toolkit) to build its injection library, and none was found "
                      "on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin. Install the CUDA toolkit (12.4 or newer) "
                      "or put its bin folder on PATH.")


def toolkit_version(nvcc: Path) -> str:
    """`nvcc --version`'s release, cached per nvcc binary (running nvcc is part of every traced
    program's start-up otherwise)."""
    try:
        stat = nvcc.resolve().stat()
        key = hashlib.sha256(f"{nvcc.resolve()}\0{stat.st_mtime_ns}\0{stat.st_size}".encode()).hexdigest()[:16]
        cached = cache_dir() / f"nvcc-{key}.txt"
        return cached.read_text().strip() or "unknown"
    except OSError:
        pass
    import subprocess  # only when the answer is not cached (as for the two below)

    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout
    match = re.search(r"release (\d+\.\d+)", out)
    version = match.group(1) if match else "unknown"
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(version)
    except (OSError, NameError):
        pass
    return version


def find_sanitizer(nvcc: Path) -> Sanitizer:
    """The Sanitizer API headers and library: the toolkit's, else the PyPI wheel's."""
    roots = [nvcc.resolve().parent.parent / "compute-sanitizer", Path("/usr/local/cuda/compute-sanitizer")]
    if os.environ.get("CUDA_HOME"):
        roots.insert(0, Path(os.environ["CUDA_HOME"]) / "compute-sanitizer")
    for root in roots:
        if (root / "include" / "sanitizer.h").is_file() and (root / "libsanitizer-public.so").is_file():
            return Sanitizer(root / "include", root)
    for entry in sys.path:  # nvidia-cuda-sanitizer-api: nvidia/cu13/{include,lib}
        for base in sorted(Path(entry).glob("nvidia/cu*"), reverse=True) if entry else []:
            if (base / "include" / "sanitizer.h").is_file() and (base / "lib" / "libsanitizer-public.so").is_file():
                return Sanitizer(base / "include", base / "lib")
    raise Unavailable("gpulint run needs the CUDA Sanitizer API (sanitizer.h and libsanitizer-public.so). They come "
                      "with the CUDA toolkit in <toolkit>/compute-sanitizer, or from PyPI: pip install "
                      "nvidia-cuda-sanitizer-api (the version matching your toolkit).")


def toolchain() -> Toolchain:
    nvcc = find_nvcc()
    return Toolchain(nvcc, toolkit_version(nvcc), find_sanitizer(nvcc))


def _machine_key() -> str | None:
    """What identifies this machine's GPUs until the next boot or driver change: the boot id, the
    driver's version text and CUDA_VISIBLE_DEVICES.  None where the kernel does not say."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        driver = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return hashlib.sha256(f"{boot}\0{driver}\0{visible}".encode()).hexdigest()[:16]


def detect_device() -> Device:
    """The first GPU, detected with cuda-python once per boot and driver (the answer is cached:
    initialising CUDA costs a traced program ~0.15 s of start-up every time otherwise)."""
    key = _machine_key()
    cached = cache_dir() / f"device-{key}.json" if key else None
    if cached is not None and cached.is_file():
        try:
            data = json.loads(cached.read_text())
            return Device(data["name"], tuple(data["compute_capability"]), int(data["driver_version"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    device = _detect_device()
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps({"name": device.name, "compute_capability": list(device.compute_capability),
                                          "driver_version": device.driver_version}))
        except OSError:
            pass
    return device


def _detect_device() -> Device:
    """The first GPU, through cuda-python (`cuda.bindings`); nvidia-smi when that is not installed."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return _device_from_nvidia_smi()
    try:
        (err,) = cu.cuInit(0)
    except Exception as exc:  # no libcuda at all: cuda-python raises rather than returning an error
        raise Unavailable("gpulint run needs an NVIDIA GPU and driver, and no NVIDIA driver library (libcuda) was "
                          f"found on this machine ({type(exc).__name__}). Static analysis (gpulint check) needs "
                          "neither.") from None
    if err != cu.CUresult.CUDA_SUCCESS:
        raise Unavailable(f"gpulint run needs an NVIDIA GPU and driver; cuInit failed ({err.name}). "
                          "Static analysis (gpulint check) needs neither.")
    err, count = cu.cuDeviceGetCount()
    if err != cu.CUresult.CUDA_SUCCESS or count < 1:
        raise Unavailable("gpulint run needs an NVIDIA GPU, and the driver sees none.")
    err, device = cu.cuDeviceGet(0)
    err, raw = cu.cuDeviceGetName(256, device)
    name = raw.split(b"\0", 1)[0].decode(errors="replace")
    attr = cu.CUdevice_attribute
    _, major = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    _, minor = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    _, version = cu.cuDriverGetVersion()
    return Device(name, (major, minor), version)


def _device_from_nvidia_smi() -> Device:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise Unavailable("gpulint run needs an NVIDIA GPU and driver: neither cuda-python nor nvidia-smi is "
                          "available to find one (pip install cuda-python). Static analysis needs neither.")
    import subprocess

    out = subprocess.run([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True)
    line = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < 3:
        raise Unavailable("gpulint run needs an NVIDIA GPU, and nvidia-smi lists none.")
    major, minor = (int(x) for x in parts[1].split("."))
    driver = int(float(parts[2].split(".")[0]) * 1000)
    return Device(parts[0], (major, minor), driver)


def cache_root() -> Path:
    """gpulint's folder for what it builds (`$XDG_CACHE_HOME/gpulint`, else `~/.cache/gpulint`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpulint"


def cache_dir() -> Path:
    return cache_root() / "native"


def source_hash() -> str:
    digest = hashlib.sha256()
    for name in TOOL_SOURCES:
        digest.update((SOURCES / name).read_bytes())
    return digest.hexdigest()[:12]


def build(chain: Toolchain, arch: tuple[int, int], force: bool = False) -> Built:
    """Compile (once) the injection library and the device patch for `arch`."""
    sm = f"sm_{arch[0]}{arch[1]}"
    folder = cache_dir() / f"cuda{chain.version}-{sm}-{source_hash()}"
    tool, patch = folder / "libgpulint_tool.so", folder / "gpulint_patch.fatbin"
    if tool.is_file() and patch.is_file() and not force:
        return Built(tool, patch, chain.sanitizer.lib)
    folder.mkdir(parents=True, exist_ok=True)
    include = ["-I", str(chain.sanitizer.include), "-I", str(SOURCES)]
    commands = [
        [str(chain.nvcc), "-std=c++17", "-O2", "-Xcompiler", "-fPIC", "-shared", *include,
         "-o", str(tool) + ".tmp", str(SOURCES / "gpulint_tool.cpp"), "-L", str(chain.sanitizer.lib),
         "-lsanitizer-public", "-ldl", "-Xlinker", "-rpath", "-Xlinker", str(chain.sanitizer.lib)],
        [str(chain.nvcc), "--fatbin", "--keep-device-functions", "-Xptxas", "--compile-as-tools-patch",
         f"-arch={sm}", *include, "-o", str(patch) + ".tmp", str(SOURCES / "gpulint_patch.cu")],
    ]
    import subprocess

    for command in commands:
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise Unavailable(f"building gpulint's native collector failed ({' '.join(command[:3])} ...):\n"
                              f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    os.replace(str(tool) + ".tmp", tool)
    os.replace(str(patch) + ".tmp", patch)
    return Built(tool, patch, chain.sanitizer.lib)
