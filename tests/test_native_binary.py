"""The native collector's binary encoder (gpulint_binary.h), compiled with the host compiler
alone: the lines the tool writes, encoded as it encodes them, read into the same columns as the
same lines read as JSON Lines, and a trace cut by a crash still readable up to the crash."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.trace import TraceWriter
from gpulint.dynamic.tracebin import is_binary
from gpulint.dynamic.tracebin import read as read_columns
from gpulint.findings import finding_to_dict
from gpulint.rules import RULES
from test_tracebin import resolved, site, varied_events

NATIVE = Path(__file__).resolve().parents[1] / "gpulint" / "dynamic" / "collectors" / "native"
DRIVER = Path(__file__).resolve().parent / "native" / "encode_lines.cpp"
COMPILER = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(COMPILER is None, reason="no C++ compiler")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("encoder") / "encode_lines"
    subprocess.run([COMPILER, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(NATIVE), str(DRIVER),
                    "-o", str(out)], check=True)
    return out


def native_events(n: int = 300) -> list[dict]:
    """Lines as the native tool writes them: launches with grid and block, copies with offsets and
    digests, frames as [module, offset, symbol], kernel names needing escapes, a launch naming
    more objects than one block holds."""
    stack = [["/app/bin/app", "0x1a2b", "main"], ["/lib/libc.so.6", "0x29d90", "__libc_start_main"]]
    events: list[dict] = [{"ev": "device", "t": 0, "device": "NVIDIA H100", "compute_capability": "9.0"}]
    t = 0
    for obj in range(1, 6):
        t += 1
        events.append({"ev": "alloc", "t": t, "obj": obj, "addr": 1 << 40 | obj << 20, "size": 1 << 20, "stream": 0,
                       "api": "cudaMalloc", "site": stack})
    for i in range(n):
        t += 1
        kind = i % 6
        if kind == 0:
            events.append({"ev": "launch", "t": t, "stream": i % 3, "grid": [4, 1, 1], "block": [256, 1, 1],
                           "kernel": 'k<"quoted">\\(float*)', "reads": [1, 2], "writes": [3], "site": stack})
        elif kind == 1:
            events.append({"ev": "launch", "t": t, "stream": 0, "grid": [1, 1, 1], "block": [32, 1, 1],
                           "kernel": "args(int*)", "reads": [4], "writes": [4], "args_only": True, "site": stack})
        elif kind == 2:
            events.append({"ev": "memcpy", "t": t, "dst": 1, "src": None, "size": 4096, "kind": "h2d", "stream": 1,
                           "dst_offset": 64, "src_offset": 0, "digest": f"{i % 4:016x}", "site": stack})
        elif kind == 3:
            events.append({"ev": "memset", "t": t, "obj": 2, "size": 512, "offset": 8, "stream": 0, "site": stack})
        elif kind == 4:
            events.append({"ev": "sync", "t": t, "scope": "stream", "stream": 1})
        else:
            events.append({"ev": "event_record", "t": t, "event": 1, "stream": 2})
    t += 1
    many = list(range(1, 6)) * 2000  # 10,000 ids: more than a block's accesses, so a JSON record
    events.append({"ev": "launch", "t": t, "stream": 0, "grid": [1, 1, 1], "block": [1, 1, 1], "kernel": "wide",
                   "reads": many, "writes": [], "site": stack})
    events.append({"ev": "free", "t": t + 1, "obj": 5, "stream": 0, "site": stack})
    events.append({"ev": "end", "t": t + 2})
    for i, event in enumerate(events):  # the tool's `ns` in front, as it writes it; one block without
        if "t" in event and not 40 <= i < 40 + 1024:
            events[i] = {"ns": 5 * 10**12 + 700 * i, **event}
    return events


def encode(encoder: Path, tmp_path: Path, events: list[dict], name: str, *args: str) -> tuple[Path, Path]:
    """The events as a JSON Lines trace, and the same lines through the encoder."""
    text = tmp_path / f"{name}.jsonl"
    with TraceWriter(text, collector="native", argv=["./app"], device=None, granularity=32) as out:
        for event in events:
            out.write(event)
    binary = tmp_path / f"{name}.gltrace"
    with open(text, "rb") as lines, open(binary, "wb") as written:
        subprocess.run([str(encoder), *args], stdin=lines, stdout=written, check=True)
    return text, binary


def without_shape(rows: list[tuple]) -> list[tuple]:
    """Rows without a launch's grid and block (extra fields the binary rows do not keep)."""
    out = []
    for row in rows:
        extra = {k: v for k, v in (row[-1] or {}).items() if k not in ("grid", "block")} or None
        out.append(row[:-1] + (extra,))
    return out


@pytest.mark.parametrize("events", [varied_events(), varied_events(seed=3), native_events()],
                         ids=["varied", "varied-3", "native"])
