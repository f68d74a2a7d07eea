"""Output formats: findings in, text out. Each module has `render(findings, **context) -> str`."""
from gpulint.output import github, json_format, sarif, text

FORMATS = {"text": text.render, "json": json_format.render, "sarif": sarif.render, "github": github.render}

__all__ = ["FORMATS"]
