"""The text the CUDA parser reads: the file as the compiler's preprocessor leaves it, mapped back.

tree-sitter parses the text as written, so a conditional directive inside an argument list, a macro
used without `;` or a kernel launched from a macro body breaks or hides the code around it.  This
module does what the compiler's preprocessor does to the file, in the two ways that keep every
finding on the line and column the user wrote:

* **Conditional inclusion** is decided as the compiler decides it (`#if` expressions evaluated with
  the build's macros, an undefined name reading 0) and the lines it drops, with every `#if`-family
  directive line, are overwritten with spaces: offsets, rows and columns do not move.
* **Macro expansion** replaces each use of a macro defined in the file or in a local header it
  includes (`#include "x.h"`, found as the compiler finds it) when the use is a function-like macro
  or an object-like one whose body is not a plain expression (a statement, a launch, a brace).  The
  result is parsed in place of the use; `Mapping` takes every offset of the parsed text back to the
  original: text that came from a macro argument goes back to where the argument was written, text
  from a macro body to the whole use (as a compiler's expansion location does).

Names the build does not define, macros of system headers (`<...>` is never read) and object-like
macros that are plain expressions (`#define N 1024`, which the size folder reads) are left as
written.  `__attribute__((...))` and `__align__(n)`, which tree-sitter-cuda cannot place after a
declarator, are blanked like dropped lines.

Text is handled as latin-1 so that one character is one byte: offsets are the file's byte offsets.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from gpulint.static import cuda_api as api
from gpulint.static.includes import BuildView, resolve

# Characters one macro use may expand to: a use past it is left as written (a kernel body built
# from `OP10 OP10 ...` repeats, whose expansion would cost more than the file's analysis).
_MAX_EXPANSION = 1 << 16
_MAX_HEADER_DEPTH = 16

# Comments, strings and characters are skipped; a directive is a whole (continued) line.
_LEXEME = re.compile(r"""
    (?P<comment>/\*[\s\S]*?(?:\*/|\Z)|//[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<directive>^[ \t]*\#[ \t]*(?P<dname>[A-Za-z_]*)(?P<drest>(?:[^\n]*\\\r?\n)*[^\n]*))
""", re.M | re.X)
_DIRECTIVE_AT = re.compile(r"[ \t]*\#[ \t]*(?P<dname>[A-Za-z_]*)(?P<drest>(?:[^\n]*\\\r?\n)*[^\n]*)")
# What makes a file need the preprocessor (`_needs_preprocessing`): a directive that may change the
# text, or C++ the parser needs respelled or blanked.  Patterns here start with a literal, never with
# `^` or `\b`: the regular expression engine then skips to where the literal is instead of trying
# every position; `_line_start_matches` and `_word_matches` test what the `^` or `\b` tested.
_QUICK_DIRECTIVE = re.compile(r"#[ \t]*(?:if|ifdef|ifndef|define|include)\b")
_QUICK_WORDS = re.compile(r"(?:typeid|new\s+const)\b")
# C++ tree-sitter-cuda cannot parse, respelled in place with as many characters: `typeid(T)` as
# the name `typeid_T_`, the `const` of `new const T*[n]` as blanks (matches at a word's start).
_RESPELLED = re.compile(r"typeid\s*\(\s*[\w:]+\s*\)|new\s+(?:const\s+)?[\w:]+\s*\*[\s*]*\[|new\s+const\b")
_DEFINE = re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)")  # at a line's start
_IDENT = re.compile(r"[A-Za-z_]\w*")
_BLANKED = re.compile(r"\b(?:__attribute__|__align__)\s*\(")
_NOT_NEWLINE = re.compile(r"[^\n]")
_CONDITIONAL = {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"}
# Object-like macros that stand for qualifiers (`#define RESTRICT __restrict__`): expanded, as the
# parser knows the keywords and not the names.  Empty ones (`#define PERF_BEGIN`) are expanded too.
_QUALIFIERS = re.compile(r"(?:\s*\b(?:__restrict__|__restrict|restrict|__device__|__host__|__global__|__forceinline__|"
                         r"__noinline__|__inline__|inline|static|const|volatile|extern|__shared__|__constant__|"
                         r"__managed__)\b)+\s*")
# A macro body that calls these works on device memory the analysis must see.
_DEVICE_MEMORY_CALL = re.compile(r"\b(?:" + "|".join(sorted(
    {*api.ALLOC, *api.FREE, *api.COPY, *api.MEMSET, *api.LAUNCH, *api.GRAPH_LAUNCH})) + r")\b")
_COMMENTS_AND_BLANKS = re.compile(r"(?:\s+|//[^\n]*|/\*[\s\S]*?\*/)+")
_TYPE_WORD = re.compile(r"\b(?:void|char|short|int|long|float|double|bool|size_t|u?int\d+_t|half|__half|float[1-4]|"
                        r"double[1-4]|int[1-4])\b")
_TYPE_ARGUMENT = re.compile(r"(?:(?:const|unsigned|signed|long|short|struct)\s+)*(?:void|char|short|int|long|float|double|"
                            r"bool|size_t|u?int\d+_t|half|__half|float[1-4]|double[1-4]|int[1-4])[\s*&]*")
_STRUCTURAL = re.compile(r"[;{}]|<<<|\b(?:if|for|while|do|return|switch)\b")


@dataclass(frozen=True)
class Macro:
    """One `#define`: params is None for an object-like macro."""

    name: str
    params: tuple[str, ...] | None
    variadic: bool
    body: str


@dataclass
class Mapping:
    """Offsets of the parsed text -> offsets of the original file (see the module's docstring)."""

    starts: list[int] = field(default_factory=list)  # parsed-text offset where each piece starts
    # Per piece: (original offset, None) for copied text; (use start, use end, origins) for an
    # expansion, origins[i] the original offset of its i-th character or -1 (macro body).
    pieces: list[tuple] = field(default_factory=list)

    def start(self, offset: int) -> int:
        i = bisect.bisect_right(self.starts, offset) - 1
        piece = self.pieces[i]
        if len(piece) == 2:
            return piece[0] + offset - self.starts[i]
        use_start, _, origins = piece
        k = offset - self.starts[i]
        return origins[k] if k < len(origins) and origins[k] >= 0 else use_start

    def end(self, offset: int) -> int:
        """Where a range ending (exclusive) at `offset` ends in the original."""
        if offset <= 0:
            return 0
        i = bisect.bisect_right(self.starts, offset - 1) - 1
        piece = self.pieces[i]
        if len(piece) == 2:
            return piece[0] + offset - self.starts[i]
        _, use_end, origins = piece
        k = offset - 1 - self.starts[i]
        return origins[k] + 1 if k < len(origins) and origins[k] >= 0 else use_end


@dataclass
class Preprocessed:
    """What the parser reads (`text`), how to map it back (`mapping`, None when every offset is
    unchanged), the original byte ranges of the macro uses expanded, and object-like macros of
    the local headers included (name -> replacement text) for the size folder."""

    text: bytes
    mapping: Mapping | None = None
    expanded: list[tuple[int, int]] = field(default_factory=list)
    header_macros: dict[str, str] = field(default_factory=dict)
    # Function-like macros were left as written that `preprocess(..., repair=True)` may expand.
    repairable: bool = False


def preprocess(source: bytes, path: Path | None, view: BuildView, repair: bool = False) -> Preprocessed:
    """The text to parse.  Function-like macros that work on no device memory (`CHECK(call)`) are
    expanded only with `repair`, at the uses that cannot parse as calls: a first parse without them
    tells whether any is needed, and most files need none."""
    text = source.decode("latin-1")
    if not _needs_preprocessing(text):
        return Preprocessed(source)
    return _Preprocessor(text, path, view, repair).run()


def _needs_preprocessing(text: str) -> bool:
    if next(_line_start_matches(_QUICK_DIRECTIVE, text), None) is not None:
        return True
    return "__attribute__" in text or "__align__" in text or next(_word_matches(_QUICK_WORDS, text), None) is not None


def _word_matches(pattern: re.Pattern, text: str) -> Iterator[re.Match]:
    """The matches `\\b` + `pattern` would give (`pattern` starts with a word character): those not
    preceded by a word character, leftmost first, not overlapping."""
    pos = 0
    search = pattern.search
    m = search(text, pos)
    while m is not None:
        start = m.start()
        before = text[start - 1] if start else " "
        if before.isalnum() or before == "_":  # what `\\w` matches
            m = search(text, start + 1)
            continue
        yield m
        m = search(text, max(m.end(), start + 1))


def _line_start_matches(pattern: re.Pattern, text: str) -> Iterator[re.Match]:
    """The matches `^[ \\t]*` + `pattern` (under re.M) would give, each from where `pattern` starts:
    those with only blanks before them on their line."""
    search = pattern.search
    m = search(text, 0)
    while m is not None:
        start = m.start()
        if text[text.rfind("\n", 0, start) + 1:start].strip(" \t"):
            m = search(text, start + 1)
            continue
        yield m
        m = search(text, max(m.end(), start + 1))


# --------------------------------------------------------------------------- directives


def _parse_define(rest: str) -> Macro | None:
    m = re.match(r"\s*([A-Za-z_]\w*)(\((?P<params>[^)]*)\))?", rest)
    if m is None:
        return None
    body = _strip_comments(rest[m.end():]).replace("\\\n", " ").strip()
    if m.group(2) is None:
        return Macro(m.group(1), None, False, body)
    names = [p.strip() for p in m.group("params").split(",") if p.strip()]
    variadic = bool(names) and names[-1].endswith("...")
    if variadic:
        last = names[-1][:-3].strip()
        names = names[:-1] + ([last] if last else ["__VA_ARGS__"])
    return Macro(m.group(1), tuple(names), variadic, body)


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*[\s\S]*?\*/|//[^\n]*", " ", text)


def _include_name(rest: str) -> str | None:
    m = re.match(r'\s*"([^"]+)"', rest)
    return m.group(1) if m else None


class _Conditions:
    """The `#if` stack: whether the text at this point is compiled."""

    def __init__(self) -> None:
        self.stack: list[list[bool]] = []  # [parent active, some branch taken]
        self.active = True

    def directive(self, name: str, test) -> None:
        if name in ("if", "ifdef", "ifndef"):
            taken = bool(self.active and test())
            self.stack.append([self.active, taken])
            self.active = taken
        elif not self.stack:
            return  # an `#else`/`#endif` without its `#if`: ignored, as nothing can be done with it
        elif name in ("elif", "elifdef", "elifndef"):
            parent, taken = self.stack[-1]
            self.active = bool(parent and not taken and test())
            self.stack[-1][1] = taken or self.active
        elif name == "else":
            parent, taken = self.stack[-1]
            self.active = parent and not taken
            self.stack[-1][1] = True
        elif name == "endif":
            self.active = self.stack.pop()[0]


# A name the project never defines that is spelled like a header's include guard
# (`__CUDA_RUNTIME_H__`, `CUBLAS_API_H_`): a system header the file includes defines it, and
# `#ifdef __CUDA_RUNTIME_H__` tests that it was included.  Such names read as defined.
_HEADER_GUARD = re.compile(r"_(?:H|HPP|HH|CUH|INCLUDED)_*$", re.I)


def _defined(name: str, macros: dict[str, Macro], known: frozenset[str]) -> bool:
    return name in macros or (name not in known and _HEADER_GUARD.search(name) is not None)


def _defined_names(text: str) -> frozenset[str]:
    """Every name a `#define` of the text defines, whatever the conditions around it."""
    return frozenset(m.group(1) for m in _line_start_matches(_DEFINE, text))


def _test(name: str, rest: str, macros: dict[str, Macro], known: frozenset[str], including: Path | None,
          view: BuildView) -> bool:
    rest = _strip_comments(rest).replace("\\\n", " ").strip()
    if name in ("ifdef", "elifdef", "ifndef", "elifndef"):
        word = _IDENT.match(rest)
        defined = word is not None and _defined(word.group(0), macros, known)
        return defined if name in ("ifdef", "elifdef") else not defined
    return evaluate(rest, macros, including, view, known) != 0


# --------------------------------------------------------------------------- #if expressions


def evaluate(expression: str, macros: dict[str, Macro], including: Path | None = None,
             view: BuildView | None = None, known: frozenset[str] = frozenset()) -> int:
    """An `#if` expression's value as the compiler computes it (undefined names are 0); an
    expression that cannot be read is 0 too."""
    def has_include(m: re.Match) -> str:
        quoted = re.match(r'\s*"([^"]+)"', m.group(1))
        if quoted is None:
            return "1"  # <header>: a system header the build is assumed to have
        found = including is not None and resolve(quoted.group(1), including, view.include_paths if view else ())
        return "1" if found else "0"

    text = re.sub(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))",
                  lambda m: "1" if _defined(m.group(1) or m.group(2), macros, known) else "0", expression)
    text = re.sub(r"\b__has_include(?:_next)?\s*\(([^)]*)\)", has_include, text)
    try:
        expanded, _ = _Expander(lambda _name, _at: macros.get(_name), everything=True).rescan(
            text, [-1] * len(text), frozenset(), 0)
        return _ExpressionParser(expanded).parse()
    except (_TooLarge, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError):
        return 0


