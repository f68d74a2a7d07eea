"""The bundled example shows what the README says it shows."""
from __future__ import annotations

from collections import Counter

from conftest import ROOT, run_file


def test_example_findings() -> None:
    result = run_file(ROOT / "examples" / "heat_pipeline.cu")
    assert not result.diagnostics
    found = Counter((f.code, f.location.row) for f in result.findings)
    assert found == Counter({
        ("GL008", 45): 1, ("GL008", 46): 1,  # MAX_CELLS-sized, used with `bytes` (from n) everywhere
        ("GL001", 46): 1, ("GL001", 48): 1, ("GL001", 49): 1,
        ("GL002", 47): 1, ("GL002", 48): 1,
        ("GL003", 49): 1, ("GL003", 61): 1,
        ("GL005", 49): 1,  # d_max is never freed
        ("GL007", 51): 1,  # memset overwritten by the upload
        ("GL101", 61): 1,  # scratch buffer allocated every step
        ("GL103", 59): 1,  # the same coefficient uploaded every step
    })
