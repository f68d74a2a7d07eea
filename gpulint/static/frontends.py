"""Which frontend reads a file: Python through tree-sitter-python; CUDA/C++ through libclang when
asked for (`--frontend clang`, a compile database), falling back to tree-sitter on any error.
Returns the file's object histories and, when the file could not be analysed at all, why (the
engine reports that as GL900)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gpulint.config import Settings
from gpulint.discovery import is_python_source
from gpulint.history import Unit
from gpulint.static import unknown
from gpulint.static.program import FileSummary, ProgramView


@dataclass
class Unparsable:
    """Why a file (or the scopes a syntax error breaks) could not be analysed, and where."""

    why: str
    row: int = 1
    column: int = 1


def parse_cuda(path: Path, display: str, data: bytes, settings: Settings, notes: list[str]):
    """The syntax tree of a CUDA/C++ file: libclang when asked for, tree-sitter otherwise."""
    from gpulint.static import cuda_treesitter

    wants_clang = settings.frontend == "clang" or (settings.frontend == "auto" and settings.compile_commands)
    if wants_clang:
        try:
            from gpulint.static import cuda_clang

            args = None
            if settings.compile_commands:
                from gpulint.static import compile_db

                args = compile_db.load(settings.compile_commands).args_for(str(path))
            return cuda_clang.parse(display, data, args, filename=str(path))
        except ImportError as exc:
            notes.append(f"{display}: libclang frontend unavailable ({exc}); using tree-sitter")
        except Exception as exc:  # ClangUnavailable, ClangParseError: both fall back
            reason = str(exc).strip().splitlines()
            notes.append(f"{display}: clang could not parse it cleanly ({'; '.join(reason[:3])}); "
                         f"falling back to tree-sitter")
    from gpulint.static.includes import build_view

    return cuda_treesitter.parse(display, data, build_view(path, settings), path)


@dataclass
class Parsed:
    """A file as its frontend read it: the CUDA syntax tree, or the Python unit (whose frontend
    lowers as it parses) with the scopes it skipped."""

    display: str
    text: bytes
    tree: object | None = None
    unit: Unit | None = None
    skipped: list[str] | None = None


def parse(path: Path, display: str, text: bytes, settings: Settings, notes: list[str]) -> Parsed:
    if is_python_source(path):
        from gpulint.static.python import analyse

        kinds: Counter = Counter()
        unit, skipped = analyse(display, text, kinds)
        note = unknown.note(display, kinds)
        if note is not None:
            notes.append(note)
        return Parsed(display, text, unit=unit, skipped=skipped)
    tree = parse_cuda(path, display, text, settings, notes)
    skipped = unknown.note(display, tree.unknown)
    if skipped is not None:
        notes.append(skipped)
    return Parsed(display, text, tree=tree)


def lower(parsed: Parsed, program: ProgramView | None = None) -> tuple[Unit, list[str], Unparsable | None,
                                                                        FileSummary | None]:
    """The file's unit, the scopes skipped for parse errors, why the file could not be analysed
    (None when it could, in part or whole) and, for CUDA/C++, its summary for the other files of
    the program (`program`: what their functions and kernels do, as this file's names need)."""
    if parsed.unit is not None:
        skipped = parsed.skipped or []
        return parsed.unit, skipped, python_syntax_error(parsed.display, parsed.text) if skipped else None, None
    from gpulint.static.lower import lower_in_program

    unit, skipped, summary = lower_in_program(parsed.tree, program or ProgramView())
    return unit, skipped, cuda_unparsable(parsed.tree), summary


def python_syntax_error(display: str, text: bytes) -> Unparsable | None:
    """Where Python itself cannot compile the file (its message and line), or None.  Asked only
    when tree-sitter needed error recovery, so valid code is compiled once, by tree-sitter."""
    try:
        compile(text, display, "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except SyntaxError as exc:
        row = max(exc.lineno or 1, 1)
        column = max(exc.offset or 1, 1)
        return Unparsable(f"syntax error: {exc.msg} (line {row}); code in the scopes it breaks is not analysed",
                          row, column)
    except (ValueError, MemoryError, RecursionError):
        return None
    return None


def cuda_unparsable(tu) -> Unparsable | None:
    """A CUDA file tree-sitter could not make sense of anywhere: it has syntax errors and not one
    function came out whole, so nothing in it was analysed."""
    if not tu.errors or any(not f.has_errors for f in tu.functions):
        return None
    first = min(tu.errors, key=lambda span: span.start)
    # Often valid code the parser cannot follow (macros, `#ifdef` inside a declaration): say so.
    return Unparsable(f"no function in it parses for gpulint (first parse error at line {first.row}), so none of "
                      f"its GPU code is checked", first.row, first.column)
