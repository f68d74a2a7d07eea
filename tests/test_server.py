"""`gpulint server` end to end: a client speaking the protocol over stdio to `python -m gpulint
server`, as an editor does (see lsp_client.py)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_client import REPOSITORY, Client
from test_cli import LATE_FREE

needs_pygls = pytest.mark.skipif(importlib.util.find_spec("pygls") is None,
                                 reason="pygls is not installed (pip install 'gpulint[server]')")

CONFIG = 'select = ["ALL"]\nmin-bytes = 0\n'
# LATE_FREE with `d_a` freed right after its last use: no GL002.
FIXED = LATE_FREE.replace("  cudaFree(d_b);\n  cudaFree(d_a);\n", "  cudaFree(d_b);\n").replace(
    "  phase1<<<1, 32>>>(d_a);\n", "  phase1<<<1, 32>>>(d_a);\n  cudaFree(d_a);\n")
OTHER = "__global__ void phase1(float *a) { a[threadIdx.x] = 1.f; }\nvoid run1(float *a) { phase1<<<1, 32>>>(a); }\n"
MAIN = """\
__global__ void phase2(float *b) { b[threadIdx.x] += 1.f; }
void run1(float *a);
int main() {
  float *d_a, *d_b;
  cudaMalloc(&d_a, 1024);
  run1(d_a);
  cudaMalloc(&d_b, 1024);
  phase2<<<1, 32>>>(d_b);
  cudaFree(d_b);
  cudaFree(d_a);
  return 0;
}
"""


def uri(path: Path) -> str:
    return path.absolute().as_uri()


def start(folder: Path, capabilities: dict | None = None) -> Client:
    client = Client(folder)
    result = client.request("initialize", {"processId": None, "rootUri": uri(folder),
                                           "capabilities": capabilities or {},
                                           "workspaceFolders": [{"uri": uri(folder), "name": "w"}]})
    client.notify("initialized", {})
    capabilities = result["capabilities"]
    assert capabilities["hoverProvider"] and capabilities["codeActionProvider"]
    assert result["serverInfo"]["name"] == "gpulint"
    return client


def stop(client: Client) -> None:
    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    try:
        code = client.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server did not end after exit:\n{client.hung()}")
    assert code == 0, client.stderr()


def open_file(client: Client, path: Path, text: str, language: str = "cuda") -> None:
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri(path), "languageId": language, "version": 1,
                                                            "text": text}})


def change(client: Client, path: Path, text: str, version: int) -> None:
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri(path), "version": version},
                                             "contentChanges": [{"text": text}]})


def diagnostics(client: Client, path: Path, version: int | None = None, where=lambda d: True) -> list[dict]:
    def wanted(params: dict) -> bool:
        return params["uri"] == uri(path) and (version is None or params.get("version") == version) \
            and where(params["diagnostics"])
    return client.wait_for("textDocument/publishDiagnostics", wanted)["diagnostics"]


def codes(found: list[dict]) -> list[str]:
    return sorted(d["code"] for d in found)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "gpulint.toml").write_text(CONFIG)
    (tmp_path / "late.cu").write_text(LATE_FREE)
    return tmp_path


@needs_pygls
def test_diagnostics_follow_the_buffer_and_are_cleared_on_close(workspace: Path) -> None:
    client = start(workspace)
    try:
        late = workspace / "late.cu"
        open_file(client, late, LATE_FREE)
        found = diagnostics(client, late, 1, where=lambda ds: "GL002" in codes(ds))
        gl002 = next(d for d in found if d["code"] == "GL002")
        # Row 5 column 3 to 25 (1-based) in gpulint's terms: `cudaMalloc(&d_a, 1024);`.
        assert gl002["range"] == {"start": {"line": 4, "character": 2}, "end": {"line": 4, "character": 24}}
        assert gl002["source"] == "gpulint" and gl002["severity"] == 2
        assert gl002["codeDescription"]["href"].endswith("/GL002")
        related = {(r["location"]["range"]["start"]["line"], r["message"]) for r in gl002["relatedInformation"]}
        assert related == {(5, "last use of `d_a`: `phase1<<<>>>`"), (9, "`d_a` is freed here"),
                           (7, "`phase2<<<>>>` runs while `d_a` waits")}
        assert all(r["location"]["uri"] == uri(late) for r in gl002["relatedInformation"])
        # An unsaved edit that frees `d_a` after its last use: GL002 goes.
        change(client, late, FIXED, 2)
        assert diagnostics(client, late, 2) == []
        assert late.read_text() == LATE_FREE  # the disk was never the source
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri(late)}})
        assert diagnostics(client, late, where=lambda ds: not ds) == []
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_code_actions_offer_the_fix_with_its_applicability_and_an_ignore_comment(workspace: Path) -> None:
    late = workspace / "late.cu"
    # An unused suppression (GL901) has a safe fix: removing the comment.
    text = LATE_FREE.replace("  return 0;\n", "  return 0;  // gpulint: ignore[GL001]\n")
    late.write_text(text)
    client = start(workspace)
    try:
        open_file(client, late, text)
        found = diagnostics(client, late, 1, where=lambda ds: {"GL002", "GL901"} <= set(codes(ds)))
        gl002 = next(d for d in found if d["code"] == "GL002")
        actions = client.request("textDocument/codeAction", {"textDocument": {"uri": uri(late)},
                                                             "range": gl002["range"],
                                                             "context": {"diagnostics": [gl002]}})
        fix = next(a for a in actions if a["title"].startswith("gpulint GL002"))
        # GL002's fix is unsafe: offered under a name that says so, never preferred.
        assert "unsafe" in fix["title"] and not fix.get("isPreferred") and fix["kind"] == "quickfix"
        edits = fix["edit"]["changes"][uri(late)]
        assert {(e["range"]["start"]["line"], e["newText"]) for e in edits} == {(6, "  cudaFree(d_a);\n"), (9, "")}
        ignore = next(a for a in actions if a["title"] == "gpulint: ignore[GL002] on this line")
        [edit] = ignore["edit"]["changes"][uri(late)]
        assert edit["range"]["start"] == {"line": 4, "character": 25} and edit["newText"] == "  // gpulint: ignore[GL002]"
        # Only the requested range's findings: GL901's action is not among these.
        assert not any("GL901" in a["title"] for a in actions if a["kind"] == "quickfix")
        gl901 = next(d for d in found if d["code"] == "GL901")
        actions = client.request("textDocument/codeAction", {"textDocument": {"uri": uri(late)},
                                                             "range": gl901["range"],
                                                             "context": {"diagnostics": [gl901]}})
        safe = next(a for a in actions if a["title"].startswith("gpulint GL901"))
        assert safe["isPreferred"] and "unsafe" not in safe["title"]
        fix_all = next(a for a in actions if a["kind"] == "source.fixAll.gpulint")
        # Every safe fix, none of the unsafe ones: only the comment goes.
        [edit] = fix_all["edit"]["changes"][uri(late)]
        assert edit["range"]["start"]["line"] == 10 and edit["newText"] == ""
        only = client.request("textDocument/codeAction", {"textDocument": {"uri": uri(late)}, "range": gl901["range"],
                                                          "context": {"diagnostics": [], "only": ["source.fixAll"]}})
        assert [a["kind"] for a in only] == ["source.fixAll.gpulint"]
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_hover_shows_the_rule_page(workspace: Path) -> None:
    from gpulint.rules import RULES

    client = start(workspace)
    try:
        late = workspace / "late.cu"
        open_file(client, late, LATE_FREE)
        diagnostics(client, late, 1, where=lambda ds: "GL002" in codes(ds))
        shown = client.request("textDocument/hover", {"textDocument": {"uri": uri(late)},
                                                      "position": {"line": 4, "character": 5}})
        assert shown["contents"]["kind"] == "markdown"
        assert RULES["GL002"].manual in shown["contents"]["value"]
        assert "freed at line 10" in shown["contents"]["value"]
        nothing = client.request("textDocument/hover", {"textDocument": {"uri": uri(late)},
                                                        "position": {"line": 0, "character": 0}})
        assert nothing is None
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_python_files_and_files_that_do_not_parse(workspace: Path) -> None:
    client = start(workspace)
    try:
        train = workspace / "train.py"
        open_file(client, train, 'import torch\nx = torch.empty(10, device="cuda")\n', "python")
        found = diagnostics(client, train, 1, where=lambda ds: bool(ds))
        assert [(d["code"], d["range"]["start"]["line"]) for d in found] == [("GL004", 1)]
        broken = workspace / "broken.cu"
        open_file(client, broken, "int main( {\n  float *p;\n  cudaMalloc(&p, 64\n")
        for d in diagnostics(client, broken, 1):  # no crash; whatever it says is about this file
            assert d["source"] == "gpulint"
        bad_python = workspace / "bad.py"
        open_file(client, bad_python, "import torch\ndef f(:\n", "python")
        diagnostics(client, bad_python, 1)
        # The server still answers.
        assert client.request("textDocument/hover", {"textDocument": {"uri": uri(train)},
                                                     "position": {"line": 1, "character": 0}}) is not None
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_the_project_view_is_used_and_follows_edits_of_other_open_files(workspace: Path) -> None:
    main, other = workspace / "main.cu", workspace / "other.cu"
    main.write_text(MAIN)
    other.write_text(OTHER)
    client = start(workspace)
    try:
        open_file(client, main, MAIN)
        # `run1` launches `phase1` on `d_a` in other.cu: only the whole program shows GL003
        # (as `gpulint check .`; `gpulint check main.cu` alone does not).
        assert codes(diagnostics(client, main, 1, where=lambda ds: "GL003" in codes(ds))) == ["GL002", "GL003"]
        open_file(client, other, OTHER)
        diagnostics(client, other, 1)
        # An unsaved edit of other.cu: `run1` no longer uses its pointer; main.cu is analysed again.
        client.notifications.clear()  # main.cu's first diagnostics, from its analysis alone
        change(client, other, OTHER.replace("{ phase1<<<1, 32>>>(a); }", "{ }"), 2)
        assert codes(diagnostics(client, main, where=lambda ds: codes(ds) != ["GL002", "GL003"])) == ["GL004"]
        # Closed unsaved: other.cu's summary is the disk's again.
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri(other)}})
        change(client, main, MAIN + "\n", 2)
        assert codes(diagnostics(client, main, 2)) == ["GL002", "GL003"]
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_files_changed_on_disk_that_no_buffer_holds(workspace: Path) -> None:
    """An editor that watches files for the server (VS Code, Neovim 0.10+) reports a checkout's or a
    build's changes: the summaries become the disk's, and open files that use them are analysed
    again; an editor that cannot watch is not asked to."""
    main, other = workspace / "main.cu", workspace / "other.cu"
    main.write_text(MAIN)
    other.write_text(OTHER)

    plain = start(workspace)
    try:
        plain.request("textDocument/hover", {"textDocument": {"uri": uri(main)}, "position": {"line": 0,
                                                                                            "character": 0}})
        assert not any(r["method"] == "client/registerCapability" for r in plain.requests)
        stop(plain)
    finally:
        plain.close()

    client = start(workspace, {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}})
    try:
        open_file(client, main, MAIN)
        assert codes(diagnostics(client, main, 1, where=lambda ds: "GL003" in codes(ds))) == ["GL002", "GL003"]
        registration = next(r for r in client.requests if r["method"] == "client/registerCapability")
        [registered] = registration["params"]["registrations"]
        assert registered["method"] == "workspace/didChangeWatchedFiles"
        globs = [w["globPattern"] for w in registered["registerOptions"]["watchers"]]
        assert "**/gpulint.toml" in globs and any(".cu" in g or "cu," in g for g in globs)

        # other.cu changes on disk (not open): `run1` no longer uses its pointer.
        client.notifications.clear()
        other.write_text(OTHER.replace("{ phase1<<<1, 32>>>(a); }", "{ }"))
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri(other), "type": 2}]})
        assert codes(diagnostics(client, main, where=lambda ds: codes(ds) != ["GL002", "GL003"])) == ["GL004"]

        # Deleted: main.cu is judged as `gpulint check` judges the folder without it.
        client.notifications.clear()
        other.unlink()
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri(other), "type": 3}]})
        alone = subprocess.run([sys.executable, "-m", "gpulint", "check", "--format", "json", "--exit-zero", "."],
                               cwd=workspace, capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPOSITORY)})
        expected = sorted(f["code"] for f in json.loads(alone.stdout) if f["filename"] == "main.cu")
        assert expected != ["GL004"]
        assert codes(diagnostics(client, main, where=lambda ds: codes(ds) != ["GL004"])) == expected

        # A configuration file changed on disk applies to the open files.
        client.notifications.clear()
        (workspace / "gpulint.toml").write_text('select = ["GL005"]\nmin-bytes = 0\n')
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri(workspace / "gpulint.toml"),
                                                                       "type": 2}]})
        assert diagnostics(client, main, where=lambda ds: ds == []) == []
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_configuration_of_the_files_folder(workspace: Path) -> None:
    (workspace / "legacy").mkdir()
    (workspace / "legacy" / "gpulint.toml").write_text('select = ["GL005"]\nmin-bytes = 0\n')
    client = start(workspace)
    try:
        legacy = workspace / "legacy" / "late.cu"
        open_file(client, legacy, LATE_FREE)
        assert diagnostics(client, legacy, 1) == []  # GL002 is not selected there
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_a_saved_configuration_applies_to_the_open_files(workspace: Path) -> None:
    config = workspace / "gpulint.toml"
    config.write_text('select = ["GL005"]\nmin-bytes = 0\n')
    client = start(workspace)
    try:
        late = workspace / "late.cu"
        open_file(client, late, LATE_FREE)
        assert diagnostics(client, late, 1) == []
        config.write_text(CONFIG)
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri(config)}})
        assert "GL002" in codes(diagnostics(client, late, 1, where=lambda ds: bool(ds)))
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_changes_in_quick_succession_end_with_the_last_texts_diagnostics(workspace: Path) -> None:
    client = start(workspace)
    try:
        late = workspace / "late.cu"
        open_file(client, late, LATE_FREE)
        for version in range(2, 12):
            change(client, late, FIXED if version % 2 else LATE_FREE, version)
        # Version 11 is the fixed text; the versions before it may be coalesced into fewer analyses.
        assert diagnostics(client, late, 11) == []
        assert client.request("textDocument/codeAction", {"textDocument": {"uri": uri(late)},
                                                          "range": {"start": {"line": 4, "character": 0},
                                                                    "end": {"line": 4, "character": 0}},
                                                          "context": {"diagnostics": []}}) == []
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_files_the_configuration_includes_and_excludes(workspace: Path) -> None:
    (workspace / "gpulint.toml").write_text(CONFIG + 'extend-include = ["*.cu.inc"]\nexclude = ["vendor"]\n')
    client = start(workspace)
    try:
        included, other = workspace / "late.cu.inc", workspace / "notes.txt"
        (workspace / "vendor").mkdir()
        excluded = workspace / "vendor" / "late.cu"
        for path in (included, other, excluded):
            open_file(client, path, LATE_FREE)
        assert "GL002" in codes(diagnostics(client, included, 1))
        assert diagnostics(client, other, 1) == []
        assert diagnostics(client, excluded, 1) == []
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_positions_count_the_agreed_code_units() -> None:
    from lsprotocol import types as lsp

    from gpulint.findings import Location
    from gpulint.server.convert import Positions

    data = "int x; // \U0001F600 é\r\n  cudaFree(p);\n".encode()
    # Row 1, character 13 (1-based) is `é`: after the emoji, one character but two UTF-16 units.
    assert Positions(data).at(1, 13) == lsp.Position(0, 13)
    assert Positions(data, "utf-8").at(1, 13) == lsp.Position(0, 15)
    assert Positions(data, "utf-32").at(1, 13) == lsp.Position(0, 12)
    offset = data.index(b"cudaFree")
    assert Positions(data).at_offset(offset) == lsp.Position(1, 2)
    assert Positions(data).offset_of(lsp.Position(1, 2)) == offset
    assert Positions(data).range_of(Location("a.cu", 2, 3)) == lsp.Range(lsp.Position(1, 2), lsp.Position(1, 14))


def test_without_pygls_the_server_says_what_to_install(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['pygls'] = None; sys.argv = ['gpulint', 'server']\n"
            "from gpulint.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("gpulint: error: the language server needs pygls, which is not installed: "
                                   "pip install 'gpulint[server]'")


def test_importing_gpulint_does_not_import_pygls() -> None:
    code = ("import sys, gpulint, gpulint.cli, gpulint.server, gpulint.server.project\n"
            "assert not {'pygls', 'lsprotocol'} & set(sys.modules), sorted(sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# A server whose analyses never end: the worker thread is busy for as long as the process lives.
STUCK_SERVER = """\
import threading
from gpulint.server import wiring
started = threading.Event()
def analyse(self, doc):
    started.set()
    threading.Event().wait()
