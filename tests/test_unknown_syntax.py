"""Syntax a frontend has no lowering for: an error under the tests (GPULINT_STRICT_SYNTAX=1, set by
conftest), skipped, counted and named by `-v` for users."""
from __future__ import annotations

import pytest

from gpulint.static import cuda_treesitter
from gpulint.static.python import analyse
from gpulint.static.unknown import STRICT_ENV, UnknownSyntax
from test_cli import run

MATCH = b"""import torch

def step(mode, n):
    x = torch.zeros(n, device="cuda")
    match mode:
        case "a":
            y = x * 2
        case _:
            y = x
    return y
"""

THROW = b"""#include <stdexcept>
__global__ void k(float* p) { p[0] = 1; }
void f(int n) {
    float* d;
    cudaMalloc(&d, n * sizeof(float));
    if (n < 0) throw std::runtime_error("n");
    k<<<1, 1>>>(d);
    cudaFree(d);
}
"""


def test_unknown_statements_raise_under_the_tests() -> None:
    with pytest.raises(UnknownSyntax, match="`match_statement` at line 5"):
        analyse("m.py", MATCH)
    with pytest.raises(UnknownSyntax, match="`throw_statement` at line 6"):
        cuda_treesitter.parse("t.cu", THROW)


def test_users_get_a_note_and_the_rest_of_the_file(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(STRICT_ENV)
    (tmp_path / "m.py").write_bytes(MATCH)
    (tmp_path / "t.cu").write_bytes(THROW)
    result = run("check", "-v", "--select", "ALL", "m.py", "t.cu", cwd=tmp_path)
    assert result.exit_code in (0, 1), result.output
    assert "m.py: skipped 1 construct(s) the frontend does not know (match_statement x1)" in result.output
    assert "t.cu: skipped 1 construct(s) the frontend does not know (throw_statement x1)" in result.output
    assert "internal error" not in result.output
