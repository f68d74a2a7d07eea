"""Per-file result cache in `.gpulint_cache/`: a file whose bytes, settings, rules and gpulint
build are unchanged is not parsed again, unless a summary of another file that its analysis used
has changed (an entry keeps the file's own summary and a digest of those it used: the engine
compares that digest with what the file's names resolve to now, see `static.program`).

One entry per analysed path (so the cache never grows past the project), written atomically so
parallel runs cannot leave a torn entry; anything unreadable is a miss, and a cache that cannot be
written (read-only checkout) is simply not used.  Results from the clang frontend are not cached:
they depend on headers the key does not cover.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from gpulint import __version__
from gpulint.config import Settings
from gpulint.findings import finding_from_dict, finding_to_dict
from gpulint.results import FileResult
from gpulint.static.program import FileSummary

CACHE_DIR = ".gpulint_cache"
_FORMAT = 2


@lru_cache(maxsize=1)
def build_id() -> str:
    """gpulint's version plus the size and mtime of its own sources: an edited checkout (a
    developer's, an editable install) must not read results an older build wrote."""
    digest = hashlib.sha256(f"{__version__}/{_FORMAT}".encode())
    package = Path(__file__).resolve().parent
    for source in sorted(package.rglob("*")):
        if source.suffix in (".py", ".h", ".toml") and "__pycache__" not in source.parts:
            stat = source.stat()
            digest.update(f"{source.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


class ResultCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder / "v1"
        self.usable = True
        self.hits = 0

    @staticmethod
    def cacheable(settings: Settings) -> bool:
        return settings.frontend != "clang" and not settings.compile_commands

    def key(self, display: str, data: bytes, settings: Settings, codes: list[str]) -> str:
        digest = hashlib.sha256()
        for part in (build_id(), display, settings.fingerprint(), ",".join(codes)):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _entry(self, display: str) -> Path:
        return self.folder / hashlib.sha256(display.encode("utf-8", "surrogateescape")).hexdigest()[:32]

    def get(self, display: str, key: str):
        try:
            data = json.loads(self._entry(display).read_text(encoding="utf-8"))
            if data.get("key") != key:
                return None
            result = FileResult(data["path"], [finding_from_dict(f) for f in data["findings"]],
                                list(data["diagnostics"]), list(data["notes"]), unanalysed=list(data["unanalysed"]),
                                allocation_sites=tuple(data["allocation_sites"]),
                                summary=FileSummary.from_json(data["summary"]) if data["summary"] else None,
                                depends=str(data["depends"]), cached=True)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        self.hits += 1
        return result

    def put(self, display: str, key: str, result) -> None:
        if not self.usable:
            return
        entry = {"key": key, "path": result.path, "findings": [finding_to_dict(f) for f in result.findings],
                 "diagnostics": result.diagnostics, "notes": result.notes, "unanalysed": result.unanalysed,
                 "allocation_sites": list(result.allocation_sites),
                 "summary": result.summary.to_json() if result.summary is not None else None,
                 "depends": result.depends}
        try:
            self._prepare()
            handle, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entry, out, separators=(",", ":"))
            os.replace(temp, self._entry(display))
        except OSError:
            self.usable = False  # a read-only tree: run without the cache

    def _prepare(self) -> None:
        if self.folder.is_dir():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        top = self.folder.parent
        # Like Ruff's cache: never committed, skipped by backup tools.
        (top / ".gitignore").write_text("# Automatically created by gpulint.\n*\n")
        (top / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n"
                                          "# This file is a cache directory tag created by gpulint.\n")