wiring.GpulintServer.analyse = analyse
wiring.serve()
"""


@needs_pygls
def test_exit_ends_the_process_while_an_analysis_runs(workspace: Path) -> None:
    """`exit` ends the server at once: the interpreter's own exit would join the worker thread
    and wait for the analysis (here forever; an editor kills the server after a while)."""
    client = Client(workspace, python=["-c", STUCK_SERVER])
    try:
        client.request("initialize", {"processId": None, "rootUri": uri(workspace), "capabilities": {}})
        client.notify("initialized", {})
        open_file(client, workspace / "late.cu", LATE_FREE)
        stop(client)
    finally:
        client.close()


@needs_pygls
def test_exit_without_shutdown_ends_with_1(workspace: Path) -> None:
    """The protocol's exit code: 1 when `exit` comes without `shutdown` first (the editor
    lost track of the server); stdin closed without either is the same."""
    for ending in ("exit", "eof"):
        client = start(workspace)
        try:
            if ending == "exit":
                client.notify("exit", None)
            else:
                assert client.proc.stdin is not None
                client.proc.stdin.close()
            assert client.proc.wait(timeout=30) == 1, (ending, client.stderr())
        finally:
            client.close()


# A server that queues diagnostics for every open file as `exit` arrives, as an analysis ending
# at that moment does: they would be sent after pygls has closed stdout.
LATE_PUBLISH_SERVER = """\
from lsprotocol import types as lsp
from gpulint.server import wiring
features = wiring.server.protocol.fm.features
ours = features.get(lsp.EXIT)
def exit_(*args):
    ls = wiring.server
    for doc in ls.documents.values():
        ls.publish(doc, doc.analysed)
    if ours is not None:
        ours(*args)
features[lsp.EXIT] = exit_
wiring.serve()
"""


@needs_pygls
def test_diagnostics_queued_as_exit_arrives_are_not_sent(workspace: Path) -> None:
    """Nothing is sent after `shutdown`: a publication to pygls's closed stdout failed, pygls
    reported that failure by sending a message, which failed too, each time logging a longer
    traceback, until stderr (64 KiB of pipe) was full and the server hung (CI, 2026-11-29)."""
    client = Client(workspace, python=["-c", LATE_PUBLISH_SERVER])
    try:
        client.request("initialize", {"processId": None, "rootUri": uri(workspace), "capabilities": {}})
        client.notify("initialized", {})
        late = workspace / "late.cu"
        open_file(client, late, LATE_FREE)
        assert "GL002" in codes(diagnostics(client, late, 1))
        stop(client)
        assert "Error sending data" not in client.stderr() and "Traceback" not in client.stderr(), client.stderr()
    finally:
        client.close()
