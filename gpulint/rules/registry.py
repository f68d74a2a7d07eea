"""The rule registry: every rule is a function over a `Unit` of object histories.

A rule module defines one function decorated with `@rule(...)`; its docstring is the rule's
documentation (What it does / Why is this bad? / Example / Use instead / Fix safety), shown by
`gpulint rule CODE` and written into SARIF.  Rules know nothing about output formats.
"""
from __future__ import annotations

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


Check = Callable[[Unit, RuleSettings], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str
    doc: str
    check: Check
    languages: tuple[str, ...] = ("cuda",)
    needs_trace: bool = False
    has_threshold: bool = False


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, summary: str, *, languages: tuple[str, ...] = ("cuda",),
         needs_trace: bool = False, has_threshold: bool = False) -> Callable[[Check], Check]:
    def register(func: Check) -> Check:
        if code in RULES:
            raise RuntimeError(f"rule {code} registered twice")
        RULES[code] = Rule(code, name, summary, inspect.cleandoc(func.__doc__ or ""), func, languages,
                           needs_trace, has_threshold)
        return func

    return register

