"""Where a statement may go: insertion points that keep a moved statement in the block it belongs to.

A fix that moves a statement (an allocation down to its first use, a free up to its last access,
a copy out of a loop) must not change which loops and branches run it, and must not leave a
braceless `if` or `for` without its body.  Events carry the loops and branch arms around them
(`Event.loops`, `Event.guards`, with the byte ranges of those constructs), which decides where
the statement lands; the text between the old and the new place is checked too, for blocks the
events do not record (plain `{ }` blocks, `try`, `with`).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
import re

from gpulint.history import Event, Timeline
from gpulint.sourcetext import WORD_BYTES

_IDENT = re.compile(r"[A-Za-z_]\w*")
# Words in a size or argument expression that are not names a fix must find in scope.
_NOT_NAMES = frozenset({
    "sizeof", "float", "double", "int", "char", "short", "long", "unsigned", "signed", "bool", "void",
    "size_t", "const", "struct", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
    "uint32_t", "uint64_t", "half", "__half", "float2", "float4", "double2", "int2", "int4", "True", "False",
    "None", "static_cast", "reinterpret_cast", "len", "device", "dtype",
})


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


Construct = tuple  # ("loop", id) or ("if", id, branch)


def constructs(event: Event, timeline: Timeline) -> dict[Construct, tuple[int | None, int | None]]:
    """The loops and branch arms around an event, with the byte range of each whole statement."""
    out: dict[Construct, tuple[int | None, int | None]] = {}
    for loop_id in event.loops:
        loop = timeline.loops.get(loop_id)
        out[("loop", loop_id)] = (loop.stmt_start, loop.stmt_end) if loop is not None else (None, None)
    for guard in event.guards:
        out[("if", guard.id, guard.branch)] = (guard.stmt_start, guard.stmt_end)
    return out


def line_start(source: bytes, pos: int) -> int:
    return source.rfind(b"\n", 0, pos) + 1


def line_after(source: bytes, pos: int) -> int:
    """The start of the line after the one holding `pos`."""
    end = source.find(b"\n", pos)
    return len(source) if end == -1 else end + 1


def indentation(source: bytes, pos: int) -> bytes:
    start = line_start(source, pos)
    line = source[start:line_after(source, pos)]
    return line[:len(line) - len(line.lstrip(b" \t"))]


def starts_line(source: bytes, pos: int) -> bool:
    return not source[line_start(source, pos):pos].strip()


def ends_line(source: bytes, pos: int, python: bool) -> bool:
    """Only blanks or a comment follow `pos` on its line."""
    rest = source[pos:line_after(source, pos)].strip()
    return not rest or rest.startswith(b"#" if python else b"//")


def statement_boundary_before(source: bytes, pos: int, python: bool) -> bool:
    """Code placed at `pos` starts a statement of its own: in C, what precedes it (past blanks,
    comments and preprocessor lines) ends a statement or opens/closes a block, so a braceless
    `if (c)` / `else` / `for (...)` does not take the new code as its body."""
    if python:
        return starts_line(source, pos)
    j = pos
    while True:
        while j > 0 and source[j - 1:j] in (b" ", b"\t", b"\r", b"\n"):
            j -= 1
        if j == 0:
            return True
        start = line_start(source, j)
        line = source[start:j]
        stripped = line.lstrip()
        if stripped.startswith((b"#", b"//")):
            j = start
            continue
        if line.rstrip().endswith(b"*/"):
            opening = source.rfind(b"/*", 0, j)
            if opening == -1:
                return False
            j = opening
            continue
        comment = _trailing_comment(line)
        if comment is not None:
            j = start + comment
            continue
        return source[j - 1:j] in (b";", b"{", b"}", b":")


def code_positions(text: bytes):
    """Indices of `text` outside string and character literals (escapes honoured)."""
    quote = None
    i = 0
    while i < len(text):
        c = text[i:i + 1]
        if quote:
            if c == b"\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in (b'"', b"'"):
            quote = c
        else:
            yield i
        i += 1


def _trailing_comment(line: bytes) -> int | None:
    """Offset of a `//` comment that ends a line of code, outside string literals."""
    if b"//" not in line:
        return None  # the common case, without walking the line byte by byte
    return next((i for i in code_positions(line) if line[i:i + 2] == b"//"), None)


def block_of(timeline: Timeline, pos: int, python: bool = False) -> tuple[int, int] | None:
    """The innermost block of the scope around byte `pos`, from the spans the frontend recorded;
    None outside every block.  A position at a brace belongs to the block outside it; a Python
    suite begins with its first statement."""
    blocks = _block_tree(timeline)
    # The last block opening before `pos` (the innermost of those opening at one byte): every block
    # around `pos` is it or one of its enclosing blocks, so the walk is as long as the nesting.
    i = bisect.bisect_right(blocks.starts, pos) if python else bisect.bisect_left(blocks.starts, pos)
    i -= 1
    while i >= 0:
        start, end = blocks.spans[i]
        if (start <= pos if python else start < pos) and pos < end:
            return start, end
        i = blocks.parents[i] if blocks.nested else i - 1
    return None


@dataclass(slots=True)
class _BlockTree:
    """A timeline's blocks ordered by start (outer first at one start), each with the index of the
    block around it (-1 for none).  `nested` is False when two blocks overlap without one holding
    the other (spans a macro expansion can yield): `block_of` then looks at every earlier block."""
    spans: list[tuple[int, int]]
    starts: list[int]
    parents: list[int]
    nested: bool


def _block_tree(timeline: Timeline) -> _BlockTree:
    cached = getattr(timeline, "_cached_blocks", None)
    if cached is None or cached[0] != len(timeline.blocks):
        spans = sorted(set(timeline.blocks), key=lambda span: (span[0], -span[1]))
        parents: list[int] = []
        open_blocks: list[int] = []
        nested = True
        for i, (start, end) in enumerate(spans):
            while open_blocks and spans[open_blocks[-1]][1] <= start:
                open_blocks.pop()
            if open_blocks and spans[open_blocks[-1]][1] < end:
                nested = False
            parents.append(open_blocks[-1] if open_blocks else -1)
            open_blocks.append(i)
        cached = (len(timeline.blocks), _BlockTree(spans, [s for s, _ in spans], parents, nested))
        timeline._cached_blocks = cached
    return cached[1]


def _within(inner: tuple[int, int] | None, outer: tuple[int, int] | None) -> bool:
    return outer is None or (inner is not None and outer[0] <= inner[0] and inner[1] <= outer[1])


def same_block(source: bytes, timeline: Timeline, earlier: int, later: int, python: bool, inward: str = "") -> bool:
    """The statement starting at `earlier` and the position `later` are in the same block.

    `inward="later"` allows `later` to be deeper (moving a statement down into a block it enters);
    `inward="earlier"` allows `earlier` to be deeper (moving a statement up into a block).  Span
    arithmetic over the blocks the frontend recorded; a Python position counts from the first code
    of its line (a suite starts at its first statement, after the indentation).
    """
    if earlier > later:
        return False
    if python:
        earlier = line_start(source, earlier) + len(indentation(source, earlier))
        later = line_start(source, later) + len(indentation(source, later))
    first, second = block_of(timeline, earlier, python), block_of(timeline, later, python)
    if inward == "later":
        return _within(second, first)
    if inward == "earlier":
        return _within(first, second)
    return first == second


def _extra(mover: Event, target: Event, timeline: Timeline, enter: frozenset) -> dict | None:
    """Constructs around `target` that are not around `mover` (and are not being entered).
    None when `mover` sits in a construct `target` is not in: no place next to `target` runs
    exactly when `mover` did."""
    mine = constructs(mover, timeline)
    theirs = constructs(target, timeline)
    if any(key not in theirs for key in mine):
        return None
    extra = {k: v for k, v in theirs.items() if k not in mine and k not in enter}
    if any(start is None or end is None for start, end in extra.values()):
        return None
    for key in enter:
        if key not in theirs or theirs[key][0] is None:
            return None
        # What is entered must be the outermost extra construct: a loop around the entered branch
        # would run the moved statement once per iteration.
        if any(v[0] < theirs[key][0] for v in extra.values()):
            return None
    return extra


def before(source: bytes, path: str, mover: Event, target: Event, timeline: Timeline,
           enter: frozenset = frozenset()) -> tuple[int, bytes] | None:
    """Where `mover` (which comes earlier) must go to run just before `target`, as often as it
    ran where it was (or within the constructs of `enter`): the offset of the line and its
    indentation; None when there is no such place."""
    if mover.stmt_start is None or mover.stmt_end is None:
        return None
    span = _anchor(mover, target, timeline, enter)
    if span is None:
        return None
    anchor = span[0]
    python = is_python(path)
    if anchor < mover.stmt_end or not starts_line(source, anchor) or not statement_boundary_before(source, anchor, python):
        return None
    if not same_block(source, timeline, mover.stmt_start, anchor, python, inward="later" if enter else ""):
        return None
    return line_start(source, anchor), indentation(source, anchor)


def _anchor(level: Event, target: Event, timeline: Timeline, enter: frozenset) -> tuple[int, int] | None:
    """The byte range of what must stay together with `target` seen from `level`'s block: the
    outermost construct around `target` that is not around `level`, or `target`'s statement."""
    if target.stmt_start is None or target.stmt_end is None:
        return None
    extra = _extra(level, target, timeline, enter)
    if extra is None:
        return None
    if not extra:
        return target.stmt_start, target.stmt_end
    return min(start for start, _ in extra.values()), max(end for _, end in extra.values())


