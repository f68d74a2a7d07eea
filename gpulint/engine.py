"""files -> frontends -> histories -> rules -> findings.

Reads each file defensively (a file that cannot be analysed becomes a GL900 finding and a one-line
diagnostic, never a traceback), has `static.frontends` parse and lower it, runs the rules that
judge its unit, applies suppression comments and reports unused ones (GL901).  Files are analysed
in parallel, unchanged ones read from the cache; results keep the input order.  Discovery lives in
`discovery`, suppressions in `suppressions`, the fix loop in `fixloop`.
"""
from __future__ import annotations

import gc
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpulint.config import Resolver, Settings
from gpulint.discovery import (discover, display_path, is_gpu_source, is_python_source, read_source, readable,
                               resolver_of)
from gpulint.findings import Finding, Fix
from gpulint.fixes.edits import touches_macro_uses
from gpulint.history import Unit
from gpulint.results import FileResult, ProjectResults, Report
from gpulint.rules import RULES, RuleSettings
from gpulint.rules.gl900_unreadable_file import unreadable_file
from gpulint.rules.gl901_unused_suppression import unused_suppression
from gpulint.sourcetext import WORD_BYTES, as_parsed
from gpulint.static import frontends
from gpulint.static.program import SLOT, Definitions, LiveView, ProgramView, Table, digest_of_view
from gpulint.suppressions import find_suppressions, suppress

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ProcessPoolExecutor

# ------------------------------------------------------------------------- one file


def _unreadable(result: FileResult, display: str, why: str) -> FileResult:
    result.diagnostics.append(f"{display}: {why}")
    result.findings.extend(unreadable_file(display, why))
    return result


def internal_error(result: FileResult, display: str, phase: str, exc: BaseException, settings: Settings) -> None:
    """A bug of gpulint's, said in one line; the traceback goes to the notes (-v, GPULINT_DEBUG=1)."""
    cause = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    result.errors.append(f"{display}: internal error while {phase}: {type(exc).__name__}"
                         + (f": {cause}" if cause else ""))
    if settings.verbose or debugging():
        import traceback

        result.notes.append(traceback.format_exc().rstrip())


def debugging() -> bool:
    """GPULINT_DEBUG=1: internal errors print their tracebacks."""
    return os.environ.get("GPULINT_DEBUG", "") not in ("", "0")


def analyse_unit(unit: Unit, codes: list[str], settings: Settings, result: FileResult | None = None,
                 display: str = "") -> list[Finding]:
    """The findings of every enabled rule that judges `unit` (its source and languages).  A rule
    that raises is an internal error of that rule (with `result`); the other rules still run."""
    rule_settings = RuleSettings(thresholds=dict(settings.thresholds), reuse_tolerance=settings.reuse_tolerance)
    findings: list[Finding] = []
    for code in codes:
        rule = RULES[code]
        if not rule.runs_on(unit):
            continue
        if result is None:
            findings.extend(rule.check(unit, rule_settings))
            continue
        try:
            findings.extend(rule.check(unit, rule_settings))
        except RecursionError:
            raise
        except Exception as exc:
            internal_error(result, display, f"checking {code} ({rule.name})", exc, settings)
    return findings


def check_file(path: Path, settings: Settings, codes: list[str],
               read: tuple[bytes | None, str | None] | None = None, program: ProgramView | None = None,
               build_fixes: bool = True) -> FileResult:
    """One file's result; `read` is what `read_source` gave when the caller already read it;
    `program`: what the rest of the program's functions and kernels do (see `static.program`);
    `build_fixes`: see `analyse_source`."""
    display = display_path(path)
    result = FileResult(display)
    try:
        data, why = read_source(path, settings) if read is None else read
        if data is not None and not is_gpu_source(path, data):
            return result  # a C/C++ file with no CUDA in it is not ours to judge, readable or not
        if why is not None or data is None:
            return _unreadable(result, display, why or "cannot read")
        data, note = readable(data)
        if note is not None:
            result.diagnostics.append(f"{display}: {note}")
    except Exception as exc:  # reading must not lose the other files either
        internal_error(result, display, "reading", exc, settings)
        return result
    return analyse_source(path, display, data, settings, codes, result, program=program, build_fixes=build_fixes)


