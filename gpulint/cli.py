"""The `gpulint` command line: click commands only; the work happens in engine/output/rules."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from gpulint import __version__
from gpulint.config import DEFAULT_SELECT, FRONTENDS, ConfigError, Resolver
from gpulint.output import FORMATS as REPORT_FORMATS


def _rules() -> dict:
    """The rule registry, imported when a command needs it (`gpulint run` does not: its start-up
    is part of every traced program's wall time)."""
    from gpulint.rules import RULES

    return RULES


def _fail(message: str) -> None:
    click.echo(f"gpulint: error: {message}", err=True)
    sys.exit(2)


def _write(text: str, output: str | None, color: bool, utf8: bool = False) -> None:
    """`text` to `output`, or to stdout; `utf8`: as UTF-8 bytes whatever stdout's encoding (a machine
    format read by a program: a SARIF or JUnit file redirected on Windows would otherwise be cp1252)."""
    if output is None:
        click.echo(text.encode("utf-8") if utf8 else text, nl=False, color=color)
        return
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")


class _Guarded(click.Group):
    """Any exception that escapes a command is gpulint's bug: one line and exit 2, never a bare
    traceback and never exit 1, which would read as "findings" (GPULINT_DEBUG=1 shows the traceback)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit,
                KeyboardInterrupt):
            raise
        except Exception as exc:
            from gpulint.engine import debugging

            if debugging():
                import traceback

                traceback.print_exc()
            cause = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            _fail(f"internal error in `gpulint {ctx.invoked_subcommand}`: {type(exc).__name__}"
                  + (f": {cause}" if cause else "") + ("" if debugging() else " (GPULINT_DEBUG=1 shows the traceback)"))


@click.group(cls=_Guarded, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpulint")
def main() -> None:
    """Find GPU memory waste in CUDA C/C++ and Python GPU code."""


def entry() -> None:
    """The `gpulint` command (console script and `python -m gpulint`): `main`, then the process's exit."""
    for stream in (sys.stdout, sys.stderr):
        # A console or pipe whose encoding lacks a character (Windows' cp1252 when redirected, and
        # a source line or rule text with `→`) shows it as `\\u2192` instead of ending the run.
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        main()
    finally:
        # What is still alive is freed by reference counting as the interpreter exits; its last
        # cyclic collections would only walk it all once more (10 ms of a 0.20 s check of
        # pytorch/examples).  Not in `main`: a test calling it repeatedly keeps its collector.
        import gc

        gc.freeze()


def _report_options(command=None, *, default: str = "text"):
    """How `check` and `analyze` report: --format, --statistics, --exit-zero, -o, --threshold."""
    if command is None:
        return lambda command: _report_options(command, default=default)
    for option in reversed([
        click.option("--format", "fmt", type=click.Choice(list(REPORT_FORMATS)),
                     default=default, show_default=True,
                     help="text: each finding with its source line and evidence; concise: one line each and "
                          "what fixing it saves; grouped: by file; json, json-lines; sarif (GitHub code scanning); "
                          "github (workflow annotations); gitlab (Code Quality); junit; rdjson (reviewdog)."),
        click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
                     help="Colour in text, concise and grouped output; auto: on a terminal, unless NO_COLOR is set "
                          "(FORCE_COLOR forces it)."),
        click.option("--statistics", is_flag=True, help="Print how many findings each rule has, not the findings."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings."),
        click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report to FILE instead of stdout."),
        click.option("--threshold", multiple=True, metavar="RULE=N",
                     help="Kernel-launch threshold of a rule, e.g. GL002=3."),
    ]):
        command = option(command)
    return command


def _config_options(command):
    """`--config FILE` and `--isolated`, as in Ruff."""
    command = click.option("--isolated", is_flag=True, help="Ignore all configuration files.")(command)
    return click.option("--config", "config_file", type=click.Path(dir_okay=False),
                        help="Use this configuration file (gpulint.toml or pyproject.toml) for every path.")(command)


def _discovery_options(command):
    """Which files a folder holds for gpulint, as in Ruff: `--extend-include`, `--no-respect-gitignore`,
    `--force-exclude`."""
    command = click.option("--force-exclude", is_flag=True,
                           help="Apply exclude (and git's ignores) to files named on the command line too "
                                "(for pre-commit).")(command)
    command = click.option("--no-respect-gitignore", is_flag=True,
                           help="Check files that .gitignore and .git/info/exclude ignore.")(command)
    return click.option("--extend-include", multiple=True, metavar="GLOB",
                        help="Also check files matching these globs (read as CUDA unless .py), e.g. '*.cpp.Cuda'.")(command)


def use_color(choice: str, fmt: str, output: str | None, environ=None, isatty=None) -> bool:
    """Colour only for people: a text format on stdout.  `--color always/never` decide; with auto,
    FORCE_COLOR (set, not empty) turns it on, then NO_COLOR (set, not empty: no-color.org) off,
    then a terminal on.  Machine formats never get it."""
    import os

    from gpulint.output import FOR_PEOPLE

    if output is not None or fmt not in FOR_PEOPLE or choice == "never":
        return False
    if choice == "always":
        return True
    environ = os.environ if environ is None else environ
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("NO_COLOR"):
        return False
    return bool((isatty or sys.stdout.isatty)())


def _report(findings: list, fmt: str, statistics: bool, output: str | None, codes: list[str], files: int,
            errors: int = 0, hidden: str = "", coverage: str = "", color_choice: str = "auto") -> None:
    """Write findings in a format (or per-rule counts) to stdout or `output`."""
    from gpulint.output import FOR_PEOPLE, FORMATS

    color = use_color(color_choice, fmt, output)
    if statistics:
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.code] = counts.get(f.code, 0) + 1
        rows = [f"{n:>6}  {code}  {_rules()[code].name}" for code, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))]
        if coverage:
            rows.append(coverage)
        _write("".join(row + "\n" for row in rows), output, False)
    else:
        _write(FORMATS[fmt](findings, color=color, files=files, rules=codes, errors=errors, hidden=hidden), output,
               color, utf8=fmt not in FOR_PEOPLE)
    if hidden and (statistics or fmt not in FOR_PEOPLE):  # those say it in their summary line
        click.echo(f"gpulint: {hidden}", err=True)