def after(source: bytes, path: str, mover: Event, target: Event, timeline: Timeline,
          enter: frozenset = frozenset()) -> tuple[int, bytes] | None:
    """Where `mover` (which comes later) must go to run just after `target`: the offset of the
    line and its indentation; None when there is no such place."""
    if mover.stmt_start is None:
        return None
    span = _anchor(mover, target, timeline, enter)
    if span is None:
        return None
    python = is_python(path)
    start, end = span
    if end > mover.stmt_start or not starts_line(source, start) or not ends_line(source, end, python):
        return None
    if not same_block(source, timeline, start, mover.stmt_start, python, inward="earlier" if enter else ""):
        return None
    return line_after(source, end), indentation(source, start)


def after_in_block_of(source: bytes, path: str, owner: Event, target: Event, timeline: Timeline,
                      deeper_ok: bool = False) -> tuple[int, bytes] | None:
    """Where a new statement goes to run just after `target`, in the block of `owner` (an earlier
    statement, such as the binding the new statement ends); deeper blocks the events do not
    record (`with`, `try`) are accepted with `deeper_ok`."""
    if owner.stmt_start is None:
        return None
    span = _anchor(owner, target, timeline, frozenset())
    if span is None:
        return None
    python = is_python(path)
    start, end = span
    if start < owner.stmt_start or not starts_line(source, start) or not ends_line(source, end, python):
        return None
    if not same_block(source, timeline, owner.stmt_start, start, python, inward="later" if deeper_ok else ""):
        return None
    return line_after(source, end), indentation(source, start)


