"""Traces with fields of the wrong type or range (issue 15): a malformed event is skipped with one
warning per kind of problem (`file:line: what is wrong; N such events skipped`), a malformed meta
or a trace with no usable event is `gpulint: error: file:line: ...` and exit 2; never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_in
from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.trace import TraceError
from gpulint.rules import RULES

HEAT = Path(__file__).resolve().parent.parent / "examples" / "trace" / "heat.jsonl"
HOSTILE = [None, True, -1, "1e400", "x", [], {}, [[1]], 2 ** 70, 0.5, "NaN"]


def lines() -> list[dict]:
    return [json.loads(line) for line in HEAT.read_text().splitlines() if line.strip()]


def write(tmp_path: Path, events: list, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    text = []
    for event in events:
        raw = json.dumps(event)
        text.append(raw.replace('"1e400"', "1e400").replace('"NaN"', "NaN"))  # JSON numbers json.dumps won't write
    path.write_text("\n".join(text) + "\n")
    return path


def test_every_field_replaced_by_every_hostile_value_is_skipped_or_refused(tmp_path) -> None:
    base = lines()
    tried = 0
    for index, event in enumerate(base):
        for field in list(event):
            for value in HOSTILE:
                mutated = [dict(e) for e in base]
                mutated[index][field] = value
                path = write(tmp_path, mutated)
                try:
                    analyze(path, Settings(min_bytes=0), sorted(RULES))
                except TraceError:
                    pass  # refused with a message: fine
                tried += 1
    assert tried == sum(len(e) for e in base) * len(HOSTILE)


cli = cli_in


def mutate(line: int, field: str, value) -> list:
    events = lines()
    events[line - 1][field] = value
    return events


@pytest.mark.parametrize("line, field, value, message", [
    (2, "obj", [1], "t.jsonl:2: `obj` of a alloc event should be an integer id, not [1]; 1 such event skipped"),
    (6, "reads", 7, "t.jsonl:6: `reads` of a launch event should be a list of integer ids, not 7; 1 such event skipped"),
    (4, "size", "1e400", "t.jsonl:4: `size` of a memcpy event should be a byte count (an integer from 0 to 2**64), "
                         "not Infinity; 1 such event skipped"),
    (3, "size", -4096, "t.jsonl:3: `size` of a alloc event should be a byte count (an integer from 0 to 2**64), "
                       "not -4096; 1 such event skipped"),
    (7, "granularity", "32", "t.jsonl:7: `granularity` of a bitmap event should be a positive power of two, not "
                             "\"32\"; 1 such event skipped"),
    (2, "site", [["heat.cu", "0xZZ", "main"]], "t.jsonl:2: `site` of a alloc event should be a list of [file, line "
                                                "or 0xoffset, function] frames"),
])
def test_a_malformed_event_is_skipped_with_one_warning(tmp_path, line, field, value, message) -> None:
    write(tmp_path, mutate(line, field, value))
    for command in (["analyze", "t.jsonl"], ["report", "t.jsonl"]):
        result = cli(tmp_path, *command)
        assert result.exit_code in (0, 1), result.output
        assert message in result.stderr and "Traceback" not in result.output


def test_confirm_with_a_malformed_trace(tmp_path) -> None:
    write(tmp_path, mutate(2, "obj", [1]))
    (tmp_path / "a.cu").write_text((Path(__file__).parent / "fixtures/cuda/GL002/pos_loop_after_last_use.cu").read_text())
    result = cli(tmp_path, "check", "--no-cache", "--min-bytes", "0", "--confirm", "t.jsonl", "a.cu")
    assert result.exit_code == 1 and "1 such event skipped" in result.stderr


def test_meta_and_unusable_traces_are_errors(tmp_path) -> None:
    write(tmp_path, mutate(1, "granularity", "32"))
    result = cli(tmp_path, "analyze", "--min-bytes", "0", "t.jsonl")
    assert result.exit_code == 2
    assert "gpulint: error: t.jsonl:1: `granularity` of meta should be a positive power of two" in result.stderr
    events = lines()
    write(tmp_path, [events[0]] + [{**e, "t": "x"} for e in events[1:] if "t" in e])
    result = cli(tmp_path, "analyze", "--min-bytes", "0", "t.jsonl")
    assert result.exit_code == 2 and "no well-formed event" in result.stderr
    (tmp_path / "t.jsonl").write_text(json.dumps(events[0]) + "\n[1, 2]\n")
    result = cli(tmp_path, "analyze", "--min-bytes", "0", "t.jsonl")
    assert result.exit_code == 2 and "t.jsonl:2: not an event" in result.stderr


def test_unknown_events_and_a_cut_last_line_are_accepted(tmp_path) -> None:
    path = write(tmp_path, lines() + [{"ev": "from_the_future", "t": 99}])
    path.write_text(path.read_text() + '{"ev":"free","t":12,"ob')
    result = cli(tmp_path, "analyze", "--min-bytes", "0", "t.jsonl")
    assert result.exit_code == 1
    assert "the last line is cut short" in result.stderr and "Traceback" not in result.output


def test_a_truncated_sidecar_costs_only_the_bitmap_rules(tmp_path) -> None:
    from gpulint.dynamic.trace import TraceWriter
    import numpy as np

    with TraceWriter(tmp_path / "t.jsonl", "test") as trace:
        trace.write({"ev": "alloc", "t": 1, "obj": 1, "size": 4096, "api": "cudaMalloc", "site": [["a.cu", 3, "main"]]})
        trace.write({"ev": "launch", "t": 2, "kernel": "k", "reads": [], "writes": [1], "site": [["a.cu", 4, "main"]]})
        trace.add_bitmap(1, 2, None, np.array([True] * 32 + [False] * 96))
        trace.write({"ev": "free", "t": 3, "obj": 1, "site": [["a.cu", 5, "main"]]})
    sidecar = tmp_path / "t.jsonl.npz"
    assert sidecar.exists()
    complete = cli(tmp_path, "analyze", "--min-bytes", "0", "--format", "json", "t.jsonl")
    assert "GL008" in complete.stdout
    sidecar.write_bytes(sidecar.read_bytes()[: sidecar.stat().st_size // 2])
    result = cli(tmp_path, "analyze", "--min-bytes", "0", "--format", "json", "t.jsonl")
    assert result.exit_code in (0, 1) and "Traceback" not in result.output
    assert "cannot read the bitmap sidecar" in result.stderr and "GL008" not in result.stdout


def test_trace_lines_the_fast_decoder_refuses_are_read_as_the_standard_library_reads_them() -> None:
    import math

    from gpulint.dynamic.trace import decode_line

    assert decode_line(b'{"ev":"launch","t":1}\n') == {"ev": "launch", "t": 1}
    assert math.isnan(decode_line(b'{"v": NaN}')["v"])
    assert decode_line(b'{"addr": 1180591620717411303424}')["addr"] == 1 << 70
