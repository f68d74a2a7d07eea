"""The build as the preprocessor sees it: which macros are defined and where `#include "x"` looks.

Both come from the file's compile database entry (`-D`, `-U`, `-I`, `-iquote`) when there is one,
and from the `defines` / `include-paths` settings otherwise (or as well).  Only quoted includes
that resolve to a file are followed: a system header (`<cuda_runtime.h>`) is never read, as its
macros are not the project's and reading the toolkit's headers for every file would cost more
than the whole analysis.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gpulint.config import Settings

# `#include "name"` (not `<name>`: system headers are not followed), at the start of a line: tested
# per match (`local_includes`), as `^[ \t]*` under re.M gives the engine no literal to skip to.
_LOCAL_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*"([^"\n]+)"')
# Macros nvcc (with gcc on 64-bit Linux) defines that programs test (`#ifdef __CUDACC__`,
# `#if CUDART_VERSION >= 11000`, `#ifdef __linux__`).  One text serves both of nvcc's passes, and
# `__CUDA_ARCH__` is defined (sm_90) as in the device pass: kernels guard their bodies with
# `#if __CUDA_ARCH__ >= 800` (their reads and writes are what the analysis needs), while host code
# that allocates and launches seldom tests it.
PREDEFINED = {"__CUDACC__": "1", "__NVCC__": "1", "__CUDA_ARCH__": "900", "__cplusplus": "201703L", "CUDART_VERSION": "13000",
              "CUDA_VERSION": "13000", "__CUDACC_VER_MAJOR__": "13", "__CUDACC_VER_MINOR__": "0",
              "__linux__": "1", "__unix__": "1", "__GNUC__": "12", "__x86_64__": "1", "__LP64__": "1"}


@dataclass(frozen=True)
class BuildView:
    """Macros defined before the first line (name -> replacement text) and the include folders."""

    defines: tuple[tuple[str, str], ...] = ()
    undefines: tuple[str, ...] = ()
    include_paths: tuple[str, ...] = ()

    def initial_macros(self) -> dict[str, str]:
        macros = dict(PREDEFINED)
        macros.update(self.defines)
        for name in self.undefines:
            macros.pop(name, None)
        return macros


def parse_define(text: str) -> tuple[str, str]:
    """`NAME=VALUE` -> (NAME, VALUE); `NAME` -> (NAME, "1"), as `-D` reads them."""
    name, sep, value = text.partition("=")
    return name.strip(), value if sep else "1"


def build_view(path: Path, settings: Settings) -> BuildView:
    """What `path` is built with: its compile database entry's macros and include folders, then
    the settings' `defines` and `include-paths`."""
    defines = [parse_define(d) for d in settings.defines]
    undefines: list[str] = []
    folders: list[str] = []
    if settings.compile_commands:
        from gpulint.static import compile_db

        try:
            args = compile_db.load(settings.compile_commands).args_for(str(path)) or []
        except compile_db.CompileDatabaseError:
            args = []
        i = 0
        while i < len(args):
            arg = args[i]
            for flag in ("-D", "-U", "-I", "-iquote"):
                if arg == flag and i + 1 < len(args):
                    value = args[i + 1]
                    i += 1
                elif arg.startswith(flag) and len(arg) > len(flag):
                    value = arg[len(flag):]
                else:
                    continue
                if flag == "-D":
                    defines.insert(0, parse_define(value))
                elif flag == "-U":
                    undefines.append(value)
                else:
                    folders.append(value)
                break
            i += 1
    folders.extend(settings.include_paths)
    return BuildView(tuple(defines), tuple(undefines), tuple(dict.fromkeys(folders)))


_ANY_LOCAL_INCLUDE = re.compile(rb'include[ \t]*"')


def local_includes(source: bytes) -> list[tuple[str, int]]:
    """Each `#include "name"` of the text: the name and the offset of its line."""
    if _ANY_LOCAL_INCLUDE.search(source) is None:  # most files include no local file: one fast scan
        return []
    found = []
    for m in _LOCAL_INCLUDE.finditer(source):
        line = source.rfind(b"\n", 0, m.start()) + 1
        if not source[line:m.start()].strip(b" \t"):  # only blanks before the `#`
            found.append((m.group(1).decode("utf-8", "replace"), line))
    return found


def resolve(name: str, including: Path, include_paths: tuple[str, ...]) -> Path | None:
    """Where `#include "name"` in `including` finds its file: the including file's folder first,
    then each include folder, as compilers search quoted includes."""
    for folder in (str(including.parent), *include_paths):
        candidate = os.path.join(folder, name)
        if _is_file(candidate):
            return Path(os.path.normpath(candidate))
    return None


@lru_cache(maxsize=4096)
def _is_file(path: str) -> bool:
    return os.path.isfile(path)


def include_closure(path: Path, source: bytes, include_paths: tuple[str, ...], limit: int = 256,
                    known: dict[Path, list[tuple[str, int]] | None] | None = None) -> list[Path]:
    """Every local file `path` includes, directly or through another, in the order first reached
    (cycles and repeated includes followed once; at most `limit` files).  `known`: the includes of
    files already read, by path (None: unreadable), filled as files are read, so that a run asking
    for many files' closures reads each header once."""
    known = {} if known is None else known
    seen: dict[Path, None] = {}
    pending = [(path, local_includes(source))]
    while pending and len(seen) < limit:
        current, includes = pending.pop()
        for name, _ in reversed(includes):
            found = resolve(name, current, include_paths)
            if found is None or found in seen or found == path:
                continue
            seen[found] = None
            if found not in known:
                try:
                    known[found] = local_includes(found.read_bytes())
                except OSError:
                    known[found] = None
            found_includes = known[found]
            if found_includes is not None:
                pending.append((found, found_includes))
    return list(seen)
