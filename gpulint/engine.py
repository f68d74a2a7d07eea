"""files -> frontends -> histories -> rules -> findings.

Finds the files to check, reads each one defensively (a file that cannot be analysed becomes a
GL900 finding and a one-line diagnostic, never a traceback), parses it with the chosen
frontend (libclang falling back to tree-sitter on any error), lowers it to object histories,
runs the enabled rules, applies suppression comments and reports unused ones (GL901).
Files are analysed in parallel; results keep the input order.
"""
from __future__ import annotations

import gc
import os
import re
import stat
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from gpulint.cache import CACHE_DIR, ResultCache
from gpulint.config import Resolver, Settings
from gpulint.findings import Applicability, Finding, Fix, Location
from gpulint.fixes.builders import remove_comment
from gpulint.history import Unit
from gpulint.rules import RULES, RuleSettings
from gpulint.sourcetext import as_parsed, line_ending, split_lines

CUDA_SUFFIXES = {".cu", ".cuh"}
CXX_SUFFIXES = {".cpp", ".cc", ".cxx", ".c++", ".h", ".hpp", ".hh", ".hxx"}
PYTHON_SUFFIXES = {".py", ".pyi"}
# A Python file is GPU code when it mentions one of the frameworks gpulint understands.
_PYTHON_MARKERS = re.compile(rb"\b(torch|cupy|numba|cuda)\b")
SKIPPED_DIRS = {"build", "_build", "dist", "node_modules", "__pycache__", "site-packages", "venv", "CMakeFiles"}
# A C/C++ file is CUDA code when it launches kernels or calls the runtime/driver API.
_CUDA_MARKERS = re.compile(rb"<<<|\bcu(?:da)?[A-Z][A-Za-z0-9_]*\s*\(|__global__")
_SUPPRESSION = re.compile(
    r"(?://|/\*|#)\s*gpulint:\s*ignore(?P<file>-file)?(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)  # one line each, for stderr
    notes: list[str] = field(default_factory=list)  # shown with -v
    # gpulint's own failures (a bug, not the user's code): one line each; the run exits 2.
    errors: list[str] = field(default_factory=list)


@dataclass
class Report:
    findings: list[Finding]
    diagnostics: list[str]
    notes: list[str]
    files: int
    errors: list[str] = field(default_factory=list)  # internal errors and unusable input: exit 2


@dataclass
class Suppression:
    row: int
    column: int
    codes: frozenset[str] | None  # None: every code
    used: set[str] = field(default_factory=set)
    covers_next_line: bool = False
    whole_file: bool = False  # `gpulint: ignore-file[...]`


# ------------------------------------------------------------------------- discovery


def _resolver(settings: "Settings | Resolver") -> Resolver:
    return settings if isinstance(settings, Resolver) else Resolver.of(settings)


def _not_regular(path: Path) -> str | None:
    """Why `path` is not a file gpulint may open, or None.  Only regular files are read: opening a
    FIFO blocks until a writer comes (forever, in CI), and a device such as /dev/zero never ends."""
    try:
        mode = path.stat().st_mode  # follows symlinks: a link to /dev/zero is a device
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return f"{kind}, not a regular file; skipped"


def _special_file(path: Path) -> str | None:
    """Why discovery skips `path` (a FIFO, socket or device), or None: a file that cannot even be
    stat'ed (a dangling symlink) is kept, to be reported as unreadable (GL900)."""
    try:
        path.stat()
    except OSError:
        return None
    return _not_regular(path)


def discover(paths: list[str], settings: "Settings | Resolver") -> tuple[list[Path], list[str], list[str]]:
    """Files to check, in a stable order; diagnostics for files skipped inside folders; errors for
    paths named on the command line that cannot be checked (missing, a FIFO, a device: the run
    exits 2, since a typo must not pass as a clean run).  Each folder's `exclude` comes from the
    configuration nearest to it; files named on the command line are always checked."""
    resolver = _resolver(settings)
    files: list[Path] = []
    diagnostics: list[str] = []
    errors: list[str] = []
    seen: set[Path] = set()
    for raw in paths:
        root = Path(raw)
        if not root.exists() and not root.is_symlink():
            errors.append(f"{raw}: no such file or directory")
            continue
        if not root.is_dir():
            why = _special_file(root)
            if why is not None:
                errors.append(f"{raw}: {why}")
            elif root not in seen:
                seen.add(root)
                files.append(root)
            continue
        for folder, dirnames, filenames in os.walk(root):
            base = Path(folder)
            here = resolver.for_dir(base)
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d not in SKIPPED_DIRS and not d.startswith("cmake-build")
                and not here.matches(base / d, here.exclude)
            )
            for name in sorted(filenames):
                candidate = base / name
                suffix = candidate.suffix.lower()
                if suffix not in CUDA_SUFFIXES and suffix not in CXX_SUFFIXES and suffix not in PYTHON_SUFFIXES:
                    continue
                if name.startswith(".") or here.matches(candidate, here.exclude) or candidate in seen:
                    continue
                why = _special_file(candidate)
                if why is not None:
                    diagnostics.append(f"{display_path(candidate)}: {why}")
                    continue
                seen.add(candidate)
                files.append(candidate)
    return files, diagnostics, errors