def _hidden(analysis) -> str:
    """The summary's note on the sites `--min-bytes` hid."""
    from gpulint.findings import human_bytes

    n = len(analysis.hidden)
    if not n:
        return ""
    return (f"{n} more site{'s' if n != 1 else ''} below --min-bytes {human_bytes(analysis.min_bytes)} hidden "
            f"(--min-bytes 0 shows them).")


def _confirmed(findings: list, trace: str, settings) -> list:
    """Static findings marked by a run (`--confirm`), plus what only the run shows."""
    from gpulint.dynamic.analyze import analyze as analyze_trace
    from gpulint.dynamic.confirm import confirm
    from gpulint.dynamic.trace import TraceError

    try:
        analysis = analyze_trace(trace, settings, settings.enabled_codes(sorted(_rules())))
    except TraceError as exc:
        _fail(str(exc))
    for warning in analysis.warnings:
        click.echo(f"gpulint: {warning}", err=True)
    marked = confirm(findings, analysis)
    if analysis.hidden:
        click.echo(f"gpulint: --confirm: {_hidden(analysis)}", err=True)
    counts: dict[str, int] = {}
    for f in marked:
        mark = f.properties.get("confirmation", "not checkable by a run")
        counts[mark] = counts.get(mark, 0) + 1
    click.echo("gpulint: --confirm " + ", ".join(f"{n} {mark}" for mark, n in sorted(counts.items())), err=True)
    return marked


def _resolver(cli: dict, config_file: str | None, isolated: bool) -> Resolver:
    threshold_codes = [code for code, r in _rules().items() if r.has_threshold]
    try:
        return Resolver(cli, sorted(_rules()), threshold_codes, config_file, isolated)
    except ConfigError as exc:
        _fail(str(exc))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated or repeated).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--exclude", multiple=True, help="Glob patterns of files or folders to skip.")
@_discovery_options
@_report_options
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=None, help="Files analysed in parallel [default: all cores].")
@click.option("--frontend", type=click.Choice(FRONTENDS), default=None, help="CUDA parser [default: auto].")
@click.option("--compile-commands", type=click.Path(exists=True), help="compile_commands.json (selects the clang frontend).")
@click.option("-v", "--verbose", is_flag=True, help="Say which files fell back to tree-sitter and which functions were skipped.")
@click.option("--no-cache", is_flag=True, help="Analyse every file again instead of reading .gpulint_cache/.")
@click.option("--confirm", "confirm_trace", type=click.Path(exists=True, dir_okay=False), metavar="TRACE",
              help="Mark each finding confirmed / refuted / unobserved by a recorded run; add what only the run shows.")
