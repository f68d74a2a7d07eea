"""The program templates of the corpus generators (python_speed.py, static_speed.py).

Templates live in files under benchmarks/templates/, found next to this module whatever the
current directory. A file holds named sections: a line `@@ NAME` starts the section NAME, which
runs to the next such line; blank lines around a section's text are not part of it, and text
before the first section describes the file. `$name` placeholders are filled by `render`.
"""
from __future__ import annotations

import re
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent / "templates"
_SECTION = re.compile(r"^@@ (\S+)$", re.MULTILINE)


def load(relative: str) -> dict[str, str]:
    """The sections of `benchmarks/templates/<relative>`, by name, in file order."""
    text = (TEMPLATES / relative).read_text(encoding="utf-8")
    heads = list(_SECTION.finditer(text))
    sections: dict[str, str] = {}
    for head, following in zip(heads, heads[1:] + [None]):
        name = head.group(1)
        if name in sections:
            raise ValueError(f"{relative}: section {name} appears twice")
        sections[name] = text[head.end():following.start() if following else len(text)].strip("\n")
    return sections


def render(template: str, **values: object) -> str:
    """Substitute a `$name` template; a line that is only `$name` takes a block, indented like the
    placeholder (an empty block removes the line)."""
    out: list[str] = []
    for line in template.split("\n"):
        m = re.fullmatch(r"(\s*)\$(\w+)", line)
        if m and m.group(2) in values:
            block = str(values[m.group(2)])
            if block.strip():
                out.extend(m.group(1) + part if part.strip() else "" for part in block.split("\n"))
            continue
        out.append(Template(line).substitute({k: str(v) for k, v in values.items()}))
    return "\n".join(out)