def display_path(path: Path) -> str:
    # abspath, not resolve: a symlink is reported under the name the user gave it.
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(os.getcwd())).as_posix()
    except ValueError:
        return path.as_posix()


# ------------------------------------------------------------------------- one file


def _unreadable(result: FileResult, display: str, why: str) -> FileResult:
    result.diagnostics.append(f"{display}: {why}")
    rule = RULES["GL900"]
    result.findings.append(Finding(code="GL900", name=rule.name, message=f"cannot analyse this file: {why}",
                                   location=Location(display, 1, 1), properties={"origin": "static"}))
    return result


def read_source(path: Path, settings: Settings) -> tuple[bytes | None, str | None]:
    """The file's bytes and, when it cannot be analysed, why (bytes may still be there to look at)."""
    why = _not_regular(path)
    if why is not None:
        return None, why
    limit = settings.max_file_size
    try:
        # At most one byte past the limit, whatever stat said: /proc files report size 0, and a
        # file may grow between the stat and the read.
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    if len(data) > limit:
        size = max(len(data), _size(path))
        return None, f"file is too large ({size} bytes; max-file-size is {limit})"
    if not data.strip():
        return data, "file is empty"
    if b"\x00" in data[:8192]:
        return data, "file is binary"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data, f"not valid UTF-8 (byte {exc.start})"
    return data, None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def is_python_source(path: Path) -> bool:
    return path.suffix.lower() in PYTHON_SUFFIXES


def is_gpu_source(path: Path, data: bytes) -> bool:
    """.cu/.cuh always; C/C++ and Python files only when they use CUDA or a GPU framework."""
    if is_python_source(path):
        return bool(_PYTHON_MARKERS.search(data))
    return path.suffix.lower() in CUDA_SUFFIXES or bool(_CUDA_MARKERS.search(data))


def parse_cuda(path: Path, display: str, data: bytes, settings: Settings, result: FileResult):
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
            result.notes.append(f"{display}: libclang frontend unavailable ({exc}); using tree-sitter")
        except Exception as exc:  # ClangUnavailable, ClangParseError: both fall back
            reason = str(exc).strip().splitlines()
            result.notes.append(f"{display}: clang could not parse it cleanly ({'; '.join(reason[:3])}); "
                                f"falling back to tree-sitter")
    return cuda_treesitter.parse(display, data)


def _internal_error(result: FileResult, display: str, phase: str, exc: BaseException, settings: Settings) -> None:
    """A bug of gpulint's, said in one line; the traceback goes to the notes (-v, GPULINT_DEBUG=1)."""
    cause = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    result.errors.append(f"{display}: internal error while {phase}: {type(exc).__name__}"
                         + (f": {cause}" if cause else ""))
    if settings.verbose or debugging():
        result.notes.append(traceback.format_exc().rstrip())


def debugging() -> bool:
    """GPULINT_DEBUG=1: internal errors print their tracebacks."""
    return os.environ.get("GPULINT_DEBUG", "") not in ("", "0")


def analyse_unit(unit: Unit, codes: list[str], settings: Settings, result: FileResult | None = None,
                 display: str = "") -> list[Finding]:
    """Every enabled rule's findings on a unit.  A rule that raises is an internal error of that
    rule (with `result`); the other rules still run."""
    rule_settings = RuleSettings(thresholds=dict(settings.thresholds), reuse_tolerance=settings.reuse_tolerance)
    findings: list[Finding] = []
    for code in codes:
        rule = RULES[code]
        if rule.needs_trace or code in ("GL900", "GL901"):
            continue
        if result is None:
            findings.extend(rule.check(unit, rule_settings))
            continue
        try:
            findings.extend(rule.check(unit, rule_settings))
        except RecursionError:
            raise
        except Exception as exc:
            _internal_error(result, display, f"checking {code} ({rule.name})", exc, settings)
    return findings


