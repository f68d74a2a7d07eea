"""A run's findings, one per site and rule: objects made at the same place (a training loop's
activations) are one finding with the object count, the bytes, and the saving of fixing the
site; `min-bytes` hides small sites and the summary says how many; zero-byte objects make none."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulint.config import ConfigError, Settings, parse_bytes
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.trace import write_events
from gpulint.rules import RULES
from test_cli import run

CODES = sorted(RULES)
MiB = 1 << 20


def loop_trace(tmp_path: Path, steps: int = 200) -> Path:
    """Each step allocates a 4 MiB activation at line 10 that one launch uses, then a 4 MiB output
    at line 15 that the next launch uses; both are freed three launches later (late frees).  Then
    a 1 KiB scratch at line 20 (never used: unused) and a zero-byte tensor at line 30."""
    events, obj = [], 0
    step_site = [["train.py", 11, "step"]]

    def add(ev: dict) -> None:
        events.append({"t": len(events) + 1, "stream": 0, **ev})

    for _ in range(steps):
        act, out, scratch, empty = obj + 1, obj + 2, obj + 3, obj + 4
        obj += 4
        for o, size, line in ((act, 4 * MiB, 10), (out, 4 * MiB, 15)):
            add({"ev": "alloc", "obj": o, "size": size, "api": "cudaMalloc", "site": [["train.py", line, "step"]]})
            add({"ev": "launch", "kernel": "conv", "reads": [o], "writes": [o], "site": step_site})
        for _ in range(3):
            add({"ev": "launch", "kernel": "other", "reads": [], "writes": [], "site": step_site})
        for o in (act, out):
            add({"ev": "free", "obj": o, "site": [["train.py", 40, "step"]]})
        for o, size, line in ((scratch, 1024, 20), (empty, 0, 30)):
            add({"ev": "alloc", "obj": o, "size": size, "api": "cudaMalloc", "site": [["train.py", line, "step"]]})
        for o in (scratch, empty):
            add({"ev": "free", "obj": o, "site": [["train.py", 41, "step"]]})
    return write_events(tmp_path / "loop.jsonl", events)


def test_one_finding_per_site_and_rule(tmp_path: Path) -> None:
    result = analyze(loop_trace(tmp_path), Settings(min_bytes=0), CODES)
    keys = [(f.code, f.location.path, f.location.row) for f in result.findings]
    assert len(keys) == len(set(keys))
    assert not [f for f in result.findings if f.location.row == 30]  # zero-byte objects: no finding
    late = next(f for f in result.findings if f.code == "GL002" and f.location.row == 10)
    assert late.properties["objects"] == 200
    assert late.properties["total_bytes"] == 200 * 4 * MiB and late.properties["largest_bytes"] == 4 * MiB
    assert "200 objects from this site" in late.message
    # Fixing the site frees each activation after its launch: the peak (activation and output,
    # 8 MiB) drops by one activation, not by 200 of them; fixing the output's site alone saves
    # nothing (the activation is still live beside it).
    assert late.properties["peak_saved_bytes"] == 4 * MiB
    assert next(f for f in result.findings if f.code == "GL002" and f.location.row == 15).properties[
        "peak_saved_bytes"] == 0
    # Allocated and freed again every step: the driver-level churn a run alone shows (GL101).
    assert {f.code for f in result.findings if f.location.row == 20} == {"GL004", "GL101"}
    assert next(f for f in result.findings if f.code == "GL101" and f.location.row == 10).properties[
        "allocations"] == 200


def test_ranked_by_saving(tmp_path: Path) -> None:
    found = analyze(loop_trace(tmp_path), Settings(min_bytes=0), CODES).findings
    savings = [f.properties.get("peak_saved_bytes", 0) for f in found]
    assert savings == sorted(savings, reverse=True)


def test_min_bytes_hides_small_sites_and_says_so(tmp_path: Path) -> None:
    result = analyze(loop_trace(tmp_path), Settings(), CODES)  # 1 MiB default
    assert {f.location.row for f in result.findings} == {10, 15}
    # The scratch site holds 200 KiB in all and its fix saves less than 1 MiB: hidden.
    assert sorted((f.code, f.location.row) for f in result.hidden) == [("GL004", 20), ("GL101", 20)]
    assert {f.location.row for f in analyze(loop_trace(tmp_path), Settings(min_bytes=100 * 1024), CODES).findings} \
        == {10, 15, 20}
    text = run("analyze", str(loop_trace(tmp_path)), cwd=tmp_path).stdout
    assert "2 more sites below --min-bytes 1.0 MiB hidden (--min-bytes 0 shows them)." in text
    everything = run("analyze", "--min-bytes", "0", "--format", "json", str(loop_trace(tmp_path)), cwd=tmp_path)
    assert {f["location"]["row"] for f in json.loads(everything.stdout)} == {10, 15, 20}


def test_min_bytes_from_config_and_cli(tmp_path: Path) -> None:
    trace = loop_trace(tmp_path)
    (tmp_path / "gpulint.toml").write_text('min-bytes = "100 KiB"\n')
    data = json.loads(run("analyze", "--format", "json", str(trace), cwd=tmp_path).stdout)
    assert {f["location"]["row"] for f in data} == {10, 15, 20}
    (tmp_path / "gpulint.toml").write_text('min-bytes = "lots"\n')
    bad = run("analyze", str(trace), cwd=tmp_path)
    assert bad.exit_code == 2 and "min-bytes" in bad.stderr
    (tmp_path / "gpulint.toml").unlink()
    bad = run("analyze", "--min-bytes", "-3", str(trace), cwd=tmp_path)
    assert bad.exit_code == 2 and "--min-bytes" in bad.stderr


@pytest.mark.parametrize("text, value", [(0, 0), (1048576, MiB), ("64KiB", 65536), ("1 MiB", MiB), ("2MB", 2_000_000),
                                         ("1.5 GiB", 3 << 29), ("512", 512)])
def test_parse_bytes(text, value) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["", "MiB", "-1", "1 parsec", True, -5, "nan"])
def test_parse_bytes_rejects(text) -> None:
    with pytest.raises(ValueError):
        parse_bytes(text)


def test_config_error_type_is_importable() -> None:
    assert issubclass(ConfigError, Exception)