_EXPR_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|('(?:\\.|[^'\\])')|([A-Za-z_]\w*)"
                         r"|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~?:()]))")
_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


class _ExpressionParser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, object]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _EXPR_TOKEN.match(text, pos)
            if m is None:
                raise ValueError(text[pos:])
            number, char, ident, op = m.groups()
            if number is not None:
                self.tokens.append(("n", int(number, 0) if not (len(number) > 1 and number[0] == "0"
                                                                and number[1] not in "xX") else int(number, 8)))
            elif char is not None:
                body = char[1:-1]
                self.tokens.append(("n", ord(body[-1]) if not body.startswith("\\") or len(body) == 1
                                    else {"n": 10, "t": 9, "0": 0}.get(body[1], ord(body[1]))))
            elif ident is not None:
                self.tokens.append(("n", 1 if ident == "true" else 0))  # an undefined name is 0
            else:
                self.tokens.append(("o", op))
            pos = m.end()
        self.i = 0

    def parse(self) -> int:
        value = self.conditional()
        if self.i != len(self.tokens):
            raise ValueError("trailing tokens")
        return value

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) and self.tokens[self.i][0] == "o" else None  # type: ignore[return-value]

    def conditional(self) -> int:
        cond = self.binary(1)
        if self.peek() == "?":
            self.i += 1
            yes = self.conditional()
            if self.peek() != ":":
                raise ValueError("expected :")
            self.i += 1
            no = self.conditional()
            return yes if cond else no
        return cond

    def binary(self, level: int) -> int:
        left = self.unary()
        while True:
            op = self.peek()
            if op is None or _BINARY.get(op, 0) < level:
                return left
            self.i += 1
            right = self.binary(_BINARY[op] + 1)
            left = _apply(op, left, right)

    def unary(self) -> int:
        kind, value = self.tokens[self.i]
        self.i += 1
        if kind == "n":
            return value  # type: ignore[return-value]
        if value == "(":
            inner = self.conditional()
            if self.peek() != ")":
                raise ValueError("expected )")
            self.i += 1
            return inner
        operand = self.unary()
        return {"!": lambda v: int(not v), "~": lambda v: ~v, "-": lambda v: -v, "+": lambda v: v}[value](operand)  # type: ignore[index]


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # C truncates toward zero
        return q if op == "/" else a - q * b
    return {"||": lambda: int(bool(a or b)), "&&": lambda: int(bool(a and b)), "|": lambda: a | b,
            "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b), "!=": lambda: int(a != b),
            "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b}[op]()


# --------------------------------------------------------------------------- expansion


_PUNCTUATION = re.compile(r"""[()\[\]{},"'/]""")


def _after_literal(text: str, i: int) -> int | None:
    """Where the string, character literal or comment starting at `i` ends; None if none starts there."""
    if text[i] in "\"'" or text.startswith(("/*", "//"), i):
        skipped = _LEXEME.match(text, i)
        if skipped is not None and skipped.end() > i:
            return skipped.end()
    return None


def _matching_paren(text: str, open_at: int) -> int:
    """The offset of the `)` that closes the `(` at `open_at`, or -1 (strings and comments skipped).
    Jumps from one bracket, quote or slash to the next: a walk over every character costs more."""
    depth = 0
    i = open_at
    while True:
        m = _PUNCTUATION.search(text, i)
        if m is None:
            return -1
        i = m.start()
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        else:
            after = _after_literal(text, i)
            if after is not None:
                i = after
                continue
        i += 1


def _split_arguments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The top-level comma-separated argument ranges of text[start:end] (inside the parentheses)."""
    ranges = []
    depth = 0
    arg_start = start
    i = start
    while True:
        m = _PUNCTUATION.search(text, i, end)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            ranges.append((arg_start, i))
            arg_start = i + 1
        else:
            after = _after_literal(text, i)
            if after is not None:
                i = after
                continue
        i += 1
    ranges.append((arg_start, end))
    return ranges


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


_BODY_TOKEN = re.compile(r"##|#\s*(?=[A-Za-z_])|[A-Za-z_]\w*|\s+|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|.", re.S)


class _TooLarge(Exception):
    """A macro use expands past `_MAX_EXPANSION`."""


class _Expander:
    """Expands macro uses in a text whose characters carry their original offsets (-1: a body)."""

    def __init__(self, lookup, everything: bool = False) -> None:
        self.lookup = lookup  # (name, offset of the use) -> Macro | None
        self.everything = everything  # `#if` expressions expand every macro
        self.budget = _MAX_EXPANSION
        self.structural: dict[int, bool] = {}  # id(object-like macro) -> expanded

    def wanted(self, macro: Macro | None, at: int = 0) -> bool:
        """Whether every use of `macro` is expanded: a macro whose body launches, allocates, frees,
        copies or sets device memory (what the analysis must see), an object-like one whose body is
        a statement or a brace (`#define OP { s += v; }`), empty, or qualifiers, or one whose body
        names such a macro (`OP20` = `OP OP ...`).  Other function-like macros are expanded only at
        uses that do not parse as calls (`needed_at`): `CHECK(cudaMalloc(&p, n));` reads as a call
        whose argument is the allocation, and expanding every such wrapper costs half the analysis."""
        if macro is None:
            return False
        if self.everything:
            return True
        known = self.structural.get(id(macro))
        if known is None:
            self.structural[id(macro)] = False  # a cycle reads as plain
            body = macro.body
            known = ("<<<" in body or _DEVICE_MEMORY_CALL.search(body) is not None
                     or (macro.params is None and (not body or _QUALIFIERS.fullmatch(body) is not None
                                                   or _STRUCTURAL.search(body) is not None))
                     or any(self.wanted(self.lookup(word, at), at) for word in set(_IDENT.findall(body))
                            if word != macro.name and self.lookup(word, at) is not None))
            self.structural[id(macro)] = known
        return known

    def needed_at(self, macro: Macro | None, text: str, end: int, args: list[tuple[int, int]]) -> bool:
        """Whether a use of a function-like macro must be expanded to parse: it stands as a statement
        with no `;` after it, or an argument is a type or holds a statement (`ALLOC(float, p, n)`)."""
        if macro is None or macro.params is None:
            return False
        rest = text[end:end + 400]
        blanks = _COMMENTS_AND_BLANKS.match(rest)
        rest = rest[blanks.end():] if blanks else rest
        if not rest.startswith((";", ")", ",", ".", "-", "+", "*", "/", "=", "!", "<", ">", "&", "|", "?", ":", "]",
                                "[", "%", "^")):
            return True
        if not _TYPE_WORD.search(text, args[0][0] if args else end, end) and not any(
                ";" in text[a:b] or "{" in text[a:b] for a, b in args):
            return False
        return any(_TYPE_ARGUMENT.fullmatch(text[a:b]) or ";" in text[a:b] or "{" in text[a:b] for a, b in args)

    def rescan(self, text: str, origins: list[int], hide: frozenset[str], at: int) -> tuple[str, list[int]]:
        out: list[str] = []
        out_origins: list[int] = []
        pos = 0
        for m in _IDENT.finditer(text):
            if m.start() < pos:
                continue
            name = m.group(0)
            if name in hide:
                continue
            macro = self.lookup(name, at)
            if macro is None or (macro.params is None and not self.wanted(macro, at)):
                continue
            use = self.use(text, m.start(), m.end(), macro)
            if use is None:
                continue
            end, args = use
            if not self.wanted(macro, at) and not self.needed_at(macro, text, end, args):
                continue
            expansion, exp_origins = self.expand(macro, [(text[a:b], origins[a:b]) for a, b in args],
                                                 hide | {name}, at)
            out.append(text[pos:m.start()])
            out_origins.extend(origins[pos:m.start()])
            out.append(expansion)
            out_origins.extend(exp_origins)
            pos = end
        out.append(text[pos:])
        out_origins.extend(origins[pos:])
        return "".join(out), out_origins

    def use(self, text: str, name_start: int, name_end: int, macro: Macro) -> tuple[int, list[tuple[int, int]]] | None:
        """Where the use of `macro` at `name_start` ends and its argument ranges; None when a
        function-like macro's name is not followed by `(` (then it is not a use)."""
        if macro.params is None:
            return name_end, []
        i = name_end
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text) or text[i] != "(":
            return None
        close = _matching_paren(text, i)
        if close < 0:
            return None
        args = [_trimmed(text, a, b) for a, b in _split_arguments(text, i + 1, close)]
        if len(args) == 1 and args[0][0] == args[0][1] and not macro.params:
            args = []
        return close + 1, args

    def expand(self, macro: Macro, args: list[tuple[str, list[int]]], hide: frozenset[str],
               at: int) -> tuple[str, list[int]]:
        params = macro.params or ()
        values: dict[str, tuple[str, list[int]]] = {}
        if macro.params is not None:
            fixed = len(params) - 1 if macro.variadic else len(params)
            for i, name in enumerate(params[:fixed]):
                values[name] = args[i] if i < len(args) else ("", [])
            if macro.variadic:
                rest = args[fixed:]
                text, origins = "", []
                for j, (arg_text, arg_origins) in enumerate(rest):
                    if j:
                        text += ","
                        origins.append(-1)
                    text += arg_text
                    origins.extend(arg_origins)
                values[params[-1]] = (text, origins)
        out: list[str] = []
        out_origins: list[int] = []
        expanded_args: dict[str, tuple[str, list[int]]] = {}
        for kind, token in _plan(macro):
            if kind == "text":
                out.append(token)
                out_origins.extend([-1] * len(token))
            elif kind == "str":
                spelled = " ".join(values[token][0].split())  # blanks collapse, as `#` spells them
                literal = '"' + spelled.replace("\\", "\\\\").replace('"', '\\"') + '"'
                out.append(literal)
                out_origins.extend([-1] * len(literal))
            elif kind == "raw":
                out.append(values[token][0])
                out_origins.extend([-1] * len(values[token][0]))
            else:
                if token not in expanded_args:
                    expanded_args[token] = self.rescan(*values[token], hide - {macro.name}, at)
                out.append(expanded_args[token][0])
                out_origins.extend(expanded_args[token][1])
        text = "".join(out)
        self.budget -= len(text)
        if self.budget < 0:
            raise _TooLarge
        return self.rescan(text, out_origins, hide, at)


