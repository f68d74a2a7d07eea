"""`gpulint server`: the pygls wiring.  Handlers only route: what a finding looks like in the
protocol is `convert`'s, what the project knows is `project`'s, and the analysis is `check`'s own.

When diagnostics come: as Ruff's server publishes them, on open and on every change (and on save),
from the buffer's text, not the disk's.  Analyses run one at a time on one worker thread, so the
protocol thread stays free for hovers and code actions; changes that arrive while one runs are
coalesced: the next analysis takes the newest text, and the ones queued behind it find nothing
new to do.  The first file opened in a workspace folder is published from its own analysis at
once; then the folder is summarised (`Project.index`), and every open file of it is analysed
again against the whole program.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from gpulint import __version__
from gpulint.config import DEFAULT_SELECT, ConfigError, Resolver
from gpulint.discovery import CUDA_SUFFIXES, CXX_SUFFIXES, PYTHON_SUFFIXES, display_path
from gpulint.results import FileResult
from gpulint.rules import RULES
from gpulint.server import convert
from gpulint.server.project import Project

CONFIG_FILES = ("gpulint.toml", "pyproject.toml")
log = logging.getLogger("gpulint.server")


class Document:
    """An open buffer: its newest text, and what the last analysis of it found."""

    def __init__(self, uri: str, path: Path) -> None:
        self.uri = uri
        self.path = path
        self.display = display_path(path)
        self.latest: tuple[int | None, bytes] = (None, b"")  # (version, text): one assignment, read whole
        self.analysed: int | None = -1  # the version the last analysis read
        self.result = FileResult(self.display)
        self.data = b""  # the text that result was found in


class GpulintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gpulint", __version__)
        self.documents: dict[str, Document] = {}
        self.projects: dict[Path | None, Project] = {}
        self.folders: list[Path] = []
        self.resolver: Resolver | None = None
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulint-analysis")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.shut_down = False  # the client sent `shutdown`: `exit` ends the process with 0
        self.silent = False  # `shutdown` or `exit` came: nothing more is sent
        self._reporting = False

    # ------------------------------------------------------------------ settings and projects

    def start(self, folders: list[Path]) -> None:
        """The workspace folders, and the working folder in the first (display paths, the cache
        and the base configuration are relative to it, as for `gpulint check` run there)."""
        self.folders = sorted(folders, key=lambda f: len(f.parts), reverse=True)
        if folders:
            os.chdir(folders[0])
        self.reset()

    def reset(self) -> None:
        """Configuration read again (a gpulint.toml or pyproject.toml saved): every project too."""
        threshold_codes = [code for code, rule in RULES.items() if rule.has_threshold]
        # One process: analyses run on a thread of the server, and forking a threaded process
        # for worker processes is not safe.
        cli = {"jobs": 1, "default_select": DEFAULT_SELECT}
        try:
            self.resolver = Resolver(cli, sorted(RULES), threshold_codes)
        except ConfigError as exc:
            self.tell(lsp.MessageType.Error, f"gpulint: {exc}; using the default settings")
            self.resolver = Resolver(cli, sorted(RULES), threshold_codes, isolated=True)
        self.projects.clear()

    def project_for(self, path: Path) -> Project:
        assert self.resolver is not None
        absolute = Path(os.path.abspath(path))
        root = next((f for f in self.folders if absolute.is_relative_to(f)), None)
        if root not in self.projects:
            self.projects[root] = Project(root, self.resolver)
        return self.projects[root]

    def tell(self, kind: lsp.MessageType, message: str) -> None:
        """A message for the user, from any thread."""
        params = lsp.ShowMessageParams(kind, message)

        def send() -> None:
            if not self.silent:
                self.window_show_message(params)

        if self.loop is not None:
            self.loop.call_soon_threadsafe(send)
        else:
            send()

    def report_server_error(self, error: Exception, source) -> None:
        """pygls tells the editor of an error by a message; when sending is what failed (stdout
        closed after `exit`), that message fails too, and each failure reported again logged a
        longer traceback until stderr, a pipe the editor may not read, was full and the server
        hung.  Logged only, then."""
        if self.silent or self._reporting:
            log.error("gpulint: %s", error)
            return
        self._reporting = True
        try:
            super().report_server_error(error, source)
        finally:
            self._reporting = False

    # ------------------------------------------------------------------ analysis (worker thread)

    def checked(self, doc: Document) -> bool:
        """Whether gpulint judges this file: its suffix, or the configuration's `extend-include`;
        and not excluded by the configuration."""
        assert self.resolver is not None
        settings = self.resolver.for_path(doc.path)
        suffix = doc.path.suffix.lower()
        known = suffix in CUDA_SUFFIXES or suffix in CXX_SUFFIXES or suffix in PYTHON_SUFFIXES
        if not known and not (settings.extend_include and settings.matches(doc.path, settings.extend_include)):
            return False
        return not settings.matches(doc.path, settings.exclude)

    def analyse(self, doc: Document) -> None:
        """Analyse the newest text of `doc` unless that version was already analysed; publish."""
        version, text = doc.latest
        if doc.analysed == version or self.documents.get(doc.uri) is not doc:
            return  # coalesced into an earlier run, or closed meanwhile
        try:
            if self.checked(doc):
                result = self.project_for(doc.path).analyse(doc.path, text)
            else:
                result = FileResult(doc.display)
        except ConfigError as exc:
            self.tell(lsp.MessageType.Error, f"gpulint: {exc}")
            result = FileResult(doc.display)
        for line in result.errors:
            self.tell(lsp.MessageType.Error, f"gpulint: {line}")
        doc.result, doc.data, doc.analysed = result, text, version
        self.publish(doc, version)

    def publish(self, doc: Document, version: int | None) -> None:
        places = convert.Places(doc.display, convert.Positions(doc.data, self.encoding()))
        params = lsp.PublishDiagnosticsParams(doc.uri, convert.diagnostics(doc.result.findings, places), version)

        def send() -> None:  # on the protocol's thread, where a close or shutdown may have come first
            if self.documents.get(doc.uri) is doc and not self.silent:
                self.text_document_publish_diagnostics(params)

        assert self.loop is not None
        self.loop.call_soon_threadsafe(send)

    def refresh(self, doc: Document) -> None:
        """The worker's job for a changed buffer: its analysis, the folder's summaries the first
        time, and the other open files whose names now resolve differently."""
        try:
            self.analyse(doc)
            project = self.project_for(doc.path)
            if not project.indexed:
                count = project.index()
                log.info("gpulint: summarised %d files of %s", count, project.root)
                for other in list(self.documents.values()):
                    if self.project_for(other.path) is project:
                        other.analysed = -1
                        self.analyse(other)
                return
            self.analyse_stale(project, but=doc)
        except Exception as exc:  # the server must outlive a bug of the analysis
            log.exception("gpulint: analysis failed")
            self.tell(lsp.MessageType.Error, f"gpulint: internal error: {type(exc).__name__}: {exc}")

    def analyse_stale(self, project: Project, but: Document | None = None) -> None:
        """Analyse again the open files of `project` whose names now resolve to other summaries."""
        open_here = {d.display: d for d in list(self.documents.values())
                     if d is not but and self.project_for(d.path) is project}
        for display in project.stale({name: d.result for name, d in open_here.items()}):
            open_here[display].analysed = -1
            self.analyse(open_here[display])

    def changed_on_disk(self, paths: list[Path]) -> None:
        """The worker's job for files the editor saw change on disk (a checkout, a build, another
        editor) that no buffer holds: their summaries become the disk's, or leave the table when
        deleted, and the open files that use them are analysed again.  An open file's buffer is
        what the editor shows: its disk copy is not read."""
        try:
            open_paths = {Path(os.path.abspath(d.path)) for d in list(self.documents.values())}
            touched: list[Project] = []
            for path in paths:
                if Path(os.path.abspath(path)) in open_paths or path.suffix.lower() in PYTHON_SUFFIXES:
                    continue  # a Python file is judged alone: no other file uses its summary
                project = self.project_for(path)
                if not project.indexed or not project.contains(path):
                    continue  # the index, when it comes, reads the disk
                project.forget(display_path(path))
                if project not in touched:
                    touched.append(project)
            for project in touched:
                self.analyse_stale(project)
        except Exception as exc:  # the server must outlive a bug of the analysis
            log.exception("gpulint: analysis failed")
            self.tell(lsp.MessageType.Error, f"gpulint: internal error: {type(exc).__name__}: {exc}")

    def closed(self, doc: Document) -> None:
        """The worker's job for a closed buffer: its summary goes back to the disk's."""
        project = self.project_for(doc.path)
        if project.indexed and doc.display in project.summaries:
            project.forget(doc.display)

    def encoding(self) -> str:
        try:
            return str(self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16.value)
        except RuntimeError:  # no workspace before initialize
            return lsp.PositionEncodingKind.Utf16.value

    async def schedule(self, job, *args) -> None:
        self.loop = asyncio.get_running_loop()
        await self.loop.run_in_executor(self.worker, job, *args)


server = GpulintServer()


def _document(ls: GpulintServer, uri: str) -> Document:
    doc = ls.documents.get(uri)
    if doc is None:
        doc = ls.documents[uri] = Document(uri, Path(to_fs_path(uri) or uri))
    text = ls.workspace.get_text_document(uri)
    doc.latest = (text.version, text.source.encode("utf-8"))
    return doc


@server.feature(lsp.INITIALIZE)
def initialize(ls: GpulintServer, params: lsp.InitializeParams) -> None:
    uris = [f.uri for f in params.workspace_folders or []] or ([params.root_uri] if params.root_uri else [])
    ls.start([Path(path) for path in map(to_fs_path, uris) if path])


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: GpulintServer, params: lsp.DidOpenTextDocumentParams) -> None:
    await ls.schedule(ls.refresh, _document(ls, params.text_document.uri))


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: GpulintServer, params: lsp.DidChangeTextDocumentParams) -> None:
    await ls.schedule(ls.refresh, _document(ls, params.text_document.uri))


async def _configuration_changed(ls: GpulintServer) -> None:
    """Settings and summaries depend on a configuration file: read again (on the worker, between
    analyses), and every open file analysed again."""
    await ls.schedule(ls.reset)
    for doc in list(ls.documents.values()):
        doc.analysed = -1
        await ls.schedule(ls.refresh, doc)


@server.feature(lsp.INITIALIZED)
async def initialized(ls: GpulintServer, params: lsp.InitializedParams) -> None:
    """Ask the editor to report files of the workspace changed on disk, where it can
    (`didChangeWatchedFiles` registered dynamically): without it, files not open keep the
    summaries they had when the folder was indexed."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    suffixes = sorted({s.lstrip(".") for s in (*CUDA_SUFFIXES, *CXX_SUFFIXES)})
    watchers = [lsp.FileSystemWatcher(glob_pattern="**/*.{" + ",".join(suffixes) + "}"),
                *(lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_FILES)]
    try:
        await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[lsp.Registration(
            id="gpulint-watched-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
    except Exception as exc:  # an editor that refuses: edits of open files still work
        log.warning("gpulint: the editor did not register file watching: %s", exc)


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def did_change_watched_files(ls: GpulintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    paths = [Path(to_fs_path(change.uri) or change.uri) for change in params.changes]
    if any(path.name in CONFIG_FILES for path in paths):
        await _configuration_changed(ls)
    else:
        await ls.schedule(ls.changed_on_disk, paths)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: GpulintServer, params: lsp.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if Path(to_fs_path(uri) or uri).name in CONFIG_FILES:
        await _configuration_changed(ls)
        return
    if uri in ls.documents:
        doc = _document(ls, uri)
        doc.analysed = -1  # as Ruff: a save analyses again (the files it includes may have changed)
        await ls.schedule(ls.refresh, doc)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: GpulintServer, params: lsp.DidCloseTextDocumentParams) -> None:
    doc = ls.documents.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(params.text_document.uri, []))
    if doc is not None:
        await ls.schedule(ls.closed, doc)


def _places(ls: GpulintServer, doc: Document) -> convert.Places:
    return convert.Places(doc.display, convert.Positions(doc.data, ls.encoding()))


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, convert.FIX_ALL]))
def code_action(ls: GpulintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None or doc.analysed != doc.latest[0]:
        return []  # findings of an older text would edit the wrong bytes
    return convert.code_actions(doc.result.findings, doc.uri, _places(ls, doc), params.range,
                                 None if params.context.only is None else [str(k) for k in params.context.only])


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: GpulintServer, params: lsp.HoverParams) -> lsp.Hover | None:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return None
    return convert.hover(doc.result.findings, _places(ls, doc), params.position)


@server.feature(lsp.SHUTDOWN)
def shutdown(ls: GpulintServer, *args) -> None:
    ls.shut_down = ls.silent = True
    ls.worker.shutdown(wait=False, cancel_futures=True)


@server.feature(lsp.EXIT)
def exit_(ls: GpulintServer, *args) -> None:
    """Before pygls closes stdout: diagnostics an analysis queued are not sent to a closed stream."""
    ls.silent = True


def serve() -> None:
    """Serve until the client says exit (or closes stdin), then end the process at once.

    Not through the interpreter's exit: it joins every thread pool's threads, so an analysis
    still running on the worker, or a read of stdin still pending, would keep the process alive
    after `exit`.  The protocol's exit code: 0 after `shutdown`, 1
    without (pygls computes it but its `start_io` swallows the `SystemExit`)."""
    server.start_io()  # an exception (a bug) leaves through the interpreter, with its traceback
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # pygls closed stdout on exit; a client gone
            pass
    os._exit(0 if server.shut_down else 1)
