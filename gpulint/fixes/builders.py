"""Fix builders shared by rules: they turn events (with their statement byte ranges) into edits."""
from __future__ import annotations

import bisect
import re
import weakref

from gpulint.findings import Edit
from gpulint.fixes import placement
from gpulint.fixes.edits import line_bounds, remove_statement
from gpulint.history import Access, Event, Loop, ObjectHistory, Op, Timeline

# A statement that is nothing but the call (optionally inside an error-check wrapper).
_LONE_CALL = re.compile(rb"^\s*(?:[A-Za-z_][\w:.]*\s*\(\s*)?[A-Za-z_][\w:.]*\s*\(.*\)\s*\)?\s*;?\s*$", re.S)
_EMPTY_FOR = {"zeros": "empty", "ones": "empty", "zeros_like": "empty_like", "ones_like": "empty_like",
              "new_zeros": "new_empty", "new_ones": "new_empty"}


def remove_call(path: str, source: bytes | None, event: Event) -> Edit | None:
    """Remove the statement of a call when the statement is only that call (`cudaMemset(...);`,
    `CHECK(cudaMemset(...));`, `x.zero_()`); None when removing it would lose anything else."""
    if source is None or event.stmt_start is None or event.stmt_end is None:
        return None
    text = source[event.stmt_start:event.stmt_end]
    if b"=" in text.split(b"(", 1)[0] or not _LONE_CALL.match(text) or event.api.split(".")[-1].strip("()`") \
            not in text.decode("utf-8", "replace"):
        return None
    return remove_event_statement(path, source, event)


def remove_event_statement(path: str, source: bytes, event: Event) -> Edit | None:
    """Delete an event's statement (its lines when it has them to itself); None when that would
    leave a braceless `if`/`for` without its body."""
    if event.stmt_start is None or event.stmt_end is None:
        return None
    if not placement.statement_boundary_before(source, event.stmt_start, placement.is_python(path)):
        return None
    lines = statement_lines(path, source, event)
    if lines is not None:
        return _removal(path, source, *lines)
    return remove_statement(path, source, event.stmt_start, event.stmt_end)


def empty_instead_of_filled(path: str, source: bytes | None, event: Event) -> Edit | None:
    """`torch.zeros(...)` -> `torch.empty(...)` in the statement of `event` (the first such call)."""
    if source is None or event.stmt_start is None or event.stmt_end is None:
        return None
    factory = event.api.rsplit(".", 1)[-1].strip("()")
    replacement = _EMPTY_FOR.get(factory)
    if replacement is None:
        return None
    text = source[event.stmt_start:event.stmt_end]
    match = re.search(rb"\b" + re.escape(factory.encode()) + rb"\s*\(", text)
    if match is None:
        return None
    start = event.stmt_start + match.start()
    return Edit(path, start, start + len(factory), replacement)


def remove_comment(path: str, source: bytes, row: int, column: int) -> Edit:
    """Remove a comment starting at (row, column), and its line when nothing else is on it."""
    line_start = _nth_line_start(source, row)
    start = line_start + len(source[line_start:].decode("utf-8", "replace")[: column - 1].encode("utf-8"))
    line_end = source.find(b"\n", start)
    line_end = len(source) if line_end == -1 else line_end
    if source[line_end - 1:line_end] == b"\r" and line_end > start:
        line_end -= 1  # CRLF: the CR is the line's ending, not the comment's
    s, e = line_bounds(source, start, line_end)
    if (s, e) == (start, line_end):
        # Code stays on the line: drop the comment and the spaces before it.
        while s > line_start and source[s - 1:s] in (b" ", b"\t"):
            s -= 1
    return Edit(path, s, e, "")


_newlines: tuple[bytes, list[int]] | None = None  # the source last asked about, and where its LFs are


def _nth_line_start(source: bytes, row: int) -> int:
    """Where line `row` (1-based, lines ending at LF) starts: from the positions of the source's
    LFs, found once (counting them for each comment made removing many comments quadratic)."""
    global _newlines
    if row <= 1:
        return 0
    if _newlines is None or _newlines[0] is not source:
        _newlines = (source, [m.start() for m in re.finditer(rb"\n", source)])
    positions = _newlines[1]
    if row - 2 >= len(positions):
        raise ValueError(f"line {row} is past the end of the source")
    return positions[row - 2] + 1