def analyse_source(path: Path, display: str, data: bytes, settings: Settings, codes: list[str],
                   result: FileResult | None = None, program: ProgramView | None = None,
                   build_fixes: bool = True) -> FileResult:
    """Findings of one file's bytes (which need not be what is on disk: the fix loop re-analyses),
    and its summary for the rest of the program.  Rules give fixes as `LazyFix`es; `build_fixes`
    builds those of the findings kept, here (a builder's bug is an internal error of this file,
    and the file's histories are freed with it); without it each is built when first read, and
    findings whose fix nobody reads never build one."""
    result = result or FileResult(display)
    program = program if program is not None else ProgramView()
    result.depends = digest_of_view(program)
    text = as_parsed(data)  # same length: every offset and row stays valid for `data`
    phase = "parsing"
    try:
        parsed = _parse(path, display, text, settings, result.notes)
        phase = "lowering"
        unit, skipped, unparsable, result.summary = frontends.lower(parsed, program)
        result.depends = digest_of_view(program)  # a `LiveView` fills as the lowering asks
        if result.summary is not None and result.summary.refs and _may_analyse_again(result.summary.refs, program):
            _PARSED.keep(_parse_key(display, text, settings), parsed, result.notes)
        for name in skipped:
            result.notes.append(f"{display}: `{name}` has parse errors; findings that need its events are skipped")
        result.unanalysed = list(skipped)
        result.allocation_sites = unit.allocation_sites if unit.allocation_sites != (0, 0) else _sites_of(unit)
        phase = "checking"
        findings = analyse_unit(unit, codes, settings, result, display)
        if unit.expanded:
            withhold_fixes_in_macros(findings, unit.expanded)
        if unparsable is not None:
            findings.extend(unreadable_file(display, unparsable.why, unparsable.row, unparsable.column))
        phase = "applying suppressions"
        suppressions = find_suppressions(text)
        result.findings = suppress(findings, suppressions)
        if "GL901" in codes:
            result.findings.extend(unused_suppression(suppressions, text, display, codes))
        if build_fixes:
            phase = "building fixes"
            for finding in result.findings:
                if finding.fix_pending:
                    finding.fix  # noqa: B018  (reading it builds it)
    except RecursionError:
        return _unreadable(result, display, "too deeply nested to analyse")
    except Exception as exc:  # an analysis bug must not lose the other files
        internal_error(result, display, phase, exc, settings)
    return result


class _ParseCache:
    """Syntax trees of files the second pass may analyse again (they name functions of other files),
    kept in the process that parsed them so that pass re-lowers without re-parsing.  Bounded by the
    source bytes held (a tree takes about 25 bytes per source byte); emptied after each run."""

    BUDGET = 4 << 20  # source bytes

    def __init__(self) -> None:
        self.trees: dict[tuple[str, bytes, str], tuple[frontends.Parsed, list[str]]] = {}
        self.held = 0

    def keep(self, key: tuple[str, bytes, str], parsed: frontends.Parsed, notes: list[str]) -> None:
        if key not in self.trees and self.held + len(key[1]) <= self.BUDGET:
            self.trees[key] = (parsed, list(notes))
            self.held += len(key[1])
            # Out of the collector's sight: every full collection would walk the kept trees again.
            _out_of_collectors_sight()

    def get(self, key: tuple[str, bytes, str]) -> tuple[frontends.Parsed, list[str]] | None:
        return self.trees.get(key)

    def clear(self) -> None:
        self.trees.clear()
        self.held = 0


