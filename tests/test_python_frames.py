"""The hook's frame walk (torch_hook/python_frames.cpp) against Python's own view of the stack:
built here with the hook's sources into a small extension, it must see the frames
sys._getframe sees, with the same lines, generators and nested calls included."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / "gpulint" / "dynamic" / "collectors" / "torch_hook"

PROBE = r"""
#include "python_frames.h"

static PyObject* stack(PyObject*, PyObject*) {
  PyObject* frames = PyList_New(0);
  gpulint_frames::Cursor cursor;
  for (bool more = gpulint_frames::first(cursor); more; more = gpulint_frames::next(cursor)) {
    PyObject* code = gpulint_frames::code(cursor);
    PyObject* item = Py_BuildValue("(Oii)", code, gpulint_frames::line(cursor), gpulint_frames::instruction(cursor));
    PyList_Append(frames, item);
    Py_DECREF(item);
  }
  gpulint_frames::close(cursor);
  return frames;
}

// The walk a free inside an op makes: the GIL let go, codes and instructions only.
static PyObject* stack_without_gil(PyObject*, PyObject*) {
  if (!gpulint_frames::reads_records()) Py_RETURN_NONE;
  PyObject* codes[64];
  int instructions[64];
  int count = 0;
  PyThreadState* thread = PyThreadState_Get();
  Py_BEGIN_ALLOW_THREADS
  gpulint_frames::Cursor cursor;
  for (bool more = gpulint_frames::first_without_gil(cursor, thread); more && count < 64;
       more = gpulint_frames::next(cursor), ++count) {
    codes[count] = gpulint_frames::code(cursor);
    instructions[count] = gpulint_frames::instruction(cursor);
  }
  Py_END_ALLOW_THREADS
  PyObject* frames = PyList_New(0);
  for (int i = 0; i < count; ++i) {
    PyObject* item = Py_BuildValue("(Oii)", codes[i], gpulint_frames::line_at(codes[i], instructions[i]),
                                   instructions[i]);
    PyList_Append(frames, item);
    Py_DECREF(item);
  }
  return frames;
}

static PyMethodDef methods[] = {{"stack", stack, METH_NOARGS, ""},
                                {"stack_without_gil", stack_without_gil, METH_NOARGS, ""},
                                {nullptr, nullptr, 0, nullptr}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "frames_probe", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_frames_probe() { return PyModule_Create(&module); }
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():  # an interpreter installed without its headers (Debian's python3-dev)
        pytest.skip(f"this Python has no C headers ({include}/Python.h)")
    folder = tmp_path_factory.mktemp("frames")
    (folder / "probe.cpp").write_text(PROBE)
    library = folder / f"frames_probe{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    subprocess.run([compiler, "-O2", "-std=c++20", "-shared", "-fPIC", "-w", f"-I{HOOK}",
                    f"-I{include}", str(folder / "probe.cpp"), str(HOOK / "python_frames.cpp"),
                    "-o", str(library)], check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("frames_probe", library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_view() -> list[tuple]:
    frame, frames = sys._getframe(1), []
    while frame is not None:
        frames.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return frames


def both(probe) -> tuple[list, list]:
    seen = probe.stack()  # this frame first: the probe is C and adds none
    expected = python_view()  # from this frame too (its caller's view skips python_view itself)
    return [(code, line) for code, line, _ in seen], expected


def nested(probe, depth: int):
    return nested(probe, depth - 1) if depth else both(probe)


def test_the_walk_sees_what_python_sees(probe) -> None:
    seen, expected = nested(probe, 5)
    assert [code for code, _ in seen] == [code for code, _ in expected]
    # The lines differ only in the innermost frame (two calls, on two lines of `both`).
    assert seen[1:] == expected[1:]
    assert seen[0][0].co_name == "both"


def test_generators_and_comprehensions(probe) -> None:
    def generator():
        yield both(probe)

    (seen, expected), = list(generator())
    assert [code.co_name for code, _ in seen][:2] == ["both", "generator"]
    assert [code for code, _ in seen] == [code for code, _ in expected]


def test_instructions_tell_two_calls_on_one_line_apart(probe) -> None:
    """The hook caches lines per (code, instruction): the instruction must be the call's own."""
    a = probe.stack()
    b = probe.stack()
    assert a[0][0] is b[0][0] and a[0][1] + 1 == b[0][1]
    pair = (probe.stack(), probe.stack())
    assert pair[0][0][1] == pair[1][0][1] and pair[0][0][2] != pair[1][0][2]
    assert len({probe.stack()[0][2] for _ in range(3)}) == 1  # one call, looped: one instruction


def test_without_the_gil_the_walk_reads_the_same_frames(probe) -> None:
    def inner():
        return probe.stack(), probe.stack_without_gil()

    with_gil, without = inner()
    if without is None:
        pytest.skip(f"Python {sys.version_info[:2]}: the public API needs the GIL")
    assert [code for code, _, _ in without] == [code for code, _, _ in with_gil]
    assert [line for _, line, _ in without][1:] == [line for _, line, _ in with_gil][1:]
    assert without[0][1] == with_gil[0][1]  # one line in `inner`, two calls
