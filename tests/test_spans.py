"""Spans of the tree-sitter frontend keep byte offsets and compute rows and columns when asked
(`syntax.OffsetSpan`): they must say what tree-sitter's points say, and travel as plain spans."""
from __future__ import annotations

import pickle

from gpulint.static import cuda_treesitter
from gpulint.static import syntax as s

SOURCE = b"""\
#define N 1024
__global__ void scale(float *x, int n) {
  int i = blockIdx.x * blockDim.x
          + threadIdx.x;
  if (i < n) { x[i] *= 2.0f; }
}

int main() {
  float *d;  // \xc3\xa9t\xc3\xa9
  cudaMalloc(&d,
             N * sizeof(float));
  scale<<<4, 256>>>(d, N);
  cudaFree(d);
  return 0;
}
"""


def _point(source: bytes, offset: int) -> tuple[int, int]:
    """Row and byte column (1-based) of an offset, counted the slow, obvious way."""
    return source.count(b"\n", 0, offset) + 1, offset - (source.rfind(b"\n", 0, offset) + 1) + 1


def _spans(tu: s.TranslationUnit) -> list[s.Span]:
    found = []
    for function in tu.functions:
        found.append(function.span)
        found.extend(node.span for node in s.walk(function.body))  # type: ignore[attr-defined]
    return found


def test_rows_and_columns_are_those_of_the_offsets() -> None:
    tu = cuda_treesitter.parse("t.cu", SOURCE)
    spans = _spans(tu)
    assert len(spans) > 40 and all(isinstance(span, s.OffsetSpan) for span in spans)
    multi_line = 0
    for span in spans:
        expected = _point(SOURCE, span.start) + _point(SOURCE, span.end)
        assert span.points() == expected
        assert (span.row, span.column, span.end_row, span.end_column) == expected
        multi_line += span.end_row > span.row
    assert multi_line >= 5


def test_an_offset_span_travels_as_a_plain_span() -> None:
    span = cuda_treesitter.parse("t.cu", SOURCE).functions[1].span
    assert isinstance(span, s.OffsetSpan)
    plain = pickle.loads(pickle.dumps(span))
    assert type(plain) is s.Span and plain == span.plain()
    assert (plain.start, plain.end, plain.row, plain.end_row) == (span.start, span.end, 8, 15)
    assert repr(span) == repr(plain)


def test_lines_split_at_newlines_only() -> None:
    lines = s.Lines(b"a\r\nbc\n\nd")
    assert [lines.point(o) for o in (0, 2, 3, 5, 6, 7, 8)] == [(1, 1), (1, 3), (2, 1), (2, 3), (3, 1), (4, 1), (4, 2)]