_PARSED = _ParseCache()
_frozen = False  # objects were moved out of the collector's sight during this run


def _out_of_collectors_sight() -> None:
    """Every object alive now is one the run keeps until it ends (kept trees, the histories of
    fixes not built yet): the cyclic collector stops walking them until `_back_in_sight`."""
    global _frozen
    gc.freeze()
    _frozen = True


def _back_in_sight() -> None:
    global _frozen
    if _frozen:
        gc.unfreeze()
        _frozen = False


def _may_analyse_again(refs: list[str], program: ProgramView) -> bool:
    """Whether the second pass is likely to analyse a file again, so that its tree is worth keeping.
    A file analysed in order against the files done before it (`LiveView`) is analysed again when
    some name of it resolves otherwise in the whole table: always when it has struct members (the
    live view answers none), seldom for its functions (most names it did not resolve are a
    library's).  Trees kept for nothing cost the run its memory: on cuda-samples 27 of 297 kept
    trees were used, 0 of 200 on the generated corpus, with a peak of 133 and 101 MB (61 and
    42 MB keeping these), and the page faults cost more than parsing the 19 others again.  A wrong
    guess costs a parse, never a finding."""
    if not isinstance(program, LiveView):
        return True  # the second pass's own analyses: a later round may need them again
    return any(ref.startswith(SLOT) for ref in refs)


def _parse_key(display: str, text: bytes, settings: Settings) -> tuple[str, bytes, str]:
    # What the parse depends on besides the bytes: the frontend and the build's macros and paths.
    return display, text, repr((settings.frontend, settings.compile_commands, settings.defines,
                                settings.include_paths, settings.root))


def _parse(path: Path, display: str, text: bytes, settings: Settings, notes: list[str]) -> frontends.Parsed:
    kept = _PARSED.get(_parse_key(display, text, settings))
    if kept is not None:
        notes.extend(kept[1])
        return kept[0]
    return frontends.parse(path, display, text, settings, notes)


def _sites_of(unit: Unit) -> tuple[int, int]:
    """(allocation sites in scopes analysed, all) of a unit whose frontend did not count them."""
    sites = {(h.alloc.location.row, h.alloc.location.column): h.incomplete for h in unit.histories if h.alloc}
    return sum(not incomplete for incomplete in sites.values()), len(sites)


def withhold_fixes_in_macros(findings: list[Finding], expanded: list[tuple[int, int]]) -> None:
    """A fix that would edit at or inside an expanded macro use is dropped: the finding stands (it
    is true of the expansion), but the text there is not the code the fix was built from.  Decided
    when the fix is built."""
    def withhold(finding: Finding, fix: Fix | None) -> Fix | None:
        if fix is not None and fix.edits and touches_macro_uses(fix, expanded):
            finding.properties["fix_withheld"] = "edits a macro use"
            return None
        return fix

    for finding in findings:
        finding.refine_fix(withhold)


# ------------------------------------------------------------------------- many files


# check_file's arguments: the file, its settings and codes, what reading it gave, the program's view,
# whether to build fixes now.
Job = tuple[Path, Settings, list[str], "tuple[bytes | None, str | None] | None", "ProgramView | None", bool]
# Rounds of the second pass at most: each settles one more level of calls between files (a chain
# of functions across files, each calling the next, needs one round per file).
MAX_ROUNDS = 8


def _job(args: Job) -> FileResult:
    # A file's analysis makes millions of objects that live until it is done and almost no
    # cycles (about a hundred for a 75,000-line function, freed by the next collection after the
    # file): the cyclic collector would only walk the live ones again and again, a cost that grows
    # with the file (17% of a 75,000-line function even with a 50,000-object threshold).
    # What the file's analysis left alive (its result, and the histories a fix not built yet
    # keeps) lives until the run ends: out of the collector's sight too, or the first collection
    # after the file walks every object the analysis made (0.49 s, and 0.50 s more for the next
    # generation's, of a 70,000-statement Python function's 8.6 s, with its fixes built).
    enabled = gc.isenabled()
    gc.disable()
    try:
        result = check_file(*args)
        _out_of_collectors_sight()
        return result
    finally:
        if enabled:
            gc.enable()


