"""The binary trace variant: the same events as JSON Lines, read into the same columns and
analysed to the same findings; its damage handled as a JSON Lines trace's is."""
from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.trace import TraceError, TraceWriter, open_trace
from gpulint.dynamic.tracebin import HEADER, MAGIC, ROW, ROWS, BinaryTraceWriter, convert, is_binary
from gpulint.dynamic.tracebin import read as read_columns
from gpulint.findings import finding_to_dict
from gpulint.rules import RULES
from test_cli import run

CODES = sorted(RULES)


def site(line: int, path: str = "app.cu") -> list:
    return [[path, line, "main"], ["/usr/lib/libc.so", 1, "__libc_start_main"]]


def varied_events(seed: int = 1, n: int = 400) -> list[dict]:
    """Every kind of event and field the format has, some in the shapes rows cannot hold (a null
    stream, an unknown field, an unknown event), over a few streams and objects."""
    rng = random.Random(seed)
    events: list[dict] = [{"ev": "device", "t": 0, "device": "Test GPU", "compute_capability": "9.0"}]
    live: list[int] = []
    t = 0
    for obj in range(8):
        t += 1
        events.append({"ev": "alloc", "t": t, "obj": obj, "size": 4096 << obj, "api": "cudaMalloc", "stream": 0,
                       "site": site(10 + obj), "name": f"d_{obj}"})
        live.append(obj)
    for _ in range(n):
        t += 1
        r = rng.random()
        stream = rng.choice([0, 1, 2, "cuda:0/7"])
        objs = rng.sample(live, 3)
        if r < 0.4:
            events.append({"ev": "launch", "t": t, "kernel": f"kernel_{rng.randint(0, 3)}(float*)", "stream": stream,
                           "reads": objs[:2], "writes": objs[1:], "site": site(rng.randint(20, 40))})
        elif r < 0.45:
            events.append({"ev": "graph_launch", "t": t, "kernel": "cudaGraphLaunch", "stream": stream, "reads": [],
                           "writes": objs[:1], "site": site(41), "args_only": True})
        elif r < 0.55:
            events.append({"ev": "memcpy", "t": t, "dst": objs[0], "src": None, "size": 1024, "kind": "h2d",
                           "stream": stream, "site": site(50), "digest": f"{rng.randint(0, 3):016x}",
                           "dst_offset": 512})
        elif r < 0.6:
            events.append({"ev": "memcpy", "t": t, "dst": objs[0], "src": objs[1], "size": 2048, "kind": "d2d",
                           "stream": stream, "site": site(51), "src_offset": 128, "api": "cudaMemcpyAsync"})
        elif r < 0.65:
            events.append({"ev": "memcpy", "t": t, "dst": None, "src": objs[0], "size": 64, "kind": "d2h",
                           "stream": None, "site": site(52)})  # a null stream: JSON, not a row
        elif r < 0.7:
            events.append({"ev": "memset", "t": t, "obj": objs[0], "size": 256, "offset": 64, "stream": stream,
                           "site": site(60)})
        elif r < 0.75:
            events.append({"ev": "sync", "t": t, "scope": rng.choice(["device", "stream"]), "stream": stream})
        elif r < 0.8:
            events.append({"ev": "sync", "t": t, "scope": "event", "event": rng.randint(0, 2)})
        elif r < 0.85:
            events.append({"ev": "event_record", "t": t, "event": rng.randint(0, 2), "stream": stream})
        elif r < 0.9:
            events.append({"ev": "event_wait", "t": t, "event": rng.randint(0, 2), "stream": stream})
        elif r < 0.92:
            events.append({"ev": "launch", "t": t, "kernel": "tagged", "stream": stream, "reads": objs,
                           "writes": [], "site": site(70), "tag": "an unknown field"})
        elif r < 0.93:
            events.append({"ev": "future_event", "t": t, "payload": [1, 2]})
        elif r < 0.95:
            events.append({"ev": "pool", "t": t, "pool": "torch", "reserved": 1 << 20, "allocated": 4096})
        elif r < 0.96:
            events.append({"ev": "note", "text": "a note from the collector"})
        elif len(live) > 4:
            victim = live.pop(rng.randrange(len(live)))
            events.append({"ev": "free", "t": t, "obj": victim, "stream": 0, "site": site(80)})
    events.append({"ev": "end", "t": t + 1})
    for i, event in enumerate(events):  # host times on most events, not all (rows with and without)
        if "t" in event and i % 9 != 4:
            event["ns"] = 10**12 + 1000 * event["t"] + i
    return events


def last_row_record(data: bytes) -> tuple[int, int]:
    """Where the last row record's header and payload begin, walking the records from the magic."""
    pos, found = len(MAGIC), None
    while pos < len(data):
        length, tag = HEADER.unpack_from(data, pos)
        if tag == ROWS[0]:
            found = (pos, pos + HEADER.size)
        pos += HEADER.size + length
    assert found is not None
    return found