@click.option("--min-bytes", default=None, metavar="BYTES",
              help="With --confirm: hide the run's own findings at sites below this many bytes [default: 1MiB].")
@click.option("--baseline", type=click.Path(dir_okay=False), metavar="FILE",
              help="Report only findings that are not in FILE (matched by a fingerprint that survives moved lines).")
@click.option("--update-baseline", is_flag=True, help="With --baseline: write the current findings to FILE and exit 0.")
@click.option("--stdin-filename", metavar="NAME",
              help="With `-` as the path: the name of the text read from standard input (its language, its "
                   "configuration, the name findings carry) [default: stdin.cu].")
@click.option("--add-ignore", is_flag=True,
              help="Add a `gpulint: ignore[...]` comment for every current finding (as Ruff's --add-noqa) and exit 0.")
@click.option("--watch", is_flag=True,
              help="Check again whenever a checked file or a configuration file changes (Ctrl-C stops).")
@_config_options
def check(paths, select, extend_select, ignore, exclude, extend_include, no_respect_gitignore, force_exclude, fmt, color, statistics, exit_zero, output, threshold, jobs, frontend,
          compile_commands, verbose, no_cache, confirm_trace, min_bytes, baseline, update_baseline, stdin_filename,
          add_ignore, watch, config_file, isolated) -> None:
    """Lint .cu/.cuh and C/C++ files that use CUDA. Exit 0 clean, 1 findings, 2 error."""
    if update_baseline and baseline is None:
        _fail("--update-baseline needs --baseline FILE")
    cli_settings = {"select": select, "extend_select": extend_select, "ignore": ignore, "exclude": exclude,
                    "extend_include": extend_include, "no_respect_gitignore": no_respect_gitignore,
                    "force_exclude": force_exclude, "threshold": threshold, "jobs": jobs, "frontend": frontend,
                    "compile_commands": compile_commands, "verbose": verbose, "min_bytes": min_bytes,
                    "default_select": DEFAULT_SELECT}
    resolver = _resolver(cli_settings, config_file, isolated)
    _warn_without_clang(resolver.base)
    if list(paths) == ["-"] and add_ignore:
        _fail("--add-ignore writes files: it cannot take standard input")
    if "-" in paths and list(paths) != ["-"]:
        _fail("`-` (standard input) must be the only path")

    def once() -> int:
        return _check_once(paths, resolver, fmt, color, statistics, exit_zero, output, verbose, no_cache,
                           confirm_trace, baseline, update_baseline, stdin_filename, add_ignore)

    if not watch:
        sys.exit(once())
    if add_ignore or update_baseline or list(paths) == ["-"]:
        _fail("--watch checks again on every change: it cannot take --add-ignore, --update-baseline or `-`")
    from gpulint import watch as watching
    from gpulint.discovery import discover

    def files() -> dict:
        found, _, _ = discover(list(paths) or ["."], _resolver(cli_settings, config_file, isolated))
        return watching.snapshot(found, list(paths) or ["."], [p for p in (baseline, confirm_trace, config_file) if p])

    def again() -> int:  # the configuration is read again each round: a change to it is what was seen
        nonlocal resolver
        resolver = _resolver(cli_settings, config_file, isolated)
        return once()

    sys.exit(watching.loop(again, files))


def _check_once(paths, resolver, fmt, color, statistics, exit_zero, output, verbose, no_cache, confirm_trace,
                baseline, update_baseline, stdin_filename, add_ignore) -> int:
    """One `gpulint check`: returns its exit code."""
    from gpulint.engine import check_paths

    settings = resolver.base
    if list(paths) == ["-"]:
        from gpulint.stdin_source import check_stdin

        report = check_stdin(resolver, stdin_filename, sorted(_rules()))
    else:
        from gpulint.output import SHOW_FIXES

        progress = _progress(fmt)
        try:
            report = check_paths(list(paths) or ["."], resolver, cache=not no_cache,
                                 fixes=fmt in SHOW_FIXES and not statistics and not add_ignore, progress=progress)
        finally:
            progress.done()
    if confirm_trace is not None:
        report.findings = _confirmed(report.findings, confirm_trace, settings)
    report.findings, small = _at_least(report.findings, settings.min_bytes)
    _diagnose(report.diagnostics, report.notes, report.errors, verbose)
    if report.files == 0 and not report.errors:
        click.echo(f"gpulint: warning: no files to check in {', '.join(paths) or '.'}", err=True)
    if add_ignore:
        _add_ignores(report.findings)
    baseline_note = ""
    if baseline is not None:
        report.findings, baseline_note = _baseline(report.findings, baseline, update_baseline)
    hidden = " ".join(note for note in (report.unanalysed_summary(), _small_note(small, settings.min_bytes),
                                        baseline_note) if note)
    _report(report.findings, fmt, statistics, output, settings.enabled_codes(sorted(_rules())), report.files,
            len(report.errors), hidden=hidden, coverage=report.allocation_sites_line(), color_choice=color)
    return _exit_code(report.findings, report.errors, exit_zero)


