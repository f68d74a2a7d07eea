"""The precise CUDA C/C++ frontend: the libclang AST -> `syntax` tree.

libclang resolves what tree-sitter can only guess: macros are expanded (a `CHECK(cudaMalloc(...))`
is the do-while block it stands for), `sizeof(float2)` is a type, `dim3 grid(n)` is a variable,
overloaded operators are calls.  It needs the `libclang` package and nothing else: the PyPI build
ships no clang builtin headers and a user machine may have no CUDA toolkit, so every file is parsed
with

    -x cuda --cuda-host-only -nocudainc -nocudalib -include gpulint_cuda_stub.h -std=c++17

plus the file's compile-database arguments.  The stub header (gpulint/static/include/) declares the
CUDA runtime; small in-memory stand-ins (the unsaved-file API: nothing is written to disk) answer
`#include <cuda_runtime.h>`, `<cooperative_groups.h>` and the compiler's own headers (`<stddef.h>`,
`<stdarg.h>`, `<limits.h>`, ...) that glibc and libstdc++ include.  Any error diagnostic means the
AST may be incomplete (clang drops what it cannot type-check): `parse` then raises
`ClangParseError` and the caller falls back to the tree-sitter frontend for that file.

A real toolkit's headers are never used, even when one is installed: without clang's CUDA wrapper
headers (`__clang_cuda_runtime_wrapper.h`, not in the PyPI wheel) `cuda_runtime.h` does not parse
(measured with CUDA 13.0: undeclared `threadIdx`/`__cudaPushCallConfiguration`, then 20 errors of
`__host__ __device__` functions overloading glibc's), so the stub is always the one answer.

Lowering matches `cuda_treesitter` node for node wherever both can see the same thing, so the
rules give the same findings whichever frontend ran:
* implicit conversions, parentheses and implicit constructor calls are not nodes;
* a kernel launch is `Call(callee, args, launch=[grid, block, ...])`, template arguments dropped
  from callee names, qualifiers kept as written;
* spans are byte offsets into the main file with 1-based rows/columns, statements include their
  `;`, and node text is cut from the source by span;
* a node that comes from a macro body gets the span of the macro's use; an object-like macro
  that is a constant becomes `Literal(text=<macro name>, value=<its value>)` (else `Name`); a
  `do { ... } while (0)` becomes a Block; a statement that a macro use stands for spans the use
  and its `;`;
* `switch` is a Block with one `If` per case that has statements, its condition `v == A || v == B`
  over the labels falling through to it (`default` is the name `default`);
* `T x(a)` / `T x{a}` initialisers are `Other("argument_list" | "initializer_list", [a])`; a
  functional cast is a `Cast` for a scalar type (`float(n)`) and a call of the type for a class
  (`dim3(n)`).
"""
from __future__ import annotations

import bisect
import ctypes
import os
import re
import threading
from pathlib import Path
from typing import Iterable, Iterator

from gpulint.static import syntax as s

STUB_HEADER = Path(__file__).resolve().parent / "include" / "gpulint_cuda_stub.h"

# Virtual folders served from memory through the unsaved-file API (nothing is written to disk).
_VROOT = "/__gpulint__"
_VCUDA = _VROOT + "/cuda"  # searched first: the CUDA runtime headers, all answered by the stub
_VBUILTIN = _VROOT + "/builtin"  # searched last: clang's own headers, which the PyPI wheel lacks
_VAFTER = _VROOT + "/after"  # searched after everything: common non-toolkit helper headers

# The newest GPU architecture clang 18 knows; newer ones make the driver fail for nothing, since a
# host-only parse never compiles device code.
_MAX_CLANG_ARCH = 90

_CONFIG_CALLS = {"cudaConfigureCall", "__cudaPushCallConfiguration"}


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


# --------------------------------------------------------------------------- in-memory headers

_STDDEF = r"""
#ifndef __GPULINT_STDDEF_H
#define __GPULINT_STDDEF_H
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#ifndef __cplusplus
typedef __WCHAR_TYPE__ wchar_t;
#endif
typedef __WINT_TYPE__ wint_t;
typedef struct {
  long long __max_align_ll __attribute__((__aligned__(__alignof__(long long))));
  long double __max_align_ld __attribute__((__aligned__(__alignof__(long double))));
} max_align_t;
#define offsetof(t, d) __builtin_offsetof(t, d)
#endif
#undef NULL
#ifdef __cplusplus
#define NULL __null
#else
#define NULL ((void *)0)
#endif
#undef __need_size_t
#undef __need_ptrdiff_t
#undef __need_wchar_t
#undef __need_wint_t
#undef __need_NULL
#undef __need_max_align_t
#undef __need_offsetof
"""

_STDARG = r"""
#ifndef __GPULINT_STDARG_H
#define __GPULINT_STDARG_H
typedef __builtin_va_list va_list;
typedef __builtin_va_list __gnuc_va_list;
#define __GNUC_VA_LIST 1
#define va_start(ap, param) __builtin_va_start(ap, param)
#define va_end(ap) __builtin_va_end(ap)
#define va_arg(ap, type) __builtin_va_arg(ap, type)
#define __va_copy(d, s) __builtin_va_copy(d, s)
#define va_copy(d, s) __builtin_va_copy(d, s)
#endif
#undef __need___va_list
#undef __need_va_list
"""

_LIMITS = r"""
#if defined(__GNUC__) && !defined(_GCC_LIMITS_H_)
#define _GCC_LIMITS_H_
#endif
#if __has_include_next(<limits.h>)
#include_next <limits.h>
#endif
#ifndef __GPULINT_LIMITS_H
#define __GPULINT_LIMITS_H
#undef CHAR_BIT
#define CHAR_BIT __CHAR_BIT__
#undef SCHAR_MAX
#define SCHAR_MAX __SCHAR_MAX__
#undef SCHAR_MIN
#define SCHAR_MIN (-__SCHAR_MAX__ - 1)
#undef UCHAR_MAX
#define UCHAR_MAX (__SCHAR_MAX__ * 2 + 1)
#undef CHAR_MIN
#undef CHAR_MAX
#ifdef __CHAR_UNSIGNED__
#define CHAR_MIN 0
#define CHAR_MAX UCHAR_MAX
#else
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX __SCHAR_MAX__
#endif
#undef SHRT_MAX
#define SHRT_MAX __SHRT_MAX__
#undef SHRT_MIN
#define SHRT_MIN (-__SHRT_MAX__ - 1)
#undef USHRT_MAX
#define USHRT_MAX (__SHRT_MAX__ * 2 + 1)
#undef INT_MAX
#define INT_MAX __INT_MAX__
#undef INT_MIN
#define INT_MIN (-__INT_MAX__ - 1)
#undef UINT_MAX
#define UINT_MAX (__INT_MAX__ * 2U + 1U)
#undef LONG_MAX
#define LONG_MAX __LONG_MAX__
#undef LONG_MIN
#define LONG_MIN (-__LONG_MAX__ - 1L)
#undef ULONG_MAX
#define ULONG_MAX (__LONG_MAX__ * 2UL + 1UL)
#undef LLONG_MAX
#define LLONG_MAX __LONG_LONG_MAX__
#undef LLONG_MIN
#define LLONG_MIN (-__LONG_LONG_MAX__ - 1LL)
#undef ULLONG_MAX
#define ULLONG_MAX (__LONG_LONG_MAX__ * 2ULL + 1ULL)
#undef MB_LEN_MAX
#define MB_LEN_MAX 16
#endif
"""

_FLOAT = "#ifndef __GPULINT_FLOAT_H\n#define __GPULINT_FLOAT_H\n" + "".join(
    f"#define {p}_{n} __{p}_{m}__\n"
    for p in ("FLT", "DBL", "LDBL")
    for n, m in (
        ("MANT_DIG", "MANT_DIG"), ("DIG", "DIG"), ("MIN_EXP", "MIN_EXP"), ("MIN_10_EXP", "MIN_10_EXP"),
        ("MAX_EXP", "MAX_EXP"), ("MAX_10_EXP", "MAX_10_EXP"), ("MAX", "MAX"), ("EPSILON", "EPSILON"),
        ("MIN", "MIN"), ("TRUE_MIN", "DENORM_MIN"), ("DECIMAL_DIG", "DECIMAL_DIG"), ("HAS_SUBNORM", "HAS_DENORM"),
    )
) + (
    "#define FLT_RADIX __FLT_RADIX__\n#define DECIMAL_DIG __DECIMAL_DIG__\n"
    "#define FLT_EVAL_METHOD __FLT_EVAL_METHOD__\n#define FLT_ROUNDS 1\n#endif\n"
)

_BUILTIN_HEADERS = {
    "stddef.h": _STDDEF,
    "stdarg.h": _STDARG,
    "limits.h": _LIMITS,
    "float.h": _FLOAT,
    "stdbool.h": "#ifndef __cplusplus\n#define bool _Bool\n#define true 1\n#define false 0\n#endif\n"
    "#define __bool_true_false_are_defined 1\n",
    "stdalign.h": "#ifndef __cplusplus\n#define alignas _Alignas\n#define alignof _Alignof\n#endif\n"
    "#define __alignas_is_defined 1\n#define __alignof_is_defined 1\n",
    "iso646.h": "",
    "stdnoreturn.h": "#define noreturn _Noreturn\n",
}

