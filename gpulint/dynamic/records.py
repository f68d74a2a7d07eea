"""The binary trace's container (`docs/trace-format.md`, "The binary variant"): its magic bytes,
record headers and tags, and a walk over the records.  Kept apart from `tracebin` so that the
native collector's finishing step (`collectors/native/finalize.py`), which the trace readers
call, rewrites records without importing the readers."""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

BINARY_PREFIX = b"GLTRACE"
MAGIC = BINARY_PREFIX + b"\x01"  # the last byte is the container's version
HEADER = struct.Struct("<IB3x")  # payload length, tag
META, STRINGS, STACKS, ROWS, EVENT, TIMES = b"M", b"S", b"K", b"E", b"J", b"T"


def is_binary(path: str | Path) -> bool:
    """Whether `path` is a binary trace (by its magic bytes, not its name)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(BINARY_PREFIX)) == BINARY_PREFIX
    except OSError:
        return False


def walk_records(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(record number, tag, payload start, payload end) of each record after the magic; a last
    record cut short is yielded once with tag -1, and ends the walk."""
    pos, number, size = len(MAGIC), 0, len(data)
    while pos < size:
        number += 1
        if pos + HEADER.size > size:
            yield number, -1, pos, size
            return
        length, tag = HEADER.unpack_from(data, pos)
        start, pos = pos + HEADER.size, pos + HEADER.size + length
        if pos > size:
            yield number, -1, start, size
            return
        yield number, tag, start, pos


def pack_record(tag: bytes, payload: bytes) -> bytes:
    """One record: its header, then `payload`."""
    return HEADER.pack(len(payload), tag[0]) + payload
