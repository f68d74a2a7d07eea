"""The preprocessor's view of CUDA files: conditional inclusion, macro expansion mapped back to the
original text, local headers and the build's macros (`gpulint.static.preprocess`)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from click.testing import CliRunner

from gpulint.cli import main
from gpulint.static.includes import BuildView, include_closure
from gpulint.static.preprocess import Macro, evaluate, preprocess


def run(*args: str, cwd: Path):
    config = ["--config", str(cwd / "gpulint.toml")] if (cwd / "gpulint.toml").exists() else []
    return CliRunner().invoke(main, [*args[:1], *config, *args[1:]], catch_exceptions=False)


def _text(source: str, view: BuildView | None = None, path: Path | None = None) -> str:
    return preprocess(source.encode(), path, view or BuildView()).text.decode("latin-1")


@pytest.mark.parametrize("expression, value", [
    ("A > 2", 1), ("defined(A) && !defined B", 1), ("F(A) == 6", 1), ("B", 0), ("B + 1 == 1", 1),
    ("(1 ? 2 : 3) == 2", 1), ("-7 / 2 == -3", 1), ("-7 % 2 == -1", 1), ("0x10 >> 2 == 4 && 'a' == 97", 1),
    ("1L << 3 == 8", 1), ("010 == 8", 1), ("defined(__CUDA_RUNTIME_H__)", 1), ("1 +", 0),
])
def test_if_expressions_evaluate_as_the_compiler_does(expression, value):
    macros = {"A": Macro("A", None, False, "3"), "F": Macro("F", ("x",), False, "((x) * 2)")}
    assert evaluate(expression, macros) == value


def test_dropped_lines_are_blanked_and_offsets_kept():
    source = "int a;\n#ifdef DEBUG\nint b(\n#else\nint c;\n#endif\nint d;\n"
    text = _text(source)
    assert len(text) == len(source) and text.count("\n") == source.count("\n")
    assert "int c;" in text and "int b" not in text and "#" not in text
    assert text.index("int d;") == source.index("int d;")
    assert "int b(" in _text(source, BuildView(defines=(("DEBUG", "1"),)))


def test_a_project_guard_is_not_taken_for_a_system_header():
    # `#ifndef MY_H` guards this header (the project defines it): taken.  `__CUDA_RUNTIME_H__` is
    # defined by a system header the project never defines: read as defined.
    source = "#ifndef MY_H\n#define MY_H\nint kept;\n#endif\n#ifndef __CUDA_RUNTIME_H__\nint gone;\n#endif\n"
    text = _text(source)
    assert "int kept;" in text and "int gone;" not in text


def test_macro_arguments_map_back_to_where_they_were_written():
    source = ("#define LAUNCH(k, ...) k<<<1, 32>>>(__VA_ARGS__)\n"
              "void f(float *d_x) {\n  LAUNCH(scale, d_x);\n}\n")
    pre = preprocess(source.encode(), None, BuildView())
    assert pre.mapping is not None
    text = pre.text.decode()
    assert "scale<<<1, 32>>>(d_x)" in text
    assert pre.mapping.start(text.index("scale<<<")) == source.index("scale, d_x")
    assert pre.mapping.start(text.rindex("d_x)")) == source.index("d_x);")
    # Text from the macro's body goes to the use: `<<<` comes from `LAUNCH(...)`.
    use = source.index("LAUNCH(scale")
    assert pre.mapping.start(text.index("<<<", text.index("scale"))) == use
    assert pre.mapping.end(text.index(">>>", text.index("scale")) + 3) == source.index(");\n}") + 1
    assert len(pre.expanded) == 1


def test_wrappers_are_left_as_calls_unless_a_use_cannot_parse():
    source = ("#define CHECK(call) do { if ((call) != 0) return; } while (0)\n"
              "void f(float *p) { CHECK(cudaMalloc(&p, 4)); }\n")
    assert _text(source) == source
    # Repair expands the uses that do not parse as calls: with no `;`, or a type as an argument.
    bare = "#define DECLARE(T, x) T x = 0;\nvoid f() {\n  DECLARE(float, y)\n  y += 1;\n}\n"
    assert "float y = 0;" in preprocess(bare.encode(), None, BuildView(), repair=True).text.decode()


def test_structural_and_empty_object_like_macros_expand_transitively():
    source = ("#define OP { s += v; }\n#define OP2 OP OP\n#define PERF_BEGIN\n#define N 1024\n"
              "void f(float s, float v) { PERF_BEGIN OP2 float a[N]; }\n")
    text = _text(source).splitlines()[-1]
    assert text.count("s += v;") == 2 and "PERF_BEGIN" not in text and "a[N]" in text


def test_expansion_is_bounded():
    lines = ["#define A0 x += 1;"] + [f"#define A{i} A{i - 1} A{i - 1}" for i in range(1, 40)]
    source = "\n".join(lines) + "\nvoid f(int x) { A39 }\n"
    start = time.process_time()
    text = _text(source)
    assert time.process_time() - start < 5
    assert "A39" in text  # left as written: its expansion is far past the bound


def test_attributes_and_respellings_keep_offsets():
    source = ("static int x __attribute__((unused)) = 1;\nstruct __align__(16) S { float v; };\n"
              "void f(int n) { const float **p = new const float *[n]; if (typeid(float) == typeid(int)) {} }\n")
    text = _text(source)
    assert len(text) == len(source)
    assert "__attribute__" not in text and "__align__" not in text and "typeid_float_" in text
    assert "new       float  [n]" in text


def test_local_headers_give_macros_and_include_closure(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "launch.h").write_text(
        '#pragma once\n#include "more.h"\n#define LAUNCH(k, n, ...) k<<<(n) / 256, 256>>>(__VA_ARGS__)\n')
    (tmp_path / "inc" / "more.h").write_text("#define USE_FAST 1\n")
    main = tmp_path / "main.cu"
    main.write_text('#include "launch.h"\n#if USE_FAST\nvoid f(float *a) { LAUNCH(k, 1024, a); }\n#endif\n')
    view = BuildView(include_paths=(str(tmp_path / "inc"),))
    text = preprocess(main.read_bytes(), main, view).text.decode()
    assert "k<<<(1024) / 256, 256>>>(a)" in text
    assert include_closure(main, main.read_bytes(), view.include_paths) == [
        tmp_path / "inc" / "launch.h", tmp_path / "inc" / "more.h"]
    # Without the include folder the header is not found: USE_FAST reads 0, as the compiler would
    # fail rather than guess; the function is dropped with its `#if`.
    assert "LAUNCH" not in preprocess(main.read_bytes(), main, BuildView()).text.decode()


def test_defines_and_include_paths_settings(tmp_path):
    (tmp_path / "gpulint.toml").write_text('defines = ["USE_MANAGED", "BLOCK=128"]\ninclude-paths = ["inc"]\n')
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "alloc.h").write_text(
        "#ifdef USE_MANAGED\n#define ALLOC(p, n) cudaMallocManaged(&p, n)\n"
        "#else\n#define ALLOC(p, n) cudaMalloc(&p, n)\n#endif\n")
    source = ('#include <cuda_runtime.h>\n#include "alloc.h"\n'
              "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
              "int main() {\n  float *d_x;\n  ALLOC(d_x, BLOCK * sizeof(float));\n  return 0;\n}\n")
    (tmp_path / "main.cu").write_text(source)
    result = run("check", "--no-cache", "--format", "json", str(tmp_path / "main.cu"), cwd=tmp_path)
    leak = [f for f in json.loads(result.output) if f["code"] == "GL005"]
    # The allocation inside ALLOC(...) is seen, where the use of the macro was written.
    assert len(leak) == 1 and leak[0]["location"]["row"] == 6 and leak[0]["location"]["column"] == 3


def test_fixes_inside_an_expanded_use_are_withheld(tmp_path):
    source = ("#include <cuda_runtime.h>\n"
              "#define CHECKED_STEP(k, x) { k<<<1, 32>>>(x); if (cudaGetLastError()) return; }\n"
              "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
              "void f(int n) {\n  float *d_x;\n  cudaMalloc(&d_x, n);\n  CHECKED_STEP(k, d_x)\n"
              "  cudaFree(d_x);\n}\n")
    (tmp_path / "a.cu").write_text(source)
    findings = json.loads(run("check", "--no-cache", "--format", "json", str(tmp_path / "a.cu"), cwd=tmp_path).output)
    leak = [f for f in findings if f["code"] == "GL005"]
    assert len(leak) == 1 and leak[0]["fix"] is None  # the `return` is inside the macro's body
    assert leak[0]["location"]["row"] == 6


def test_statistics_counts_allocation_sites_analysed(tmp_path):
    (tmp_path / "a.cu").write_text(
        "#include <cuda_runtime.h>\nvoid ok() { float *p; cudaMalloc(&p, 4); cudaFree(p); }\n"
        "void broken() { float *q; cudaMalloc(&q, 4); int x = (1 +; cudaFree(q); }\n")
    out = run("check", "--no-cache", "--statistics", str(tmp_path / "a.cu"), cwd=tmp_path).output
    assert "allocation sites analysed: 1 of 2 (50.0%)" in out