_plans: dict[Macro, list[tuple[str, str]]] = {}


def _plan(macro: Macro) -> list[tuple[str, str]]:
    """A macro body as pieces: ("text", t) copied; a parameter ("exp", p) replaced by its argument
    expanded, ("str", p) by its argument spelled as a string (`#p`), ("raw", p) by its argument as
    written (next to `##`, whose operands paste)."""
    plan = _plans.get(macro)
    if plan is not None:
        return plan
    params = set(macro.params or ())
    tokens = _BODY_TOKEN.findall(macro.body)
    plan = []
    for k, token in enumerate(tokens):
        if token.startswith("#"):
            continue  # `##` pastes its neighbours; `#` stringifies the parameter after it
        before = _neighbour(tokens, k, -1)
        after = _neighbour(tokens, k, 1)
        if token.isspace() and "##" in (before, after):
            continue
        if token in params:
            kind = "str" if before.startswith("#") and before != "##" else "raw" if "##" in (before, after) else "exp"
            plan.append((kind, token))
        elif plan and plan[-1][0] == "text":
            plan[-1] = ("text", plan[-1][1] + token)
        else:
            plan.append(("text", token))
    _plans[macro] = plan
    return plan


def _neighbour(tokens: list[str], k: int, step: int) -> str:
    j = k + step
    while 0 <= j < len(tokens) and tokens[j].isspace():
        j += step
    return tokens[j] if 0 <= j < len(tokens) else ""


