"""Binary trace (placeholder until the encoding lands): detection only."""
from __future__ import annotations

from pathlib import Path

MAGIC = b"GPULINTB"


def is_binary(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(len(MAGIC)) == MAGIC


def read(path: Path):
    raise NotImplementedError
