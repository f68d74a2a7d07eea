"""What an edit means in each language, so that a rule's fix asks the unit's editor instead of
testing a file name: how an object is released after its last use, how its allocation is removed,
how a free is written, and what has to move with a statement hoisted out of a loop.

`editor_for(unit)` picks the editor of the unit's language.  The placement below these (where a
moved statement keeps its loops and branches) is shared: `placement`."""
from __future__ import annotations

import re
from itertools import islice

from gpulint.findings import Edit
from gpulint.fixes import placement
from gpulint.fixes.builders import (declaration_in_loop, hoistable_names, insert_line, real_frees, remove_call,
                                    remove_event_statement, statement_text)
from gpulint.history import Event, Loop, ObjectHistory, Timeline, Unit

# The call that frees what an allocation API returns, when a fix has to write one.
_FREE_FOR = {"cudaMalloc": "cudaFree", "cudaMallocManaged": "cudaFree", "cudaMallocPitch": "cudaFree",
             "cudaMallocHost": "cudaFreeHost", "cudaHostAlloc": "cudaFreeHost", "cuMemAlloc": "cuMemFree",
             "cuMemAlloc_v2": "cuMemFree", "cuMemAllocManaged": "cuMemFree", "cuMemAllocPitch": "cuMemFree",
             "cuMemAllocHost": "cuMemFreeHost"}

_ASSIGNMENT = re.compile(rb"\s*([^\s=][^=]*?)\s*=[^=]")


class Editor:
    """C/C++ and CUDA: objects are freed by calls; a pointer outlives its allocation."""

    # An object made in every pass of a loop and never freed there is dropped when its name is
    # bound again (Python), or may be kept on purpose (C: each pass's buffer stays allocated).
    drops_on_rebinding = False

    def release_after(self, path: str, source: bytes, h: ObjectHistory, last: Event) -> tuple[str, Edit] | None:
        """What releases `h` right after `last` when it has no free to move, and the edit; C has
        none to add here (GL005 writes missing frees)."""
        return None

    def free_statement(self, source: bytes, h: ObjectHistory) -> str | None:
        """How this program frees `h`: the text of its own free statement when it has one
        (`CHECK(cudaFree(d_a));`), else the plain call."""
        for free in real_frees(h):
            if remove_call(h.alloc.location.path, source, free) is not None:
                text = statement_text(source, free)
                if text and "\n" not in text:
                    return text if text.endswith(";") else text + ";"
        call = _FREE_FOR.get(h.alloc.api.split("::")[-1])
        return f"{call}({h.name});" if call else None

    def remove_allocation(self, path: str, source: bytes, h: ObjectHistory, other_edits: list) -> Edit | None:
        """Remove the call that allocates `h`.  A pointer still mentioned elsewhere (passed to a
        kernel that ignores it, printed) must not be left uninitialised: it becomes a null pointer."""
        alloc = h.alloc
        edit = remove_call(path, source, alloc)
        if edit is None:
            return None
        start, end = h.timeline.start_byte or 0, h.timeline.end_byte or len(source)
        removed = [(e.start, e.end) for e in [*other_edits, edit]]
        words = placement.word_occurrences(source, h.name, start, end)
        if words is None:
            word = re.compile(rb"(?<![\w.>])" + re.escape(h.name.encode()) + rb"\b")
            found = (m.start() for m in word.finditer(source, start, end))
        else:  # the same as the pattern, from the file's index of words (not a scan of the function per finding)
            found = (m for m in words if source[m - 1:m] not in (b".", b">"))
        mentions = list(islice((m for m in found if not any(s <= m < e for s, e in removed)), 2))
        if len(mentions) <= 1:  # its declaration
            return edit
        null = "0" if alloc.api.startswith("cuMem") else "nullptr"
        return Edit(path, alloc.stmt_start, alloc.stmt_end, f"{h.name} = {null};")

    def hoisted_declaration(self, source: bytes, timeline: Timeline, loop: Loop, h: ObjectHistory,
                            before: int) -> tuple[tuple[int, int], ...] | None:
        """What moves out of `loop` with the allocation of `h`: `float* d_tmp;` declared in the loop
        body goes too; None when the name is declared there in a way that cannot move."""
        if hoistable_names(source, timeline, [h.name], loop):
            return ()
        found = declaration_in_loop(source, loop, h.name, before)
        return None if found is None else (found,)

    def hoisted_copy_names(self, source: bytes, h: ObjectHistory, copy: Event, loop: Loop) -> set[str] | None:
        """The names that must exist before `loop` for `copy` into `h` to move out of it (None: it
        cannot move): the copy's arguments and the object's own variable."""
        return set(copy.names) | {h.name.split(".", 1)[0].split("->", 1)[0]}


class PythonEditor(Editor):
    """Python: objects are dropped with their last reference (`del x`); a statement binds names."""

    drops_on_rebinding = True

    def release_after(self, path: str, source: bytes, h: ObjectHistory, last: Event) -> tuple[str, Edit] | None:
        if not h.name.isidentifier():
            return None
        dest = placement.after_in_block_of(source, path, h.alloc, last, h.timeline, deeper_ok=True)
        return None if dest is None else (f"`del {h.name}`", insert_line(path, dest, f"del {h.name}"))

    def free_statement(self, source: bytes, h: ObjectHistory) -> str | None:
        return None  # a free before each exit is C's; Python drops references (cuda-python: no fix yet)

    def remove_allocation(self, path: str, source: bytes, h: ObjectHistory, other_edits: list) -> Edit | None:
        """`name = factory(...)`: the statement goes when it binds only this object; any later
        reading of the name would have been a use."""
        alloc = h.alloc
        text = source[alloc.stmt_start:alloc.stmt_end] if alloc.stmt_start is not None else b""
        match = _ASSIGNMENT.match(text)
        if match is None or match.group(1) != h.name.encode():
            return None
        return remove_event_statement(path, source, alloc)

    def hoisted_declaration(self, source: bytes, timeline: Timeline, loop: Loop, h: ObjectHistory,
                            before: int) -> tuple[tuple[int, int], ...] | None:
        return ()  # Python declares nothing

    def hoisted_copy_names(self, source: bytes, h: ObjectHistory, copy: Event, loop: Loop) -> set[str] | None:
        # `w = h_w.to(dev)` moves out with its binding: nothing else in the loop may rebind `w`.
        body = source[loop.stmt_start:loop.stmt_end]
        if len(re.findall(rb"(?m)^\s*" + re.escape(h.name.encode()) + rb"\s*=[^=]", body)) > 1:
            return None
        return set(copy.names)


_EDITORS = {"cuda": Editor(), "python": PythonEditor()}


def editor_for(unit: Unit) -> Editor:
    return _EDITORS[unit.language]