# --------------------------------------------------------------------------- the file


def _respelled(text: str) -> str:
    parts = []
    pos = 0
    for m in _word_matches(_RESPELLED, text):
        parts += [text[pos:m.start()], _respell(m)]
        pos = m.end()
    return "".join(parts) + text[pos:] if parts else text


def _respell(m: re.Match) -> str:
    spelled = m.group(0)
    if spelled.startswith("typeid"):
        return re.sub(r"[^\w]", "_", spelled)
    # `new const T *[n]` -> `new       T  [n]`: an array of host pointers either way
    return "new" + re.sub(r"\bconst\b", "     ", spelled[3:]).replace("*", " ")


def _whole_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """A use's range, widened to its line's start when only blanks precede it, and over a `;` and
    blanks after it up to the end of its line: what an edit at the statement's line would touch."""
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:start].strip():
        start = line_start
    stop = end
    while stop < len(text) and text[stop] in " \t;":
        stop += 1
    if stop == len(text) or text[stop] in "\r\n":
        end = stop
    return start, end


_header_cache: dict[tuple[str, float, BuildView], dict[str, Macro]] = {}


def header_macros(path: Path, view: BuildView, depth: int = 0) -> dict[str, Macro]:
    """The macros a local header leaves defined (its own includes followed), read with the build's
    macros; cached by the header's path and modification time."""
    try:
        key = (str(path), os.path.getmtime(path), view)
    except OSError:
        return {}
    cached = _header_cache.get(key)
    if cached is not None:
        return cached
    _header_cache[key] = {}  # a header including itself sees nothing more
    try:
        text = path.read_bytes().decode("latin-1")
    except OSError:
        return {}
    macros = {name: Macro(name, None, False, value) for name, value in view.initial_macros().items()}
    initial = dict(macros)
    conditions = _Conditions()
    known = _defined_names(text)
    for _, _, name, rest in _directives(text, _block_comments(text)):
        _directive(name, rest, conditions, macros, known, path, view, depth)
    result = {name: macro for name, macro in macros.items() if initial.get(name) is not macro}
    _header_cache[key] = result
    return result


