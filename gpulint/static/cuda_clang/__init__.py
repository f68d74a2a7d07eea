"""The precise CUDA C/C++ frontend: the libclang AST -> `syntax` tree.

libclang resolves what tree-sitter can only guess: macros are expanded (a `CHECK(cudaMalloc(...))`
is the do-while block it stands for), `sizeof(float2)` is a type, `dim3 grid(n)` is a variable,
overloaded operators are calls.  It needs the `libclang` package and nothing else: the PyPI build
ships no clang builtin headers and a user machine may have no CUDA toolkit, so every file is parsed
with

    -x cuda --cuda-host-only -nocudainc -nocudalib -include gpulint_cuda_stub.h -std=c++17

plus the file's compile-database arguments.  The stub header (gpulint/static/include/) declares the
CUDA runtime; small stand-ins beside it (include/cuda, include/builtin, include/after), served from
memory through the unsaved-file API, answer `#include <cuda_runtime.h>`, `<cooperative_groups.h>` and
the compiler's own headers (`<stddef.h>`, `<stdarg.h>`, `<limits.h>`, ...) that glibc and libstdc++
include.  Any error diagnostic means the AST may be incomplete (clang drops what it cannot
type-check): `parse` then raises `ClangParseError` and the caller falls back to the tree-sitter
frontend for that file.

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

The package, by concern:
* `libclang`: loading libclang, the command line, the served headers, `parse` and its errors;
* `tokens`: a lexer over the source bytes, for what clang's cursors do not keep;
* `preprocessor`: macro uses and definitions, `#if` regions, macro values;
* `core`: one translation unit's state and reading cursors against the main file;
* `declarations`, `statements`, `expressions`: the three lowerings, combined in `lowering.Lowering`.
"""
from gpulint.static.cuda_clang.libclang import (
    STUB_HEADER,
    ClangParseError,
    ClangUnavailable,
    available,
    clang_args,
    parse,
)

__all__ = ["STUB_HEADER", "ClangParseError", "ClangUnavailable", "available", "clang_args", "parse"]
