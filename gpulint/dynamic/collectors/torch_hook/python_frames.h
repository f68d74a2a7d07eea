// The calling thread's Python frames, innermost first, read without making frame objects
// where the interpreter's layout is known (CPython 3.11-3.13; python_frames.cpp says why).
#pragma once

#include <Python.h>

namespace gpulint_frames {

// A position in the calling thread's frame chain (the GIL held throughout).  The frames it
// passes are the thread's own and stay put while it runs: only frames newer than them come
// and go, so the walk may call Python between steps.
struct Cursor {
  void* frame = nullptr;  // the interpreter's frame, or a PyFrameObject (a reference) elsewhere
};

bool first(Cursor& cursor);        // the innermost frame; false when there is none
// The same for `thread`, the calling thread's own state, without the GIL: the walk then only
// reads (code and instruction; no line, no Python).  False unless reads_records().
bool first_without_gil(Cursor& cursor, PyThreadState* thread);
bool next(Cursor& cursor);         // the caller's frame; false at the outermost
void close(Cursor& cursor);        // ends a walk before its end
PyObject* code(const Cursor& cursor);  // borrowed: the frame holds it
int instruction(const Cursor& cursor);  // the current instruction, as an index
int line(const Cursor& cursor);
int line_at(PyObject* code, int instruction);  // the GIL held
// Whether walks read the interpreter's records directly: then they allocate nothing and
// first_without_gil works.  Otherwise each frame passed becomes a frame object (an allocation:
// no garbage collection may run inside a walk where the caller must not run Python).
bool reads_records();

}  // namespace gpulint_frames