def _directive(name: str, rest: str, conditions: _Conditions, macros: dict[str, Macro], known: frozenset[str],
               path: Path | None, view: BuildView, depth: int) -> dict[str, Macro | None]:
    """Apply one directive to the macro table; returns what it defined (None: undefined)."""
    if name in _CONDITIONAL:
        conditions.directive(name, lambda: _test(name, rest, macros, known, path, view))
        return {}
    if not conditions.active:
        return {}
    if name == "define":
        macro = _parse_define(rest)
        if macro is not None:
            macros[macro.name] = macro
            return {macro.name: macro}
    elif name == "undef":
        word = _IDENT.search(rest)
        if word is not None:
            macros.pop(word.group(0), None)
            return {word.group(0): None}
    elif name == "include" and path is not None and depth < _MAX_HEADER_DEPTH:
        included = _include_name(rest)
        found = resolve(included, path, view.include_paths) if included else None
        if found is not None:
            brought = header_macros(found, view, depth + 1)
            macros.update(brought)
            return dict(brought)
    return {}


def _block_comments(text: str) -> list[tuple[int, int]]:
    """The ranges of the `/* */` comments (found with `str.find`: a regex walking every character
    costs more than the rest of the preprocessing)."""
    out = []
    i = text.find("/*")
    while i >= 0:
        line_start = text.rfind("\n", 0, i) + 1
        if "//" in text[line_start:i]:  # in a line comment: not an opening
            i = text.find("/*", i + 2)
            continue
        j = text.find("*/", i + 2)
        j = len(text) if j < 0 else j + 2
        out.append((i, j))
        i = text.find("/*", j)
    return out


