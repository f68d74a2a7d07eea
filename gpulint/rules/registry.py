"""The rule registry: every rule is a function over what its *source* gives it.

A rule module defines one function decorated with `@rule(...)`; its docstring is the rule's
documentation (What it does / Why is this bad? / Example / Use instead / Fix safety), shown by
`gpulint rule CODE` and written into SARIF.  Rules know nothing about output formats.

Where a rule runs is a declared property, as Ruff's lint sources are: most read the object
histories of a `Unit` (static or a run), a few only what a run measures, GL900 the file itself
and GL901 the file's suppression comments.  The engine and the trace analysis ask `runs_on`
which rules a unit gets; neither names a rule.
"""
from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass, field
from typing import Callable, Iterable

from gpulint.findings import Finding
from gpulint.history import Unit


@dataclass
class RuleSettings:
    """Per-run knobs the rules read: thresholds (kernel launches) and GL003's size tolerance."""

    thresholds: dict[str, int] = field(default_factory=dict)
    reuse_tolerance: float = 0.10

    def threshold(self, code: str, default: int = 1) -> int:
        return self.thresholds.get(code, default)


Check = Callable[..., Iterable[Finding]]


class Source(enum.Enum):
    HISTORIES = "histories"  # a Unit's object histories, from a parse or a run: `check(unit, settings)`
    TRACE = "trace"  # what only a run measures (bitmaps, counts, pools): `check(unit, settings)` on runs
    FILE = "file"  # the file itself, which could not be read or parsed: `check(display, why, row, column)`
    SUPPRESSIONS = "suppressions"  # the file's suppression comments: `check(suppressions, source, display, codes)`


@dataclass(frozen=True)
class Rule:
    """A rule: its code, name, documentation and check, and what the check reads."""

    code: str
    name: str
    summary: str
    doc: str
    check: Check
    languages: tuple[str, ...] = ("cuda",)
    source: Source = Source.HISTORIES
    has_threshold: bool = False

    @property
    def manual(self) -> str:
        """The rule's page as `gpulint rule CODE` prints it (and the language server's hover shows)."""
        return f"# {self.code} ({self.name})\n\n{self.summary}.\n\n{self.doc}"

    @property
    def needs_trace(self) -> bool:
        return self.source is Source.TRACE

    def runs_on(self, unit: Unit) -> bool:
        """Whether this rule judges `unit`: a histories rule any unit of its languages, a trace
        rule only a run's."""
        if unit.language not in self.languages:
            return False
        return self.source is Source.HISTORIES or (self.source is Source.TRACE and unit.observed)


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, summary: str, *, languages: tuple[str, ...] = ("cuda",),
         source: Source = Source.HISTORIES, has_threshold: bool = False) -> Callable[[Check], Check]:
    def register(func: Check) -> Check:
        if code in RULES:
            raise RuntimeError(f"rule {code} registered twice")
        RULES[code] = Rule(code, name, summary, inspect.cleandoc(func.__doc__ or ""), func, languages,
                           source, has_threshold)
        return func

    return register

