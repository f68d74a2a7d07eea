"""Turn what the injection library wrote into a finished trace: the raw bitmap words moved into
the `.npz` sidecar, the device named in `meta`.  Runs after the program exits (or crashes):
everything written up to then is kept.  Host stacks stay [module, offset, symbol]; analyses
resolve them to file:line through DWARF when they read the trace."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gpulint.dynamic.trace import sidecar_path
from gpulint.measures import count_variation


def _words(raw: bytes, at: int, bits: int) -> np.ndarray:
    """`bits` bits stored as little-endian uint32 words from byte `at` -> a bool array."""
    words = (bits + 31) // 32
    chunk = np.frombuffer(raw, dtype="<u4", count=words, offset=at)
    return np.unpackbits(chunk.view(np.uint8), bitorder="little")[:bits].astype(bool)


def finalize(trace: Path) -> int:
    """Rewrite `trace` in place; returns the number of events.  Safe on a trace cut short."""
    raw_bits_path = Path(str(trace) + ".bits")
    raw_bits = raw_bits_path.read_bytes() if raw_bits_path.is_file() else b""
    arrays: dict[str, np.ndarray] = {}
    counts_sum: dict[int, np.ndarray] = {}
    lines_out: list[str] = []
    device = None
    meta_index = None
    with open(trace, "rb") as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the line the crash cut short
            ev = event.get("ev")
            if ev == "device":
                device = event.get("device")
                continue
            if ev == "end":
                continue
            if ev == "bitmap" and "raw" in event:
                raw = event.pop("raw")
                bits = int(raw.get("bits", 0))
                key = event["key"]
                try:
                    if event.get("read"):
                        arrays[f"{key}_r"] = np.packbits(_words(raw_bits, int(raw["read_at"]), bits))
                        arrays[f"{key}_r_n"] = np.array([bits], dtype=np.int64)
                    if event.get("write"):
                        arrays[f"{key}_w"] = np.packbits(_words(raw_bits, int(raw["write_at"]), bits))
                        arrays[f"{key}_w_n"] = np.array([bits], dtype=np.int64)
                    if "counts_at" in raw:
                        counts = np.frombuffer(raw_bits, dtype="<u4", count=bits, offset=int(raw["counts_at"]))
                        total = counts_sum.get(event["obj"])
                        counts_sum[event["obj"]] = counts.astype(np.uint32) if total is None else total + counts
                        # DrGPUM's frequency is per GPU API: this launch's counts, summarised
                        # here (a launch's whole array would be the object's size again).
                        cv, accessed = count_variation(counts)
                        event["counts_cv"], event["counts_accessed"] = round(cv, 4), accessed
                except (ValueError, KeyError):
                    continue  # bits the crash never wrote
            if ev == "meta":
                meta_index = len(lines_out)
            lines_out.append(json.dumps(event, separators=(",", ":")))
    if meta_index is not None and device:
        meta = json.loads(lines_out[meta_index])
        meta["device"] = device
        lines_out[meta_index] = json.dumps(meta, separators=(",", ":"))
    for obj, counts in counts_sum.items():
        key = f"c{obj}_tall"
        arrays[key] = counts
        lines_out.append(json.dumps({"ev": "counts", "obj": obj, "launch_t": None, "key": key,
                                     "granularity": json.loads(lines_out[meta_index]).get("granularity", 32)
                                     if meta_index is not None else 32}, separators=(",", ":")))
    temp = trace.with_name(trace.name + ".tmp")
    temp.write_text("".join(line + "\n" for line in lines_out))
    os.replace(temp, trace)
    if arrays:
        sidecar = sidecar_path(trace)
        with open(str(sidecar) + ".tmp", "wb") as out:
            np.savez_compressed(out, **arrays)
        os.replace(str(sidecar) + ".tmp", sidecar)
    raw_bits_path.unlink(missing_ok=True)
    return len(lines_out)