def _add_ignores(findings: list) -> None:
    """`--add-ignore`: the comments written, what could not be, and the exit (0, or 2 when a file
    could not be written)."""
    from gpulint.add_ignore import add_ignores

    added = add_ignores(findings)
    for problem in added.problems:
        click.echo(f"gpulint: error: {problem}", err=True)
    if added.without_line:
        click.echo(f"gpulint: {added.without_line} finding(s) have no source line to put a comment on", err=True)
    click.echo(f"gpulint: added {added.comments} ignore comment{'s' if added.comments != 1 else ''} "
               f"to {added.files} file{'s' if added.files != 1 else ''}", err=True)
    sys.exit(2 if added.problems else 0)


def _baseline(findings: list, path: str, update: bool) -> tuple[list, str]:
    """`--baseline FILE`: the findings FILE does not hold, and a note of how many it did; with
    `--update-baseline`, FILE written from `findings` and the run ends (exit 0)."""
    from gpulint import baseline

    if update:
        try:
            count = baseline.write(path, findings)
        except OSError as exc:
            _fail(f"{path}: cannot write the baseline: {exc.strerror or exc}")
        click.echo(f"gpulint: wrote {count} finding{'s' if count != 1 else ''} to the baseline {path}", err=True)
        sys.exit(0)
    try:
        known = baseline.load(path)
    except baseline.BaselineError as exc:
        _fail(str(exc))
    new, matched = baseline.new_findings(findings, known)
    note = f"{matched} finding{'s' if matched != 1 else ''} in the baseline {path} not reported." if matched else ""
    return new, note


def _at_least(findings: list, min_bytes: int) -> tuple[list, int]:
    from gpulint.results import at_least

    return at_least(findings, min_bytes)


def _small_note(hidden: int, min_bytes: int) -> str:
    from gpulint.findings import human_bytes

    if not hidden:
        return ""
    return (f"{hidden} finding{'s' if hidden != 1 else ''} on objects below --min-bytes {human_bytes(min_bytes)} "
            f"{'was' if hidden == 1 else 'were'} hidden (--min-bytes 0 shows them).")


def _progress(fmt: str):
    """Progress on stderr for a person: a terminal, a format for people (`gpulint.progress`)."""
    from gpulint.output import FOR_PEOPLE
    from gpulint.progress import Progress

    return Progress(enabled=sys.stderr.isatty() and fmt in FOR_PEOPLE)


def _warn_without_clang(settings) -> None:
    """The clang frontend asked for (`--frontend clang`, a compile database) where libclang is not
    installed: said once here, not in a note per file (the files are read with tree-sitter)."""
    if not (settings.frontend == "clang" or (settings.frontend == "auto" and settings.compile_commands)):
        return
    from gpulint.static.cuda_clang import available

    if not available():
        click.echo("gpulint: warning: the clang frontend needs libclang, which is not installed "
                   "(pip install 'gpulint[clang]'); CUDA files are read with tree-sitter", err=True)


def _diagnose(diagnostics: list[str], notes: list[str], errors: list[str], verbose: bool) -> None:
    """Warnings always, notes with -v (or GPULINT_DEBUG=1, for tracebacks), errors always."""
    from gpulint.engine import debugging

    for line in diagnostics:
        click.echo(f"gpulint: {line}", err=True)
    if verbose or debugging():
        for line in notes:
            click.echo(f"gpulint: {line}", err=True)
    for line in errors:
        click.echo(f"gpulint: error: {line}", err=True)
    if errors and not (verbose or debugging()) and any("internal error" in line for line in errors):
        click.echo("gpulint: the results above are incomplete; -v or GPULINT_DEBUG=1 shows the tracebacks",
                   err=True)


