"""Output formats: findings in, text out. Each module has `render(findings, **context) -> str`."""
from __future__ import annotations

import importlib
from typing import Callable

_MODULES = {"text": "text", "concise": "text", "json": "json_format", "sarif": "sarif", "github": "github"}


def _lazy(name: str) -> Callable[..., str]:
    # Formats are imported when used: SARIF's object model alone costs a run 50 ms of start-up.
    def render(*args, **kwargs) -> str:
        if name == "concise":
            kwargs["concise"] = True
        return importlib.import_module(f"gpulint.output.{_MODULES[name]}").render(*args, **kwargs)
    return render


FORMATS = {name: _lazy(name) for name in _MODULES}

__all__ = ["FORMATS"]