def test_encoded_lines_read_as_the_json_lines_do(encoder: Path, tmp_path: Path, events: list[dict]) -> None:
    text, binary = encode(encoder, tmp_path, events, "run")
    assert is_binary(binary) and binary.stat().st_size < text.stat().st_size
    text_trace, text_columns = read_columns(text)
    binary_trace, binary_columns = read_columns(binary)
    assert without_shape(resolved(binary_columns)) == without_shape(resolved(text_columns))
    assert binary_trace.meta == text_trace.meta
    assert binary_trace.warnings == text_trace.warnings  # the collector's notes, in order
    findings = [[finding_to_dict(f) for f in analyze(path, Settings(min_bytes=0), sorted(RULES)).findings]
                for path in (text, binary)]
    assert findings[0] == findings[1]


def test_rows_are_most_of_a_native_trace(encoder: Path, tmp_path: Path) -> None:
    """The native tool's launches, copies and syncs go as rows, not as JSON records: a JSON record
    holds its line, so the binary file would be no smaller."""
    text, binary = encode(encoder, tmp_path, native_events(3000), "big")
    data = binary.read_bytes()
    assert data.count(b'"ev":"launch"') == 1  # the 10,000-object launch only
    assert data.count(b'"ev":"memcpy"') == 0
    assert len(data) < 0.8 * text.stat().st_size


def test_a_crash_leaves_every_event_readable(encoder: Path, tmp_path: Path) -> None:
    """The signal handler's path: the open block, then the held lines as JSON records."""
    events = native_events()
    text, binary = encode(encoder, tmp_path, events, "crash", "--crash-after", "150")
    _, text_columns = read_columns(text)
    trace, binary_columns = read_columns(binary)
    assert without_shape(resolved(binary_columns)) == without_shape(resolved(text_columns))
    assert not any("cut short" in w for w in trace.warnings)


def test_a_line_the_encoder_cannot_parse_goes_as_json(encoder: Path, tmp_path: Path) -> None:
    """Anything a row cannot hold exactly is kept as the line itself: a null stream, a string
    where an id belongs, an id past 2**63, a field of the future."""
    stack = [["app.cu", 3, "main"]]
    events = [{"ev": "alloc", "t": 1, "obj": 1, "size": 64, "stream": 0, "api": "cudaMalloc", "site": stack},
              {"ev": "memset", "t": 2, "obj": 1, "size": 64, "stream": None, "site": stack},
              {"ev": "launch", "t": 3, "kernel": "k", "stream": 0, "reads": [1], "writes": [], "site": stack,
               "future": {"a": [1, "]"]}},
              {"ev": "free", "t": 4, "obj": 2 ** 63, "stream": 0, "site": site(9)},
              {"ev": "free", "t": 5, "obj": 1, "stream": 0, "site": site(9)}]
    text, binary = encode(encoder, tmp_path, events, "odd")
    data = binary.read_bytes()
    assert b'"stream":null' in data and b'"future"' in data and str(2 ** 63).encode() in data
    text_trace, text_columns = read_columns(text)
    binary_trace, binary_columns = read_columns(binary)
    assert resolved(binary_columns) == resolved(text_columns)
    assert [w.split(": ", 1)[1] for w in binary_trace.warnings] == [w.split(": ", 1)[1] for w in text_trace.warnings]
    assert json.loads(json.dumps(binary_trace.meta)) == text_trace.meta


def test_the_first_reader_finishes_a_binary_access_level_trace(encoder: Path, tmp_path: Path) -> None:
    """The access level's raw bitmap words, left in `<trace>.bits` next to a binary trace, move
    into the sidecar when the trace is first read, as they do for JSON Lines; the device moves
    into `meta`; the findings are those of the same run written as JSON Lines."""
    from test_native import access_level_trace

    (tmp_path / "text").mkdir()
    (tmp_path / "binary").mkdir()
    text = access_level_trace(tmp_path / "text", [(0, 8), (8, 16), (16, 24), (24, 32)], merged_granules=16,
                              finished=False)
    lines = text.read_text().splitlines()
    lines.insert(1, json.dumps({"ev": "device", "t": 0, "device": "NVIDIA H100", "compute_capability": "9.0"}))
    lines.append(json.dumps({"ev": "end", "t": 99}))
    text.write_text("".join(line + "\n" for line in lines))
    binary = tmp_path / "binary" / "run.gltrace"
    with open(text, "rb") as source, open(binary, "wb") as written:
        subprocess.run([str(encoder)], stdin=source, stdout=written, check=True)
    (tmp_path / "binary" / "run.gltrace.bits").write_bytes((tmp_path / "text" / "run.jsonl.bits").read_bytes())

    found = [analyze(path, Settings(min_bytes=0), sorted(RULES)) for path in (text, binary)]
    assert sorted(p.name for p in binary.parent.iterdir()) == ["run.gltrace", "run.gltrace.npz"]
    assert is_binary(binary)
    assert [finding_to_dict(f) for f in found[1].findings] == [finding_to_dict(f) for f in found[0].findings]
    assert [f.properties["accessed_percent"] for f in found[1].findings if f.code == "GL008"] == [25.0]
    trace, _ = read_columns(binary)
    assert trace.meta["device"] == "NVIDIA H100" and not trace.warnings
    assert b'"raw"' not in binary.read_bytes() and b'"ev":"end"' not in binary.read_bytes()
