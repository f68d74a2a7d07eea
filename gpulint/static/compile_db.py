"""compile_commands.json -> the clang arguments of each file.

CUDA projects are mostly built with nvcc, whose command lines clang does not understand.  A
command is rewritten to the few arguments a libclang parse needs and can take:

* kept: `-I`, `-D`, `-U`, `-isystem`, `-iquote`, `-idirafter`, `-include`, `-std` (nvcc's
  `--std c++17` spelled `-std=c++17`); relative paths are resolved against the entry's `directory`;
* `-gencode arch=compute_80,code=sm_80`, `-arch=sm_80`, `--gpu-architecture sm_80`, `-code=sm_80`
  become `--cuda-gpu-arch=sm_80` (`compute_XX` read as `sm_XX`; `native`/`all` dropped);
* `-Xcompiler a,b,c` (`--compiler-options`): only the `-I/-D/-U/-isystem/-std` among a, b, c;
* dropped: the compiler (and a `ccache`/`sccache` in front of it), the source file, `-c`, `-o X`,
  `-ccbin X`, `--expt-*`, `-Xptxas X` and the other `-X<tool>` options, `-lineinfo`, `-G`,
  `--use_fast_math`, `-rdc=...`, `-Werror ...`, and everything else: an argument clang does not
  know is an error, and nothing else changes what the parse sees.

A file without an entry of its own (a `.cuh` header) gets the arguments of an entry in the same
folder, if any; `.cuh` files also get `-x cuda`.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path

HEADER_SUFFIXES = {".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".inc", ".tcc"}
_CUDA_HEADER_SUFFIXES = {".cuh"}

# Options followed by a value, kept: (spellings) -> the clang spelling.
_KEEP_WITH_VALUE = {
    "-I": "-I", "--include-path": "-I",
    "-D": "-D", "--define-macro": "-D",
    "-U": "-U", "--undefine-macro": "-U",
    "-isystem": "-isystem", "--system-include": "-isystem",
    "-iquote": "-iquote",
    "-idirafter": "-idirafter",
    "-include": "-include", "--pre-include": "-include",
}
_PATH_OPTIONS = {"-I", "-isystem", "-iquote", "-idirafter", "-include"}
# nvcc options whose value is a separate argument (or joined with `=`): dropped with the value.
_DROP_WITH_VALUE = {
    "-o", "--output-file", "-ccbin", "--compiler-bindir", "-Xptxas", "--ptxas-options", "-Xlinker",
    "--linker-options", "-Xnvlink", "--nvlink-options", "-Xarchive", "--archive-options", "-Xcudafe",
    "-Xfatbin", "--fatbin-options", "-maxrregcount", "--maxrregcount", "--default-stream", "-default-stream",
    "-t", "--threads", "-cudart", "--cudart", "-cudadevrt", "--cudadevrt", "-x", "--x", "-MF", "-MT", "-MQ",
    "--dependency-output", "-odir", "--output-directory", "-l", "--library", "-L", "--library-path",
    "-Werror", "--Werror", "-diag-suppress", "--diag-suppress", "-diag-error", "--diag-error", "-diag-warn",
    "--diag-warn", "-m", "--machine", "-arch-ls", "--keep-dir", "-keep-dir", "-rdc", "--relocatable-device-code",
    "-ftz", "--ftz", "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad",
    "--split-compile", "-split-compile", "--optimization-info", "-opt-info", "-dopt", "--dopt",
    "--input-drive-prefix", "--dependency-drive-prefix", "--drive-prefix", "-time", "--time",
}
_ARCH_OPTIONS = {"-arch", "--gpu-architecture", "-code", "--gpu-code"}
_GENCODE_OPTIONS = {"-gencode", "--generate-code"}
_XCOMPILER_OPTIONS = {"-Xcompiler", "--compiler-options"}
_LAUNCHERS = {"ccache", "sccache", "distcc", "icecc", "buildcache"}
_SOURCE_SUFFIXES = {".cu", ".cpp", ".cc", ".cxx", ".c", ".c++", ".cp"}
_ARCH_RE = re.compile(r"(?:sm|compute|lto)_(\d+[a-z]?)")


def _arch_flags(value: str) -> list[str]:
    """`arch=compute_80,code=[sm_80,compute_80]` or `sm_80` -> [`--cuda-gpu-arch=sm_80`]."""
    out: list[str] = []
    for m in _ARCH_RE.finditer(value):
        flag = f"--cuda-gpu-arch=sm_{m.group(1)}"
        if flag not in out:
            out.append(flag)
    return out


def _split_value(arg: str, names: set[str] | dict) -> tuple[str, str | None] | None:
    """`-Xcompiler=-fPIC` -> ('-Xcompiler', '-fPIC'); `-Xcompiler` -> ('-Xcompiler', None); else None."""
    if arg in names:
        return arg, None
    if "=" in arg:
        name, value = arg.split("=", 1)
        if name in names:
            return name, value
    return None


def _option_with_value(arg: str, nxt: str | None, *groups: set[str] | dict) -> tuple[str, str, int] | None:
    """An option of one of `groups` and its value, inline (`-arch=sm_90`) or the next argument
    (`-arch sm_90`): (name, value, how many arguments it used), or None."""
    for names in groups:
        split = _split_value(arg, names)
        if split is not None:
            name, value = split
            return (name, value, 1) if value is not None else (name, nxt or "", 2)
    return None


def _keep_option(arg: str, value_next: str | None) -> tuple[list[str], bool] | None:
    """A kept option: (clang arguments, whether the next argument was used), or None if not kept."""
    for spelling, clang in _KEEP_WITH_VALUE.items():
        if arg == spelling:
            if value_next is None:
                return [], False
            return [clang, value_next], True
        if spelling.startswith("--") and arg.startswith(spelling + "="):
            return [clang, arg[len(spelling) + 1:]], False
        if len(spelling) == 2 and arg.startswith(spelling) and len(arg) > 2:
            return [clang, arg[2:]], False
    if arg.startswith("-std=") or arg.startswith("--std="):
        return ["-std=" + arg.split("=", 1)[1]], False
    if arg in ("-std", "--std") and value_next is not None:
        return ["-std=" + value_next], True
    return None


def _absolute(options: list[str], directory: str) -> list[str]:
    """Resolve the paths of -I/-isystem/... against the entry's directory."""
    out: list[str] = []
    i = 0
    while i < len(options):
        opt = options[i]
        if opt in _PATH_OPTIONS and i + 1 < len(options):
            value = options[i + 1]
            if not os.path.isabs(value):
                value = os.path.normpath(os.path.join(directory, value))
            out += [opt, value]
            i += 2
            continue
        out.append(opt)
        i += 1
    return out