# Toolkit headers that the stub stands for.  They are answered before any -I folder, so a toolkit on
# the include path is never half-used.
_CUDA_HEADERS = [
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h", "driver_types.h",
    "vector_types.h", "vector_functions.h", "builtin_types.h", "host_defines.h", "device_functions.h",
    "cuda_device_runtime_api.h", "driver_functions.h", "channel_descriptor.h", "device_types.h",
    "crt/host_defines.h", "crt/device_functions.h", "crt/math_functions.h", "math_functions.h",
    "sm_20_atomic_functions.h", "sm_32_intrinsics.h", "cuda_fp16.h", "cuda_bf16.h",
]
_COOPERATIVE_GROUPS = r"""
#pragma once
/* cooperative_groups.h, as much as host-side parsing needs: the group types and their members */
namespace cooperative_groups {
class thread_group {
 public:
  __device__ void sync() const;
  __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const;
  __device__ unsigned long long thread_rank() const;
  __device__ bool is_valid() const;
};
class thread_block : public thread_group {
 public:
  __device__ dim3 group_index() const;
  __device__ dim3 thread_index() const;
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const;
};
class grid_group : public thread_group {
 public:
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_blocks() const;
  __device__ dim3 block_index() const;
  __device__ unsigned long long block_rank() const;
  __device__ unsigned long long num_blocks() const;
};
class multi_grid_group : public thread_group {
 public:
  __device__ unsigned int grid_rank() const;
  __device__ unsigned int num_grids() const;
};
class coalesced_group : public thread_group {
 public:
  template <class T> __device__ T shfl(T var, int srcRank) const;
  template <class T> __device__ T shfl_down(T var, unsigned int delta) const;
  template <class T> __device__ T shfl_up(T var, unsigned int delta) const;
  template <class T> __device__ T shfl_xor(T var, unsigned int laneMask) const;
  __device__ unsigned int ballot(int predicate) const;
  __device__ int any(int predicate) const;
  __device__ int all(int predicate) const;
  template <class T> __device__ unsigned int match_any(T val) const;
  __device__ unsigned long long meta_group_rank() const;
  __device__ unsigned long long meta_group_size() const;
};
template <unsigned int Size, class ParentT = void>
class thread_block_tile : public coalesced_group {
 public:
  __device__ thread_block_tile();
  template <class P> __device__ thread_block_tile(const thread_block_tile<Size, P> &other);
};
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ multi_grid_group this_multi_grid();
__device__ coalesced_group coalesced_threads();
template <unsigned int Size, class ParentT> __device__ thread_block_tile<Size, ParentT> tiled_partition(const ParentT &g);
__device__ thread_group tiled_partition(const thread_group &parent, unsigned int tilesz);
__device__ coalesced_group binary_partition(const coalesced_group &g, bool pred);
template <unsigned int Size, class P>
__device__ thread_block_tile<Size> binary_partition(const thread_block_tile<Size, P> &g, bool pred);
template <class G> __device__ void sync(const G &g);
template <class T> struct plus { __device__ T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
template <class T> struct greater { __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __device__ T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { __device__ T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { __device__ T operator()(T a, T b) const { return a ^ b; } };
template <class G, class T, class Op> __device__ T reduce(const G &g, T val, Op op);
template <class G, class T, class Op> __device__ T inclusive_scan(const G &g, T val, Op op);
template <class G, class T> __device__ T inclusive_scan(const G &g, T val);
template <class G, class T, class Op> __device__ T exclusive_scan(const G &g, T val, Op op);
template <class G, class T> __device__ T exclusive_scan(const G &g, T val);
template <class G, class T, class S> __device__ void memcpy_async(const G &g, T *dst, const T *src, S count);
template <class G> __device__ void wait(const G &g);
template <unsigned int N, class G> __device__ void wait_prior(const G &g);
namespace details {}
namespace experimental {}
}  // namespace cooperative_groups
"""

_CUDA_EXTRA = {
    "cooperative_groups.h": _COOPERATIVE_GROUPS,
    "cooperative_groups/reduce.h": "#include <cooperative_groups.h>\n",
    "cooperative_groups/scan.h": "#include <cooperative_groups.h>\n",
    "cooperative_groups/memcpy_async.h": "#include <cooperative_groups.h>\n",
    "cuda_profiler_api.h": "/* declared by gpulint_cuda_stub.h */\n",
    "math_constants.h": (
        "#define CUDART_PI_F 3.141592654f\n#define CUDART_PI 3.1415926535897931e+0\n"
        "#define CUDART_INF_F __builtin_huge_valf()\n#define CUDART_INF __builtin_huge_val()\n"
        "#define CUDART_NAN_F __builtin_nanf(\"\")\n#define CUDART_NAN __builtin_nan(\"\")\n"
        "#define CUDART_SQRT_2PI_F 2.506628275f\n#define CUDART_SQRT_HALF_F 0.707106781f\n"
    ),
}
# Helper headers of the CUDA samples, common in small programs; used only when the project has none.
_AFTER_HEADERS = {
    "helper_cuda.h": (
        "#pragma once\n"
        "template <typename T> void check(T result, char const *const func, const char *const file,\n"
        "                                 int const line) {}\n"
        "#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)\n"
        "#define getLastCudaError(msg) __getLastCudaError(msg, __FILE__, __LINE__)\n"
        "inline void __getLastCudaError(const char *errorMessage, const char *file, const int line) {}\n"
        "inline int findCudaDevice(int argc, const char **argv) { return 0; }\n"
        "inline int gpuGetMaxGflopsDeviceId() { return 0; }\n"
        "inline int _ConvertSMVer2Cores(int major, int minor) { return 128; }\n"
    ),
}


def _virtual_files() -> list[tuple[str, bytes]]:
    files = [(f"{_VBUILTIN}/{name}", text.encode()) for name, text in _BUILTIN_HEADERS.items()]
    files += [(f"{_VCUDA}/{name}", b"/* answered by gpulint_cuda_stub.h */\n") for name in _CUDA_HEADERS]
    files += [(f"{_VCUDA}/{name}", text.encode()) for name, text in _CUDA_EXTRA.items()]
    files += [(f"{_VAFTER}/{name}", text.encode()) for name, text in _AFTER_HEADERS.items()]
    return files


# --------------------------------------------------------------------------- libclang access


class _Api:
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


_API: _Api | None = None
_API_ERROR: ClangUnavailable | None = None
_API_LOCK = threading.Lock()


def _api() -> _Api:
    global _API, _API_ERROR
    if _API is not None:
        return _API
    with _API_LOCK:
        if _API is None:
            if _API_ERROR is not None:
                raise _API_ERROR
            try:
                _API = _Api()
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
    unsaved = [(filename, source)] + _virtual_files()
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
    lowering = _Lowering(api, tu, path, filename, source, [off for off, _ in errors])
    try:
        lowering.run()
    except RecursionError:
        raise ClangParseError([f"{path}: expressions nested too deeply for the clang frontend"]) from None
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
    )


# --------------------------------------------------------------------------- source helpers

_TOKEN_RE = re.compile(
    rb"""
    (?P<ws>\s+|\\\n)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<str>(?:u8|u|U|L)?R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"
           |(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*"?
           |(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*'?)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.']|'[0-9A-Za-z])*)
  | (?P<punct><<=|>>=|<=>|->\*|\.\.\.|::|->|&&|\|\||<<|>>|<=|>=|==|!=|\+\+|--|[-+*/%&|^]=|.)
    """,
    re.S | re.X,
)


class _Tok:
    __slots__ = ("text", "start", "end", "kind")

    def __init__(self, text: str, start: int, end: int, kind: str) -> None:
        self.text = text
        self.start = start
        self.end = end
        self.kind = kind

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"_Tok({self.text!r}, {self.start}, {self.end})"


def _lex(src: bytes, start: int, end: int | None = None) -> Iterator[_Tok]:
    """Tokens of src[start:end] (comments and whitespace skipped)."""
    limit = len(src) if end is None else min(end, len(src))
    pos = max(0, start)
    while pos < limit:
        m = _TOKEN_RE.match(src, pos, limit)
        if m is None:  # pragma: no cover - the pattern matches any character
            pos += 1
            continue
        kind = m.lastgroup or "punct"
        if kind == "delim":
            kind = "str"
        if kind not in ("ws", "comment"):
            yield _Tok(m.group().decode("utf-8", "replace"), m.start(), m.end(), kind)
        pos = m.end()


# Decl-specifier words that are not part of the type as tree-sitter's `type` field spells it.
_SPEC_QUALIFIERS = {
    "const", "volatile", "static", "extern", "constexpr", "consteval", "constinit", "inline", "register",
    "thread_local", "mutable", "typedef", "friend", "virtual", "explicit", "__shared__", "__constant__",
    "__device__", "__managed__", "__host__", "__global__", "__forceinline__", "__inline__", "__noinline__",
    "__restrict__", "__restrict", "restrict", "__inline", "_Thread_local", "__thread", "__grid_constant__",
}
_SPEC_WITH_ARGS = {"__align__", "__launch_bounds__", "alignas", "__attribute__", "__declspec", "_Alignas",
                   "__builtin_align__"}
_DECLARATOR_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}


# --------------------------------------------------------------------------- lowering


class _MacroUse:
    __slots__ = ("start", "end", "name", "function_like")

    def __init__(self, start: int, end: int, name: str, function_like: bool) -> None:
        self.start = start
        self.end = end
        self.name = name
        self.function_like = function_like


