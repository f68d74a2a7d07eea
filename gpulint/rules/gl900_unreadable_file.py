from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding
from gpulint.history import Unit
from gpulint.rules.registry import RuleSettings, rule


@rule("GL900", "unreadable-file", "A file gpulint could not read, decode or parse", languages=("cuda", "python"))
def unreadable_file(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Reports a file that gpulint was asked to check but could not analyse: it cannot be read
    (permissions, a broken link), is binary, is not UTF-8, is empty, or is larger than
    `max-file-size`; or it does not parse: a Python file Python cannot compile (the finding
    carries Python's message and points at its line; the scopes the error breaks are not
    analysed, the others are), or a CUDA file in which no function parses (at the first syntax
    error). The engine raises this finding; there is nothing to check in histories.

    ## Why is this bad?
    A file that is silently skipped is a file whose GPU memory waste nobody sees. Reporting
    it in every output format (and in SARIF) keeps the gap visible in CI.

    ## Example
    A `kernels.cu` saved in Latin-1, an empty `stub.cu`, or a `train.py` with `def step(:`.

    ## Use instead
    Save sources as UTF-8, fix the syntax error, exclude generated or binary files with
    `--exclude`, or raise `max-file-size`. A CUDA file that compiles but that gpulint's parser
    cannot follow (heavy macros) can be silenced with `// gpulint: ignore-file[GL900]`.

    ## Fix safety
    No fix.
    """
    return iter(())
