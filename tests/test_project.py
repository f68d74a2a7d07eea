"""The project, not the file (issue 18, point 2): `gpulint check FOLDER` analyses the files of a
folder as one program.  Each folder of tests/project_programs/ is one program; the findings over
all rules, file by file, are exactly the `// expect:` markers of its files."""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import markers
from gpulint import engine
from gpulint.config import Settings
from gpulint.engine import check_paths

PROGRAMS = Path(__file__).resolve().parent / "project_programs"
FOLDERS = sorted(p for p in PROGRAMS.iterdir() if p.is_dir())


def findings(target: Path, **settings) -> Counter:
    report = check_paths([str(target)], Settings(jobs=1, select=("GL",), **settings))
    assert not report.errors and not report.diagnostics, report.errors + report.diagnostics
    return Counter((Path(f.location.path).resolve().name, f.code, f.location.row) for f in report.findings)


def expected(folder: Path) -> Counter:
    found: Counter = Counter()
    for source in sorted(folder.iterdir()):
        if source.suffix in (".cu", ".cuh", ".h"):
            for (code, row), n in markers(source, "expect").items():
                found[(source.name, code, row)] += n
    return found


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_program_findings_match_markers(folder: Path) -> None:
    want, got = expected(folder), findings(folder)
    missing, unexpected = want - got, got - want
    assert not missing and not unexpected, f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"


def test_the_swap_is_what_keeps_the_second_buffer_used(tmp_path: Path) -> None:
    """member_swap without the swap: `conformations_next` is never passed to a kernel (GL004)."""
    copy = tmp_path / "member_swap"
    shutil.copytree(PROGRAMS / "member_swap", copy)
    generations = copy / "generations.cu"
    text = generations.read_text()
    swap = ("    float *tmp = p->conformations_current;\n    p->conformations_current = p->conformations_next;\n"
            "    p->conformations_next = tmp;\n")
    assert swap in text
    generations.write_text(text.replace(swap, ""))
    setup = (copy / "setup.cu").read_text().splitlines()
    row = next(i for i, line in enumerate(setup, 1) if "&p->conformations_next" in line)
    assert findings(copy) == Counter({("setup.cu", "GL004", row): 1})


def test_a_file_named_alone_reads_what_it_includes(monkeypatch) -> None:
    """`gpulint check main.cu`: the kernels of the included kernels.cu count; kernels.cu itself is
    summarised, not reported."""
    monkeypatch.chdir(PROGRAMS / "included_kernels")
    want = Counter({("main.cu", code, row): n for (code, row), n in markers(Path("main.cu"), "expect").items()})
    assert findings(Path("main.cu")) == want


def test_callees_in_another_file_are_unknown_when_that_file_is_not_checked() -> None:
    """host.cu alone does not include stages.cu: its calls are calls of unknown code (one use, no
    launches), and none of the findings that need the callees' summaries is made."""
    assert findings(PROGRAMS / "callees_in_other_files" / "host.cu") == Counter()


def test_two_programs_sharing_a_header_do_not_share_members(tmp_path: Path) -> None:
    """A free of `buf` in another program (another file with `main`) does not free this one's."""
    (tmp_path / "common.h").write_text("#pragma once\nstruct Bufs { float *buf; };\n"
                                       "__global__ void fill(float *x) { x[threadIdx.x] = 1.f; }\n")
    (tmp_path / "leaks.cu").write_text(
        '#include "common.h"\nvoid make(Bufs *b) { cudaMalloc(&b->buf, 64); fill<<<1, 16>>>(b->buf); }\n'
        "int main() { Bufs b; make(&b); return 0; }\n")
    (tmp_path / "frees.cu").write_text(
        '#include "common.h"\nint main() { Bufs c; cudaMalloc(&c.buf, 64); fill<<<1, 16>>>(c.buf); '
        "cudaFree(c.buf); return 0; }\n")
    assert findings(tmp_path) == Counter({("leaks.cu", "GL005", 2): 1})


def test_parallel_and_serial_agree() -> None:
    for folder in FOLDERS:
        report = check_paths([str(folder)], Settings(jobs=2, select=("GL",)))
        assert Counter((Path(f.location.path).name, f.code, f.location.row) for f in report.findings) \
            == findings(folder), folder.name