def check_file(path: Path, settings: Settings, codes: list[str]) -> FileResult:
    display = display_path(path)
    result = FileResult(display)
    try:
        data, why = read_source(path, settings)
        if data is not None and not is_gpu_source(path, data):
            return result  # a C/C++ file with no CUDA in it is not ours to judge, readable or not
        if why is not None or data is None:
            return _unreadable(result, display, why or "cannot read")
    except Exception as exc:  # reading must not lose the other files either
        _internal_error(result, display, "reading", exc, settings)
        return result
    return analyse_source(path, display, data, settings, codes, result)


def _python_syntax_error(display: str, text: bytes) -> Finding | None:
    """GL900 where Python itself cannot compile the file (its message and line), or None.  Asked
    only when tree-sitter needed error recovery, so valid code is compiled once, by tree-sitter."""
    try:
        compile(text, display, "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except SyntaxError as exc:
        row = max(exc.lineno or 1, 1)
        column = max(exc.offset or 1, 1)
        rule = RULES["GL900"]
        return Finding("GL900", rule.name, f"cannot analyse this file: syntax error: {exc.msg} (line {row}); "
                       f"code in the scopes it breaks is not analysed", Location(display, row, column),
                       properties={"origin": "static"})
    except (ValueError, MemoryError, RecursionError):
        return None
    return None


def _cuda_unparsable(display: str, tu) -> Finding | None:
    """GL900 for a CUDA file tree-sitter could not make sense of anywhere: it has syntax errors and
    not one function came out whole, so nothing in it was analysed."""
    if not tu.errors or any(not f.has_errors for f in tu.functions):
        return None
    first = min(tu.errors, key=lambda span: span.start)
    rule = RULES["GL900"]
    # Often valid code the parser cannot follow (macros, `#ifdef` inside a declaration): say so.
    return Finding("GL900", rule.name, f"cannot analyse this file: no function in it parses for gpulint (first "
                   f"parse error at line {first.row}), so none of its GPU code is checked",
                   Location(display, first.row, first.column), properties={"origin": "static"})


def analyse_source(path: Path, display: str, data: bytes, settings: Settings, codes: list[str],
                   result: FileResult | None = None) -> FileResult:
    """Findings of one file's bytes (which need not be what is on disk: the fix loop re-analyses)."""
    result = result or FileResult(display)
    text = as_parsed(data)  # same length: every offset and row stays valid for `data`
    phase = "parsing"
    unparsable: Finding | None = None
    try:
        if is_python_source(path):
            from gpulint.static.python import analyse

            unit, skipped = analyse(display, text)
            if skipped:
                unparsable = _python_syntax_error(display, text)
        else:
            from gpulint.static.lower import lower

            tu = parse_cuda(path, display, text, settings, result)
            phase = "lowering"
            unit, skipped = lower(tu)
            unparsable = _cuda_unparsable(display, tu)
        for name in skipped:
            result.notes.append(f"{display}: `{name}` has parse errors; findings that need its events are skipped")
        phase = "checking"
        findings = analyse_unit(unit, codes, settings, result, display)
        if unparsable is not None:
            findings.append(unparsable)
        phase = "applying suppressions"
        result.findings = apply_suppressions(findings, text, display, codes)
    except RecursionError:
        return _unreadable(result, display, "too deeply nested to analyse")
    except Exception as exc:  # an analysis bug must not lose the other files
        _internal_error(result, display, phase, exc, settings)
    return result


# ------------------------------------------------------------------------- suppressions


def find_suppressions(source: bytes) -> dict[int, Suppression]:
    found: dict[int, Suppression] = {}
    text = source.decode("utf-8", "replace")
    for row, line in enumerate(split_lines(text), start=1):
        if "gpulint" not in line:
            continue
        match = _SUPPRESSION.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        parsed = None if codes is None else frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
        comment_only = line[: match.start()].strip() == ""
        found[row] = Suppression(row, match.start() + 1, parsed, covers_next_line=comment_only,
                                 whole_file=match.group("file") is not None)
    return found


def apply_suppressions(findings: list[Finding], source: bytes, display: str, codes: list[str]) -> list[Finding]:
    suppressions = find_suppressions(source)
    file_wide = [s for s in suppressions.values() if s.whole_file]
    kept: list[Finding] = []
    for finding in findings:
        row = finding.location.row
        line_sup = suppressions.get(row)
        candidates = [line_sup if line_sup is not None and not line_sup.whole_file else None]
        above = suppressions.get(row - 1)
        if above is not None and above.covers_next_line and not above.whole_file:
            candidates.append(above)
        candidates.extend(file_wide)
        hit = next((s for s in candidates if s is not None and (s.codes is None or finding.code in s.codes)), None)
        if hit is None:
            kept.append(finding)
        else:
            hit.used.add(finding.code)
    if "GL901" in codes:
        rule = RULES["GL901"]
        unused_reports: list[Finding] = []
        for sup in suppressions.values():
            if sup.codes is None:
                if not sup.used:
                    where = "in this file" if sup.whole_file else "on this line"
                    kind = "ignore-file" if sup.whole_file else "ignore"
                    unused_reports.append(Finding("GL901", rule.name, f"`gpulint: {kind}` suppresses nothing {where}",
                                        Location(display, sup.row, sup.column), properties={"origin": "static"},
                                        fix=Fix("remove the unused suppression", Applicability.SAFE,
                                                (remove_comment(display, source, sup.row, sup.column),))))
                continue
            unused = sorted(c for c in sup.codes - sup.used if c in codes)
            if unused:
                finding = Finding("GL901", rule.name, f"unused suppression of {', '.join(unused)}",
                                  Location(display, sup.row, sup.column), properties={"origin": "static",
                                                                                     "unused": unused})
                if not sup.used:  # nothing on the line needs it: the whole comment goes
                    finding.fix = Fix("remove the unused suppression", Applicability.SAFE,
                                      (remove_comment(display, source, sup.row, sup.column),))
                unused_reports.append(finding)
        # A file-wide `ignore-file` (bare, or naming GL901) silences these reports too.
        silencer = next((s for s in file_wide if s.codes is None or "GL901" in s.codes), None)
        if silencer is not None and unused_reports:
            silencer.used.add("GL901")
            unused_reports = [f for f in unused_reports if f.location.row == silencer.row and silencer.codes is not None]
        kept.extend(unused_reports)
    return kept


# ------------------------------------------------------------------------- many files


def _job(args: tuple[Path, Settings, list[str]]) -> FileResult:
    # A large file makes millions of objects that live until it is done: at the default threshold
    # the collector walks them all again and again (half the time of a 90,000-line function).
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
    try:
        return check_file(*args)
    finally:
        gc.set_threshold(*threshold)


def _cache_key(store: ResultCache, path: Path, settings: Settings, codes: list[str]) -> str | None:
    """The cache key of a file as it is now; None when it is not to be cached (unreadable, too
    large, analysed with clang)."""
    if not store.cacheable(settings):
        return None
    try:
        if path.stat().st_size > settings.max_file_size:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return store.key(display_path(path), data, settings, codes)


def check_paths(paths: list[str], settings: "Settings | Resolver", cache: bool = False) -> Report:
    """Check every file under `paths`; with `cache`, unchanged files are read from `.gpulint_cache/`."""
    resolver = _resolver(settings)
    files, diagnostics, errors = discover(paths, resolver)
    all_codes = sorted(RULES)
    work = []
    for f in files:
        file_settings = resolver.for_path(f)
        work.append((f, file_settings, file_settings.codes_for(f, all_codes)))
    broken = compile_database_errors(s for _, s, _ in work)
    if broken:  # every file would silently fall back to tree-sitter: refuse instead
        return Report([], diagnostics, [], 0, errors + broken)
    results: list[FileResult | None] = [None] * len(work)
    store = ResultCache(Path(resolver.base.root or os.getcwd()) / CACHE_DIR) if cache else None
    keys: list[str | None] = [None] * len(work)
    if store is not None:
        for i, (f, file_settings, codes) in enumerate(work):
            keys[i] = _cache_key(store, f, file_settings, codes)
            if keys[i] is not None:
                results[i] = store.get(display_path(f), keys[i])
    pending = [i for i, r in enumerate(results) if r is None]
    jobs = min(resolver.base.effective_jobs(), max(1, len(pending)))
    fresh: list[FileResult] | None = None
    if jobs > 1 and len(pending) > 1:
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                fresh = list(pool.map(_job, [work[i] for i in pending],
                                      chunksize=max(1, len(pending) // (jobs * 4))))
        except (OSError, BrokenProcessPool) as exc:
            # No worker processes here (a sandbox, a dead worker): analyse in this process instead.
            diagnostics.append(f"parallel analysis unavailable ({exc}); analysing files one by one")
            fresh = None
    if fresh is None:
        fresh = [_job(work[i]) for i in pending]
    for i, result in zip(pending, fresh):
        results[i] = result
        # A result with an internal error is not the file's true result: analyse it again next time.
        if store is not None and keys[i] is not None and not result.errors:
            store.put(display_path(work[i][0]), keys[i], result)
    findings: list[Finding] = []
    notes: list[str] = []
    for r, (_, _, codes) in zip(results, work):
        assert r is not None
        findings.extend(f for f in r.findings if f.code in codes)
        diagnostics.extend(r.diagnostics)
        notes.extend(r.notes)
        errors.extend(r.errors)
    findings.sort(key=Finding.sort_key)
    return Report(findings, diagnostics, notes, len(files), errors)


def compile_database_errors(all_settings) -> list[str]:
    """Why each compile database the settings name cannot be used (read once per database)."""
    from gpulint.static import compile_db

    problems: list[str] = []
    seen: set[str] = set()
    for settings in all_settings:
        name = settings.compile_commands
        if not name or name in seen:
            continue
        seen.add(name)
        try:
            compile_db.load(name)
        except compile_db.CompileDatabaseError as exc:
            problems.append(str(exc))
    return problems


# ------------------------------------------------------------------------- fixing


@dataclass
class FixedFile:
    path: Path
    display: str
    before: bytes
    after: bytes
    applied: int  # fixes applied
    remaining: list[Finding]
    problem: str | None = None  # why the file was left untouched
    # Fixes withheld because the file would no longer parse with them (a builder's bug): warnings.
    withheld: list[str] = field(default_factory=list)


def still_parses(path: Path, data: bytes) -> bool:
    """The fixed text must parse no worse than the original did."""
    if path.suffix.lower() in PYTHON_SUFFIXES:
        try:
            compile(data, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError):  # deep nesting: MemoryError
            return False
        return True
    from gpulint.static import cuda_treesitter

    return not cuda_treesitter.has_syntax_errors(as_parsed(data))


def fix_file(path: Path, settings: Settings, codes: list[str], unsafe: bool, max_rounds: int = 100) -> FixedFile | None:
    """Apply fixes, re-analyse and fix again until nothing changes; nothing is written.  A file still
    changing after `max_rounds` rounds (fixes undoing each other: a gpulint bug) is left untouched,
    as Ruff does after 100 iterations: a cap that stopped silently made `fix` not idempotent (a
    second run on Rodinia's srad_v1 moved more statements)."""
    from gpulint.fixes.edits import apply, choose

    display = display_path(path)
    data, why = read_source(path, settings)
    if data is None or why is not None or not is_gpu_source(path, data):
        return None
    original_parses = still_parses(path, data)
    ending = line_ending(data).decode()
    current = data
    seen = {current}
    applied = 0
    broken: set[tuple[str, int, str]] = set()  # fixes that would make the file unparsable
    withheld: list[str] = []

    def text_of(fixes) -> bytes:
        return apply(current, [_in_line_ending(edit, ending) for fix in fixes for edit in fix.edits
                               if edit.path == display])

    analysis = analyse_source(path, display, current, settings, codes)
    # Fixes that meet go one per round: a file may need as many rounds as it has fixes.
    max_rounds = max(max_rounds, sum(1 for f in analysis.findings if f.fix is not None) + 10)
    for round_ in range(max_rounds + 1):
        if analysis.errors:  # fixes drawn from a broken analysis are not to be trusted
            return FixedFile(path, display, data, data, 0, analysis.findings,
                             problem=f"{analysis.errors[0].split(': ', 1)[-1]}; left untouched")
        candidates = [f for f in analysis.findings if (f.code, f.location.row, f.message) not in broken]
        fixes = choose(candidates, unsafe)
        if not fixes:
            break
        candidate = text_of(fixes)
        while original_parses and candidate != current and not still_parses(path, candidate):
            # A builder made something that does not parse.  A fix that breaks the file alone is
            # withheld (said as a warning); fixes that break it only together go one per round.
            owners = {id(f.fix): f for f in candidates if f.fix is not None}
            bad = [fix for fix in fixes if not still_parses(path, text_of([fix]))]
            for fix in bad:
                finding = owners[id(fix)]
                broken.add((finding.code, finding.location.row, finding.message))
                withheld.append(f"{finding.code} at line {finding.location.row}: its fix would leave the file "
                                f"unparsable (a gpulint bug); not applied")
            fixes = [fix for fix in fixes if fix not in bad] if bad else fixes[:1]
            candidate = text_of(fixes)
        if candidate == current:
            if fixes:
                break
            continue
        if round_ == max_rounds or candidate in seen:
            why = "fixes undo each other" if candidate in seen else f"fixes did not settle after {max_rounds} rounds"
            return FixedFile(path, display, data, data, 0, analysis.findings,
                             problem=f"{why} (a gpulint bug); left untouched")
        seen.add(candidate)
        current = candidate
        applied += len(fixes)
        analysis = analyse_source(path, display, current, settings, codes)
    if analysis.errors:
        return FixedFile(path, display, data, data, 0, analysis.findings,
                         problem=f"{analysis.errors[0].split(': ', 1)[-1]}; left untouched")
    return FixedFile(path, display, data, current, applied, analysis.findings, withheld=withheld)


def _in_line_ending(edit, ending: str):
    """An edit whose inserted lines end as the file's lines do (builders write LF; lines they move
    from a CRLF file arrive with CRLF, from a CR-only file with LF, since parsers see LF there)."""
    if ending == "\n" or "\n" not in edit.content and "\r" not in edit.content:
        return edit
    from dataclasses import replace

    return replace(edit, content=edit.content.replace("\r\n", "\n").replace("\n", ending))


def write_atomically(fixed: FixedFile) -> str | None:
    """Write through a temporary file and a rename, keeping permissions; refuse if the file
    changed on disk since it was read. Returns why it was not written, or None."""
    import shutil
    import tempfile

    try:
        if fixed.path.read_bytes() != fixed.before:
            return "changed on disk since it was read; not written"
        folder = fixed.path.resolve().parent
        handle, temp = tempfile.mkstemp(prefix=f".{fixed.path.name}.", suffix=".gpulint", dir=folder)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(fixed.after)
            shutil.copymode(fixed.path, temp)
            os.replace(temp, fixed.path.resolve())
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise
    except OSError as exc:
        return f"cannot write: {exc.strerror or exc}"
    return None


def fix_paths(paths: list[str], settings: "Settings | Resolver",
              unsafe: bool) -> tuple[list[FixedFile], list[str], list[str]]:
    """The fixed files (nothing written), diagnostics, and errors that make the run exit 2."""
    resolver = _resolver(settings)
    files, diagnostics, errors = discover(paths, resolver)
    all_settings = [resolver.for_path(f) for f in files]
    broken = compile_database_errors(all_settings)
    if broken:
        return [], diagnostics, errors + broken
    results = []
    for f, file_settings in zip(files, all_settings):
        try:
            fixed = fix_file(f, file_settings, file_settings.codes_for(f, sorted(RULES)), unsafe)
        except Exception as exc:  # one file's failure must not lose the others' fixes
            scratch = FileResult(display_path(f))
            _internal_error(scratch, display_path(f), "fixing", exc, file_settings)
            errors.extend(scratch.errors)
            diagnostics.extend(scratch.notes)
            continue
        if fixed is not None:
            results.append(fixed)
    return results, diagnostics, errors


def sarif_fixes(sarif: Path, root: Path, unsafe: bool = False) -> list[FixedFile]:
    """The files a SARIF file's recorded fixes would produce (checked by `fixes.from_sarif`)."""
    from gpulint.fixes.edits import apply
    from gpulint.fixes.from_sarif import load_edits

    results: list[FixedFile] = []
    for path, fixes in sorted(load_edits(sarif, root, unsafe).items()):
        source = path.read_bytes()
        taken: list[tuple[int, int]] = []
        chosen = []
        for edits in fixes:  # whole fixes, none overlapping one already taken
            if any(e.start < b and a < e.end or e.start == e.end == a == b for e in edits for a, b in taken):
                continue
            chosen.extend(edits)
            taken.extend((e.start, e.end) for e in edits)
        after = apply(source, chosen)
        display = display_path(path)
        problem = None if still_parses(path, after) or not still_parses(path, source) else \
            "the fixed file would no longer parse; left untouched"
        results.append(FixedFile(path, display, source, source if problem else after, len(fixes), [], problem))
    return results
