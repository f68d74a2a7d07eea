"""`gpulint check -`: one file read from standard input, as an editor sends an unsaved buffer.
`--stdin-filename` names it: its language, the configuration that applies, the name findings
carry (as Ruff's option of that name); without it the text is read as CUDA (`stdin.cu`)."""
from __future__ import annotations

import sys
from pathlib import Path

from gpulint.config import Resolver
from gpulint.results import Report

DEFAULT_NAME = "stdin.cu"


def check_stdin(resolver: Resolver, filename: str | None, all_codes: list[str]) -> Report:
    from gpulint.engine import analyse_source

    display = filename or DEFAULT_NAME
    path = Path(display)
    data = sys.stdin.buffer.read()
    settings = resolver.for_path(path)
    codes = settings.codes_for(path, all_codes)
    result = analyse_source(path, display, data, settings, codes)
    return Report(sorted(result.findings, key=lambda f: f.sort_key()), result.diagnostics, result.notes, 1,
                  result.errors, [(display, name) for name in result.unanalysed], result.allocation_sites)