def _within(ranges: list[tuple[int, int]], starts: list[int], pos: int) -> bool:
    k = bisect.bisect_right(starts, pos) - 1
    return k >= 0 and ranges[k][1] > pos


def _directives(text: str, comments: list[tuple[int, int]]):
    """Each directive outside comments: (start, end, name, rest of the continued line)."""
    starts = [start for start, _ in comments]
    i = text.find("#")
    while i >= 0:
        line_start = text.rfind("\n", 0, i) + 1
        if text[line_start:i].strip() or _within(comments, starts, i):
            i = text.find("#", i + 1)
            continue
        m = _DIRECTIVE_AT.match(text, line_start)
        assert m is not None
        yield line_start, m.end(), m.group("dname"), m.group("drest")
        i = text.find("#", max(m.end(), i + 1))


def _in_line_comment_or_string(text: str, pos: int) -> bool:
    """Whether `pos` is after a `//` or inside a string literal on its line (quotes counted)."""
    prefix = text[text.rfind("\n", 0, pos) + 1:pos]
    if '"' not in prefix and "/" not in prefix:
        return False
    quotes = prefix.count('"') - prefix.count('\\"') - prefix.count("'\"'")
    if quotes % 2:
        return True
    comment = prefix.find("//")
    return comment >= 0 and prefix[:comment].count('"') % 2 == 0