class _Runner:
    """Runs jobs in worker processes (one pool for every round), or here when there are none."""

    def __init__(self, jobs: int, diagnostics: list[str]) -> None:
        self.jobs = jobs
        self.diagnostics = diagnostics
        self.pool: "ProcessPoolExecutor | None" = None
        self.broken = jobs <= 1

    def in_process(self, jobs: int) -> bool:
        """Whether `jobs` jobs would run here, one after the other."""
        return self.broken or jobs <= 1

    def run(self, jobs: list[Job], done: Callable[[], None] = lambda: None) -> list[FileResult]:
        """Each job's result, in order; `done` is told as each one arrives (for progress)."""
        if not self.in_process(len(jobs)):
            # Imported here: one process (`--jobs 1`, one file) never pays for multiprocessing.
            from concurrent.futures import ProcessPoolExecutor
            from concurrent.futures.process import BrokenProcessPool

            # A worker's result comes back pickled, which builds its fixes: build them in the job,
            # where a builder's bug is the file's internal error.
            jobs = [(*job[:-1], True) for job in jobs]
            try:
                if self.pool is None:
                    self.pool = ProcessPoolExecutor(max_workers=min(self.jobs, len(jobs)), mp_context=_worker_context())
                results = []
                for result in self.pool.map(_job, jobs, chunksize=max(1, len(jobs) // (self.jobs * 4))):
                    results.append(result)
                    done()
                return results
            except (OSError, BrokenProcessPool) as exc:
                # No worker processes here (a sandbox, a dead worker): analyse in this process instead.
                self.diagnostics.append(f"parallel analysis unavailable ({exc}); analysing files one by one")
                self.broken = True
                self.close()
        results = []
        for job in jobs:
            results.append(_job(job))
            done()
        return results

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


def _worker_context():
    """How worker processes start: forked on Linux where this process runs one thread (the CLI),
    so that every Python from 3.10 to 3.14 starts them alike; 3.14's default, a fork server, would
    import gpulint again in each worker and give it the environment of the moment the server
    started, not this one's.  Otherwise `spawn` (macOS's and Windows' default): forking a process
    with other threads can deadlock the child (the language server's threads, or a CUDA
    library's, which `threading` does not count), and macOS's system libraries are not safe
    across a fork."""
    import multiprocessing

    return multiprocessing.get_context("fork" if sys.platform == "linux" and _threads() == 1 else "spawn")


def _threads() -> int:
    """This process's threads, native ones included (Linux's /proc; `threading` elsewhere)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _read(f: Path, file_settings: Settings) -> tuple[bytes | None, str | None] | None:
    try:
        return read_source(f, file_settings)
    except Exception:  # left to the job, which reports it
        return None


def _included(work: list[tuple[Path, Settings, list[str]]],
              reads: list[tuple[bytes | None, str | None] | None]) -> dict[Path, list[Path]]:
    """Each CUDA/C++ file's local includes (`#include "x.cu"`, directly or not), as paths."""
    found: dict[Path, list[Path]] = {}
    known: dict[Path, list[tuple[str, int]] | None] = {}  # each header's includes, read once
    for (f, file_settings, _), read in zip(work, reads):
        if read is None or read[0] is None or is_python_source(f):
            continue
        from gpulint.static.includes import build_view, include_closure  # here: a Python file needs neither

        found[f] = include_closure(f, read[0], build_view(f, file_settings).include_paths, known=known)
    return found


def _included_bytes(paths: list[Path], seen: dict[Path, bytes]) -> bytes:
    """What a file's key adds for the files it includes: their names and bytes (the preprocessor
    reads their macros), as one digest."""
    import hashlib  # here: only the result cache takes digests

    digest = hashlib.sha256()
    for path in paths:
        if path not in seen:
            try:
                seen[path] = hashlib.sha256(path.read_bytes()).digest()
            except OSError:
                seen[path] = b""
        digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0" + seen[path])
    return digest.digest() if paths else b""


def check_paths(paths: list[str], settings: "Settings | Resolver", cache: bool = False, fixes: bool = True,
                progress: Callable[[str], None] = lambda _: None, keep: ProjectResults | None = None) -> Report:
    """Check every file under `paths` as one program (see `static.program`); with `cache`, files
    whose bytes (and those of the files they include), settings and the summaries they depend on
    are unchanged are read from `.gpulint_cache/`.  A file is read once, here, and handed to the
    job that analyses it.  `fixes=False`: the caller reads no fix (a format that prints none), so
    fixes are built only where one is read, or where results are stored or come from a worker
    process (both keep built fixes).  `progress` is told what is being done (the CLI shows it on
    a terminal); `keep` receives every file's result and includes (the language server's view of
    the project)."""
    # Everything alive when a run starts (the interpreter's and the imported modules' objects, the
    # configuration) outlives it: the collector need not walk it at each of the run's collections
    # (8-9 ms of a 0.20 s check of pytorch/examples).  `_back_in_sight` at the end restores it.
    _out_of_collectors_sight()
    try:
        return _check_paths(paths, settings, cache, fixes, progress, keep)
    finally:
        _back_in_sight()


def _check_paths(paths: list[str], settings: "Settings | Resolver", cache: bool, fixes: bool,
                 progress: Callable[[str], None], keep: ProjectResults | None) -> Report:
    resolver = resolver_of(settings)
    files, diagnostics, errors = discover(paths, resolver)
    all_codes = sorted(RULES)
    work = []
    for f in files:
        file_settings = resolver.for_path(f)
        work.append((f, file_settings, file_settings.codes_for(f, all_codes)))
    broken = compile_database_errors(s for _, s, _ in work)
    if broken:  # every file would silently fall back to tree-sitter: refuse instead
        return Report([], diagnostics, [], 0, errors + broken)
    reported = len(work)
    progress(f"reading {reported:,} files")
    reads = [_read(f, file_settings) for f, file_settings, _ in work]
    # Files the checked ones include but that are not checked themselves (outside the folder, or one
    # file named alone) are summarised for the table; their findings are not reported.
    includes = _included(work, reads)
    known = {f.absolute() for f, _, _ in work}
    for f in [g for found in includes.values() for g in found]:
        if f.absolute() not in known:
            known.add(f.absolute())
            file_settings = resolver.for_path(f)
            work.append((f, file_settings, file_settings.codes_for(f, all_codes)))
            reads.append(_read(f, file_settings))
    includes.update(_included(work[reported:], reads[reported:]))
    displays = [display_path(f) for f, _, _ in work]
    results: list[FileResult | None] = [None] * len(work)
    store = None
    if cache:  # imported only when used: hashing and temporary files cost a cacheless run's start-up 13 ms
        from gpulint.cache import CACHE_DIR, ResultCache

        store = ResultCache(Path(resolver.base.root or os.getcwd()) / CACHE_DIR)
    keys: list[str | None] = [None] * len(work)
    if store is not None:
        digests: dict[Path, bytes] = {}
        for i, (f, file_settings, codes) in enumerate(work):
            data, why = reads[i] or (None, "unread")
            if store.cacheable(file_settings) and data is not None and why is None:
                keys[i] = store.key(displays[i], data + _included_bytes(includes.get(f, []), digests),
                                    file_settings, codes)
                results[i] = store.get(displays[i], keys[i])
    runner = _Runner(resolver.base.effective_jobs(), diagnostics)
    try:
        names = {f: displays[i] for i, (f, _, _) in enumerate(work)}
        include_names = {names[f]: [names.get(g) or display_path(g) for g in found]
                         for f, found in includes.items() if f in names}
        # First pass: every file not in the cache.
        pending = [i for i, r in enumerate(results) if r is None]
        build_fixes = fixes or store is not None
        counted = _Counter(progress, "analysing", len(pending), len(work) - len(pending))
        if runner.in_process(len(pending)):
            _first_pass_in_order(pending, work, reads, displays, results, includes, include_names, build_fixes,
                                 counted)
        else:  # each file on its own, in parallel
            jobs = [(*work[i], reads[i], None, build_fixes) for i in pending]
            for i, result in zip(pending, runner.run(jobs, counted)):
                results[i] = result
        _second_pass(runner, work, reads, displays, results, include_names, build_fixes, progress)
    finally:
        runner.close()
        _PARSED.clear()
    for i, result in enumerate(results):
        # A result with an internal error is not the file's true result: analyse it again next time.
        if store is not None and keys[i] is not None and result is not None and not result.errors \
                and not result.cached:
            store.put(displays[i], keys[i], result)
    if keep is not None:
        keep.results.update((displays[i], r) for i, r in enumerate(results) if r is not None)
        keep.includes.update(include_names)
    return _report(results[:reported], work, len(files), diagnostics, errors)


def forget_parsed_trees() -> None:
    """Drop the syntax trees `analyse_source` kept for analysing a file again (`check_paths` does
    at its end): a long-lived caller (the language server) calls it after each of its analyses."""
    _PARSED.clear()


def _first_pass_in_order(pending: list[int], work: list[tuple[Path, Settings, list[str]]],
                         reads: list[tuple[bytes | None, str | None] | None], displays: list[str],
                         results: list[FileResult | None], includes: dict[Path, list[Path]],
                         include_names: dict[str, list[str]], build_fixes: bool,
                         done: Callable[[], None] = lambda: None) -> None:
    """The first pass in this process: files analysed after the files they include, each against
    the summaries of the files done before it (`LiveView`), so that a file whose names all resolve
    to files done before it is already analysed as the second pass would (a helper header's
    functions, called from every sample including it) and the second pass leaves it alone."""
    definitions = Definitions(include_names)
    for i, result in enumerate(results):
        if result is not None and result.summary is not None:
            definitions.add(displays[i], result.summary)
    for i in _analysis_order(pending, work, reads, includes):
        results[i] = result = _job((*work[i], reads[i], definitions.live_view(displays[i]), build_fixes))
        if result.summary is not None:
            definitions.add(displays[i], result.summary)
        done()


# `int main(`: a program's root, whose functions other files do not call (`Table`).  Only an
# ordering hint: a comment that matches costs an analysis again, never a wrong finding.  Found from
# `main(`, a literal the regular expression engine skips to (`\b(?:int|void)\s+main\s*\(` in one
# pattern tries every byte: 54 ms of cuda-samples' 750 files, against 5 ms).
_MAIN_CALL = re.compile(rb"main\s*\(")
_SPACE_BYTES = frozenset(b" \t\n\r\f\v")  # what `\s` matches in a bytes pattern


def defines_main(data: bytes) -> bool:
    """Whether the text has `int main(` or `void main(` (any white space between the words)."""
    for m in _MAIN_CALL.finditer(data):
        end = m.start()
        if end == 0 or data[end - 1] not in _SPACE_BYTES:
            continue
        while end > 0 and data[end - 1] in _SPACE_BYTES:
            end -= 1
        for word in (b"int", b"void"):
            start = end - len(word)
            if start >= 0 and data.startswith(word, start) and (start == 0 or data[start - 1] not in WORD_BYTES):
                return True
    return False


def _analysis_order(pending: list[int], work: list[tuple[Path, Settings, list[str]]],
                    reads: list[tuple[bytes | None, str | None] | None], includes: dict[Path, list[Path]]) -> list[int]:
    """`pending` in the order that lets most files see every definition they call: files that
    define `main` last, and before each file the files it includes (directly or not); otherwise
    in the given order."""
    position = {work[i][0]: i for i in pending}
    order: list[int] = []
    placed: set[int] = set()

    def place(i: int) -> None:
        placed.add(i)
        for path in includes.get(work[i][0], ()):
            j = position.get(path)
            if j is not None and j not in placed:
                place(j)
        order.append(i)

    def main_last(i: int) -> bool:
        data = (reads[i] or (None, None))[0]
        return data is not None and defines_main(data)

    for i in sorted(pending, key=main_last):
        if i not in placed:
            place(i)
    return order


def _second_pass(runner: _Runner, work: list[tuple[Path, Settings, list[str]]],
                 reads: list[tuple[bytes | None, str | None] | None], displays: list[str],
                 results: list[FileResult | None], includes: dict[str, list[str]], build_fixes: bool,
                 progress: Callable[[str], None] = lambda _: None) -> None:
    """Analyse again, against the others' summaries, each file whose names resolve to summaries
    other than those it was analysed with; until no summary changes (or MAX_ROUNDS)."""
    for round_ in range(MAX_ROUNDS):
        summaries = {displays[i]: r.summary for i, r in enumerate(results) if r is not None and r.summary}
        if len(summaries) < 2:
            return
        table = Table(summaries, includes)
        stale: list[tuple[int, ProgramView]] = []
        for i, r in enumerate(results):
            if r is not None and r.summary is not None:
                view = table.view(displays[i], r.summary.refs)
                if digest_of_view(view) != r.depends:
                    stale.append((i, view))
        if not stale:
            return
        counted = _Counter(progress, f"project pass {round_ + 1}: analysing again", len(stale))
        jobs = [(*work[i], reads[i], view, build_fixes) for i, view in stale]
        for (i, _), result in zip(stale, runner.run(jobs, counted)):
            results[i] = result


class _Counter:
    """Counts finished files for `progress`: "analysing 120/750 files (3 from the cache)"."""

    def __init__(self, progress: Callable[[str], None], what: str, total: int, cached: int = 0) -> None:
        self.progress, self.what, self.total, self.done = progress, what, total, 0
        self.cached = f" ({cached:,} from the cache)" if cached else ""
        progress(f"{what} 0/{total:,} files{self.cached}")

    def __call__(self) -> None:
        self.done += 1
        self.progress(f"{self.what} {self.done:,}/{self.total:,} files{self.cached}")


def _report(results: list[FileResult | None], work: list[tuple[Path, Settings, list[str]]], files: int,
            diagnostics: list[str], errors: list[str]) -> Report:
    findings: list[Finding] = []
    notes: list[str] = []
    unanalysed: list[tuple[str, str]] = []
    analysed_sites = all_sites = 0
    for r, (_, _, codes) in zip(results, work):
        assert r is not None
        findings.extend(f for f in r.findings if f.code in codes)
        diagnostics.extend(r.diagnostics)
        notes.extend(r.notes)
        errors.extend(r.errors)
        unanalysed.extend((r.path, name) for name in r.unanalysed)
        analysed_sites += r.allocation_sites[0]
        all_sites += r.allocation_sites[1]
    findings.sort(key=Finding.sort_key)
    return Report(findings, diagnostics, notes, files, errors, unanalysed, (analysed_sites, all_sites))


def compile_database_errors(all_settings) -> list[str]:
    """Why each compile database the settings name cannot be used (read once per database)."""
    problems: list[str] = []
    seen: set[str] = set()
    for settings in all_settings:
        name = settings.compile_commands
        if not name or name in seen:
            continue
        seen.add(name)
        from gpulint.static import compile_db  # here: most runs name no database

        try:
            compile_db.load(name)
        except compile_db.CompileDatabaseError as exc:
            problems.append(str(exc))
    return problems
