"""`python -m gpulint.dynamic.collectors.pyrun -o TRACE -- script.py args` (or `-m module args`,
`-c CODE args`, `- args`): run a Python program as `__main__` with its own argv under the Python
collectors (PyTorch, CuPy, Numba, cuda-python: each attached when the program imports it).  This
is what `gpulint run -- python script.py` executes.

The program behaves as under `python` itself: the same argv, `sys.path[0]`, exit code and
messages (a missing script is `can't open file ...` and exit 2, a missing module `No module named
...` and exit 1, an uncaught exception the program's traceback without gpulint's frames and exit
1).  The trace is opened only once there is a program to run, and closed, complete, whatever the
program does."""
from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
import types
from dataclasses import dataclass, field

# Interpreter options that take a value (`-W error`, `-X dev`): the value is not the program.
_OPTIONS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}


@dataclass
class Program:
    """What `python ARGS` would run: a script path, a module (`-m`), code (`-c`) or stdin (`-`)."""

    kind: str  # "script" | "module" | "code" | "stdin"
    target: str  # the path, module name or code
    args: list[str] = field(default_factory=list)  # what follows it: the program's sys.argv[1:]
    interpreter_options: list[str] = field(default_factory=list)  # `-u`, `-X dev`, `-W error`


def parse_python_argv(argv: list[str]) -> Program | None:
    """Split a `python` command line (without the interpreter) the way the interpreter does;
    None when it names no program (an interactive session, which gpulint cannot trace)."""
    options: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-":
            return Program("stdin", "-", argv[i + 1:], options)
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-"):
            break
        for mode, kind in (("-c", "code"), ("-m", "module")):
            if arg == mode:
                if i + 1 >= len(argv):
                    return None
                return Program(kind, argv[i + 1], argv[i + 2:], options)
            if arg.startswith(mode):  # `-cCODE`, `-mmodule`
                return Program(kind, arg[2:], argv[i + 1:], options)
        if arg in _OPTIONS_WITH_VALUE and i + 1 < len(argv):
            options += [arg, argv[i + 1]]
            i += 2
            continue
        options.append(arg)
        i += 1
    if i >= len(argv):
        return None
    return Program("script", argv[i], argv[i + 1:], options)


def command(interpreter: str, argv: list[str], trace: str) -> list[str] | None:
    """The command that runs `interpreter argv` under the collectors, writing `trace`."""
    program = parse_python_argv(argv)
    if program is None:
        return None
    mode = {"script": [], "module": ["-m"], "code": ["-c"], "stdin": []}[program.kind]
    return [interpreter, *program.interpreter_options, "-m", "gpulint.dynamic.collectors.pyrun", "-o", trace,
            *mode, "--", program.target, *program.args]


def _missing(program: Program) -> tuple[str, int] | None:
    """Python's own message and exit code when the program cannot even start, else None."""
    if program.kind == "script":
        path = os.path.abspath(program.target)
        if not os.path.exists(path):
            return f"{sys.executable}: can't open file {path!r}: [Errno 2] No such file or directory", 2
    if program.kind == "module":
        try:
            found = importlib.util.find_spec(program.target)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return f"{sys.executable}: No module named {program.target}", 1
    return None


def _runner(program: Program):
    """Set argv and sys.path[0] as `python` would, and return what runs the program."""
    if program.kind == "module":
        sys.argv = [program.target, *program.args]
        sys.path[0] = os.getcwd()
        return lambda: runpy.run_module(program.target, run_name="__main__", alter_sys=True)
    if program.kind == "script":
        sys.argv = [program.target, *program.args]
        sys.path[0] = os.path.dirname(os.path.abspath(program.target))
        # `__file__` and tracebacks name the absolute path, as under `python script.py` (3.9+).
        return lambda: runpy.run_path(os.path.abspath(program.target), run_name="__main__")
    sys.argv = ["-c" if program.kind == "code" else "-", *program.args]
    sys.path[0] = ""
    name = "<string>" if program.kind == "code" else "<stdin>"
    source = program.target if program.kind == "code" else sys.stdin.read()

    def run():
        code = compile(source, name, "exec", dont_inherit=True)
        # A fresh `__main__` module for the code, as `python -c` has (pickle finds its classes
        # there), run by runpy's `_run_code`: the frame the collectors take as the program's entry.
        module = types.ModuleType("__main__")
        saved = sys.modules.get("__main__")
        sys.modules["__main__"] = module
        try:
            return runpy._run_code(code, module.__dict__, mod_name="__main__")
        finally:
            if saved is not None:
                sys.modules["__main__"] = saved

    return run


def _print_program_error(exc: BaseException) -> None:
    """The traceback Python would print: the program's frames, none of gpulint's or runpy's."""
    ours = {main.__code__.co_filename, runpy._run_code.__code__.co_filename}  # "<frozen runpy>" too
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    trace_path = "gpulint.trace.jsonl"
    kind = "script"
    while args and args[0] in ("-o", "--output", "-m", "-c"):
        if args[0] in ("-o", "--output"):
            if len(args) < 2:
                print("gpulint run: -o needs a path", file=sys.stderr)
                return 2
            trace_path, args = args[1], args[2:]
        else:
            kind, args = {"-m": "module", "-c": "code"}[args[0]], args[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("gpulint run: nothing to run: a script, -m module, -c code or -", file=sys.stderr)
        return 2
    if kind == "script" and args[0] == "-":
        kind = "stdin"
    program = Program(kind, args[0], args[1:])
    missing = _missing(program)
    if missing is not None:
        print(missing[0], file=sys.stderr)
        return missing[1]
    from gpulint.dynamic.collectors.recorder import program_entry
    from gpulint.dynamic.collectors.recorder import session as trace

    # runpy's frame that executes the program ("<frozen runpy>" where the module is frozen)
    program_entry(runpy._run_code.__code__.co_filename, "_run_code")
    run = _runner(program)
    code = 0
    context = trace(trace_path) if trace is not None else None
    if context is not None:
        context.__enter__()
    namespace = None
    try:
        # The program's globals stay alive until the trace is closed: Python frees them only at
        # interpreter exit, so the trace must not show them freed by gpulint's own frames.
        namespace = run()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if exit_.code is not None and not isinstance(exit_.code, int):
            print(exit_.code, file=sys.stderr)
    except BaseException as exc:  # the program's own error: shown as Python shows it
        _print_program_error(exc)
        code = 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    del namespace
    return code


if __name__ == "__main__":
    sys.exit(main())