def write_both(tmp_path: Path, events: list[dict]) -> tuple[Path, Path]:
    text, binary = tmp_path / "run.jsonl", tmp_path / "run.gltrace"
    meta = {"collector": "native", "argv": ["./app"], "device": None, "granularity": 32}
    with TraceWriter(text, **meta) as out_text, BinaryTraceWriter(binary, **meta) as out_binary:
        for event in events:
            out_text.write(event)
            out_binary.write(event)
        bits = np.zeros(128, dtype=bool)
        bits[:40] = True
        for out in (out_text, out_binary):
            out.write({"ev": "launch", "t": 10_000, "kernel": "init", "stream": 1, "reads": [], "writes": [0],
                       "site": site(90)})
            out.add_bitmap(0, 10_000, None, bits)
    return text, binary


def resolved(columns) -> list[tuple]:
    """Each row with its interned indices replaced by what they name: equal for two readers that
    saw the same events, whatever order they interned values in."""
    def name(table, index):
        return None if index < 0 else table[index]

    rows = []
    for i in range(len(columns)):
        lo, hi = columns.access_start[i], columns.access_start[i + 1]
        rows.append((
            int(columns.kind[i]), int(columns.t[i]), int(columns.ns[i]), name(columns.objects, columns.obj[i]),
            name(columns.objects, columns.dst[i]), name(columns.objects, columns.src[i]),
            int(columns.size[i]), bool(columns.has_size[i]), int(columns.offset[i]), int(columns.src_offset[i]),
            columns.streams[columns.stream[i]], name(columns.strings, columns.api[i]),
            name(columns.strings, columns.raw_api[i]), name(columns.strings, columns.kernel[i]),
            json.dumps(name(columns.sites, columns.site[i])), name(columns.strings, columns.direction[i]),
            name(columns.strings, columns.digest[i]),
            [(columns.objects[o], bool(w)) for o, w in zip(columns.access_obj[lo:hi], columns.access_write[lo:hi])],
            columns.extra.get(i)))
    return rows


def test_binary_and_json_lines_give_the_same_columns(tmp_path: Path) -> None:
    text, binary = write_both(tmp_path, varied_events())
    assert is_binary(binary) and not is_binary(text)
    assert binary.stat().st_size < text.stat().st_size
    trace_text, columns_text = read_columns(text)
    trace_binary, columns_binary = read_columns(binary)
    assert resolved(columns_binary) == resolved(columns_text)
    assert trace_binary.meta == trace_text.meta
    assert trace_binary.warnings == trace_text.warnings
    assert "a note from the collector" in trace_text.warnings
    assert trace_binary.bitmap("o0_t10000", "w").sum() == 40


def test_binary_and_json_lines_give_the_same_analysis(tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        folder = tmp_path / str(seed)
        folder.mkdir()
        text, binary = write_both(folder, varied_events(seed))
        a, b = (analyze(p, Settings(min_bytes=0), CODES) for p in (text, binary))
        assert [finding_to_dict(f) for f in b.findings] == [finding_to_dict(f) for f in a.findings]
        assert a.findings, "the events should make findings"
        assert (b.peaks.actual, b.peaks.all_fixed, b.peaks.lower_bound) == \
            (a.peaks.actual, a.peaks.all_fixed, a.peaks.lower_bound)
        assert b.warnings == a.warnings


def test_analyze_command_reads_a_binary_trace(tmp_path: Path) -> None:
    text, binary = write_both(tmp_path, varied_events())
    outputs = [run("analyze", str(p), "--format", "json", "--min-bytes", "0", cwd=tmp_path) for p in (text, binary)]
    assert outputs[0].exit_code == outputs[1].exit_code == 1
    assert json.loads(outputs[0].stdout) == json.loads(outputs[1].stdout)


def test_convert_writes_the_same_trace(tmp_path: Path) -> None:
    text, _ = write_both(tmp_path, varied_events(4))
    converted = tmp_path / "converted.gltrace"
    assert convert(text, converted) > 300
    assert resolved(read_columns(converted)[1]) == resolved(read_columns(text)[1])
    assert (tmp_path / "converted.gltrace.npz").is_file()


def test_a_binary_trace_cut_short_keeps_every_complete_record(tmp_path: Path) -> None:
    _, binary = write_both(tmp_path, varied_events())
    whole = read_columns(binary)[1]
    data = binary.read_bytes()
    binary.write_bytes(data[:-7])
    trace, columns = read_columns(binary)
    assert any("the last record is cut short" in w for w in trace.warnings)
    assert 0 < len(columns) < len(whole)
    assert resolved(columns) == resolved(whole)[:len(columns)]


def test_binary_trace_errors_name_the_file_and_record(tmp_path: Path) -> None:
    path = tmp_path / "bad.gltrace"
    path.write_bytes(MAGIC[:-1] + b"\x07")
    with pytest.raises(TraceError, match="container version 7 is not supported"):
        read_columns(path)
    path.write_bytes(MAGIC + HEADER.pack(2, ROWS[0]) + b"{}")
    with pytest.raises(TraceError, match="record 1: the first record must be the meta event"):
        read_columns(path)
    path.write_bytes(MAGIC)
    with pytest.raises(TraceError, match="empty trace"):
        read_columns(path)
    with BinaryTraceWriter(path, collector="native") as out:
        out.write({"ev": "launch", "t": 1, "kernel": "k", "reads": [1, 2], "writes": []})
    data = bytearray(path.read_bytes())
    header_at, _ = last_row_record(bytes(data))
    data[-8:] = b""  # one access fewer than the row names
    length = struct.unpack_from("<I", data, header_at)[0]
    struct.pack_into("<I", data, header_at, length - 8)
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="record 3: its rows name 2 objects but it holds 1"):
        read_columns(path)
    with pytest.raises(TraceError, match="a binary trace"):
        open_trace(path)


