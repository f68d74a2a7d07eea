"""The fix loop: apply the findings' fixes, analyse the result again, repeat until nothing changes;
write each file through a temporary file and a rename, or not at all.  `fixes/` builds the edits
and knows nothing of this loop."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpulint.config import Resolver, Settings
from gpulint.discovery import discover, display_path, is_gpu_source, is_python_source, read_source, readable, resolver_of
from gpulint.engine import analyse_source, compile_database_errors, internal_error
from gpulint.findings import Finding
from gpulint.results import FileResult
from gpulint.rules import RULES
from gpulint.sourcetext import as_parsed, line_ending


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
    if is_python_source(path):
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
    if readable(data)[1] is not None:  # edits would carry `?` for the bytes it could not decode
        return FixedFile(path, display, data, data, 0, [], withheld=["not valid UTF-8: left untouched (its fixes "
                                                                     "would write `?` for the bytes not decoded)"])
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
    resolver = resolver_of(settings)
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
            internal_error(scratch, display_path(f), "fixing", exc, file_settings)
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
