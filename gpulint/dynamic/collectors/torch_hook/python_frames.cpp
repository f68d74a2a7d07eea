// Walking the calling thread's Python frames for the hook's sites (every op, every free).
//
// Why not PyThreadState_GetFrame / PyFrame_GetBack: since CPython 3.11 a frame is an
// interpreter record, and those calls make a PyFrameObject for each record they pass (then
// freed again when the function returns).  A training loop's op is 8-12 frames deep, so that
// was most of what a site cost.  On 3.11-3.13 this file reads the records themselves from the
// interpreter's own header, compiled against the running Python (the hook is built per
// Python version), and falls back to the public API on any other version.
//
// A translation unit of its own: the interpreter's internal header wants Py_BUILD_CORE, which
// PyTorch's headers must not see.
#define Py_BUILD_CORE 1
#include "python_frames.h"

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define GPULINT_INTERPRETER_FRAMES 1
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>  // PyFrame_GetBack before 3.11
#endif

namespace gpulint_frames {

#ifdef GPULINT_INTERPRETER_FRAMES

namespace {

_PyInterpreterFrame* complete(_PyInterpreterFrame* frame) {
  // Frames still being set up, and (3.12+) the C stack's entry records, are not the program's:
  // PyFrame_GetBack skips them too.
  while (frame != nullptr && _PyFrame_IsIncomplete(frame)) frame = frame->previous;
  return frame;
}

_PyInterpreterFrame* at(const Cursor& cursor) { return static_cast<_PyInterpreterFrame*>(cursor.frame); }

PyCodeObject* code_of(_PyInterpreterFrame* frame) {
#if PY_VERSION_HEX >= 0x030D0000
  return _PyFrame_GetCode(frame);
#else
  return frame->f_code;
#endif
}

}  // namespace

bool first_without_gil(Cursor& cursor, PyThreadState* thread) {
  // A thread's frame records change only while it runs Python, and it is here, in C, until
  // the walk ends; the codes they name stay alive as long as they do.
#if PY_VERSION_HEX >= 0x030D0000
  cursor.frame = complete(thread->current_frame);
#else
  cursor.frame = thread->cframe == nullptr ? nullptr : complete(thread->cframe->current_frame);
#endif
  return cursor.frame != nullptr;
}

bool first(Cursor& cursor) { return first_without_gil(cursor, PyThreadState_Get()); }

bool next(Cursor& cursor) {
  cursor.frame = complete(at(cursor)->previous);
  return cursor.frame != nullptr;
}

void close(Cursor& cursor) { cursor.frame = nullptr; }

PyObject* code(const Cursor& cursor) { return reinterpret_cast<PyObject*>(code_of(at(cursor))); }

int instruction(const Cursor& cursor) { return _PyInterpreterFrame_LASTI(at(cursor)); }

int line_at(PyObject* code, int instruction) {
  return PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(code), instruction * static_cast<int>(sizeof(_Py_CODEUNIT)));
}

int line(const Cursor& cursor) {
  return line_at(reinterpret_cast<PyObject*>(code_of(at(cursor))), _PyInterpreterFrame_LASTI(at(cursor)));
}

bool reads_records() { return true; }

#else  // the public API: a frame object per frame passed

namespace {
PyFrameObject* at(const Cursor& cursor) { return static_cast<PyFrameObject*>(cursor.frame); }
}  // namespace

bool first(Cursor& cursor) {
  cursor.frame = PyThreadState_GetFrame(PyThreadState_Get());
  return cursor.frame != nullptr;
}

bool first_without_gil(Cursor& cursor, PyThreadState*) {
  cursor.frame = nullptr;  // the public API makes frame objects: it needs the GIL
  return false;
}

bool next(Cursor& cursor) {
  PyFrameObject* back = PyFrame_GetBack(at(cursor));
  Py_DECREF(at(cursor));
  cursor.frame = back;
  return back != nullptr;
}

void close(Cursor& cursor) {
  Py_XDECREF(at(cursor));
  cursor.frame = nullptr;
}

PyObject* code(const Cursor& cursor) {
  PyCodeObject* code = PyFrame_GetCode(at(cursor));
  Py_DECREF(code);  // the frame keeps it
  return reinterpret_cast<PyObject*>(code);
}

int instruction(const Cursor& cursor) {
#if PY_VERSION_HEX >= 0x030B0000
  return PyFrame_GetLasti(at(cursor));
#else
  return at(cursor)->f_lasti;
#endif
}

int line(const Cursor& cursor) { return PyFrame_GetLineNumber(at(cursor)); }

int line_at(PyObject* code, int instruction) {
  // PyFrame_GetLasti counts bytes since 3.11; f_lasti counted code units before.
#if PY_VERSION_HEX >= 0x030B0000
  return PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(code), instruction);
#else
  return PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(code), instruction * 2);
#endif
}

bool reads_records() { return false; }

#endif

}  // namespace gpulint_frames
