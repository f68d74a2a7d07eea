from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding
from gpulint.history import Unit
from gpulint.rules.registry import RuleSettings, rule


@rule("GL900", "unreadable-file", "A file gpulint could not read or decode", languages=("cuda", "python"))
def unreadable_file(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Reports a file that gpulint was asked to check but could not analyse: it cannot be read
    (permissions, a broken link), is binary, is not UTF-8, is empty, or is larger than
    `max-file-size`. The engine raises this finding; there is nothing to check in histories.

    ## Why is this bad?
    A file that is silently skipped is a file whose GPU memory waste nobody sees. Reporting
    it in every output format (and in SARIF) keeps the gap visible in CI.

    ## Example
    A `kernels.cu` saved in Latin-1, or an empty `stub.cu`.

    ## Use instead
    Save sources as UTF-8, exclude generated or binary files with `--exclude`, or raise
    `max-file-size`.

    ## Fix safety
    No fix.
    """
    return iter(())