def _exit_code(findings: list, errors: list[str], exit_zero: bool) -> int:
    """Ruff's codes: 2 when something could not be checked (whatever --exit-zero says), else 1
    for findings, else 0."""
    if errors:
        return 2
    return 1 if findings and not exit_zero else 0


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; exit 1 if anything would change.")
@click.option("--apply", "do_apply", is_flag=True, help="Apply the fixes to the files.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes marked unsafe.")
@click.option("--select", multiple=True, help="Rule codes or prefixes whose fixes to apply.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to leave alone.")
@click.option("--exclude", multiple=True, help="Glob patterns of files or folders to skip.")
@_discovery_options
@click.option("--from-sarif", "from_sarif", type=click.Path(dir_okay=False),
              help="Apply the fixes recorded in this SARIF file (paths relative to the current folder).")
@_config_options
def fix(paths, show_diff, do_apply, unsafe_fixes, select, ignore, exclude, extend_include, no_respect_gitignore,
        force_exclude, from_sarif, config_file, isolated) -> None:
    """Apply suggested fixes (safe ones; --unsafe-fixes adds unsafe ones)."""
    import difflib

    from gpulint.fixloop import fix_paths, sarif_fixes, write_atomically
    from gpulint.fixes.from_sarif import FromSarifError

    if show_diff == do_apply:
        _fail("choose one of --diff and --apply")
    if from_sarif is not None:
        try:
            fixed, errors = sarif_fixes(Path(from_sarif), Path.cwd(), unsafe_fixes), []
        except FromSarifError as exc:
            _fail(str(exc))
    else:
        fixed, errors = None, []
    diagnostics: list[str] = []
    if fixed is None:
        resolver = _resolver({"select": select, "ignore": ignore, "exclude": exclude, "extend_include": extend_include,
                              "no_respect_gitignore": no_respect_gitignore, "force_exclude": force_exclude,
                              "default_select": DEFAULT_SELECT},
                             config_file, isolated)
        fixed, diagnostics, errors = fix_paths(list(paths) or ["."], resolver, unsafe_fixes)
    _diagnose(diagnostics, [], errors, False)
    changed = [f for f in fixed if f.after != f.before]
    for f in fixed:
        if f.problem:
            click.echo(f"gpulint: {f.display}: {f.problem}", err=True)
        for line in f.withheld:
            click.echo(f"gpulint: warning: {f.display}: {line}", err=True)
    if show_diff:
        for f in changed:
            before = f.before.decode("utf-8").splitlines(keepends=True)
            after = f.after.decode("utf-8").splitlines(keepends=True)
            click.echo("".join(difflib.unified_diff(before, after, f"a/{f.display}", f"b/{f.display}")), nl=False)
        sys.exit(2 if errors or any(f.problem for f in fixed) else (1 if changed else 0))
    failed = bool(errors)
    for f in changed:
        problem = write_atomically(f)
        if problem:
            failed = True
            click.echo(f"gpulint: {f.display}: {problem}", err=True)
    total = sum(f.applied for f in changed)
    remaining = sum(len(f.remaining) for f in fixed)
    click.echo(f"Fixed {total} finding{'s' if total != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}; "
               f"{remaining} remaining.", err=True)
    sys.exit(2 if failed or any(f.problem for f in fixed) else (1 if remaining else 0))


@main.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@_report_options(default="concise")
@_config_options
@click.option("--min-bytes", default=None, metavar="BYTES",
              help="Hide sites whose objects hold fewer bytes than this and whose fix saves less "
                   "(1048576, 64KiB, 1MiB; 0 shows all) [default: 1MiB, or min-bytes in the config].")
