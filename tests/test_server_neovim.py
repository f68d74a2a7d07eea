"""`gpulint server` in a real editor: Neovim, headless, with its own LSP client (skipped where
`nvim` or pygls is missing; `.ci/run` installs Debian's neovim).  The script uses the client API
Neovim has had since 0.5 (`vim.lsp.start_client`, `vim.lsp.buf_attach_client`)."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import LATE_FREE

REPOSITORY = Path(__file__).resolve().parents[1]
SCRIPT = """\
local client_id = vim.lsp.start_client({{ name = "gpulint", cmd = {{ {python}, "-m", "gpulint", "server" }},
                                          root_dir = {root} }})
vim.cmd("edit " .. {file})
vim.bo.filetype = "cuda"
vim.lsp.buf_attach_client(0, client_id)
local out = {{ "arrived " .. tostring(vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 100)) }}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, string.format("diagnostic %d %s %s", d.lnum + 1, tostring(d.code), d.message))
end
local d = vim.diagnostic.get(0)[1]
if d then
  local range = {{ start = {{ line = d.lnum, character = d.col }}, ["end"] = {{ line = d.end_lnum, character = d.end_col }} }}
  local actions = vim.lsp.buf_request_sync(0, "textDocument/codeAction", {{ textDocument = {{ uri = vim.uri_from_bufnr(0) }},
    range = range, context = {{ diagnostics = vim.lsp.diagnostic.get_line_diagnostics(0, d.lnum) }} }}, 20000)
  for _, r in pairs(actions or {{}}) do
    for _, action in ipairs(r.result or {{}}) do table.insert(out, "action " .. action.title) end
  end
  local hover = vim.lsp.buf_request_sync(0, "textDocument/hover", {{ textDocument = {{ uri = vim.uri_from_bufnr(0) }},
    position = {{ line = d.lnum, character = d.col }} }}, 20000)
  for _, r in pairs(hover or {{}}) do
    if r.result then table.insert(out, "hover " .. (r.result.contents.value or ""):gsub("\\n", " ")) end
  end
end
vim.fn.writefile(out, {result})
vim.lsp.stop_client(client_id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 100)
vim.cmd("qa!")
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim (nvim) is not installed")
@pytest.mark.skipif(importlib.util.find_spec("pygls") is None, reason="pygls is not installed")
def test_neovim_shows_the_diagnostics_fixes_and_rule_pages(tmp_path: Path) -> None:
    (tmp_path / "gpulint.toml").write_text('select = ["ALL"]\nmin-bytes = 0\n')
    source = tmp_path / "late.cu"
    source.write_text(LATE_FREE)
    result = tmp_path / "result.txt"

    def lua(value: object) -> str:
        return '"' + str(value).replace("\\\\", "\\\\\\\\").replace('"', '\\\\"') + '"'

    (tmp_path / "test.lua").write_text(SCRIPT.format(python=lua(sys.executable), root=lua(tmp_path),
                                                     file=lua(source), result=lua(result)))
    env = {"PYTHONPATH": str(REPOSITORY), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["nvim", "--headless", "-u", "NONE", "-c", f"luafile {tmp_path / 'test.lua'}"], cwd=tmp_path,
                   env=env, timeout=120, capture_output=True)
    lines = result.read_text().splitlines()
    assert lines[0] == "arrived true", lines
    assert any(line.startswith("diagnostic ") and " GL002 " in line and "d_a" in line for line in lines), lines
    actions = [line for line in lines if line.startswith("action ")]
    assert "action gpulint GL002: free `d_a` right after its last access (unsafe fix: review it)" in actions, actions
    assert "action gpulint: ignore[GL002] on this line" in actions, actions
    assert any(line.startswith("hover **GL") for line in lines), lines