def _xcompiler(value: str) -> list[str]:
    """The -I/-D/-U/-isystem/-std among the comma-separated host-compiler options of -Xcompiler."""
    parts = [p for p in value.split(",") if p]
    out: list[str] = []
    i = 0
    while i < len(parts):
        nxt = parts[i + 1] if i + 1 < len(parts) else None
        kept = _keep_option(parts[i], nxt)
        if kept is not None:
            args, used = kept
            out += args
            i += 2 if used else 1
            continue
        i += 1
    return out


def rewrite(arguments: list[str], directory: str = ".", file: str | None = None) -> list[str]:
    """An nvcc (or gcc/clang) command line -> the arguments a libclang parse of `file` needs."""
    args = list(arguments)
    # the compiler, behind an optional launcher
    while args and os.path.basename(args[0]) in _LAUNCHERS:
        args.pop(0)
    if args and not args[0].startswith("-"):
        args.pop(0)
    source = os.path.normpath(os.path.join(directory, file)) if file else None
    out: list[str] = []
    archs: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        # the source file itself (and any other input file)
        if not arg.startswith("-"):
            path = os.path.normpath(os.path.join(directory, arg))
            if path == source or os.path.splitext(arg)[1].lower() in _SOURCE_SUFFIXES:
                i += 1
                continue
            i += 1  # a stray value (of an option we dropped without knowing its arity)
            continue
        taken = _option_with_value(arg, nxt, _GENCODE_OPTIONS, _ARCH_OPTIONS, _XCOMPILER_OPTIONS)
        if taken is not None:
            name, value, width = taken
            if name in _XCOMPILER_OPTIONS:
                out += _xcompiler(value)
            elif name in _GENCODE_OPTIONS or name in ("-arch", "--gpu-architecture"):
                archs += [a for a in _arch_flags(value) if a not in archs]
            i += width
            continue
        if arg.startswith("--cuda-gpu-arch="):
            archs += [a for a in _arch_flags(arg) if a not in archs]
            i += 1
            continue
        kept = _keep_option(arg, nxt)
        if kept is not None:
            options, used = kept
            out += options
            i += 2 if used else 1
            continue
        split = _split_value(arg, _DROP_WITH_VALUE)
        if split is not None:
            name, value = split
            # `-Werror` alone is gcc's flag; nvcc's `-Werror all-warnings` takes a value
            if value is None and nxt is not None and not nxt.startswith("-") and not (
                name in ("-Werror", "--Werror", "-rdc", "--relocatable-device-code") and
                os.path.splitext(nxt)[1].lower() in _SOURCE_SUFFIXES
            ):
                i += 1
            i += 1
            continue
        i += 1  # -c, -lineinfo, -G, --use_fast_math, --expt-*, -O3, -fPIC, -W..., -g, ...: dropped
    return _absolute(out, directory) + archs