class _Preprocessor:
    def __init__(self, text: str, path: Path | None, view: BuildView, repair: bool) -> None:
        self.text = text
        self.path = path
        self.view = view
        self.repair = repair
        # name -> [(offset it is defined from, Macro or None for #undef)], in file order
        self.history: dict[str, list[tuple[int, Macro | None]]] = {}
        self.header_values: dict[str, str] = {}

    def lookup(self, name: str, at: int) -> Macro | None:
        entries = self.history.get(name)
        if not entries:
            return None
        found = None
        for offset, macro in entries:
            if offset > at:
                break
            found = macro
        return found

    def run(self) -> Preprocessed:
        text = self.text
        macros = {name: Macro(name, None, False, value) for name, value in self.view.initial_macros().items()}
        for name, macro in macros.items():
            self.history[name] = [(0, macro)]
        conditions = _Conditions()
        blank: list[tuple[int, int]] = []
        inactive_from: int | None = None
        known = _defined_names(text)
        for start, end, name, rest in _directives(text, _block_comments(text)):
            was_active = conditions.active
            changed = _directive(name, rest, conditions, macros, known, self.path, self.view, 0)
            if name in _CONDITIONAL:
                blank.append((start, end))
                if was_active and not conditions.active:
                    inactive_from = end
                elif not was_active and conditions.active and inactive_from is not None:
                    blank.append((inactive_from, start))
                    inactive_from = None
            for key, change in changed.items():
                self.history.setdefault(key, []).append((end, change))
                if name == "include" and change is not None and change.params is None \
                        and not _STRUCTURAL.search(change.body):
                    self.header_values[key] = change.body
        if inactive_from is not None:
            blank.append((inactive_from, len(text)))
        for m in _BLANKED.finditer(text) if "__attribute__" in text or "__align__" in text else ():
            close = _matching_paren(text, m.end() - 1)
            if close > 0:
                blank.append((m.start(), close + 1))
        if "typeid" in text or "new" in text:
            text = _respelled(text)
        if blank:
            parts = []
            pos = 0
            for start, end in sorted(blank):
                start = max(start, pos)
                if end <= start:
                    continue
                parts.append(text[pos:start])
                parts.append(_NOT_NEWLINE.sub(" ", text[start:end]))
                pos = end
            parts.append(text[pos:])
            text = "".join(parts)
        return self.expand(text)

    def expand(self, text: str) -> Preprocessed:
        expander = _Expander(self.lookup)
        repairable = not self.repair and any(macro is not None and macro.params is not None
                                             for entries in self.history.values() for _, macro in entries)
        names = [n for n, entries in self.history.items()
                 if any(macro is not None and ((self.repair and macro.params is not None) or expander.wanted(macro, offset))
                        for offset, macro in entries)]
        if not names:
            return Preprocessed(text.encode("latin-1"), header_macros=self.header_values, repairable=repairable)
        uses = re.compile(r"(?:" + "|".join(map(re.escape, names)) + r")\b")  # at a word's start
        hidden = _block_comments(text) + [(start, end) for start, end, _, _ in _directives(text, _block_comments(text))]
        hidden.sort()
        hidden_starts = [start for start, _ in hidden]
        mapping = Mapping()
        out: list[str] = []
        length = 0
        pos = 0
        expanded: list[tuple[int, int]] = []
        for m in _word_matches(uses, text):
            if m.start() < pos or _within(hidden, hidden_starts, m.start()) or _in_line_comment_or_string(text, m.start()):
                continue
            macro = self.lookup(m.group(0), m.start())
            if macro is None or (macro.params is None and not expander.wanted(macro, m.start())):
                continue
            use = expander.use(text, m.start(), m.end(), macro)
            if use is None:
                continue
            end, args = use
            if not expander.wanted(macro, m.start()) and not (self.repair and expander.needed_at(macro, text, end, args)):
                continue
            expander.budget = _MAX_EXPANSION
            try:
                result, origins = expander.expand(
                    macro, [(text[a:b], list(range(a, b))) for a, b in args], frozenset({macro.name}), m.start())
            except _TooLarge:
                continue
            mapping.starts.append(length)
            mapping.pieces.append((pos, None))
            out.append(text[pos:m.start()])
            length += m.start() - pos
            # A space on each side: the expansion never pastes onto its neighbours' tokens.
            result = " " + result + " "
            origins = [-1] + origins + [-1]
            mapping.starts.append(length)
            mapping.pieces.append((m.start(), end, origins))
            out.append(result)
            length += len(result)
            expanded.append(_whole_lines(text, m.start(), end))
            pos = end
        if not expanded:
            return Preprocessed(text.encode("latin-1"), header_macros=self.header_values, repairable=repairable)
        mapping.starts.append(length)
        mapping.pieces.append((pos, None))
        out.append(text[pos:])
        return Preprocessed("".join(out).encode("latin-1"), mapping, expanded, self.header_values, repairable)
