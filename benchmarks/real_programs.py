"""Real programs under `gpulint run`, built as their authors build them: findings per program and
build, where they point, and what `check --confirm` says of the static findings.  Needs a GPU,
nvcc and the programs' sources, which are not part of gpulint (fetch them yourself):

    SOURCES/polybench/CUDA/{2MM,3MM,ATAX,BICG,GESUMMV,GRAMSCHM}/   PolyBench-GPU (sgrauerg/polybenchGpu)
    SOURCES/polybench/common/
    SOURCES/simpleMultiCopy/simpleMultiCopy.cu                    NVIDIA/cuda-samples
    SOURCES/cuda-samples-common/helper_*.h                         cuda-samples' Common/
    SOURCES/huffman/                                               Rodinia's cuda/huffman

    python benchmarks/real_programs.py SOURCES OUT [--only NAME ...]

Writes OUT/results.json (one record per program and build) and OUT/<name>-<build>.* (traces,
reports, logs).  docs/benchmarks.md has the table.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

# Build variants: PolyBench's own flags with -g, the debug build, and without host line tables.
BUILDS = {"O3g": ["-O3", "-g", "-lineinfo"], "O0g": ["-O0", "-g"], "O3-lineinfo": ["-O3", "-lineinfo"]}
# APIs these programs use that CUDA 12 removed, mapped to their replacements (no line moves).
COMPAT = ["-DcudaThreadSynchronize=cudaDeviceSynchronize", "-DcudaThreadExit=cudaDeviceReset",
          "-DdeviceOverlap=asyncEngineCount", "-Wno-deprecated-gpu-targets"]


def programs(sources: Path) -> dict[str, dict]:
    poly = sources / "polybench" / "CUDA"
    out: dict[str, dict] = {}
    for name, file in (("2MM", "2mm.cu"), ("3MM", "3mm.cu"), ("ATAX", "atax.cu"), ("BICG", "bicg.cu"),
                       ("GESUMMV", "gesummv.cu")):
        out[name] = {"sources": [poly / name / file], "flags": [], "args": [], "levels": ["object"]}
    out["BICG"]["levels"] = ["object", "full"]
    # The header fixes 2048 x 2048 (17 GFLOP of CPU reference, and at --level full every launch's
    # per-element counts of 16 MiB objects): built from a copy sized 256 (object level) and 128
    # (full level), the only change.
    out["GRAMSCHM"] = {"sources": [poly / "GRAMSCHM" / "gramschmidt.cu"], "flags": [], "args": [],
                       "levels": ["object", "full"], "resize": {"object": 256, "full": 128}}
    out["simpleMultiCopy"] = {"sources": [sources / "simpleMultiCopy" / "simpleMultiCopy.cu"],
                              "flags": ["-I", str(sources / "cuda-samples-common")], "args": [],
                              "levels": ["object", "access"]}
    huffman = sources / "huffman"
    out["huffman"] = {"sources": [huffman / f for f in ("main_test_cu.cu", "vlc_kernel_sm64huff.cu", "scan.cu",
                                                        "pack_kernels.cu", "cpuencode.cpp", "stats_logger.cpp")],
                      "flags": ["-I", str(huffman)], "args": ["@input"], "levels": ["object"]}
    return {k: v for k, v in out.items() if all(p.exists() for p in v["sources"])}


def gpulint(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpulint", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def huffman_input(path: Path) -> Path:
    """1 MiB of skewed bytes (Rodinia's data file is not in its repository)."""
    rng = random.Random(0)
    weights = [2.0 ** -(i % 12) for i in range(256)]
    path.write_bytes(bytes(rng.choices(range(256), weights=weights, k=1 << 20)))
    return path


def resized(source: Path, n: int, out: Path) -> Path:
    """A copy of a PolyBench program whose header's NI and NJ are `n` (lines unchanged)."""
    folder = out / f"{source.parent.name}-{n}" / "CUDA" / source.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    common = folder.parent.parent / "common"
    if not common.exists():
        common.symlink_to(source.parent.parent.parent / "common")
    for item in source.parent.iterdir():
        text = item.read_text(errors="replace")
        if item.suffix == ".cuh":
            text = text.replace("#define NI 2048", f"#define NI {n}").replace("#define NJ 2048", f"#define NJ {n}")
        (folder / item.name).write_text(text)
    return folder / source.name


def one(name: str, spec: dict, build: str, level: str, out: Path) -> dict:
    tag = f"{name}-{build}-{level}"
    exe = out / tag
    started = time.time()
    sources = list(spec["sources"])
    if "resize" in spec:
        sources = [resized(sources[0], spec["resize"][level], out)]
    built = subprocess.run(["nvcc", "-std=c++17", *BUILDS[build], *COMPAT, *spec["flags"], "-o", str(exe),
                            *map(str, sources)], capture_output=True, text=True)
    record: dict = {"program": name, "build": " ".join(BUILDS[build]), "level": level}
    if built.returncode:
        record["error"] = "build failed: " + built.stderr[-2000:]
        return record
    args = [str(huffman_input(out / "huffman.in")) if a == "@input" else a for a in spec["args"]]
    trace = out / f"{tag}.jsonl"
    ran = gpulint("run", "-o", str(trace), "--level", level, "--", str(exe), *args, cwd=out)
    (out / f"{tag}.run.log").write_text(ran.stdout[-20000:] + "\n--- stderr\n" + ran.stderr[-20000:])
    record["exit"] = ran.returncode
    record["run_warnings"] = [line for line in ran.stderr.splitlines() if "warning" in line]
    if not trace.exists():
        record["error"] = "no trace"
        return record
    shown = json.loads(gpulint("analyze", "--format", "json", str(trace), cwd=out).stdout or "[]")
    every = gpulint("analyze", "--format", "json", "--min-bytes", "0", str(trace), cwd=out)
    everything = json.loads(every.stdout or "[]")
    record["analyze_warnings"] = [line for line in every.stderr.splitlines() if "without -g" in line]
    record["findings"] = [[f["code"], Path(f["filename"]).name, f["location"]["row"], f["location"].get("symbol"),
                           f.get("object"), f["properties"].get("peak_saved_bytes"), f["properties"].get("objects"),
                           {k: f["properties"][k] for k in ("coefficient_of_variation", "measure", "slices", "kernel",
                                                            "accessed_percent") if k in f["properties"]}]
                          for f in everything]
    record["shown_at_default_min_bytes"] = len(shown)
    report = gpulint("analyze", "--min-bytes", "0", str(trace), cwd=out)
    (out / f"{tag}.analyze.txt").write_text(report.stdout)
    record["lines"] = dict(Counter(f"{Path(f['filename']).name}:{f['location']['row'] or f['location'].get('symbol')}"
                                   for f in everything))
    sources = [str(p) for p in sources if p.suffix == ".cu"]
    checked = gpulint("check", "--isolated", "--no-cache", "--format", "json", "--min-bytes", "0", "--confirm",
                      str(trace), *sources, cwd=out)
    marks = Counter(f["properties"].get("confirmation", "not checkable") for f in json.loads(checked.stdout or "[]"))
    record["confirm"] = dict(marks)
    record["seconds"] = round(time.time() - started, 1)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--builds", nargs="*", default=list(BUILDS))
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name, spec in programs(options.sources.resolve()).items():
        if options.only and name not in options.only:
            continue
        for build in options.builds:
            for level in spec["levels"] if build == "O3g" else ["object"]:
                try:
                    record = one(name, spec, build, level, options.out.resolve())
                except subprocess.TimeoutExpired as exc:
                    record = {"program": name, "build": build, "level": level, "error": f"timeout: {exc}"}
                results.append(record)
                print(json.dumps({k: v for k, v in record.items() if k != "findings"}), flush=True)
                (options.out / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