def analyze(trace, select, ignore, fmt, color, statistics, exit_zero, output, threshold, config_file, isolated,
            min_bytes) -> None:
    """Findings of a recorded run (a trace from `gpulint run`), ranked by the peak memory their
    fixes would save. Exit 0 clean, 1 findings, 2 error."""
    from gpulint.dynamic.analyze import analyze as analyze_trace
    from gpulint.dynamic.trace import TraceError
    from gpulint.findings import human_bytes

    resolver = _resolver({"select": select, "ignore": ignore, "threshold": threshold, "min_bytes": min_bytes},
                         config_file, isolated)
    settings = resolver.base
    codes = settings.enabled_codes(sorted(_rules()))
    progress = _progress(fmt)
    try:
        result = analyze_trace(trace, settings, codes, progress)
    except TraceError as exc:
        progress.done()
        _fail(str(exc))
    progress.done()
    for warning in result.warnings:
        click.echo(f"gpulint: {warning}", err=True)
    peaks = result.peaks
    click.echo(f"gpulint: peak {human_bytes(peaks.actual)}; with every finding fixed {human_bytes(peaks.all_fixed)}; "
               f"tight-liveness lower bound {human_bytes(peaks.lower_bound)}", err=True)
    _report(result.findings, fmt, statistics, output, codes, files=1, hidden=_hidden(result), color_choice=color)
    sys.exit(1 if result.findings and not exit_zero else 0)


@main.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@click.option("--perfetto", "perfetto_out", type=click.Path(dir_okay=False),
              help="Write a Chrome-trace JSON timeline (open it in ui.perfetto.dev).")
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False),
              help="Write memory over time (.png or .svg; needs matplotlib: pip install 'gpulint[report]').")
@click.option("--html", "html_out", type=click.Path(dir_okay=False),
              help="Write one self-contained HTML page: memory over time (zoomable), the pool plan, the findings "
                   "with their source lines.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Objects to list.")
@click.option("--min-bytes", default=None, metavar="BYTES",
              help="Hide findings at sites whose bytes and saving are both below this (1048576, 64KiB, 1MiB; 0 shows "
                   "all) [default: 1MiB, or min-bytes in the config].")
def report(trace, perfetto_out, plot_out, html_out, top, min_bytes) -> None:
    """Peak memory, what-if savings, the pool plan, top objects and findings of a recorded run."""
    from rich.console import Console

    from gpulint.dynamic import report as reporting
    from gpulint.dynamic.analyze import analyze as analyze_trace
    from gpulint.dynamic.trace import TraceError

    settings = _resolver({"min_bytes": min_bytes}, None, False).base
    progress = _progress("text")
    try:
        analysis = analyze_trace(trace, settings, [c for c in sorted(_rules())], progress)
    except TraceError as exc:
        progress.done()
        _fail(str(exc))
    progress.done()
    for warning in analysis.warnings:
        click.echo(f"gpulint: {warning}", err=True)
    reporting.summary(analysis, Console(), top)
    if perfetto_out:
        count = reporting.perfetto(analysis, Path(perfetto_out))
        click.echo(f"gpulint: wrote {perfetto_out} ({count} trace events; open it in https://ui.perfetto.dev)", err=True)
    if plot_out:
        try:
            reporting.plot(analysis, Path(plot_out))
        except reporting.PlotUnavailable as exc:
            _fail(str(exc))
        click.echo(f"gpulint: wrote {plot_out}", err=True)
    if html_out:
        from gpulint.dynamic import html_report

        try:
            data = html_report.write(analysis, Path(html_out))
        except OSError as exc:
            _fail(f"cannot write {html_out}: {exc.strerror or exc}")
        click.echo(f"gpulint: wrote {html_out} ({len(data['findings'])} findings, {len(data['boxes'])} objects in the "
                   "pool plan; it needs no network)", err=True)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", "trace", default="gpulint.trace.jsonl", show_default=True,
              help="Trace to write (%p: the pid, %r: the MPI / torchrun rank). A name ending in .gltrace gets "
                   "the binary variant from the native collector: smaller, and read twice as fast for long runs.")
@click.option("--level", type=click.Choice(["object", "access", "full"]), default="object", show_default=True,
              help="object: API callbacks only; access: also per-launch access bitmaps; full: also access counts.")
@click.option("--sample", type=click.IntRange(min=1), default=1, show_default=True,
              help="Record what one launch in N per kernel touches (access and full levels); GL008/GL010 do not "
                   "judge the objects the others used.")
@click.option("--kernels", metavar="REGEX", help="Instrument only kernels whose name matches (access and full levels).")
@click.option("--granularity", type=click.IntRange(min=4), default=32, show_default=True,
              help="Bytes per bitmap bit (a power of two).")
