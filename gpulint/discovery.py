"""Which files a run checks, how each is read, and how it is named in reports.

Only regular files are opened; a file that cannot be read or is too large says why (the engine
turns that into GL900), and the run goes on."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from gpulint.config import Resolver, Settings
from gpulint.gitignore import GitIgnore
from gpulint.sourcetext import WORD_BYTES

CUDA_SUFFIXES = {".cu", ".cuh"}
CXX_SUFFIXES = {".c", ".cpp", ".cc", ".cxx", ".c++", ".h", ".hpp", ".hh", ".hxx"}
PYTHON_SUFFIXES = {".py", ".pyi"}
# A Python file is GPU code when it mentions one of the frameworks gpulint understands.
_PYTHON_MARKERS = re.compile(rb"\b(torch|cupy|numba|cuda)\b")
SKIPPED_DIRS = {"build", "_build", "dist", "node_modules", "__pycache__", "site-packages", "venv", "CMakeFiles"}
# A C/C++ file is CUDA code when it launches kernels (`<<<`, `__global__`) or calls the runtime/driver
# API (`cudaMalloc(`, `cuInit(` at the start of a word: see `uses_cuda`).
_CUDA_CALL = re.compile(rb"cu(?:da)?[A-Z][A-Za-z0-9_]*\s*\(")


def resolver_of(settings: "Settings | Resolver") -> Resolver:
    return settings if isinstance(settings, Resolver) else Resolver.of(settings)


def _not_regular(path: Path) -> str | None:
    """Why `path` is not a file gpulint may open, or None.  Only regular files are read: opening a
    FIFO blocks until a writer comes (forever, in CI), and a device such as /dev/zero never ends."""
    try:
        mode = path.stat().st_mode  # follows symlinks: a link to /dev/zero is a device
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return f"{kind}, not a regular file; skipped"


def _special_file(path: Path) -> str | None:
    """Why discovery skips `path` (a FIFO, socket or device), or None: a file that cannot even be
    stat'ed (a dangling symlink) is kept, to be reported as unreadable (GL900)."""
    try:
        path.stat()
    except OSError:
        return None
    return _not_regular(path)


def discover(paths: list[str], settings: "Settings | Resolver") -> tuple[list[Path], list[str], list[str]]:
    """Files to check, in a stable order; diagnostics for files skipped inside folders; errors for
    paths named on the command line that cannot be checked (missing, a FIFO, a device: the run
    exits 2, since a typo must not pass as a clean run).  Each folder's `exclude`, `extend-include`
    and `respect-gitignore` come from the configuration nearest to it; files named on the command
    line are always checked, unless `force-exclude` applies the excludes to them too."""
    resolver = resolver_of(settings)
    files: list[Path] = []
    diagnostics: list[str] = []
    errors: list[str] = []
    seen: set[Path] = set()
    git = GitIgnore(named=[Path(raw) for raw in paths if not os.path.isdir(raw)])

    def excluded(path: Path, here: Settings, is_dir: bool = False) -> bool:
        return here.matches(path, here.exclude) or (here.respect_gitignore and git.ignored(path, is_dir))

    for raw in paths:
        root = Path(raw)
        if not root.exists() and not root.is_symlink():
            errors.append(f"{raw}: no such file or directory")
            continue
        if not root.is_dir():
            why = _special_file(root)
            named = resolver.for_path(root)
            if why is not None:
                errors.append(f"{raw}: {why}")
            elif root not in seen and not (named.force_exclude and excluded(root, named)):
                seen.add(root)
                files.append(root)
            continue
        for folder, dirnames, filenames in os.walk(root):
            base = Path(folder)
            here = resolver.for_dir(base)
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d not in SKIPPED_DIRS and not d.startswith("cmake-build")
                and not excluded(base / d, here, is_dir=True)
            )
            for name in sorted(filenames):
                candidate = base / name
                suffix = candidate.suffix.lower()
                if suffix not in CUDA_SUFFIXES and suffix not in CXX_SUFFIXES and suffix not in PYTHON_SUFFIXES \
                        and not (here.extend_include and here.matches(candidate, here.extend_include)):
                    continue
                if name.startswith(".") or candidate in seen or excluded(candidate, here):
                    continue
                why = _special_file(candidate)
                if why is not None:
                    diagnostics.append(f"{display_path(candidate)}: {why}")
                    continue
                seen.add(candidate)
                files.append(candidate)
    return files, diagnostics, errors