def statement_lines(path: str, source: bytes, event: Event) -> tuple[int, int] | None:
    """The whole lines of an event's statement (its trailing comment included), when the
    statement has them to itself and taking it out leaves no braceless construct bodiless."""
    if event.stmt_start is None or event.stmt_end is None:
        return None
    edit = remove_statement(path, source, event.stmt_start, event.stmt_end)
    start, end = edit.start, edit.end
    if start != placement.line_start(source, start) or not (end == len(source) or source[end - 1:end] == b"\n"):
        return None
    if not placement.statement_boundary_before(source, event.stmt_start, placement.is_python(path)):
        return None
    return start, end


def _reindent(text: bytes, indent: bytes) -> bytes:
    lines = text.splitlines(keepends=True)
    first = lines[0][:len(lines[0]) - len(lines[0].lstrip(b" \t"))] if lines else b""
    return b"".join(indent + line[len(first):] if line.startswith(first) and line.strip() else line for line in lines)


def _removal(path: str, source: bytes, start: int, end: int) -> Edit:
    """Delete whole lines [start, end); in Python, a block left empty gets `pass`."""
    if placement.is_python(path):
        indent = placement.indentation(source, start)
        before = _code_line(source, start, backward=True)
        after = _code_line(source, end, backward=False)
        opens_block = before is not None and before.rstrip().endswith(b":") and \
            len(placement.indentation(before, 0)) < len(indent)
        closes_block = after is None or len(placement.indentation(after, 0)) < len(indent)
        if opens_block and closes_block:
            return Edit(path, start, end, (indent + b"pass\n").decode("utf-8"))
    return Edit(path, start, end, "")


def _code_line(source: bytes, pos: int, backward: bool) -> bytes | None:
    """The nearest line of `source[:pos]` (backward) or `source[pos:]` (forward), as `splitlines`
    cuts it, that holds code (not blank, not only a comment); None when there is none.  Read in
    growing windows: splitting the whole file for each removal made a file of many fixes quadratic."""
    width = 4096
    while True:
        lo, hi = (max(0, pos - width), pos) if backward else (pos, min(len(source), pos + width))
        lines = source[lo:hi].splitlines()
        whole = lo == 0 if backward else hi == len(source)
        if not whole and lines:
            lines = lines[1:] if backward else lines[:-1]  # the line the window cuts may be partial
        for line in reversed(lines) if backward else lines:
            if line.strip() and not line.strip().startswith(b"#"):
                return line
        if whole:
            return None
        width *= 4


def move_statements(path: str, source: bytes, events: list[Event], dest: tuple[int, bytes],
                    extra_lines: tuple[tuple[int, int], ...] = ()) -> list[Edit] | None:
    """Move the statements of `events` (with any `extra_lines`, whole-line ranges), in program
    order, to the line at `dest`, re-indented; None when one of them does not stand alone on its
    lines or `dest` falls inside one."""
    ranges = set(extra_lines)
    for event in events:
        lines = statement_lines(path, source, event)
        if lines is None:
            return None
        ranges.add(lines)  # two events of one statement move it once
    offset, indent = dest
    edits: list[Edit] = []
    moved: list[bytes] = []
    for start, end in sorted(ranges):
        if start <= offset <= end:
            return None
        text = source[start:end]
        moved.append(_reindent(text if text.endswith(b"\n") else text + b"\n", indent))
        edits.append(_removal(path, source, start, end))
    edits.append(Edit(path, offset, offset, b"".join(moved).decode("utf-8")))
    return edits


def insert_line(path: str, dest: tuple[int, bytes], text: str) -> Edit:
    offset, indent = dest
    return Edit(path, offset, offset, indent.decode("utf-8") + text + "\n")


def statement_text(source: bytes, event: Event) -> str | None:
    if event.stmt_start is None or event.stmt_end is None:
        return None
    return source[event.stmt_start:event.stmt_end].decode("utf-8", "replace").strip()


def first_event_from(timeline: Timeline, offset: int, after_t: int) -> int:
    """The order number of the first event after `after_t` at or after byte `offset` (the end of
    the scope if none)."""
    return timeline.first_from(offset, after_t)


class _EventOwners:
    """Which histories (by position in their list) have an event in a given statement: what
    `disturbed` needs so that a fix looks at the objects its statements touch, not at every object
    of the file (histories do not change once the rules run).  Kept for the list of histories
    last asked about, without keeping its histories alive (a file's millions of objects would
    outlive its analysis, and cost seconds at exit)."""

    def __init__(self, histories: list[ObjectHistory]) -> None:
        self.list_id = id(histories)
        self.count = len(histories)
        self.ends = (weakref.ref(histories[0]), weakref.ref(histories[-1])) if histories else None
        self.by_statement: dict[tuple[int | None, int | None], list[int]] = {}
        for position, h in enumerate(histories):
            for key in dict.fromkeys((e.stmt_start, e.stmt_end) for e in _events_of(h)):
                self.by_statement.setdefault(key, []).append(position)

    def describes(self, histories: list[ObjectHistory]) -> bool:
        if id(histories) != self.list_id or len(histories) != self.count:
            return False
        return not histories or (self.ends[0]() is histories[0] and self.ends[1]() is histories[-1])


