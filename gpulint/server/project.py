"""A workspace folder as one program, kept between an editor's edits.

`gpulint check DIR` summarises every file and analyses each against the others' summaries (see
`static.program`).  An editor changes one file at a time: the server runs that whole-project
check once per workspace folder (`index`, through `engine.check_paths`, reading `.gpulint_cache/`
as `check` does), keeps every file's summary and local includes, and then analyses an edited
buffer alone against that table (`analyse`).  The buffer's new summary replaces its old one, so
the other open files see the edit; a buffer closed unsaved goes back to the disk's summary
(`forget`), and so does a file the editor reports changed on disk (`didChangeWatchedFiles`).
Without such reports, files not open keep the summaries they were indexed with.

Nothing here knows the protocol: `server/wiring.py` calls it, the benchmark too.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gpulint.config import Resolver, Settings
from gpulint.discovery import display_path, is_gpu_source, is_python_source, read_source, readable
from gpulint.engine import analyse_source, check_paths, forget_parsed_trees
from gpulint.results import FileResult, ProjectResults, at_least
from gpulint.rules import RULES
from gpulint.static.includes import build_view, include_closure
from gpulint.static.program import (HOST, KERNEL, SLOT, FileSummary, HostSummary, ProgramView, SlotFacts, Table,
                                    digest_of_view)

# Rounds of analysing an edited file again when its own new summary changes what its names
# resolve to (struct members are followed within a program, and the edit may change the program).
MAX_ROUNDS = 3


class TableView(ProgramView):
    """A view that answers each name from a `Table` when the analysis first asks for it (a view
    built from a list of names would need the names before the analysis finds them)."""

    def __init__(self, table: Table, path: str) -> None:
        super().__init__()
        self._table = table
        self._path = path

    def hosts(self, name: str) -> list[HostSummary]:
        if HOST + name not in self.asked:
            found = self._table.resolve(self._path, HOST + name)
            if found:
                self._hosts[name] = found  # type: ignore[assignment]
        return super().hosts(name)

    def kernels(self, name: str):  # -> list[KernelSummary]
        if KERNEL + name not in self.asked:
            found = self._table.resolve(self._path, KERNEL + name)
            if found:
                self._kernels[name] = found  # type: ignore[assignment]
        return super().kernels(name)

    def slot(self, name: str) -> SlotFacts | None:
        if SLOT + name not in self.asked:
            found = self._table.resolve(self._path, SLOT + name)
            if found is not None:
                self._slots[name] = found  # type: ignore[assignment]
        return super().slot(name)


def _digest(summary: FileSummary | None) -> str:
    if summary is None:
        return ""
    return hashlib.sha256(json.dumps(summary.to_json(), sort_keys=True).encode()).hexdigest()


class Project:
    """The summaries of one workspace folder's files (or of no folder: files opened alone)."""

    def __init__(self, root: Path | None, resolver: Resolver) -> None:
        self.root = root
        self.resolver = resolver
        self.summaries: dict[str, FileSummary] = {}
        self.includes: dict[str, list[str]] = {}
        self.indexed = False
        self.diagnostics: list[str] = []  # what indexing said (unreadable files, a bad compile database)
        self._digests: dict[str, str] = {}
        self._table: Table | None = None

    # ------------------------------------------------------------------ the whole project, once

    def index(self) -> int:
        """Summarise every file of the folder (as `gpulint check FOLDER` does, cache included);
        returns how many files it read."""
        if self.root is None:
            self.indexed = True
            return 0
        kept = ProjectResults()
        report = check_paths([str(self.root)], self.resolver, cache=True, keep=kept)
        self.diagnostics = report.diagnostics + report.errors
        for display, result in kept.results.items():
            if display not in self.summaries:  # an open buffer's summary is newer than the disk's
                self._store(display, result.summary)
        for display, found in kept.includes.items():
            self.includes.setdefault(display, found)
        self.indexed = True
        return len(kept.results)

    def contains(self, path: Path) -> bool:
        if self.root is None:
            return False
        try:
            path.absolute().relative_to(self.root.absolute())
        except ValueError:
            return False
        return True

    # ------------------------------------------------------------------ one file

    def settings_for(self, path: Path) -> tuple[Settings, list[str]]:
        settings = self.resolver.for_path(path)
        return settings, settings.codes_for(path, sorted(RULES))

    def analyse(self, path: Path, data: bytes) -> FileResult:
        """The findings of `data`, the unsaved text of `path`, against the rest of the project, as
        `gpulint check` would report them with that text on disk (`min-bytes` applied)."""
        display = display_path(path)
        settings, codes = self.settings_for(path)
        if not data.strip() or not is_gpu_source(path, data):
            return FileResult(display)  # an empty new buffer is not GL900's "file is empty"
        data, note = readable(data)
        try:
            result = self._analyse(path, display, data, settings, codes)
        finally:
            forget_parsed_trees()
        if note is not None:
            result.diagnostics.append(f"{display}: {note}")
        result.findings, _ = at_least(result.findings, settings.min_bytes)
        result.findings.sort(key=lambda f: f.sort_key())
        return result

    def _analyse(self, path: Path, display: str, data: bytes, settings: Settings, codes: list[str]) -> FileResult:
        if is_python_source(path):  # Python files are judged alone (no project pass)
            return analyse_source(path, display, data, settings, codes)
        self._update_includes(path, display, data, settings)
        result = FileResult(display)
        for _ in range(MAX_ROUNDS):
            result = analyse_source(path, display, data, settings, codes, program=TableView(self.table(), display))
            if not self._store(display, result.summary) or result.summary is None:
                break
            # Its own summary changed: the programs the table groups files into may have too.
            if digest_of_view(self.table().view(display, result.summary.refs)) == result.depends:
                break
        return result

    def _update_includes(self, path: Path, display: str, data: bytes, settings: Settings) -> None:
        """The buffer's `#include "x"` closure, as it is now; an included file the index does not
        hold (outside the folder) is summarised once."""
        try:
            closure = include_closure(path, data, build_view(path, settings).include_paths)
        except Exception:  # an include the resolver cannot follow: keep the last known closure
            return
        names = [display_path(p) for p in closure]
        if names != self.includes.get(display):
            self.includes[display] = names
            self._table = None
        for included, name in zip(closure, names):
            if name not in self.summaries:
                self._summarise_from_disk(included, name)

    def _summarise_from_disk(self, path: Path, display: str, includes: bool = False) -> None:
        """The file's summary from the disk's text (and, with `includes`, its include closure)."""
        settings, codes = self.settings_for(path)
        data, why = read_source(path, settings)
        if data is None or why is not None:
            self._store(display, None)
            return
        if includes:
            self._update_includes(path, display, readable(data)[0], settings)
        try:
            result = analyse_source(path, display, readable(data)[0], settings, codes,
                                    program=TableView(self.table(), display))
        finally:
            forget_parsed_trees()
        self._store(display, result.summary)

    def forget(self, display: str) -> None:
        """A buffer closed without saving, or a file changed on disk that no buffer holds: its
        summary and includes become what the disk holds; a file no longer there leaves the table."""
        path = Path(display)
        if path.is_file():
            self._summarise_from_disk(path, display, includes=True)
        else:
            self._store(display, None)
            if self.includes.pop(display, None) is not None:
                self._table = None

    # ------------------------------------------------------------------ the table

    def _store(self, display: str, summary: FileSummary | None) -> bool:
        """Keep `display`'s summary; whether it changed (the table is built again when asked)."""
        digest = _digest(summary)
        if self._digests.get(display, "") == digest and (summary is None) == (display not in self.summaries):
            return False
        self._digests[display] = digest
        if summary is None:
            self.summaries.pop(display, None)
        else:
            self.summaries[display] = summary
        self._table = None
        return True

    def table(self) -> Table:
        if self._table is None:
            self._table = Table(self.summaries, self.includes)
        return self._table

    def stale(self, results: dict[str, FileResult]) -> list[str]:
        """The files among `results` (the open buffers' last results) whose names now resolve to
        summaries other than those they were analysed with: an edit elsewhere changed them."""
        table = self.table()
        found = []
        for display, result in results.items():
            if result.summary is not None and display in self.summaries:
                if digest_of_view(table.view(display, result.summary.refs)) != result.depends:
                    found.append(display)
        return found
