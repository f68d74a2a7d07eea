"""libclang for the CUDA frontend: loading it, the command line every file is parsed with, the
headers served from memory, and `parse`, which turns clang's diagnostics into `ClangParseError` and
hands the AST to `Lowering`.

The in-memory headers are package data (gpulint/static/include/{cuda,builtin,after}/), read once and
served under virtual folders through the unsaved-file API: clang sees the same paths wherever gpulint
is installed, and nothing is written to disk.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import threading
from pathlib import Path

from gpulint.static import syntax as s
from gpulint.static.unknown import UnknownSyntax
from gpulint.static.cuda_clang.lowering import Lowering

INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"
STUB_HEADER = INCLUDE_DIR / "gpulint_cuda_stub.h"

# Virtual folders served from memory through the unsaved-file API (nothing is written to disk).
_VROOT = "/__gpulint__"
_VCUDA = _VROOT + "/cuda"  # searched first: the CUDA runtime headers, all answered by the stub
_VBUILTIN = _VROOT + "/builtin"  # searched last: clang's own headers, which the PyPI wheel lacks
_VAFTER = _VROOT + "/after"  # searched after everything: common non-toolkit helper headers

# The newest GPU architecture clang 18 knows; newer ones make the driver fail for nothing, since a
# host-only parse never compiles device code.
_MAX_CLANG_ARCH = 90


class ClangUnavailable(RuntimeError):
    """libclang (the `libclang` package or its shared library) cannot be loaded."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ClangParseError(RuntimeError):
    """clang reported error diagnostics: the AST may be incomplete."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages) if messages else "clang failed to parse the file")
        self.messages = list(messages)


# --------------------------------------------------------------------------- served headers

# Toolkit headers that the stub stands for.  They are answered before any -I folder, so a toolkit on
# the include path is never half-used.
_CUDA_HEADERS = [
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h", "driver_types.h",
    "vector_types.h", "vector_functions.h", "builtin_types.h", "host_defines.h", "device_functions.h",
    "cuda_device_runtime_api.h", "driver_functions.h", "channel_descriptor.h", "device_types.h",
    "crt/host_defines.h", "crt/device_functions.h", "crt/math_functions.h", "math_functions.h",
    "sm_20_atomic_functions.h", "sm_32_intrinsics.h", "cuda_fp16.h", "cuda_bf16.h",
]

# The package-data folder that answers each virtual folder: `cuda` the toolkit headers the stub does not
# cover (`<cooperative_groups.h>`, `<math_constants.h>`, ...), `builtin` the compiler's own headers that
# glibc and libstdc++ include (`<stddef.h>`, `<stdarg.h>`, `<limits.h>`, ...), `after` the helper headers
# of the CUDA samples, common in small programs, used only when the project has none.
_VIRTUAL_FOLDERS = {_VBUILTIN: "builtin", _VCUDA: "cuda", _VAFTER: "after"}


@functools.cache
def _virtual_files() -> tuple[tuple[str, bytes], ...]:
    files = [(f"{_VCUDA}/{name}", b"/* answered by gpulint_cuda_stub.h */\n") for name in _CUDA_HEADERS]
    for virtual, folder in _VIRTUAL_FOLDERS.items():
        base = INCLUDE_DIR / folder
        files += [(f"{virtual}/{path.relative_to(base).as_posix()}", path.read_bytes())
                  for path in sorted(base.rglob("*.h"))]
    return tuple(files)


# --------------------------------------------------------------------------- libclang access


class Api:
    """The cindex module plus the few C entry points its Python bindings do not wrap."""

    def __init__(self) -> None:
        try:
            import clang.cindex as ci
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ClangUnavailable(f"the libclang Python package is not installed ({exc})") from exc
        try:
            ci.Index.create()
            lib = ci.conf.lib
        except Exception as exc:  # LibclangError, OSError: the shared library is missing or broken
            raise ClangUnavailable(f"libclang could not be loaded: {exc}") from exc
        self.ci = ci
        self.K = ci.CursorKind
        loc_out = [ci.SourceLocation, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint),
                   ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]

        def fn(name: str, argtypes: list, restype):  # a private handle: cindex's own stay untouched
            f = lib[name]
            f.argtypes = argtypes
            f.restype = restype
            return f

        try:
            self.file_location = fn("clang_getFileLocation", loc_out, None)
            self.get_file = fn("clang_getFile", [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p)
            self.macro_function_like = fn("clang_Cursor_isMacroFunctionLike", [ci.Cursor], ctypes.c_uint)
            self.binop_kind = fn("clang_getCursorBinaryOperatorKind", [ci.Cursor], ctypes.c_int)
            self.unop_kind = fn("clang_getCursorUnaryOperatorKind", [ci.Cursor], ctypes.c_int)
            self.evaluate = fn("clang_Cursor_Evaluate", [ci.Cursor], ctypes.c_void_p)
            self.eval_kind = fn("clang_EvalResult_getKind", [ctypes.c_void_p], ctypes.c_int)
            self.eval_unsigned = fn("clang_EvalResult_isUnsignedInt", [ctypes.c_void_p], ctypes.c_uint)
            self.eval_ull = fn("clang_EvalResult_getAsUnsigned", [ctypes.c_void_p], ctypes.c_ulonglong)
            self.eval_ll = fn("clang_EvalResult_getAsLongLong", [ctypes.c_void_p], ctypes.c_longlong)
            self.eval_double = fn("clang_EvalResult_getAsDouble", [ctypes.c_void_p], ctypes.c_double)
            self.eval_dispose = fn("clang_EvalResult_dispose", [ctypes.c_void_p], None)
        except AttributeError as exc:
            raise ClangUnavailable(f"libclang is too old (missing {exc}); gpulint needs libclang >= 17") from exc
        self._local = threading.local()

    def index(self):
        index = getattr(self._local, "index", None)
        if index is None:
            index = self.ci.Index.create()
            self._local.index = index
        return index


_API: Api | None = None
_API_ERROR: ClangUnavailable | None = None
_API_LOCK = threading.Lock()


def _api() -> Api:
    global _API, _API_ERROR
    if _API is not None:
        return _API
    with _API_LOCK:
        if _API is None:
            if _API_ERROR is not None:
                raise _API_ERROR
            try:
                _API = Api()
            except ClangUnavailable as exc:
                _API_ERROR = exc
                raise
    return _API


def available() -> bool:
    """True when libclang can be loaded."""
    try:
        _api()
    except ClangUnavailable:
        return False
    return True


# --------------------------------------------------------------------------- arguments

_ARCH_RE = re.compile(r"^--cuda-gpu-arch=(?:sm|compute)_(\d+)[a-z]?$")


def clang_args(args: list[str] | None = None) -> list[str]:
    """The full clang command line (without the file) for a file whose own arguments are `args`."""
    user: list[str] = []
    has_std = False
    it = iter(args or [])
    for arg in it:
        if arg == "-x":  # the language is always CUDA
            next(it, None)
            continue
        if arg.startswith("-x") and len(arg) > 2:
            continue
        if arg.startswith("-Werror") or arg in ("-pedantic-errors", "-c", "-fsyntax-only"):
            continue
        if arg == "-o":
            next(it, None)
            continue
        m = _ARCH_RE.match(arg)
        if m and int(m.group(1)) > _MAX_CLANG_ARCH:
            continue
        if arg.startswith("-std=") or arg == "-std":
            has_std = True
        user.append(arg)
    head = [
        "-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib",
        "-Xclang", "-fcuda-allow-variadic-functions",  # the stub's __device__ printf
        "--cuda-path=" + _VROOT + "/no-toolkit",  # the same parse whether or not a toolkit is installed
        "-I" + _VCUDA,
        "-include", str(STUB_HEADER),
    ]
    if not has_std:
        head.append("-std=c++17")
    tail = ["-isystem", _VBUILTIN, "-idirafter", _VAFTER, "-w", "-Wno-error", "-ferror-limit=50"]
    return head + user + tail


# --------------------------------------------------------------------------- public entry point


def parse(path: str, source: bytes, args: list[str] | None = None, *, allow_errors: bool = False,
          filename: str | None = None) -> s.TranslationUnit:
    """Parse one CUDA/C++ file given as `source` (the bytes of `path`) with libclang.

    `args` are the file's compile-database arguments (see `compile_db`).  `filename` is where the
    file really is, when `path` is only a display name: `#include "..."` is resolved from there.
    Raises `ClangUnavailable` when libclang cannot be loaded and `ClangParseError` when clang
    reports an error (unless `allow_errors`: then functions containing one are marked `has_errors`).
    """
    api = _api()
    ci = api.ci
    filename = os.path.abspath(filename or path)
    unsaved = [(filename, source), *_virtual_files()]
    options = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
    try:
        tu = api.index().parse(filename, args=clang_args(args), unsaved_files=unsaved, options=options)
    except ci.TranslationUnitLoadError as exc:
        raise ClangParseError([f"{path}: clang could not parse the file ({exc})"]) from exc
    errors: list[tuple[int, str]] = []
    messages: list[str] = []
    for diag in tu.diagnostics:
        if diag.severity < ci.Diagnostic.Error:
            continue
        loc = diag.location
        where = f"{loc.file.name}:{loc.line}:{loc.column}" if loc.file is not None else path
        if loc.file is not None and os.path.abspath(loc.file.name) == filename:
            where = f"{path}:{loc.line}:{loc.column}"
            errors.append((loc.offset, diag.spelling))
        messages.append(f"{where}: error: {diag.spelling}")
    if messages and not allow_errors:
        raise ClangParseError(messages)
    lowering = Lowering(api, tu, path, filename, source, [off for off, _ in errors])
    try:
        lowering.run()
    except RecursionError:
        raise ClangParseError([f"{path}: expressions nested too deeply for the clang frontend"]) from None
    except UnknownSyntax:
        raise  # under the tests: a gap in the lowering must fail, not fall back to tree-sitter
    except Exception as exc:  # a construct the lowering does not expect: let the caller fall back
        raise ClangParseError([f"{path}: gpulint could not lower the clang AST ({type(exc).__name__}: {exc})"]) from exc
    return s.TranslationUnit(
        path=path,
        source=source,
        functions=lowering.functions,
        macros=lowering.macros,
        globals=lowering.globals,
        structs=lowering.structs,
        errors=lowering.error_spans,
        frontend="clang",
        unknown=dict(lowering.unknown),
    )