def test_a_cached_result_is_invalid_when_a_summary_it_used_changed(tmp_path: Path, monkeypatch) -> None:
    copy = tmp_path / "callees"
    shutil.copytree(PROGRAMS / "callees_in_other_files", copy)
    monkeypatch.chdir(copy)
    analysed: list[str] = []
    real = engine.analyse_source

    def counting(path, display, data, settings, codes, result=None, **program):
        analysed.append(display)
        return real(path, display, data, settings, codes, result, **program)

    monkeypatch.setattr(engine, "analyse_source", counting)

    def run() -> Counter:
        report = check_paths(["."], Settings(jobs=1, select=("GL",)), cache=True)
        return Counter((f.location.path, f.code, f.location.row) for f in report.findings)

    first = run()
    # One process analyses each file once, after the files whose functions it calls: host.cu (it
    # defines `main`) last, stages.cu after scale.cu (it calls scale_rows), so every name resolves
    # as the whole table resolves it and the second pass analyses nothing again.
    assert analysed == ["scale.cu", "stages.cu", "host.cu"]
    analysed.clear()
    assert run() == first and analysed == []  # nothing changed: nothing analysed
    # run_stage now uses its scratch buffer: stages.cu changed, and host.cu, unchanged, depends on
    # run_stage's summary: analysed again, and its GL004 is gone.
    stages = Path("stages.cu")
    stages.write_text(stages.read_text().replace("rows<<<(n + 255) / 256, 256>>>(a, n);",
                                                 "rows<<<(n + 255) / 256, 256>>>(a, n);\n  forward<<<1, 1>>>(scratch, n);"))
    second = run()
    assert "host.cu" in analysed and "scale.cu" not in analysed
    assert [k for k in first - second] == [("host.cu", "GL004", 18)]
    # scale.cu changes in a way no summary sees (a comment): only scale.cu is analysed again.
    analysed.clear()
    Path("scale.cu").write_text(Path("scale.cu").read_text() + "// a comment\n")
    assert run() == second and analysed == ["scale.cu"]


def test_a_cached_result_is_invalid_when_a_header_it_includes_changed(tmp_path: Path, monkeypatch) -> None:
    """The preprocessor reads the macros of the local headers a file includes: they are part of its key."""
    monkeypatch.chdir(tmp_path)
    Path("conf.h").write_text("#define USE_B 1\n")
    Path("main.cu").write_text(
        '#include "conf.h"\n__global__ void k(float *x) { x[threadIdx.x] = 1.f; }\n'
        "int main() {\n  float *d_b;\n  cudaMalloc(&d_b, 64);\n#if USE_B\n  k<<<1, 16>>>(d_b);\n#endif\n"
        "  cudaFree(d_b);\n  return 0;\n}\n")

    def run() -> list[tuple[str, int]]:
        report = check_paths(["main.cu"], Settings(jobs=1, select=("GL",)), cache=True)
        return [(f.code, f.location.row) for f in report.findings]

    assert run() == [] and run() == []
    Path("conf.h").write_text("#define USE_B 0\n")
    assert run() == [("GL004", 5)]


def test_a_file_analysed_before_the_file_defining_its_callee_is_analysed_again(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """One process analyses files in order, each against the summaries made so far: a file whose
    callee is defined in a file analysed after it saw no summary, and the second pass analyses it
    again with one (here the callee does nothing with the buffer: unused, GL004)."""
    monkeypatch.chdir(tmp_path)
    Path("a.cu").write_text("void touch_nothing(float *p);\nvoid run() {\n  float *d;\n  cudaMalloc(&d, 64);\n"
                            "  touch_nothing(d);\n  cudaFree(d);\n}\n")
    Path("z.cu").write_text("void touch_nothing(float *p) {}\n__global__ void k(float *x) { x[0] = 1.f; }\n")
    analysed: list[str] = []
    real = engine.analyse_source

    def counting(path, display, data, settings, codes, result=None, **program):
        analysed.append(display)
        return real(path, display, data, settings, codes, result, **program)

    monkeypatch.setattr(engine, "analyse_source", counting)
    report = check_paths(["."], Settings(jobs=1, select=("GL",)))
    assert analysed == ["a.cu", "z.cu", "a.cu"]
    assert [(f.location.path, f.code, f.location.row) for f in report.findings] == [("a.cu", "GL004", 4)]
