"""`python -m gpulint.dynamic.collectors.pyrun -o TRACE -- script.py args` (or `-m module args`):
run a Python program as `__main__` with its own argv under the Python collectors
(PyTorch, CuPy, Numba, cuda-python: each attached when the program imports it).  This is what
`gpulint run -- python script.py` executes.  The program's exit code and exceptions pass
through (an uncaught exception prints its traceback and exits 1, as Python does), and the trace
is closed, complete, either way."""
from __future__ import annotations

import argparse
import runpy
import sys
import traceback


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpulint run -- python")
    parser.add_argument("-o", "--output", default="gpulint.trace.jsonl")
    parser.add_argument("-m", dest="module")
    parser.add_argument("target", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    target = [a for a in args.target if a != "--"] if args.target[:1] == ["--"] else args.target
    if args.module is None and not target:
        parser.error("nothing to run: a script or -m module")
    from gpulint.dynamic.collectors.recorder import program_entry
    from gpulint.dynamic.collectors.recorder import session as trace

    # runpy's frame that executes the program ("<frozen runpy>" where the module is frozen)
    program_entry(runpy._run_code.__code__.co_filename, "_run_code")
    if args.module is not None:
        sys.argv = [args.module, *target]
        run = lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True)  # noqa: E731
    else:
        sys.argv = list(target)
        sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(target[0])))
        run = lambda: runpy.run_path(target[0], run_name="__main__")  # noqa: E731
    code = 0
    context = trace(args.output) if trace is not None else None
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
    except BaseException:  # the program's own error: shown as Python shows it
        traceback.print_exc()
        code = 1
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    del namespace
    return code


if __name__ == "__main__":
    sys.exit(main())
