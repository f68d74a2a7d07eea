"""Output formats: findings in, text out. Each module has `render(findings, **context) -> str`."""
from __future__ import annotations

import importlib
from typing import Callable

# format -> (module, function)
_RENDERERS = {
    "text": ("text", "render"), "concise": ("text", "render"), "grouped": ("text", "render_grouped"),
    "json": ("json_format", "render"), "json-lines": ("json_format", "render_lines"), "sarif": ("sarif", "render"),
    "github": ("github", "render"), "gitlab": ("gitlab", "render"), "junit": ("junit", "render"),
    "rdjson": ("rdjson", "render"),
}
# Formats a person reads in a terminal (colour, and the summary line with what was hidden).
FOR_PEOPLE = ("text", "concise", "grouped")
# Formats that print fixes: for the others a check builds none (`engine.check_paths(fixes=False)`).
SHOW_FIXES = ("text", "json", "json-lines", "sarif", "rdjson")
# A finding's level where a format has levels: gpulint's own failures are errors, unused
# suppressions notes, the rest warnings.
LEVEL = {"GL900": "error", "GL901": "note"}


def level(code: str) -> str:
    return LEVEL.get(code, "warning")


def _lazy(name: str) -> Callable[..., str]:
    # Formats are imported when used: SARIF's object model alone costs a run 50 ms of start-up.
    module, function = _RENDERERS[name]

    def render(*args, **kwargs) -> str:
        if name == "concise":
            kwargs["concise"] = True
        return getattr(importlib.import_module(f"gpulint.output.{module}"), function)(*args, **kwargs)
    return render


FORMATS = {name: _lazy(name) for name in _RENDERERS}

__all__ = ["FORMATS", "FOR_PEOPLE", "SHOW_FIXES", "level"]
