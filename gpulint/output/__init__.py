"""Output formats: findings in, text out. Each module has `render(findings, **context) -> str`."""
from gpulint.output import json_format, text

FORMATS = {"text": text.render, "json": json_format.render}

__all__ = ["FORMATS"]