def _events_of(h: ObjectHistory) -> list[Event]:
    return [t.event for t in h.touches] + h.frees + h.escapes + ([h.alloc] if h.alloc is not None else [])


def _events_by_time(h: ObjectHistory) -> tuple[list[int], list[Event]]:
    """A history's events sorted by time, and their times (cached on the history)."""
    size = (len(h.touches), len(h.frees), len(h.escapes), h.alloc is not None)
    cached = getattr(h, "_cached_by_time", None)
    if cached is None or cached[0] != size:
        events = sorted(_events_of(h), key=lambda e: e.t)
        cached = (size, [e.t for e in events], events)
        h._cached_by_time = cached
    return cached[1], cached[2]


_owners: _EventOwners | None = None  # of the last list of histories asked about


def _owners_of(histories: list[ObjectHistory]) -> _EventOwners:
    global _owners
    if _owners is None or not _owners.describes(histories):
        _owners = _EventOwners(histories)
    return _owners


def disturbed(histories: list[ObjectHistory], movers: list[Event], lo_t: int, hi_t: int) -> bool:
    """Moving `movers` across the events strictly between `lo_t` and `hi_t` would reorder them
    with something else done to an object they create or touch."""
    moved = {id(e) for e in movers}
    statements = {(e.stmt_start, e.stmt_end) for e in movers}

    def stays(event: Event) -> bool:
        return id(event) not in moved and (event.stmt_start, event.stmt_end) not in statements

    # The objects with an event that moves: those with an event in a moved statement.
    owners = _owners_of(histories)
    for position in {p for key in statements for p in owners.by_statement.get(key, ())}:
        times, events = _events_by_time(histories[position])
        for k in range(bisect.bisect_right(times, lo_t), bisect.bisect_left(times, hi_t)):
            if stays(events[k]):
                return True
    return False


def initialising_writes(h: ObjectHistory, before_t: int) -> list[Event]:
    """Copies and memsets into `h` before `before_t` that only write it (they move with the allocation)."""
    return [t.event for t in h.touches
            if not t.use and not t.by_alloc and t.definite and t.event.t < before_t
            and t.event.op in (Op.COPY, Op.MEMSET) and t.access & Access.WRITE and not t.access & Access.READ]


# Frees a frontend records that are not statements of their own (a rebound name, a temporary's end).
_IMPLICIT_FREES = ("rebind", "end of expression")


def real_frees(h: ObjectHistory) -> list[Event]:
    """The frees written as statements (`cudaFree(p)`, `del x`)."""
    return [f for f in h.frees if f.api not in _IMPLICIT_FREES]


def move_allocation_down(source: bytes, histories: list[ObjectHistory], h: ObjectHistory, first_use: Event,
                         enter: frozenset = frozenset()) -> list[Edit] | None:
    """Move `h`'s allocation, and the copies and memsets that initialise it in the same block, down
    to just before the first thing that touches it otherwise (at most `first_use`), entering the
    constructs of `enter`; None when no such move keeps the program's meaning."""
    path, alloc = h.alloc.location.path, h.alloc
    if alloc.op is not Op.ALLOC:
        return None  # allocated inside a call (`setup(&d)` allocating `d.buf`): the call does more than that
    own_block = placement.constructs(alloc, h.timeline)
    movers = [alloc] + [e for e in initialising_writes(h, first_use.t)
                        if e.t > alloc.t and placement.constructs(e, h.timeline) == own_block]
    moved = {id(e) for e in movers}
    target = min((t.event for t in h.touches if t.event.t > alloc.t and id(t.event) not in moved
                  and (t.event.stmt_start, t.event.stmt_end) != (alloc.stmt_start, alloc.stmt_end)),
                 key=lambda e: e.t, default=first_use)
    dest = placement.before(source, path, alloc, target, h.timeline, enter)
    if dest is None or disturbed(histories, movers, alloc.t, first_event_from(h.timeline, dest[0], alloc.t)):
        return None
    return move_statements(path, source, movers, dest)