class _Lowering:
    def __init__(self, api: _Api, tu, path: str, filename: str, source: bytes, error_offsets: list[int]) -> None:
        self.api = api
        self.K = api.K
        self.tu = tu
        self.path = path
        self.src = source
        self.main = api.get_file(tu.obj if hasattr(tu, "obj") else tu, filename.encode()) or 0
        self.line_starts = [0] + [m.end() for m in re.finditer(rb"\n", source)]
        self.error_offsets = sorted(error_offsets)
        self.functions: list[s.Function] = []
        self.macros: dict[str, s.Macro] = {}
        self.globals: list[s.Decl] = []
        self.structs: dict[str, list[str]] = {}
        self.error_spans: list[s.Span] = [self.span(o, o + 1) for o in self.error_offsets]
        self.macro_uses: dict[int, _MacroUse] = {}
        self.top_uses: list[_MacroUse] = []  # macro uses not inside another one, by position
        self.macro_defs: dict[str, object] = {}  # every macro definition, headers included
        self._sizeof_cache: dict[str, list[str]] = {}
        self.expanding: set[int] = set()  # macro uses whose expansion is being lowered
        self.conditional_regions: list[tuple[int, int]] = _conditional_regions(source)
        self.in_template = False
        self.pending_globals: list = []  # VAR_DECLs of one file-scope declaration
        self._rng_cache: dict[tuple, tuple[int, int] | None] = {}  # by cursor identity
        self._out_file = ctypes.c_void_p()
        self._out_line = ctypes.c_uint()
        self._out_col = ctypes.c_uint()
        self._out_off = ctypes.c_uint()

    # ------------------------------------------------------------------ locations
    def floc(self, loc) -> tuple[int, int]:
        """(file handle, byte offset) of a location, macro arguments at their spelling."""
        self.api.file_location(loc, ctypes.byref(self._out_file), ctypes.byref(self._out_line),
                               ctypes.byref(self._out_col), ctypes.byref(self._out_off))
        return (self._out_file.value or 0), self._out_off.value

    def in_main(self, cursor) -> bool:
        f, _ = self.floc(cursor.location)
        return f == self.main and f != 0

    def rng(self, cursor) -> tuple[int, int] | None:
        """[start, end) byte range of a cursor in the main file, or None."""
        key = (cursor._kind_id, cursor.xdata, cursor.data[0], cursor.data[1], cursor.data[2])
        if key in self._rng_cache:
            return self._rng_cache[key]
        r = self._rng(cursor)
        self._rng_cache[key] = r
        return r

    def _rng(self, cursor) -> tuple[int, int] | None:
        ext = cursor.extent
        fs, so = self.floc(ext.start)
        if fs != self.main or fs == 0:
            return None
        fe, eo = self.floc(ext.end)
        if fe != self.main:
            eo = so
        use = self.macro_uses.get(so)
        if use is not None and eo < use.end:
            eo = use.end
        if eo <= so:
            eo = self._token_end(so)
        return so, eo

    def _token_end(self, offset: int) -> int:
        for tok in _lex(self.src, offset, offset + 4096):
            return tok.end
        return offset

    def span(self, start: int, end: int) -> s.Span:
        r0 = bisect.bisect_right(self.line_starts, start) - 1
        r1 = bisect.bisect_right(self.line_starts, end) - 1
        return s.Span(start, end, r0 + 1, start - self.line_starts[r0] + 1, r1 + 1, end - self.line_starts[r1] + 1)

    def cspan(self, cursor, fallback: tuple[int, int] | None = None) -> s.Span:
        r = self.rng(cursor) or fallback or (0, 0)
        return self.span(*r)

    def text(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "replace")

    def macro_exact(self, r: tuple[int, int] | None) -> _MacroUse | None:
        """The macro use whose expansion is exactly this range: the node comes from a macro body."""
        if r is None:
            return None
        use = self.macro_uses.get(r[0])
        if use is not None and use.end == r[1]:
            return use
        return None

    def use_containing(self, r: tuple[int, int]) -> _MacroUse | None:
        """The outermost macro use whose expansion contains the range."""
        i = bisect.bisect_right(self._top_starts, r[0]) - 1
        if i >= 0:
            use = self.top_uses[i]
            if use.start <= r[0] and r[1] <= use.end:
                return use
        return None

    def macro_statement(self, st: s.Stmt | None, c, parent: tuple[int, int] | None) -> s.Stmt | None:
        """A statement that a macro use stands for spans the use and its `;` (`CK(cudaFree(p));`)."""
        if st is None:
            return st
        r = self.rng(c)
        if r is None:
            return st
        use = self.use_containing(r)
        if use is None or (parent is not None and use.start <= parent[0] and parent[1] <= use.end):
            return st
        if not (st.span.start == use.start and st.span.end >= use.end):
            st.span = self.span(use.start, self.extend_semicolon(use.end))
        return st

    def extend_semicolon(self, end: int) -> int:
        if end > 0 and self.src[end - 1:end] == b";":
            return end
        for tok in _lex(self.src, end, end + 4096):
            return tok.end if tok.text == ";" else end
        return end

    def match_close(self, open_pos: int) -> int | None:
        """Offset just past the bracket closing the one at `open_pos` (`(`, `[`, `{` or `<`)."""
        pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
        depth = 0
        opener = None
        for tok in _lex(self.src, open_pos):
            if opener is None:
                opener = tok.text
                if opener not in pairs:
                    return None
                closer = pairs[opener]
                depth = 1
                continue
            if opener == "<":
                if tok.text in ("(", "[", "{"):
                    inner = self.match_close(tok.start)
                    if inner is None:
                        return None
                    continue
                if tok.text == "<":
                    depth += 1
                elif tok.text == ">":
                    depth -= 1
                elif tok.text == ">>":
                    depth -= 2
                elif tok.text in (";", "{", "}"):
                    return None
                if depth <= 0:
                    return tok.end
                continue
            if tok.text == opener:
                depth += 1
            elif tok.text == closer:
                depth -= 1
                if depth == 0:
                    return tok.end
        return None

    def has_error_in(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.error_offsets, start)
        return i < len(self.error_offsets) and self.error_offsets[i] < end

    # ------------------------------------------------------------------ clang helpers
    def children(self, cursor) -> list:
        return list(cursor.get_children())

    def is_expr(self, cursor) -> bool:
        k = cursor.kind
        return k.is_expression() or k == self.K.OVERLOADED_DECL_REF

    def expr_children(self, cursor) -> list:
        return [c for c in cursor.get_children() if self.is_expr(c)]

    def evaluate(self, cursor) -> int | float | None:
        api = self.api
        res = api.evaluate(cursor)
        if not res:
            return None
        try:
            kind = api.eval_kind(res)
            if kind == 1:
                return int(api.eval_ull(res)) if api.eval_unsigned(res) else int(api.eval_ll(res))
            if kind == 2:
                return float(api.eval_double(res))
            return None
        finally:
            api.eval_dispose(res)

    def unwrap(self, cursor):
        """Skip implicit casts, parentheses, temporaries and implicit constructor calls."""
        K = self.K
        while cursor is not None:
            k = cursor.kind
            if k == K.PAREN_EXPR or k == K.UNEXPOSED_EXPR:
                kids = self.expr_children(cursor)
                if len(kids) == 1:
                    cursor = kids[0]
                    continue
                if not kids and k == K.UNEXPOSED_EXPR and self.rng(cursor) is None:
                    return None
                return cursor
            if k == K.CALL_EXPR and self._is_constructor(cursor):
                kids = self.expr_children(cursor)
                r = self.rng(cursor)
                kids = self.within(kids, r)
                if len(kids) == 1 and r is not None and r == self.rng(kids[0]):
                    cursor = kids[0]  # a conversion or copy: `dim3` from `256`, a copy of `grid`
                    continue
                if not kids and not any(True for _ in cursor.get_children()):
                    ext_start, _ = self.floc(cursor.extent.start)
                    if r is None or ext_start == 0:
                        return None
                return cursor
            return cursor
        return None

    def _is_constructor(self, cursor) -> bool:
        ref = cursor.referenced
        return ref is not None and ref.kind == self.K.CONSTRUCTOR

    # ------------------------------------------------------------------ top level
    def run(self) -> None:
        K = self.K
        root = self.tu.cursor
        top = list(root.get_children())
        for c in top:
            if c.kind == K.MACRO_DEFINITION:
                self.macro_defs[c.spelling] = c
                continue
            if c.kind == K.MACRO_INSTANTIATION:
                r = self._raw_range(c)
                if r is None:
                    continue
                ref = c.referenced
                fl = bool(self.api.macro_function_like(ref)) if ref is not None and ref.kind == K.MACRO_DEFINITION else False
                prev = self.macro_uses.get(r[0])
                if prev is None or r[1] > prev.end:
                    self.macro_uses[r[0]] = _MacroUse(r[0], r[1], c.spelling, fl)
        last_end = -1
        for use in sorted(self.macro_uses.values(), key=lambda u: (u.start, -u.end)):
            if use.start >= last_end:
                self.top_uses.append(use)
                last_end = use.end
        self._top_starts = [u.start for u in self.top_uses]
        for c in top:
            if c.kind == K.MACRO_DEFINITION:
                if self.in_main(c):
                    self.macro(c)
                continue
            if c.kind in (K.MACRO_INSTANTIATION, K.INCLUSION_DIRECTIVE):
                continue
            if not self.in_main(c):
                continue
            self.top_level_one(c, (), False)
        self._flush_globals()
        # a `#define` inside a function body is not a file-scope constant (nor is it one for tree-sitter)
        bodies = sorted((f.body.span.start, f.body.span.end) for f in self.functions)
        for name, m in list(self.macros.items()):
            i = bisect.bisect_right(bodies, (m.span.start, len(self.src) + 1)) - 1
            if i >= 0 and bodies[i][0] <= m.span.start < bodies[i][1]:
                del self.macros[name]

    def _raw_range(self, cursor) -> tuple[int, int] | None:
        ext = cursor.extent
        fs, so = self.floc(ext.start)
        fe, eo = self.floc(ext.end)
        if fs != self.main or fs == 0 or fe != self.main:
            return None
        if eo <= so:
            eo = self._token_end(so)
        return so, eo

    def top_level(self, cursor, scope: tuple[str, ...], template: bool) -> None:
        for c in cursor.get_children():
            if not self.in_main(c):
                continue
            self.top_level_one(c, scope, template)
        self._flush_globals()

    def top_level_one(self, c, scope: tuple[str, ...], template: bool) -> None:
        K = self.K
        k = c.kind
        if k != K.VAR_DECL:
            self._flush_globals()
        if k in (K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION):
            if c.is_definition():
                self.function(c, scope, template)
        elif k == K.FUNCTION_TEMPLATE:
            if c.is_definition():
                self.function(c, scope, True)
        elif k == K.VAR_DECL:
            self._global_var(c)
        elif k == K.NAMESPACE:
            self.top_level(c, scope + ((c.spelling,) if c.spelling else ()), template)
        elif k in (K.LINKAGE_SPEC, K.UNEXPOSED_DECL):
            self.top_level(c, scope, template)
        elif k in (K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL):
            self.struct(c, scope, template or self._written_as_template(c))  # `template <> class A<int>`
        elif k in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            self.struct(c, scope, True)

    def _written_as_template(self, c) -> bool:
        r = self.rng(c)
        first = next(_lex(self.src, r[0], r[1]), None) if r is not None else None
        return first is not None and first.text == "template"

    # File-scope declarations: consecutive VAR_DECLs of one declaration share their start.
    def _global_var(self, c) -> None:
        r = self.rng(c)
        if r is None:
            return
        if self.pending_globals and self.rng(self.pending_globals[0])[0] != r[0]:
            self._flush_globals()
        self.pending_globals.append(c)

    def _flush_globals(self) -> None:
        pending = self.pending_globals
        if not pending:
            return
        self.pending_globals = []
        decl = self.decl_from_vars(pending)
        if decl is not None:
            self.globals.append(decl)

    def macro(self, c) -> None:
        if self.api.macro_function_like(c):
            return
        name = c.spelling
        r = self._raw_range(c)
        if r is None or not name:
            return
        start = self.src.rfind(b"#", 0, r[0])
        if start < 0:
            start = r[0]
        # The logical line: up to the newline that is not escaped by a backslash.
        end = r[0]
        while True:
            nl = self.src.find(b"\n", end)
            if nl < 0:
                end = len(self.src)
                break
            if self.src[nl - 1:nl] == b"\\" or self.src[nl - 2:nl] == b"\\\r":
                end = nl + 1
                continue
            end = nl + 1
            break
        value_toks = [t for t in _lex(self.src, r[0], end)]
        # the first token is the name
        value_toks = value_toks[1:]
        text = self.text(value_toks[0].start, value_toks[-1].end).strip() if value_toks else ""
        self.macros[name] = s.Macro(name=name, text=text, value=_parse_macro_value(text), span=self.span(start, end))

    def struct(self, c, scope: tuple[str, ...], template: bool) -> None:
        K = self.K
        if not c.is_definition():
            return
        name = c.spelling
        if not name or "(unnamed" in name or "(anonymous" in name:
            name = "<anonymous>"
        members: list[str] = []
        for ch in c.get_children():
            if not self.in_main(ch):
                continue
            k = ch.kind
            if k == K.FIELD_DECL:
                if self._field_is_pointer(ch):
                    members.append(ch.spelling)
            elif k in (K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION, K.FUNCTION_DECL):
                if ch.is_definition():
                    self.function(ch, scope + (name,), template)
            elif k == K.FUNCTION_TEMPLATE:
                if ch.is_definition():
                    self.function(ch, scope + (name,), True)
            elif k in (K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL):
                self.struct(ch, scope + (name,), template)
            elif k in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                self.struct(ch, scope + (name,), True)
        self.structs.setdefault(name, []).extend(members)

    def _field_is_pointer(self, c) -> bool:
        r = self.rng(c)
        if r is None:
            return False
        name_off = self.floc(c.location)[1]
        toks = list(_lex(self.src, r[0], name_off))
        _, run = _split_declarator(toks)
        return any(t.text == "*" for t in run) or c.type.get_canonical().kind == self.api.ci.TypeKind.POINTER and self.macro_exact(r) is not None

    # ------------------------------------------------------------------ functions
    def function(self, c, scope: tuple[str, ...], template: bool) -> None:
        K = self.K
        r = self.rng(c)
        if r is None:
            return
        kids = self.children(c)
        body = next((k for k in reversed(kids) if k.kind == K.COMPOUND_STMT), None)
        if body is None:
            try_stmt = next((k for k in reversed(kids) if k.kind == K.CXX_TRY_STMT), None)
            if try_stmt is None:
                return
            body = next((k for k in try_stmt.get_children() if k.kind == K.COMPOUND_STMT), None)
            if body is None:
                return
        start = self._function_start(r[0], r[1])
        # under a `template <...>` header (an explicit specialisation `template <>` too, as tree-sitter
        # sees it), or a member of a class template
        first = next(_lex(self.src, r[0], r[1]), None)
        template = template or (first is not None and first.text == "template") or self._in_class_template(c)
        end = r[1]
        attrs = {k.kind for k in kids if k.kind in (K.CUDAGLOBAL_ATTR, K.CUDADEVICE_ATTR, K.CUDAHOST_ATTR)
                 and (self.rng(k) or (-1, -1))[0] >= start}
        is_kernel = K.CUDAGLOBAL_ATTR in attrs
        is_device = K.CUDADEVICE_ATTR in attrs and K.CUDAHOST_ATTR not in attrs
        name = c.spelling
        name_span = self._name_span(c, start)
        qualname = "::".join(self._qualifiers(c) + [name])
        params = [self.param(p) for p in kids if p.kind == K.PARM_DECL]
        saved = self.in_template
        self.in_template = template
        try:
            block = self.block(body)
        finally:
            self.in_template = saved
        self.functions.append(
            s.Function(
                span=self.span(start, end),
                name=name,
                params=params,
                body=block,
                is_kernel=is_kernel,
                is_device=is_device,
                is_template=template,
                qualname=qualname,
                name_span=name_span,
                has_errors=self.has_error_in(start, end),
                in_conditional=any(a <= start < b for a, b in self.conditional_regions),
            )
        )

    def _in_class_template(self, c) -> bool:
        K = self.K
        parent = c.semantic_parent
        while parent is not None and parent.kind != K.TRANSLATION_UNIT:
            if parent.kind in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.FUNCTION_TEMPLATE):
                return True
            parent = parent.semantic_parent
        return False

    def _qualifiers(self, c) -> list[str]:
        K = self.K
        out: list[str] = []
        parent = c.semantic_parent
        while parent is not None and parent.kind not in (K.TRANSLATION_UNIT,):
            if parent.kind in (K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.CLASS_TEMPLATE,
                               K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                if parent.spelling and "(unnamed" not in parent.spelling and "(anonymous" not in parent.spelling:
                    out.append(parent.spelling)
                elif parent.kind != K.NAMESPACE:
                    out.append("<anonymous>")
            parent = parent.semantic_parent
        return list(reversed(out))

    def _function_start(self, start: int, end: int) -> int:
        """Where tree-sitter's function_definition starts: after `template <...>` and `extern "C"`."""
        pos = start
        while True:
            toks = _lex(self.src, pos, end)
            first = next(toks, None)
            if first is None:
                return pos
            if first.text == "template":
                lt = next(toks, None)
                if lt is None or lt.text != "<":
                    return first.start
                close = self.match_close(lt.start)
                if close is None:
                    return first.start
                pos = close
                continue
            if first.text == "extern":
                lit = next(toks, None)
                if lit is not None and lit.kind == "str":
                    pos = lit.end
                    continue
            return first.start

    def _name_span(self, c, start: int) -> s.Span | None:
        f, name_off = self.floc(c.location)
        if f != self.main or self.macro_exact((name_off, self._token_end(name_off))) is not None:
            return None
        toks = list(_lex(self.src, name_off, name_off + 512))
        if not toks:
            return None
        end = toks[0].end
        if toks[0].text == "operator":
            # up to the `(` of the parameter list (`operator()` has its own `()` first)
            i = 1
            if i < len(toks) and toks[i].text == "(" and i + 1 < len(toks) and toks[i + 1].text == ")":
                i += 2
            while i < len(toks) and toks[i].text != "(":
                i += 1
            end = toks[i - 1].end if i - 1 >= 0 else end
        elif toks[0].text == "~" and len(toks) > 1:
            end = toks[1].end
        elif len(toks) > 1 and toks[1].text == "<":
            close = self.match_close(toks[1].start)
            if close is not None:
                end = close
        # qualifiers written before the name: `A::`, `ns::A<T>::`
        qstart = name_off
        before = self.src[max(start, name_off - 512):name_off]
        m = re.search(rb"((?:[A-Za-z_]\w*\s*(?:<[^;{}()]*?>)?\s*::\s*)+)$", before)
        if m:
            qstart = name_off - len(before) + m.start(1)
        return self.span(qstart, end)

    def param(self, p) -> s.Param:
        r = self.rng(p)
        name = p.spelling or ""
        if r is None:
            return s.Param(name=name, type=p.type.spelling, is_pointer=self._type_is_pointer(p.type), span=None)
        if self.macro_exact(r) is not None:
            return s.Param(name=name, type=p.type.spelling, is_pointer=self._type_is_pointer(p.type), span=self.span(*r))
        if name:
            name_off = self.floc(p.location)[1]
            toks = list(_lex(self.src, r[0], name_off))
            after = name_off + len(name.encode())
        else:
            toks = list(_lex(self.src, r[0], r[1]))
            after = r[1]
        spec, run = _split_declarator(toks)
        dims = self._bracket_ranges(after, r[1] + 1) if name else []
        base = self._type_text(spec)
        prefix = _prefix(run) + "[]" * len(dims)
        if not name and any(t.text == "[" for t in toks):
            prefix += "[]"
        is_pointer = any(t.text == "*" for t in run) or bool(dims) or (not name and any(t.text == "[" for t in toks))
        return s.Param(name=name, type=(base + " " + prefix).strip(), is_pointer=is_pointer, span=self.span(*r))

    def _type_is_pointer(self, t) -> bool:
        tk = self.api.ci.TypeKind
        return t.kind in (tk.POINTER, tk.CONSTANTARRAY, tk.INCOMPLETEARRAY, tk.VARIABLEARRAY, tk.DEPENDENTSIZEDARRAY)

    def _type_text(self, spec: list[_Tok]) -> str:
        kept: list[_Tok] = []
        i = 0
        while i < len(spec):
            t = spec[i]
            if t.text in _SPEC_WITH_ARGS and i + 1 < len(spec) and spec[i + 1].text == "(":
                close = self.match_close(spec[i + 1].start)
                i += 1
                while i < len(spec) and (close is None or spec[i].start < close):
                    i += 1
                continue
            if t.text == "[" and i + 1 < len(spec) and spec[i + 1].text == "[":  # [[attribute]]
                depth = 0
                while i < len(spec):
                    depth += {"[": 1, "]": -1}.get(spec[i].text, 0)
                    i += 1
                    if depth == 0:
                        break
                continue
            if t.text in _SPEC_QUALIFIERS:
                i += 1
                continue
            kept.append(t)
            i += 1
        if not kept:
            return ""
        return self.text(kept[0].start, kept[-1].end)

    def _bracket_ranges(self, pos: int, limit: int) -> list[tuple[int, int]]:
        """`[...]` groups that directly follow `pos` (array dimensions after a declarator name)."""
        out: list[tuple[int, int]] = []
        while True:
            tok = next(_lex(self.src, pos, limit + 4096), None)
            if tok is None or tok.text != "[":
                return out
            close = self.match_close(tok.start)
            if close is None:
                return out
            out.append((tok.start, close))
            pos = close

    # ------------------------------------------------------------------ declarations
    def decl_from_vars(self, vars_: list, stmt_range: tuple[int, int] | None = None) -> s.Decl | None:
        if not vars_:
            return None
        first = self.rng(vars_[0])
        if first is None:
            return None
        macro = self.macro_exact(first)
        if stmt_range is None:
            last = self.rng(vars_[-1]) or first
            end = self._var_end(vars_[-1], last)
            stmt_range = (first[0], self.extend_semicolon(end))
        out: list[s.VarDecl] = []
        prev_end = None
        spec_toks: list[_Tok] | None = None
        for v in vars_:
            vd, prev_end, spec_toks = self.var_decl(v, first[0], prev_end, spec_toks, macro is not None)
            if vd is not None:
                out.append(vd)
        return s.Decl(self.span(*stmt_range), out)

    def _var_end(self, v, r: tuple[int, int]) -> int:
        """clang's VarDecl extent may stop before a closing `)` of a direct initializer."""
        name_off = self.floc(v.location)[1]
        if self.macro_exact(r) is not None:
            return r[1]
        pos = name_off + len(v.spelling.encode())
        for a, b in self._bracket_ranges(pos, r[1]):
            pos = b
        tok = next(_lex(self.src, pos, pos + 4096), None)
        if tok is not None and tok.text in ("(", "{") and tok.start < r[1] + 1:
            close = self.match_close(tok.start)
            if close is not None:
                return max(r[1], close)
        return r[1]

    def var_decl(self, v, decl_start: int, prev_end: int | None, spec_toks: list[_Tok] | None, in_macro: bool):
        r = self.rng(v)
        name = v.spelling
        if r is None:
            return None, prev_end, spec_toks
        kids = self.children(v)
        exprs = [k for k in kids if self.is_expr(k)]
        if in_macro or self.macro_exact(r) is not None:
            init = None
            if exprs:
                init_c = self.unwrap(exprs[-1])
                init = self.expr(init_c) if init_c is not None else None
            return (
                s.VarDecl(self.span(*r), name, v.type.spelling, self._type_is_pointer(v.type), init),
                r[1],
                spec_toks,
            )
        name_off = self.floc(v.location)[1]
        name_end = name_off + len(name.encode())
        if prev_end is None:
            toks = list(_lex(self.src, decl_start, name_off))
            spec, run = _split_declarator(toks)
            spec_toks = spec
        else:
            toks = list(_lex(self.src, prev_end, name_off))
            if toks and toks[0].text == ",":
                toks = toks[1:]
            _, run = _split_declarator(toks)
            run = toks if all(t.text in ("*", "&", "&&", "(") or t.text in _DECLARATOR_QUALIFIERS for t in toks) else run
        spec = spec_toks or []
        spec_words = {t.text for t in spec}
        dims_ranges = self._bracket_ranges(name_end, r[1])
        after_dims = dims_ranges[-1][1] if dims_ranges else name_end
        dims: list[s.Expr] = []
        init: s.Expr | None = None
        rest: list = []
        dim_cursors = []
        for e in exprs:
            er = self.rng(e)
            if er is not None and any(a <= er[0] < b for a, b in dims_ranges):
                dim_cursors.append((er[0], e))
            else:
                rest.append(e)
        for _, e in sorted(dim_cursors, key=lambda x: x[0]):
            ue = self.unwrap(e)
            if ue is not None:
                dims.append(self.expr(ue))
        nxt = next(_lex(self.src, after_dims, after_dims + 4096), None)
        end = self._var_end(v, r)
        if nxt is not None and rest:
            init_c = rest[-1]
            if nxt.text == "=":
                ue = self.unwrap(init_c)
                init = self.expr(ue) if ue is not None else None
            elif nxt.text in ("(", "{"):
                kind = "argument_list" if nxt.text == "(" else "initializer_list"
                args = self._construct_args(init_c)
                close = self.match_close(nxt.start) or end
                init = s.Other(self.span(nxt.start, close), kind, args)
        declarator_start = run[0].start if run else name_off
        type_text = self._type_text(spec)
        prefix = _prefix(run) + "[]" * len(dims_ranges)
        is_pointer = (any(t.text == "*" for t in run) or bool(dims_ranges)) and not dims
        vd = s.VarDecl(
            span=self.span(declarator_start, end),
            name=name,
            type=(type_text + " " + prefix).strip(),
            is_pointer=is_pointer,
            init=init,
            is_const="const" in spec_words,
            is_constexpr="constexpr" in spec_words,
            is_static="static" in spec_words,
            array_dims=dims,
        )
        return vd, end, spec_toks

    def _construct_args(self, c) -> list[s.Expr]:
        """The arguments of a direct initialisation `T x(a, b)` / `T x{a, b}`."""
        K = self.K
        cur = c
        while cur is not None and cur.kind == K.UNEXPOSED_EXPR:
            kids = self.expr_children(cur)
            if len(kids) != 1:
                break
            cur = kids[0]
        if cur is None:
            return []
        if (cur.kind == K.CALL_EXPR and self._is_constructor(cur)) or cur.kind in (K.INIT_LIST_EXPR, K.PAREN_EXPR):
            if cur.kind == K.PAREN_EXPR:
                pass
            else:
                kids = self.within(self.expr_children(cur), self.rng(c))
                return [self.expr(x) for x in (self.unwrap(k) for k in kids) if x is not None]
        ue = self.unwrap(cur)
        return [self.expr(ue)] if ue is not None else []

    # ------------------------------------------------------------------ statements
    def block(self, c) -> s.Block:
        stmts: list[s.Stmt] = []
        r = self.rng(c)
        for ch in c.get_children():
            st = self.macro_statement(self.stmt(ch), ch, r)
            if st is not None:
                stmts.append(st)
        return s.Block(self.span(*r) if r is not None else self.span(0, 0), stmts)

    def stmt_span(self, c, r: tuple[int, int] | None = None) -> s.Span:
        r = r or self.rng(c) or (0, 0)
        return self.span(r[0], self.extend_semicolon(r[1]))

    def body(self, c, parent_range: tuple[int, int]) -> s.Stmt:
        if c is None:
            return s.Block(self.span(*parent_range), [])
        st = self.macro_statement(self.stmt(c), c, parent_range)
        if st is None:
            return s.Block(self.cspan(c, parent_range), [])
        return st

    def stmt(self, c) -> s.Stmt | None:
        K = self.K
        k = c.kind
        if k == K.COMPOUND_STMT:
            return self.block(c)
        if k == K.DECL_STMT:
            return self.decl_stmt(c)
        if k == K.IF_STMT:
            return self.if_stmt(c)
        if k == K.FOR_STMT:
            return self.for_stmt(c)
        if k == K.CXX_FOR_RANGE_STMT:
            return self.range_for(c)
        if k == K.WHILE_STMT:
            return self.while_stmt(c)
        if k == K.DO_STMT:
            return self.do_stmt(c)
        if k == K.SWITCH_STMT:
            return self.switch_stmt(c)
        if k == K.RETURN_STMT:
            kids = [x for x in (self.unwrap(e) for e in self.expr_children(c)) if x is not None]
            return s.Return(self.stmt_span(c), self.expr(kids[0]) if kids else None)
        if k in (K.BREAK_STMT, K.CONTINUE_STMT, K.GOTO_STMT, K.INDIRECT_GOTO_STMT):
            kind = {K.BREAK_STMT: "break", K.CONTINUE_STMT: "continue"}.get(k, "goto")
            return s.Jump(self.stmt_span(c), kind)
        if k in (K.LABEL_STMT, K.CASE_STMT, K.DEFAULT_STMT):
            kids = [x for x in c.get_children() if x.kind.is_statement() or self.is_expr(x)]
            return self.stmt(kids[-1]) if kids else None
        if k == K.CXX_TRY_STMT:
            inner = next((x for x in c.get_children() if x.kind == K.COMPOUND_STMT), None)
            return self.block(inner) if inner is not None else None
        if k == K.NULL_STMT:
            return None
        if k == K.CXX_THROW_EXPR:
            return None  # tree-sitter's throw_statement is not lowered either
        if self.is_expr(c):
            r = self.rng(c)
            if r is None:
                return None
            ue = self.unwrap(c)
            if ue is None:
                return None
            return s.ExprStmt(self.stmt_span(c, r), self.expr(ue))
        if k in (K.ASM_STMT, K.MS_ASM_STMT):
            r = self.rng(c)
            if r is None:
                return None
            sp = self.stmt_span(c, r)
            return s.ExprStmt(sp, s.Other(self.span(*r), "gnu_asm_expression", self._subs(self.expr_children(c), sp)))
        if k.is_statement():
            # an attributed statement (`#pragma unroll` / `[[likely]]` before a loop) and the like:
            # the statement it wraps
            inner = [x for x in (self.stmt(ch) for ch in c.get_children()) if x is not None]
            if len(inner) == 1:
                return inner[0]
            if inner:
                return s.Block(self.cspan(c), inner)
        return None

    def decl_stmt(self, c) -> s.Stmt | None:
        K = self.K
        kids = self.children(c)
        vars_ = [k for k in kids if k.kind == K.VAR_DECL]
        r = self.rng(c)
        if r is None:
            return None
        span_range = (r[0], self.extend_semicolon(r[1]))
        if not vars_:
            if any(k.kind == K.FUNCTION_DECL for k in kids):
                return s.Decl(self.span(*span_range), [])
            return None
        return self.decl_from_vars(vars_, span_range)

    def _paren_region(self, c, r: tuple[int, int], keyword: str) -> tuple[int, int] | None:
        """The `( ... )` after a statement keyword (`if`, `while`, `for`, `switch`)."""
        if self.macro_exact(r) is not None:
            return None
        toks = _lex(self.src, r[0], r[1])
        first = next(toks, None)
        if first is None or first.text != keyword:
            return None
        nxt = next(toks, None)
        if nxt is not None and nxt.text == "constexpr":
            nxt = next(toks, None)
        if nxt is None or nxt.text != "(":
            return None
        close = self.match_close(nxt.start)
        if close is None:
            return None
        return nxt.start, close

    def _condition(self, parts: list, region: tuple[int, int] | None) -> s.Expr | None:
        """tree-sitter's condition: a declared variable's value, `init; cond` as Other('condition')."""
        K = self.K
        if not parts:
            return None
        var = next((p for p in parts if p.kind == K.VAR_DECL), None)
        if var is not None:
            exprs = [e for e in var.get_children() if self.is_expr(e)]
            ue = self.unwrap(exprs[-1]) if exprs else None
            return self.expr(ue) if ue is not None else None
        if len(parts) > 1:
            exprs: list[s.Expr] = []
            for p in parts:
                if p.kind == K.DECL_STMT:
                    for v in p.get_children():
                        if v.kind == K.VAR_DECL:
                            ve = [e for e in v.get_children() if self.is_expr(e)]
                            if ve:
                                ue = self.unwrap(ve[-1])
                                if ue is not None:
                                    exprs.append(self.expr(ue))
                else:
                    ue = self.unwrap(p)
                    if ue is not None:
                        exprs.append(self.expr(ue))
            sp = self.span(*region) if region else self.cspan(parts[0])
            return s.Other(sp, "condition", exprs)
        ue = self.unwrap(parts[0])
        return self.expr(ue) if ue is not None else None

    def _split_by_region(self, kids: list, region: tuple[int, int] | None, n_after: int) -> tuple[list, list]:
        """Children inside the keyword's parentheses, and those after (the bodies)."""
        if region is not None:
            inside, after = [], []
            for k in kids:
                kr = self.rng(k)
                (inside if kr is not None and kr[0] < region[1] else after).append(k)
            return inside, after
        # Inside a macro body every child has the same span: fall back to clang's child order.
        if len(kids) <= n_after:
            return kids[:1], kids[1:]
        return kids[: len(kids) - n_after], kids[len(kids) - n_after:]

    def if_stmt(self, c) -> s.Stmt:
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        region = self._paren_region(c, r, "if")
        if region is None:
            # then (and maybe else) are the last children; a condition variable comes first
            n_stmt = 2 if len(kids) >= 3 and kids[0].kind != self.K.VAR_DECL or len(kids) >= 4 else 1
            inside, after = self._split_by_region(kids, None, n_stmt)
        else:
            inside, after = self._split_by_region(kids, region, 0)
        cond = self._condition(inside, region)
        then_c = after[0] if after else None
        else_c = after[1] if len(after) > 1 else None
        then = self.body(then_c, r)
        orelse = self.stmt(else_c) if else_c is not None else None
        return s.If(self._span_over(r, then, orelse), cond, then, orelse)

    def while_stmt(self, c) -> s.Stmt:
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        region = self._paren_region(c, r, "while")
        inside, after = self._split_by_region(kids, region, 1)
        body = self.body(after[-1] if after else None, r)
        return s.Loop(self._span_over(r, body), "while", body, None, self._condition(inside, region), None)

    def do_stmt(self, c) -> s.Stmt:
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        body_c = kids[0] if kids else None
        cond_c = self.unwrap(kids[1]) if len(kids) > 1 else None
        cond = self.expr(cond_c) if cond_c is not None else None
        sp = self.span(r[0], self.extend_semicolon(r[1]))
        body = self.body(body_c, r)
        if isinstance(cond, s.Literal) and (cond.value == 0 or cond.text == "false"):
            # `do { ... } while (0)`: a statement-shaped macro body, not a loop
            return s.Block(sp, [body])
        return s.Loop(sp, "do", body, None, cond, None)

    def for_stmt(self, c) -> s.Stmt:
        K = self.K
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        init_c = cond_c = step_c = body_c = None
        region = self._paren_region(c, r, "for")
        semis: list[int] = []
        if region is not None:
            depth = 0
            for tok in _lex(self.src, region[0] + 1, region[1] - 1):
                if tok.text in ("(", "[", "{"):
                    depth += 1
                elif tok.text in (")", "]", "}"):
                    depth -= 1
                elif tok.text == ";" and depth == 0:
                    semis.append(tok.end)
        if region is not None and len(semis) == 2:
            for k in kids:
                kr = self.rng(k)
                at = kr[0] if kr is not None else region[1]
                if at >= region[1]:
                    body_c = k
                elif at < semis[0]:
                    init_c = k
                elif at < semis[1]:
                    cond_c = k
                else:
                    step_c = k
        else:
            rest = list(kids)
            body_c = rest.pop() if rest else None
            if rest and rest[0].kind == K.DECL_STMT or len(rest) == 3:
                init_c = rest.pop(0)
            if rest:
                cond_c = rest.pop(0)
            if rest:
                step_c = rest.pop(0)
        init: s.Stmt | None = None
        if init_c is not None:
            if init_c.kind == K.DECL_STMT:
                init = self.decl_stmt(init_c)
            else:
                ue = self.unwrap(init_c)
                if ue is not None:
                    init = s.ExprStmt(self.cspan(init_c), self.expr(ue))
        cond = None
        if cond_c is not None:
            cond = self._condition([cond_c], None)
        step = None
        if step_c is not None:
            ue = self.unwrap(step_c)
            step = self.expr(ue) if ue is not None else None
        body = self.body(body_c, r)
        return s.Loop(self._span_over(r, body), "for", body, init, cond, step)

    def range_for(self, c) -> s.Stmt:
        K = self.K
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        var = next((k for k in kids if k.kind == K.VAR_DECL), None)
        body_c = kids[-1] if kids else None
        range_c = None
        for k in kids:
            if k is var or k is body_c:
                continue
            if self.is_expr(k):
                range_c = k
        ue = self.unwrap(range_c) if range_c is not None else None
        range_e = self.expr(ue) if ue is not None else None
        init: s.Stmt | None = None
        if var is not None:
            vr = self.rng(var)
            if vr is not None:
                name_off = self.floc(var.location)[1]
                if self.macro_exact(vr) is None:
                    toks = list(_lex(self.src, vr[0], name_off))
                    spec, run = _split_declarator(toks)
                    dstart = run[0].start if run else name_off
                    dsp = self.span(dstart, name_off + len(var.spelling.encode()))
                    tname = self._type_text(spec)
                    is_ptr = any(t.text == "*" for t in run)
                else:
                    dsp = self.span(*vr)
                    tname = var.type.spelling
                    is_ptr = self._type_is_pointer(var.type)
                init = s.Decl(dsp, [s.VarDecl(dsp, var.spelling, tname, is_ptr, range_e)])
        body = self.body(body_c, r)
        return s.Loop(self._span_over(r, body), "range_for", body, init, range_e, None)

    def switch_stmt(self, c) -> s.Stmt:
        """One `If` per case that has statements; its condition is `v == A || v == B` over the labels of
        the empty cases falling through to it (`default` is the name `default`), as tree-sitter's."""
        K = self.K
        r = self.rng(c) or (0, 0)
        kids = self.children(c)
        region = self._paren_region(c, r, "switch")
        inside, after = self._split_by_region(kids, region, 1)
        cond = self._condition(inside, region)
        body_c = after[-1] if after else None
        cases: list[s.Stmt] = []
        if body_c is None:
            return s.Block(self.span(*r), cases)
        items = list(body_c.get_children()) if body_c.kind == K.COMPOUND_STMT else [body_c]
        labels: list[s.Expr | None] = []
        current: list | None = None  # [start, end, statements] of the case being filled

        def close() -> None:
            nonlocal current, labels
            if current is not None and current[2]:
                sp = self.span(current[0], current[1])
                cases.append(s.If(sp, s.case_condition(cond, labels, sp), s.Block(sp, current[2]), None))
                labels = []
            current = None

        for item in items:
            node = item
            while node is not None and node.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                close()
                nr = self.rng(node) or r
                sub = list(node.get_children())
                if node.kind == K.CASE_STMT:
                    value = next((x for x in sub if self.is_expr(x)), None)
                    uv = self.unwrap(value) if value is not None else None
                    labels.append(self.expr(uv) if uv is not None else None)
                    inner = sub[-1] if len(sub) > 1 else None
                else:
                    labels.append(None)
                    inner = sub[-1] if sub else None
                if inner is not None and inner.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                    node = inner  # `case 1: case 2: ...`
                    continue
                current = [nr[0], nr[1], []]
                st = self.stmt(inner) if inner is not None else None
                if st is not None:
                    current[2].append(st)
                    current[1] = max(current[1], st.span.end)
                node = None
            if item.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                continue
            st = self.stmt(item)
            if st is None:
                continue
            if current is None:
                close()
                cases.append(st)
            else:
                current[2].append(st)
                current[1] = max(current[1], st.span.end)
        close()
        return s.Block(self.span(*r), cases)

    def _span_over(self, r: tuple[int, int], *parts) -> s.Span:
        """A compound statement's span reaches the `;` of its last sub-statement."""
        end = r[1]
        for p in parts:
            if p is not None and p.span.end > end and p.span.start >= r[0]:
                end = p.span.end
        return self.span(r[0], end)

    # ------------------------------------------------------------------ expressions
    def expr(self, c) -> s.Expr:
        r = self.rng(c)
        sp = self.span(*r) if r is not None else self.span(0, 0)
        use = self.macro_exact(r)
        if use is not None and not use.function_like and use.start not in self.expanding:
            collapsed = self._object_macro(c, use, sp)
            if collapsed is not None:
                return collapsed
        if use is not None and use.start not in self.expanding:
            self.expanding.add(use.start)
            try:
                return self._expr(c, r, sp, use)
            finally:
                self.expanding.discard(use.start)
        return self._expr(c, r, sp, use)

    def _expr(self, c, r, sp: s.Span, use: _MacroUse | None) -> s.Expr:
        K = self.K
        k = c.kind
        if k in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            if use is not None or r is None:
                return s.Name(sp, c.spelling)
            return s.Name(sp, s.strip_templates(self.text(*r)) or c.spelling)
        if k == K.MEMBER_REF_EXPR:
            return self.member(c, r, sp, use is not None)
        if k == K.ARRAY_SUBSCRIPT_EXPR:
            kids = self.expr_children(c)
            base = self._sub(kids[0], sp) if kids else s.Other(sp, "missing")
            index = self._sub(kids[1], sp) if len(kids) > 1 else s.Other(sp, "missing")
            return s.Index(sp, base, index)
        if k == K.UNARY_OPERATOR:
            return self.unary(c, sp)
        if k in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR):
            return self.binary(c, sp)
        if k == K.CALL_EXPR:
            return self.call(c, r, sp, use is not None)
        if k == K.CSTYLE_CAST_EXPR:
            kids = self.expr_children(c)
            operand = self._sub(kids[-1], sp) if kids else s.Other(sp, "missing")
            type_text = c.type.spelling
            if use is None and r is not None:
                close = self.match_close(r[0])
                if close is not None:
                    type_text = self.text(r[0] + 1, close - 1).strip()
            return s.Cast(sp, type_text, operand)
        if k in (K.CXX_STATIC_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_CONST_CAST_EXPR, K.CXX_DYNAMIC_CAST_EXPR):
            kids = self.expr_children(c)
            operand = self._sub(kids[-1], sp) if kids else s.Other(sp, "missing")
            type_text = c.type.spelling
            if use is None and r is not None:
                lt = next((t for t in _lex(self.src, r[0], r[1]) if t.text == "<"), None)
                close = self.match_close(lt.start) if lt is not None else None
                if close is not None:
                    type_text = self.text(lt.start + 1, close - 1)
            return s.Cast(sp, type_text, operand)
        if k == K.CXX_FUNCTIONAL_CAST_EXPR:
            return self.functional_cast(c, r, sp, use is not None)
        if k == K.CXX_UNARY_EXPR:
            return self.sizeof(c, r, sp, use is not None)
        if k in (K.INTEGER_LITERAL, K.FLOATING_LITERAL):
            if use is not None or r is None:
                value = self.evaluate(c)
                return s.Literal(sp, str(value) if value is not None else "", value)
            text = self.text(*r)
            return s.Literal(sp, text, s.parse_number(text))
        if k in (K.STRING_LITERAL, K.CHARACTER_LITERAL):
            if use is not None or r is None:
                return s.Literal(sp, c.spelling, None)
            return s.Literal(sp, self.text(*r), None)
        if k == K.CXX_BOOL_LITERAL_EXPR:
            if use is not None or r is None:
                return s.Literal(sp, "true" if self.evaluate(c) else "false", None)
            return s.Literal(sp, self.text(*r), None)
        if k in (K.CXX_NULL_PTR_LITERAL_EXPR, K.GNU_NULL_EXPR):
            return s.Literal(sp, self.text(*r) if r is not None else "nullptr", None)
        if k == K.CONDITIONAL_OPERATOR:
            kids = self.expr_children(c)
            if len(kids) == 3:
                return s.Conditional(sp, self._sub(kids[0], sp), self._sub(kids[1], sp), self._sub(kids[2], sp))
            return s.Other(sp, "conditional_expression", [self._sub(x, sp) for x in kids])
        if k == K.CXX_THIS_EXPR:
            return s.Name(sp, "this")
        if k == K.INIT_LIST_EXPR:
            return s.Other(sp, "initializer_list", self._subs(self.expr_children(c), sp))
        if k == K.CXX_NEW_EXPR:
            return self.new_expr(c, r, sp, use is not None)
        if k == K.CXX_DELETE_EXPR:
            return s.Other(sp, "delete_expression", self._subs(self.expr_children(c), sp))
        if k == K.LAMBDA_EXPR:
            return self.lambda_expr(c, sp)
        if k == K.CXX_THROW_EXPR:
            return s.Other(sp, "throw_expression", self._subs(self.expr_children(c), sp))
        if k == K.PAREN_EXPR or k == K.UNEXPOSED_EXPR:
            kids = self.expr_children(c)
            if len(kids) == 1:
                return self._sub(kids[0], sp)
            return s.Other(sp, "unexposed", self._subs(kids, sp))
        return s.Other(sp, k.name.lower(), self._subs(self.expr_children(c), sp))

    def within(self, kids: list, r: tuple[int, int] | None) -> list:
        """Children written inside `r`: drops default arguments, which clang shows at their declaration."""
        if r is None:
            return [k for k in kids if self.rng(k) is not None]
        out = []
        for k in kids:
            kr = self.rng(k)
            if kr is not None and r[0] <= kr[0] and kr[1] <= r[1]:
                out.append(k)
        return out

    def _sub(self, c, sp: s.Span) -> s.Expr:
        ue = self.unwrap(c)
        if ue is None:
            return s.Other(sp, "missing")
        return self.expr(ue)

    def _subs(self, kids: Iterable, sp: s.Span) -> list[s.Expr]:
        out: list[s.Expr] = []
        for k in kids:
            ue = self.unwrap(k)
            if ue is not None:
                out.append(self.expr(ue))
        return out

    def _object_macro(self, c, use: _MacroUse, sp: s.Span) -> s.Expr | None:
        """An expression that is exactly one object-like macro: `N` -> Literal('N', 1024)."""
        K = self.K
        name = self.text(use.start, use.end)
        if c.kind in (K.GNU_NULL_EXPR, K.CXX_NULL_PTR_LITERAL_EXPR):
            return s.Literal(sp, name, None)
        if self._has_side_effects(c):
            return None
        value = None
        if c.kind in (K.INTEGER_LITERAL, K.FLOATING_LITERAL) or not self.in_template:
            value = self.evaluate(c)
        if value is not None:
            return s.Literal(sp, name, value)
        return s.Name(sp, name)

    def _has_side_effects(self, c) -> bool:
        K = self.K
        stack = [c]
        while stack:
            cur = stack.pop()
            k = cur.kind
            if k == K.CALL_EXPR and not self._is_constructor(cur):
                return True
            if k in (K.COMPOUND_ASSIGNMENT_OPERATOR, K.CXX_NEW_EXPR, K.CXX_DELETE_EXPR, K.LAMBDA_EXPR, K.CXX_THROW_EXPR):
                return True
            if k == K.BINARY_OPERATOR and self.api.binop_kind(cur) == 22:
                return True
            if k == K.UNARY_OPERATOR and self.api.unop_kind(cur) in (1, 2, 3, 4):
                return True
            stack.extend(cur.get_children())
        return False

    def member(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        K = self.K
        kids = self.expr_children(c)
        field = c.spelling
        if not kids:
            return s.Name(sp, field)  # a member used through the implicit `this`
        base_c = kids[0]
        # `it->x` through an overloaded operator-> : the base is the object itself
        base_u = self.unwrap(base_c)
        if base_u is not None and base_u.kind == K.CXX_THIS_EXPR and self.rng(base_u) is None:
            return s.Name(sp, field)
        base = self.expr(base_u) if base_u is not None else s.Other(sp, "missing")
        arrow = False
        br = self.rng(base_c)
        if not in_macro and r is not None and br is not None and br[1] <= r[1]:
            between = self.src[br[1]:r[1]]
            arrow = b"->" in between
            if isinstance(base, s.Other) and base.kind == "implicit_this":
                return s.Name(sp, field)
        else:
            tk = self.api.ci.TypeKind
            arrow = base_c.type.get_canonical().kind == tk.POINTER
        if r is not None and not in_macro:
            # the field name as written (without template arguments)
            name_off = self.floc(c.location)[1]
            tok = next(_lex(self.src, name_off, r[1] + 1), None)
            if tok is not None and tok.kind == "id" and tok.text != "template":
                field = tok.text
        return s.Member(sp, base, field, arrow)

    _UNARY_OPS = {1: "++", 2: "--", 3: "++", 4: "--", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~", 10: "!",
                  11: "__real", 12: "__imag", 13: "__extension__", 14: "co_await"}
    _BINARY_OPS = {1: ".*", 2: "->*", 3: "*", 4: "/", 5: "%", 6: "+", 7: "-", 8: "<<", 9: ">>", 10: "<=>",
                   11: "<", 12: ">", 13: "<=", 14: ">=", 15: "==", 16: "!=", 17: "&", 18: "^", 19: "|",
                   20: "&&", 21: "||", 22: "=", 23: "*=", 24: "/=", 25: "%=", 26: "+=", 27: "-=", 28: "<<=",
                   29: ">>=", 30: "&=", 31: "^=", 32: "|=", 33: ","}

    def unary(self, c, sp: s.Span) -> s.Expr:
        kind = self.api.unop_kind(c)
        kids = self.expr_children(c)
        operand = self._sub(kids[0], sp) if kids else s.Other(sp, "missing")
        if kind == 13:
            return operand
        if kind in (7, 8) and isinstance(operand, s.Literal) and operand.value is not None \
                and operand.text[:1] in tuple("0123456789.") \
                and operand.span.start == sp.start + 1 and operand.span.end == sp.end \
                and self.src[sp.start:sp.start + 1] in (b"-", b"+"):
            # tree-sitter reads `-1` as one number literal
            text = self.text(sp.start, sp.end)
            return s.Literal(sp, text, -operand.value if kind == 8 else operand.value)
        op = self._UNARY_OPS.get(kind)
        if op is None:
            return s.Other(sp, "unary_expression", [operand])
        return s.Unary(sp, op, operand, kind in (1, 2))

    def binary(self, c, sp: s.Span) -> s.Expr:
        kind = self.api.binop_kind(c)
        kids = self.expr_children(c)
        left = self._sub(kids[0], sp) if kids else s.Other(sp, "missing")
        right = self._sub(kids[1], sp) if len(kids) > 1 else s.Other(sp, "missing")
        op = self._BINARY_OPS.get(kind)
        if op is None:
            op = self._op_from_source(c, kids)
        if op == ",":
            return s.Other(sp, "comma", [left, right])
        if op in ("=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|="):
            return s.Assign(sp, op, left, right)
        return s.Binary(sp, op or "?", left, right)

    def _op_from_source(self, c, kids: list) -> str | None:
        if len(kids) < 2:
            return None
        a = self.rng(kids[0])
        b = self.rng(kids[1])
        if a is None or b is None or a[1] > b[0]:
            return None
        tok = next(_lex(self.src, a[1], b[0]), None)
        return tok.text if tok is not None else None

    def call(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        K = self.K
        kids = self.within([k for k in c.get_children() if self.is_expr(k)], r)
        # a kernel launch: CUDAKernelCallExpr = callee, the configuration call, the arguments
        if len(kids) >= 2:
            config = self.unwrap(kids[1])
            if config is not None and config.kind == K.CALL_EXPR and config.spelling in _CONFIG_CALLS:
                callee = self._callee(kids[0], sp)
                cfg_args = self.within([k for k in config.get_children() if self.is_expr(k)][1:], self.rng(config))
                launch = self._subs(cfg_args, sp)
                args = self._subs(kids[2:], sp)
                return s.Call(sp, callee, args, launch)
        first = next(iter(c.get_children()), None)
        if self._is_constructor(c) or (first is not None and first.kind in (K.TYPE_REF, K.TEMPLATE_REF)):
            # `dim3(2, 2)`, `T(0)` in a template, `dim3{1, 2}`: a construction
            return self.construct(c, r, sp, in_macro, self._subs(kids, sp))
        op = self._operator_call(c, kids, r, in_macro)
        if op is not None:
            return op
        if not kids:
            return s.Call(sp, s.Name(sp, c.spelling), [])
        callee = self._callee(kids[0], sp)
        return s.Call(sp, callee, self._subs(kids[1:], sp))

    def construct(self, c, r, sp: s.Span, in_macro: bool, args: list[s.Expr]) -> s.Expr:
        """An explicit construction as tree-sitter sees it: `T(a)` a call of `T`, `T{a}` a compound literal."""
        type_text = c.spelling or c.type.spelling
        if r is None or in_macro:
            return s.Call(sp, s.Name(sp, s.strip_templates(type_text)), args)
        tok = next((t for t in _lex(self.src, r[0], r[1]) if t.text in ("(", "{")), None)
        if tok is not None and tok.text == "{" and tok.start == r[0]:
            return s.Other(sp, "initializer_list", args)  # `dim3 g = {1, 2}`
        if tok is None:
            return s.Call(sp, s.Name(sp, s.strip_templates(type_text)), args)
        type_text = self.text(r[0], tok.start).strip() or type_text
        if tok.text == "{":
            close = self.match_close(tok.start) or r[1]
            return s.Other(sp, "compound_literal_expression", [s.Other(self.span(tok.start, close), "initializer_list", args)])
        name_sp = self.span(r[0], r[0] + len(type_text.encode()))
        return s.Call(sp, s.Name(name_sp, s.strip_templates(type_text)), args)

    def _callee(self, c, sp: s.Span) -> s.Expr:
        ue = self.unwrap(c)
        if ue is None:
            return s.Other(sp, "missing")
        return self.expr(ue)

    def _operator_call(self, c, kids: list, r, in_macro: bool) -> s.Expr | None:
        """`a[i]`, `a = b`, `x + y`, `*it`, `f(x)` on class types (CXXOperatorCallExpr)."""
        K = self.K
        name = c.spelling or ""
        if (name and not name.startswith("operator")) or not kids:
            return None
        op_index = None
        for i, k in enumerate(kids):
            u = k
            while u is not None and u.kind == K.UNEXPOSED_EXPR:
                inner = self.expr_children(u)
                u = inner[0] if len(inner) == 1 else None
            spelling = u.spelling if u is not None else ""
            if u is not None and u.kind == K.DECL_REF_EXPR and not spelling:
                # a dependent operator in a template: an unresolved lookup of `operator+=`
                ref = next((x for x in u.get_children() if x.kind == K.OVERLOADED_DECL_REF), None)
                spelling = ref.spelling if ref is not None else ""
            if u is not None and u.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) \
                    and (spelling or "").startswith("operator"):
                op_index = i
                name = name or spelling
                break
        if op_index is None:
            return None
        if op_index == 0 and r is not None and not in_macro and self.src[r[0]:r[0] + 8] == b"operator":
            return None  # `operator+(a, b)` written as a call
        sp = self.span(*r) if r is not None else self.span(0, 0)
        operands = [k for i, k in enumerate(kids) if i != op_index]
        op = name[len("operator"):].strip()
        vals = self._subs(operands, sp)
        if op == "[]" and len(vals) == 2:
            return s.Index(sp, vals[0], vals[1])
        if op == "()" and vals:
            return s.Call(sp, vals[0], vals[1:])
        if op == "->" and len(vals) == 1:
            return vals[0]
        if op == "," and len(vals) == 2:
            return s.Other(sp, "comma", vals)
        if op in ("=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=") and len(vals) == 2:
            return s.Assign(sp, op, vals[0], vals[1])
        if len(vals) == 1:
            postfix = op in ("++", "--") and op_index > 0
            return s.Unary(sp, op, vals[0], postfix)
        if len(vals) == 2:
            return s.Binary(sp, op, vals[0], vals[1])
        return s.Call(sp, s.Name(sp, name), vals)

    def functional_cast(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        kids = self.expr_children(c)
        type_text = c.type.spelling
        if r is not None and not in_macro:
            tok = next((t for t in _lex(self.src, r[0], r[1]) if t.text in ("(", "{")), None)
            if tok is not None:
                type_text = self.text(r[0], tok.start).strip()
        tk = self.api.ci.TypeKind
        canonical = c.type.get_canonical().kind
        inner = self.unwrap(kids[0]) if len(kids) == 1 else None
        braces = False
        if r is not None and not in_macro:
            tok = next((t for t in _lex(self.src, r[0], r[1]) if t.text in ("(", "{")), None)
            braces = tok is not None and tok.text == "{"
        if canonical in (tk.RECORD, tk.UNEXPOSED, tk.DEPENDENT) or braces or inner is None:
            # `dim3(n)`: a constructor call as tree-sitter sees it
            if inner is not None and inner.kind == self.K.CALL_EXPR and self._is_constructor(inner):
                args = self._subs(self.within(self.expr_children(inner), r), sp)
            elif inner is not None and inner.kind == self.K.INIT_LIST_EXPR:
                args = self._subs(self.expr_children(inner), sp)
            else:
                args = self._subs(kids, sp)
            return self.construct(c, r, sp, in_macro, args)
        operand = self.expr(inner)
        return s.Cast(sp, type_text, operand)

    def sizeof(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        kids = self.expr_children(c)
        if r is not None and not in_macro:
            toks = list(_lex(self.src, r[0], r[1]))
            word = toks[0].text if toks else ""
        else:
            toks = []
            word = "sizeof"  # inside a macro body sizeof and alignof look alike; alignof is rare
        if word != "sizeof" or (len(toks) > 1 and toks[1].text == "..."):
            return s.Other(sp, (word or "unary") + "_expression", self._subs(kids, sp))
        if kids:
            return s.Sizeof(sp, None, self._sub(kids[0], sp))
        if toks and len(toks) > 1 and toks[1].text == "(":
            close = self.match_close(toks[1].start)
            if close is not None:
                return s.Sizeof(sp, self.text(toks[1].end, close - 1).strip(), None)
        # inside a macro body: read the type from the macro's definition when it names only one
        use = self.use_containing(r) if r is not None else None
        types = set(self._macro_sizeofs(use.name, 0)) if use is not None else set()
        return s.Sizeof(sp, types.pop() if len(types) == 1 else None, None)

    def _macro_sizeofs(self, name: str, depth: int) -> list[str]:
        """The `sizeof(T)` type texts in a macro's replacement list (nested macros followed)."""
        if name in self._sizeof_cache:
            return self._sizeof_cache[name]
        self._sizeof_cache[name] = []
        d = self.macro_defs.get(name)
        if d is None or depth > 8:
            return []
        toks = [t.spelling for t in d.get_tokens()]
        body = toks[1:]
        if self.api.macro_function_like(d) and body and body[0] == "(":
            body = body[body.index(")") + 1:] if ")" in body else []
        out: list[str] = []
        i = 0
        while i < len(body):
            t = body[i]
            if t == "sizeof" and i + 1 < len(body) and body[i + 1] == "(":
                depth_p, j = 0, i + 1
                while j < len(body):
                    depth_p += {"(": 1, ")": -1}.get(body[j], 0)
                    if depth_p == 0:
                        break
                    j += 1
                inner = body[i + 2:j]
                if inner and not any(x in self.macro_defs for x in inner):
                    out.append(" ".join(inner).replace(" *", "*").replace("*", " *").strip())
                i = j + 1
                continue
            if t in self.macro_defs and t != name:
                out.extend(self._macro_sizeofs(t, depth + 1))
            i += 1
        self._sizeof_cache[name] = out
        return out

    def new_expr(self, c, r, sp: s.Span, in_macro: bool) -> s.Expr:
        """`new T[n]` / `new T(a)`: tree-sitter's shape, Other('new_expression', [new_declarator | argument_list])."""
        kids = self.expr_children(c)
        if r is None or in_macro:
            return s.Other(sp, "new_expression", self._subs(kids, sp))
        out: list[s.Expr] = []
        groups: dict[int, tuple[int, str, list]] = {}
        depth = 0
        for tok in _lex(self.src, r[0], r[1]):
            if tok.text in ("[", "(", "{") and depth == 0 and tok.start > r[0]:
                close = self.match_close(tok.start)
                if close is not None:
                    kind = {"[": "new_declarator", "(": "argument_list", "{": "initializer_list"}[tok.text]
                    groups[tok.start] = (close, kind, [])
        placed = []
        for k in kids:
            kr = self.rng(k)
            owner = None
            if kr is not None:
                for start, (close, kind, members) in groups.items():
                    if start < kr[0] and kr[1] <= close:
                        owner = members
                        break
            ue = self.unwrap(k)
            if ue is None:
                continue
            e = self.expr(ue)
            if owner is not None:
                owner.append(e)
            else:
                placed.append(e)
        for start in sorted(groups):
            close, kind, members = groups[start]
            if members or kind != "argument_list":
                out.append(s.Other(self.span(start, close), kind, members))
        return s.Other(sp, "new_expression", out + placed)

    def lambda_expr(self, c, sp: s.Span) -> s.Expr:
        K = self.K
        children: list[s.Expr] = []
        for k in c.get_children():
            if k.kind == K.COMPOUND_STMT:
                body = self.block(k)
                children.extend(_stmt_exprs(body))
        return s.Other(sp, "lambda_expression", children)


def _split_declarator(toks: list[_Tok]) -> tuple[list[_Tok], list[_Tok]]:
    """Split the tokens before a declarator's name into decl-specifiers and the `*`/`&` run."""
    i = len(toks)
    while i > 0 and (toks[i - 1].text in ("*", "&", "&&", "(") or toks[i - 1].text in _DECLARATOR_QUALIFIERS):
        i -= 1
    run = toks[i:]
    spec = toks[:i]
    # a declarator cannot start with a qualifier: those belong to the specifiers (`int const x`)
    while run and run[0].text in _DECLARATOR_QUALIFIERS:
        spec.append(run.pop(0))
    return spec, run


def _prefix(run: list[_Tok]) -> str:
    out = []
    for t in run:
        if t.text == "*":
            out.append("*")
        elif t.text in ("&", "&&"):
            out.append("&")
    return "".join(out)


def _stmt_exprs(stmt: object) -> list[s.Expr]:
    """The expressions of a statement tree, in order (a lambda body seen as one expression)."""
    out: list[s.Expr] = []
    if isinstance(stmt, s.ExprStmt):
        out.append(stmt.expr)
    elif isinstance(stmt, s.Return):
        if stmt.value is not None:
            out.append(stmt.value)
    elif isinstance(stmt, s.Decl):
        for v in stmt.vars:
            out.extend(v.array_dims)
            if v.init is not None:
                out.append(v.init)
    elif isinstance(stmt, s.Block):
        for st in stmt.stmts:
            out.extend(_stmt_exprs(st))
    elif isinstance(stmt, s.If):
        if stmt.cond is not None:
            out.append(stmt.cond)
        out.extend(_stmt_exprs(stmt.then))
        if stmt.orelse is not None:
            out.extend(_stmt_exprs(stmt.orelse))
    elif isinstance(stmt, s.Loop):
        if stmt.init is not None:
            out.extend(_stmt_exprs(stmt.init))
        if stmt.cond is not None:
            out.append(stmt.cond)
        if stmt.step is not None:
            out.append(stmt.step)
        out.extend(_stmt_exprs(stmt.body))
    return out


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(ifndef|ifdef|if|elifdef|elifndef|elif|else|endif|define)\b[ \t]*(\w*)", re.M)


def _conditional_regions(source: bytes) -> list[tuple[int, int]]:
    """Byte ranges of `#if`/`#ifdef`/`#ifndef` ... `#endif` blocks, include guards left out.

    A function defined in one may not be compiled in the project's real configuration (tree-sitter's
    frontend marks those `in_conditional`; this is the same rule, read from the text)."""
    cleaned = re.sub(rb"/\*.*?\*/", lambda m: re.sub(rb"[^\n]", b" ", m.group()), source, flags=re.S)
    directives = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _DIRECTIVE.finditer(cleaned)]
    regions: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []
    for i, (start, end, word, name) in enumerate(directives):
        if word in (b"if", b"ifdef", b"ifndef"):
            guard = False
            if word == b"ifndef" and name and i + 1 < len(directives):
                nxt = directives[i + 1]
                between = cleaned[end:nxt[0]]
                guard = nxt[2] == b"define" and nxt[3] == name and not re.sub(rb"//[^\n]*", b"", between).strip()
            stack.append((start, guard))
        elif word == b"endif" and stack:
            begin, guard = stack.pop()
            if not guard:
                regions.append((begin, end))
    for begin, guard in stack:  # unterminated: to the end of the file
        if not guard:
            regions.append((begin, len(source)))
    return regions


def _parse_macro_value(text: str) -> s.Expr | None:
    if not text:
        return None
    try:
        from gpulint.static.cuda_treesitter import parse_expression
    except Exception:  # the tree-sitter frontend (or tree-sitter itself) is not there
        return None
    try:
        return parse_expression(text)
    except Exception:
        return None