def test_malformed_rows_are_skipped_with_one_warning_per_problem(tmp_path: Path) -> None:
    path = tmp_path / "rows.gltrace"
    with BinaryTraceWriter(path, collector="native", flush_interval=float("inf")) as out:
        out.write({"ev": "alloc", "t": 1, "obj": 1, "size": 64})
        for t in range(2, 6):
            out.write({"ev": "launch", "t": t, "kernel": "k", "reads": [1], "writes": [], "site": site(t)})
    data = bytearray(path.read_bytes())
    start = last_row_record(bytes(data))[1] + 4  # past the record header and the row count
    rows = np.frombuffer(bytes(data[start:start + 4 * ROW.itemsize]), dtype=ROW).copy()
    rows["kernel"][0] = 99  # names no string
    rows["site"][1] = 99  # names no stack
    rows["kind"][2] = 200  # a kind this reader does not know
    data[start:start + 4 * ROW.itemsize] = rows.tobytes()
    path.write_bytes(bytes(data))
    trace, columns = read_columns(path)
    assert len(columns) == 2  # the allocation and the one good launch
    problems = "\n".join(trace.warnings)
    assert "`kernel` of a launch row should name a string of the trace's table; 1 such event skipped" in problems
    assert "`site` of a launch row should name" in problems
    assert "row kind 200 (not known to this gpulint)" in problems


def test_rows_hold_only_what_they_can(tmp_path: Path) -> None:
    """Events a row cannot hold exactly go out as JSON, so the reader validates and warns as it
    does for JSON Lines: here a launch whose `reads` is not a list of ids is skipped."""
    events = [{"ev": "alloc", "t": 1, "obj": 1, "size": 64}, {"ev": "launch", "t": 2, "kernel": "k", "reads": 7},
              {"ev": "launch", "t": 3, "kernel": "k", "reads": [1], "writes": [], "stream": 1 << 70},
              {"ev": "launch", "t": 4, "kernel": "k", "reads": [True]}]
    text, binary = tmp_path / "t.jsonl", tmp_path / "t.gltrace"
    for path, writer in ((text, TraceWriter), (binary, BinaryTraceWriter)):
        with writer(path, collector="test") as out:
            for event in events:
                out.write(event)
    def problems(path: Path) -> list[str]:  # the warnings without "file:line:" or "file:record:"
        return [w.split(": ", 1)[1] for w in read_columns(path)[0].warnings]

    assert problems(binary) == problems(text)
    assert len(problems(text)) == 3


def test_a_times_record_must_follow_rows_and_match_them(tmp_path: Path) -> None:
    from gpulint.dynamic.records import TIMES, pack_record

    _, binary = write_both(tmp_path, varied_events())
    data = binary.read_bytes()
    (tmp_path / "stray.gltrace").write_bytes(data + pack_record(b"J", b'{"ev":"note","text":"x"}')
                                              + pack_record(TIMES, b"\0" * 8))
    with pytest.raises(TraceError, match=r"stray.gltrace: record \d+: a times record must follow a row record"):
        read_columns(tmp_path / "stray.gltrace")
    start, _ = last_row_record(data)
    (tmp_path / "short.gltrace").write_bytes(data + pack_record(b"E", data[start + 8:start + 8 + 4 + 96])
                                             + pack_record(TIMES, b"\0" * 16))
    with pytest.raises(TraceError, match="one time per row"):
        read_columns(tmp_path / "short.gltrace")


def test_the_python_collectors_stamp_each_event_with_the_host_clock(tmp_path: Path) -> None:
    import time

    from gpulint.dynamic.collectors.recorder import Recorder

    before = time.monotonic_ns()
    with TraceWriter(tmp_path / "py.jsonl", collector="python", argv=["app.py"]) as out:
        recorder = Recorder(out)
        recorder.write({"ev": "alloc", "t": 1, "obj": 1, "size": 64, "stream": 0, "api": "torch.empty",
                        "site": site(1)})
        recorder.write_line('{"ev":"free","t":2,"obj":1,"stream":0,"site":[["app.py",3,"f"]]}')
        recorder.write({"ev": "note", "text": "no time on a note"})
    lines = [json.loads(line) for line in (tmp_path / "py.jsonl").read_text().splitlines()[1:]]
    assert [("ns" in e) for e in lines] == [True, True, False]
    assert before <= lines[0]["ns"] <= lines[1]["ns"] <= time.monotonic_ns()
    _, columns = read_columns(tmp_path / "py.jsonl")
    assert columns.ns.tolist() == [lines[0]["ns"], lines[1]["ns"]]
