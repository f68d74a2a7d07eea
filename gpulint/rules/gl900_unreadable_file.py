from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding, Location
from gpulint.rules.registry import RULES, Source, rule


@rule("GL900", "unreadable-file", "A file gpulint could not read, decode or parse", languages=("cuda", "python"),
      source=Source.FILE)
def unreadable_file(display: str, why: str, row: int = 1, column: int = 1) -> Iterator[Finding]:
    """
    ## What it does
    Reports a file that gpulint was asked to check but could not analyse: it cannot be read
    (permissions, a broken link), is binary, is empty, or is larger than
    `max-file-size`; or it does not parse: a Python file Python cannot compile (the finding
    carries Python's message and points at its line; the scopes the error breaks are not
    analysed, the others are), or a CUDA file in which no function parses (at the first syntax
    error). Its source is the file: reading and the parsers say why, this rule says it.

    ## Why is this bad?
    A file that is silently skipped is a file whose GPU memory waste nobody sees. Reporting
    it in every output format (and in SARIF) keeps the gap visible in CI.

    ## Example
    A `kernels.cu` that is a binary, an empty `stub.cu`, or a `train.py` with `def step(:`.

    ## Use instead
    Fix the syntax error, exclude generated or binary files with
    `--exclude`, or raise `max-file-size`. A CUDA file that compiles but that gpulint's parser
    cannot follow (heavy macros) can be silenced with `// gpulint: ignore-file[GL900]`.

    ## Fix safety
    No fix.
    """
    yield Finding("GL900", RULES["GL900"].name, f"cannot analyse this file: {why}", Location(display, row, column),
                  properties={"origin": "static"})