def display_path(path: Path) -> str:
    """The path relative to the working folder when it is under it, else as given (POSIX slashes).
    abspath, not resolve: a symlink is reported under the name the user gave it.  String work, not
    pathlib's relative_to (a run names each file twice: 8 us a call that way, 2 us this way)."""
    absolute = os.path.abspath(path)
    cwd = os.path.abspath(os.getcwd())
    if absolute == cwd:
        return "."
    prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
    if absolute.startswith(prefix):
        return Path(absolute[len(prefix):]).as_posix()
    return path.as_posix()


def read_source(path: Path, settings: Settings) -> tuple[bytes | None, str | None]:
    """The file's bytes and, when it cannot be analysed, why (bytes may still be there to look at)."""
    why = _not_regular(path)
    if why is not None:
        return None, why
    limit = settings.max_file_size
    try:
        # At most one byte past the limit, whatever stat said: /proc files report size 0, and a
        # file may grow between the stat and the read.
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    if len(data) > limit:
        size = max(len(data), _size(path))
        return None, f"file is too large ({size} bytes; max-file-size is {limit})"
    if not data.strip():
        return data, "file is empty"
    if b"\x00" in data[:8192]:
        return data, "file is binary"
    return data, None


def readable(data: bytes) -> tuple[bytes, str | None]:
    """Bytes every frontend can read, and a note when they had to change.  A file that is not UTF-8
    (a Latin-1 comment, a Windows-1252 string) is read with each undecodable byte as `?`: same
    length, so every offset, line and column still points into the file as it is."""
    try:
        data.decode("utf-8")
        return data, None
    except UnicodeDecodeError as exc:
        first = exc.start
    text = data.decode("utf-8", errors="replace")
    if len(text.encode("utf-8")) == len(data) + 2 * text.count("\ufffd"):  # each bad byte became one U+FFFD
        fixed = text.replace("\ufffd", "?").encode("utf-8")
    else:  # a bad sequence of several bytes became one U+FFFD: map byte by byte instead
        fixed = bytes(b if b < 0x80 else 0x3F for b in data)
    return fixed, f"not valid UTF-8 (byte {first}): read with undecodable bytes as `?`; fixes are not applied to it"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def is_python_source(path: Path) -> bool:
    return path.suffix.lower() in PYTHON_SUFFIXES


def is_gpu_source(path: Path, data: bytes) -> bool:
    """.cu/.cuh always; C/C++ and Python files only when they use CUDA or a GPU framework."""
    if is_python_source(path):
        return bool(_PYTHON_MARKERS.search(data))
    return path.suffix.lower() in CUDA_SUFFIXES or uses_cuda(data)


def uses_cuda(data: bytes) -> bool:
    """Whether C/C++ text launches kernels or calls the CUDA runtime/driver API.  The literal markers
    first (`in` is a fast byte search); the call pattern has no literal start for the regular
    expression engine to skip to when it begins with a word boundary, so the boundary is tested on
    each match instead (cuda-samples' 747 C/C++/CUDA files, 9.6 MB: 80 ms in one pattern, 11 ms so)."""
    if b"<<<" in data or b"__global__" in data:
        return True
    # A rejected match (`xcudaMalloc(`) hides no other: inside it, a `cu` follows only letters.
    return any(m.start() == 0 or data[m.start() - 1] not in WORD_BYTES for m in _CUDA_CALL.finditer(data))