@dataclass
class Entry:
    directory: str
    file: str  # absolute, normalised
    arguments: list[str]

    @property
    def args(self) -> list[str]:
        return rewrite(self.arguments, self.directory, self.file)


@dataclass
class CompileDatabase:
    path: str
    entries: list[Entry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_file: dict[str, Entry] = {}
        self._by_dir: dict[str, Entry] = {}
        for e in self.entries:
            for key in {e.file, os.path.realpath(e.file)}:
                self._by_file.setdefault(key, e)
                self._by_dir.setdefault(os.path.dirname(key), e)

    def entry_for(self, file: str) -> Entry | None:
        path = os.path.normpath(os.path.abspath(file))
        return self._by_file.get(path) or self._by_file.get(os.path.realpath(path))

    def args_for(self, file: str) -> list[str] | None:
        """The clang arguments of `file`, or None when the database knows nothing of it."""
        entry = self.entry_for(file)
        if entry is not None:
            return entry.args
        path = os.path.normpath(os.path.abspath(file))
        suffix = os.path.splitext(path)[1].lower()
        if suffix not in HEADER_SUFFIXES:
            return None
        neighbour = self._by_dir.get(os.path.dirname(path)) or self._by_dir.get(os.path.dirname(os.path.realpath(path)))
        head = ["-x", "cuda"] if suffix in _CUDA_HEADER_SUFFIXES else []
        if neighbour is not None:
            return head + rewrite(neighbour.arguments, neighbour.directory, neighbour.file)
        return head or None


class CompileDatabaseError(ValueError):
    pass


_CACHE: dict[tuple[str, int], CompileDatabase] = {}
_CACHE_LOCK = threading.Lock()


def load(path: str | os.PathLike) -> CompileDatabase:
    """Read compile_commands.json (the file, or the folder that holds it)."""
    p = Path(path)
    if p.is_dir():
        p = p / "compile_commands.json"
    real = os.path.realpath(p)
    try:
        stamp = os.stat(real).st_mtime_ns
    except OSError as exc:
        raise CompileDatabaseError(f"{p}: cannot read the compile database ({exc.strerror})") from exc
    with _CACHE_LOCK:
        cached = _CACHE.get((real, stamp))
    if cached is not None:
        return cached
    if not os.path.isfile(real):
        raise CompileDatabaseError(f"{p}: cannot read the compile database (not a regular file)")
    try:
        data = json.loads(Path(real).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise CompileDatabaseError(f"{p}: not a valid compile_commands.json ({reason})") from exc
    if not isinstance(data, list):
        raise CompileDatabaseError(f"{p}: a compile database is a JSON list of entries")
    base = os.path.dirname(real)
    entries: list[Entry] = []
    for number, item in enumerate(data):
        # The JSON Compilation Database format: `directory` and `file` strings, and `arguments` (a
        # list of strings) or `command` (a string).  A broken entry is an error, not a skip: the
        # file it describes would silently be parsed without its flags.
        where = f"{p}: entry {number}"
        if not isinstance(item, dict) or not isinstance(item.get("file"), str) or \
                not isinstance(item.get("directory", base), str):
            raise CompileDatabaseError(f"{where}: an entry is an object with `directory` and `file` strings")
        directory = item.get("directory") or base
        if not os.path.isabs(directory):
            directory = os.path.normpath(os.path.join(base, directory))
        if isinstance(item.get("arguments"), list) and all(isinstance(a, str) for a in item["arguments"]):
            arguments = list(item["arguments"])
        elif isinstance(item.get("command"), str):
            try:
                arguments = shlex.split(item["command"])
            except ValueError as exc:
                raise CompileDatabaseError(f"{where}: cannot split `command` ({exc})") from exc
        else:
            raise CompileDatabaseError(f"{where}: needs `arguments` (a list of strings) or `command` (a string)")
        file = os.path.normpath(os.path.join(directory, item["file"]))
        entries.append(Entry(directory=directory, file=file, arguments=arguments))
    db = CompileDatabase(path=str(p), entries=entries)
    with _CACHE_LOCK:
        _CACHE[(real, stamp)] = db
    return db