_WORD = re.compile(rb"\w+")
_WORD_CUT = re.compile(rb"\w\w")  # a word character on each side of a position

# Where words start in the source last asked about: `_WordIndex` for that source.
_word_index: "_WordIndex | None" = None

# Distinct words looked up one by one (a C-speed scan of the source each) before indexing every
# word at once pays: most files ask about a few names, a file of many findings about many.
_WORDS_SCANNED_ALONE = 8


class _WordIndex:
    """Where each word of `source` starts, in order: found per word on first request (one regex scan
    of the source), and for every word at once after `_WORDS_SCANNED_ALONE` requests."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.words: dict[bytes, list[int]] = {}
        self.complete = False

    def get(self, key: bytes, default=None):  # noqa: ANN001  (mirrors dict.get)
        found = self.words.get(key)
        if found is not None or self.complete or not _WORD.fullmatch(key):
            return found if found is not None else default
        if len(self.words) >= _WORDS_SCANNED_ALONE:
            words: dict[bytes, list[int]] = {}
            for m in _WORD.finditer(self.source):
                words.setdefault(m.group(), []).append(m.start())
            self.words, self.complete = words, True
            return words.get(key, default)
        # `\bkey\b` without its first `\b`, which would make the engine try every byte instead of
        # skipping to the key's first letter; the byte before a match is tested here instead (a
        # rejected match hides no other: inside it, the key follows word characters).
        source = self.source
        found = [m.start() for m in re.finditer(re.escape(key) + rb"\b", source)
                 if m.start() == 0 or source[m.start() - 1] not in WORD_BYTES]
        self.words[key] = found
        return found if found else default


def word_occurrences(source: bytes, name: str, start: int, end: int) -> list[int] | None:
    """Where `name` starts as a whole word in `source[start:end]`: what `re.finditer(rb"\\bname\\b",
    source, start, end)` finds, from an index of every word of `source` built once (fixes ask per
    finding; a scan of the scope each time made a file of many findings quadratic).  None when
    `name` is not one word, or a word runs across `end` (the caller searches itself)."""
    key = name.encode("utf-8", "replace")
    if not _WORD.fullmatch(key) or (0 < end < len(source) and _WORD_CUT.match(source, end - 1)):
        return None
    starts = _word_index_of(source).get(key, [])
    return starts[bisect.bisect_left(starts, start):bisect.bisect_right(starts, end - len(key))]


def _word_index_of(source: bytes) -> _WordIndex:
    """Where each word of `source` starts, in order (kept for the source last asked about)."""
    global _word_index
    if _word_index is None or _word_index.source is not source:
        _word_index = _WordIndex(source)
    return _word_index


def names_in(text: str) -> set[str]:
    """Identifiers an expression is written with, less type names and keywords."""
    return {n for n in _IDENT.findall(text) if n not in _NOT_NAMES}


def defined_before(source: bytes, timeline: Timeline, name: str, pos: int) -> bool:
    """`name` appears in the scope before `pos` (a parameter, an earlier local), or is a
    file-level definition (a macro, a global, a module-level assignment or import)."""
    start = timeline.start_byte or 0
    found = word_occurrences(source, name, start, pos)
    if found is None:
        found = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b").search(source, start, pos) is not None
    if found:
        return True
    key = name.encode("utf-8", "replace")
    if not _WORD.fullmatch(key) or (0 < start < len(source) and _WORD_CUT.match(source, start - 1)):
        head = source[:start]  # not one word, or the scope starts inside one: search as written
        return any(pattern.search(head) for pattern in _definition_patterns(name.encode()))
    return _definitions(source).before(key, start)


def _definition_patterns(key: bytes) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """A macro, a declaration or assignment at the start of a line, an import: what defines `key`
    in the text before a scope."""
    name = re.escape(key)
    return (re.compile(rb"^\s*#\s*define\s+" + name + rb"\b", re.M),
            re.compile(rb"^(?:[\w:<>*&\s]+\s)?" + name + rb"\s*(?:=|\[|;)", re.M),
            re.compile(rb"^(?:from\s+\S+\s+)?import\s+.*\b" + name + rb"\b", re.M))


class _Definitions:
    """Where each word is first defined in a source, for `defined_before`: it searched the whole
    text before the scope for every name of every fix, quadratic in a file of many functions.
    `before(key, start)` says what searching `source[:start]` with `_definition_patterns(key)`
    says, for a word `key` and a `start` that does not cut a word:

    * a macro: every match of the pattern is a `#define` line whose name is `key`; all of them
      are found in one pass (a match never starts inside another);
    * a declaration: a match ends at the first `=`, `[` or `;` after `key`, and starts at a line
      start in the run of word, space and `:<>*&` characters before `key`, so trying the nearest
      such line start before each occurrence of `key` finds every match (once per word);
    * an import: a match starts at a line that starts with `from` or `import`: those lines are
      few, and each is tried with the pattern itself, cut at `start`.
    Nothing after a match's end decides it, so a match in the whole text ending by `start` is a
    match in the text before `start`, and the reverse."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.macros: dict[bytes, int] = {}
        for m in re.finditer(rb"^\s*#\s*define\s+(\w+)\b", source, re.M):
            self.macros.setdefault(m.group(1), m.end())
        # An import's match starts where a line starts with `from` or `import` (the pattern has no
        # leading blanks); those are tried one by one.
        self.import_lines = [m.start() for m in re.finditer(rb"^(?:from|import)", source, re.M)]
        self.declarations: dict[bytes, float] = {}

    def before(self, key: bytes, start: int) -> bool:
        if self.macros.get(key, start + 1) <= start:
            return True
        if self._declared(key) <= start:
            return True
        if not self.import_lines or self.import_lines[0] >= start:
            return False
        imported = _definition_patterns(key)[2]
        return any(imported.match(self.source, at, start) for at in self.import_lines if at < start)

    def _declared(self, key: bytes) -> float:
        """The end of the first declaration or assignment of `key` at the start of a line."""
        found = self.declarations.get(key)
        if found is None:
            source = self.source
            declared = _definition_patterns(key)[1]
            found = float("inf")
            for at in _word_index_of(source).get(key, ()):
                tries = [at] if at == 0 or source[at - 1:at] == b"\n" else []
                if at >= 2:
                    tries.append(source.rfind(b"\n", 0, at - 2) + 1)  # the nearest line start leaving room for a prefix
                for line_start in tries:
                    m = declared.match(source, line_start)
                    if m is not None:
                        found = min(found, m.end())
            self.declarations[key] = found
        return found


_definitions_cache: _Definitions | None = None


def _definitions(source: bytes) -> _Definitions:
    global _definitions_cache
    if _definitions_cache is None or _definitions_cache.source is not source:
        _definitions_cache = _Definitions(source)
    return _definitions_cache
