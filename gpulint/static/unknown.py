"""Syntax the frontends do not know: loud in tests, soft for users (pyflakes' switch).

A statement kind a frontend has no lowering for drops its events, and a rule may then miss a use
or see a leak that is not there.  With `GPULINT_STRICT_SYNTAX=1` (the test suite sets it) such a
construct raises, so a test program that contains it fails instead of passing on a silent gap;
without it the construct is skipped, counted per file, and named by `gpulint check -v`."""
from __future__ import annotations

import os
from collections import Counter

STRICT_ENV = "GPULINT_STRICT_SYNTAX"


class UnknownSyntax(RuntimeError):
    """A construct the frontend has no lowering for (raised only under GPULINT_STRICT_SYNTAX=1)."""


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def skipped(counts: Counter, frontend: str, kind: str, row: int) -> None:
    """Record one construct of `kind` the frontend skipped at `row` (or raise, in strict mode)."""
    if strict():
        raise UnknownSyntax(f"{frontend}: no lowering for a `{kind}` at line {row} ({STRICT_ENV}=1)")
    counts[kind] += 1


def note(display: str, counts: Counter) -> str | None:
    """The -v line for what one file's frontend skipped, or None."""
    if not counts:
        return None
    kinds = ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items()))
    return f"{display}: skipped {sum(counts.values())} construct(s) the frontend does not know ({kinds})"
