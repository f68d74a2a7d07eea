"""The byte-level markers that decide what a run analyses and in which order: written as literal
searches for speed, they must say what the single regular expressions they replace said."""
from __future__ import annotations

import re
from random import Random

import pytest

from gpulint.discovery import uses_cuda
from gpulint.engine import defines_main

# The patterns as they were written before (one regular expression each): the reference.
_CUDA_REFERENCE = re.compile(rb"<<<|\bcu(?:da)?[A-Z][A-Za-z0-9_]*\s*\(|__global__")
_MAIN_REFERENCE = re.compile(rb"\b(?:int|void)\s+main\s*\(")


@pytest.mark.parametrize("text, expected", [
    (b"cudaMalloc(&p, n);", True), (b"x = cuInit (0);", True), (b"k<<<1, 1>>>(p);", True),
    (b"__global__ void k() {}", True), (b"xcudaMalloc(p);", False), (b"my_cudaFree(p);", False),
    (b"cucudaX(p)", False), (b"cuda(p)", False), (b"a.cudaFree(p)", True), (b"int main() {}", False),
])
def test_uses_cuda(text: bytes, expected: bool) -> None:
    assert uses_cuda(text) is expected


@pytest.mark.parametrize("text, expected", [
    (b"int main(", True), (b"void main (void)", True), (b"int\n  main\t(", True), (b"static int main(", True),
    (b"uint main(", False), (b"int domain(", False), (b"intmain(", False), (b"main(", False), (b"int main", False),
])
def test_defines_main(text: bytes, expected: bool) -> None:
    assert defines_main(text) is expected


def test_markers_agree_with_the_patterns_on_random_text() -> None:
    rng = Random(20261125)
    alphabet = b"int void main ( \n\tcudaMXx_<_gobal"
    for _ in range(20_000):
        text = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert uses_cuda(text) == (_CUDA_REFERENCE.search(text) is not None), text
        assert defines_main(text) == (_MAIN_REFERENCE.search(text) is not None), text


def test_local_includes_only_at_the_start_of_a_line() -> None:
    from gpulint.static.includes import local_includes

    text = b'#include "a.h"\n  #  include "b.cuh"\nx #include "c.h"\n// #include "d.h"\n#include <e.h>\n\t#include"f.h"'
    assert local_includes(text) == [("a.h", 0), ("b.cuh", 15), ("f.h", text.index(b"\t#include"))]


def test_preprocessor_scans_agree_with_anchored_patterns_on_random_text() -> None:
    """`^`/`\\b`-anchored patterns were rewritten to start with a literal (see preprocess.py): the
    gate, the respelling and the defined names must be those of the anchored patterns."""
    from gpulint.static import preprocess as p

    quick = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|define|include)\b|__attribute__|__align__|\btypeid\b"
                       r"|\bnew\s+const\b", re.M)
    respelled = re.compile(r"\btypeid\s*\(\s*[\w:]+\s*\)|\bnew\s+(?:const\s+)?[\w:]+\s*\*[\s*]*\[|\bnew\s+const\b")
    defines = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
    rng = Random(7)
    pieces = ["#", " ", "\t", "\n", "if", "define", "include", "new", "const", "typeid", "(", ")", "T", "*", "[",
              "x", "_", ":", "\u00e9", "ifdef A", "__align__"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert p._needs_preprocessing(text) == (quick.search(text) is not None), text
        assert p._respelled(text) == respelled.sub(p._respell, text), text
        assert p._defined_names(text) == frozenset(defines.findall(text)), text