@click.option("--collector", type=click.Choice(["auto", "native", "python"]), default="auto", show_default=True,
              help="auto: the Python collectors for a Python interpreter, else the native one; native: the "
                   "Sanitizer-API tool for any program (a Python one shows its allocator's segments).")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(trace, level, sample, kernels, granularity, collector, command) -> None:
    """Run a CUDA program with interception and write a trace: gpulint run -- ./app args
    (`-- python script.py args` or `-m module args`: the Python collectors).

    The program keeps its exit code, output and behaviour. Then `gpulint analyze TRACE` or
    `gpulint check SRC --confirm TRACE`."""
    if sys.platform != "linux":
        _fail(f"gpulint run needs Linux with an NVIDIA GPU and driver (this is {sys.platform}); check, fix, analyze "
              "and report work here, on traces recorded on Linux")
    from gpulint.dynamic.collectors.native import build as builder
    from gpulint.dynamic.collectors.native import runner

    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        _fail("nothing to run: gpulint run -- ./app args")
    if collector == "python" or (collector == "auto" and (Path(argv[0]).name.startswith("python") or argv[0] == "-m")):
        # A Python program: the framework collectors see its tensors (a driver-level tool sees
        # only the caching allocator's segments).
        _run_python(argv, trace)
    _warn_without_lines(argv[0])  # before: the program replaces this process
    try:
        runner.run(argv, trace, level, sample, kernels, granularity)  # becomes the program
    except builder.Unavailable as exc:
        _fail(str(exc))
    except OSError as exc:  # not found, not executable: the shell's wording
        _fail(f"cannot run {argv[0]}: {exc.strerror or exc}")


def _warn_without_lines(program: str) -> None:
    """A binary without a host line table: say so now, not when every finding shows no line.  From
    the section table alone: at the object level this runs before every traced program starts."""
    import shutil

    from gpulint.dynamic.elf import has_line_table, line_warning

    path = program if "/" in program else (shutil.which(program) or program)
    if Path(path).name.startswith("python"):
        return  # an interpreter under --collector native: its own line tables are not the question
    if has_line_table(path) is False:
        click.echo(f"gpulint: warning: {line_warning(program)}", err=True)


def _run_python(argv: list[str], trace: str) -> None:
    """`gpulint run -- python ARGS` (or `-m module`, or a script under `--collector python`): the
    program runs as under that interpreter, exit code and messages included."""
    import os
    import subprocess

    from gpulint.dynamic.collectors import pyrun

    is_python = Path(argv[0]).name.startswith("python")
    # `--collector python x.py` and `gpulint run -m module` run under this interpreter.
    interpreter, rest = (argv[0], argv[1:]) if is_python else (sys.executable, argv)
    command = pyrun.command(interpreter, rest, trace)
    if command is None:
        _fail("nothing to run: gpulint run -- python script.py (or -m module, -c code, -)")
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    before = _stamp(trace)
    try:
        proc = subprocess.run(command, env=env)
    except OSError as exc:
        _fail(f"cannot run {interpreter}: {exc.strerror or exc}")
    if _stamp(trace) != before:  # claim only a trace this run wrote
        encoding = " (JSON Lines: the Python collectors write no binary trace)" if trace.endswith(".gltrace") else ""
        click.echo(f"gpulint: wrote {trace}{encoding}", err=True)
    sys.exit(proc.returncode if proc.returncode >= 0 else 128 - proc.returncode)


def _stamp(path: str) -> tuple[int, int] | None:
    import os

    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_ino


@main.command()
def server() -> None:
    """A language server on stdin/stdout for editors: diagnostics, fixes as code actions, rule pages on hover."""
    from gpulint.server import Unavailable, serve

    try:
        serve()
    except Unavailable as exc:
        _fail(str(exc))


@main.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Show the documentation of one rule."""
    found = _rules().get(code.upper()) or next((r for r in _rules().values() if r.name == code.lower()), None)
    if found is None:
        _fail(f"no rule {code!r}; `gpulint rules` lists them")
    click.echo(found.manual)


@main.command("rules")
def rules_cmd() -> None:
    """List every rule."""
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("code")
    table.add_column("name")
    table.add_column("languages")
    table.add_column("needs")
    table.add_column("summary")
    for code in sorted(_rules()):
        r = _rules()[code]
        table.add_row(code, r.name, ", ".join(r.languages), "trace" if r.needs_trace else "source", r.summary)
    # A pipe gets full lines, not a table folded to 80 columns.
    Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160).print(table)


if __name__ == "__main__":  # pragma: no cover
    main()