def _closing_paren(text: bytes, open_at: int) -> int | None:
    """Index of the `)` matching the `(` at `open_at`, strings skipped."""
    depth = 0
    for i in placement.code_positions(text[open_at:]):
        c = text[open_at + i:open_at + i + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if depth == 0:
                return open_at + i
    return None


def _top_level_commas(args: bytes) -> int:
    depth = commas = 0
    for c in args:
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif c == 0x2C and depth == 0:
            commas += 1
    return commas


def create_on_device(path: str, source: bytes, event: Event, factory: str) -> Edit | None:
    """`torch.randn(n, m).to(device)` -> `torch.randn(n, m, device=device)` (and `.cuda()` ->
    `device="cuda"`) within the statement of `event`; None for any other shape of code."""
    if event.stmt_start is None or event.stmt_end is None:
        return None
    text = source[event.stmt_start:event.stmt_end]
    name = factory.rsplit(".", 1)[-1].encode()
    for match in re.finditer(rb"\b" + re.escape(name) + rb"\s*\(", text):
        close = _closing_paren(text, match.end() - 1)
        if close is None:
            return None
        args = text[match.end():close]
        transfer = re.match(rb"\s*\.\s*(to|cuda)\s*\(", text[close + 1:])
        if transfer is None:
            continue
        t_open = close + 1 + transfer.end() - 1
        t_close = _closing_paren(text, t_open)
        if t_close is None or re.search(rb"\bdevice\s*=", args):
            return None
        target = text[t_open + 1:t_close].strip()
        if transfer.group(1) == b"cuda":
            if target:
                return None  # `.cuda(1)`: leave the device index to a person
            device = b'"cuda"'
        else:
            keyword = re.fullmatch(rb"device\s*=\s*(.+)", target, re.S)
            device = keyword.group(1) if keyword else target
            if not device or _top_level_commas(target) or b"=" in device:
                return None  # `.to(dev, non_blocking=True)`, `.to(dtype=...)`
        sep = b", " if args.strip() else b""
        new = text[match.start():close].rstrip() + sep + b"device=" + device + b")"
        return Edit(path, event.stmt_start + match.start(), event.stmt_start + t_close + 1, new.decode("utf-8"))
    return None


def around_loop(path: str, source: bytes, loop: Loop) -> tuple[tuple[int, bytes], tuple[int, bytes]] | None:
    """The line before a loop statement and the line after it, with the loop's indentation."""
    if loop.stmt_start is None or loop.stmt_end is None:
        return None
    python = placement.is_python(path)
    if not placement.starts_line(source, loop.stmt_start) or \
            not placement.statement_boundary_before(source, loop.stmt_start, python) or \
            not placement.ends_line(source, loop.stmt_end, python):
        return None
    indent = placement.indentation(source, loop.stmt_start)
    return (placement.line_start(source, loop.stmt_start), indent), (placement.line_after(source, loop.stmt_end), indent)


def directly_in(source: bytes, path: str, event: Event, loop: Loop, timeline: Timeline) -> bool:
    """`event` runs once per iteration of `loop`: no branch or inner loop inside `loop` encloses it."""
    if not event.loops or event.loops[-1] != loop.id or loop.stmt_start is None or event.stmt_start is None:
        return False
    for guard in event.guards:
        if guard.stmt_start is None or guard.stmt_start >= loop.stmt_start:
            return False
    if placement.is_python(path):
        return True
    # The block around the event opens inside the loop, right in the block the loop is in: the body.
    body = placement.block_of(timeline, event.stmt_start)
    return body is not None and loop.stmt_start < body[0] and \
        placement.block_of(timeline, body[0]) == placement.block_of(timeline, loop.stmt_start)


def declaration_in_loop(source: bytes, loop: Loop, name: str, before: int) -> tuple[int, int] | None:
    """The line declaring pointer `name` alone (`float* d_tmp;`) in the loop body before `before`."""
    pattern = re.compile(rb"^[ \t]*[A-Za-z_][\w:<>, \t]*\*+[ \t]*" + re.escape(name.encode())
                         + rb"[ \t]*(?:=[ \t]*(?:nullptr|NULL|0)[ \t]*)?;[ \t]*(?://[^\r\n]*)?\r?\n", re.M)  # CRLF too
    match = pattern.search(source, loop.stmt_start, before)
    return (match.start(), match.end()) if match else None


def hoistable_names(source: bytes, timeline: Timeline, names, loop: Loop) -> bool:
    """Every name (API enums aside) already exists before the loop."""
    roots = {name.split(".", 1)[0].split("->", 1)[0] for name in names}
    return all(placement.defined_before(source, timeline, root, loop.stmt_start) for root in roots
               if not re.match(r"cuda[A-Z]|cu[A-Z]|CU_", root))
