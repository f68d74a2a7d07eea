#!/usr/bin/env python3
"""Access-level overhead on PolyBench-GPU, side by side with compute-sanitizer memcheck (issue 19,
point 7).  Needs a GPU, nvcc, compute-sanitizer and the PolyBench-GPU sources, which are not part
of gpulint (sgrauerg/polybenchGpu):

    SOURCES/polybench/CUDA/{2MM,3MM,ATAX,BICG,GESUMMV,GRAMSCHM}/   SOURCES/polybench/common/

    python benchmarks/polybench_overhead.py SOURCES OUT [--baseline DIR] [--ablation] [--compare-findings]

Builds the six programs at PolyBench's own flags (its common.mk: `nvcc -O3`, plus the `-D`s that
map the CUDA-11 APIs CUDA 12 removed) and times each, in this one session on this one machine,
`--repeat` times (median; a run over `--slow` seconds is not repeated): natively, under
`gpulint run --level access`, under `compute-sanitizer --tool memcheck`, and with `--baseline
DIR` under the `gpulint` package found in DIR (an older checkout: "before").  `--ablation` adds
the program under the access-level collector alone (no `gpulint run` start-up, no finishing)
and under the same collector with patches that return at once (what the patch calls cost).
`--sample N` adds the access level with `--sample N` (one launch in N of each kernel
recorded; the others hand the patch no data), and the baseline's with it.
`--compare-findings` runs both the checkout and the baseline at the access level on the same
programs built with `-O3 -g -lineinfo` (GRAMSCHM from a copy sized 128, as real_programs.py
does) and compares their findings.  The timed programs leave out PolyBench's CPU reference run
(`--cpu-reference` keeps it: two minutes of GRAMSCHM's run), and each row gives two slowdowns:
wall time of the whole run, and the GPU time the program prints (its kernels and the
synchronisations after them).  Targets: access level <= 2x on every program, <= 1.5x median.  Writes OUT/results.json; a benchmark: it always exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from real_programs import COMPAT, resized  # noqa: E402

PROGRAMS = {"2MM": "2mm.cu", "3MM": "3mm.cu", "ATAX": "atax.cu", "BICG": "bicg.cu", "GESUMMV": "gesummv.cu",
            "GRAMSCHM": "gramschmidt.cu"}
POLYBENCH_FLAGS = ["-O3"]  # CUDA/common.mk
TARGET_EACH, TARGET_MEDIAN = 2.0, 1.5


def package_env(package_root: Path) -> dict[str, str]:
    """This environment with `package_root` (a folder holding a `gpulint` package) first on
    PYTHONPATH, bytecode caching on."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_root), os.environ.get("PYTHONPATH")]))
    return env


GPU_TIME = re.compile(rb"GPU Time in seconds:\s*([0-9.]+)")


def timed(cmd: list[str], env: dict[str, str], cwd: Path, limit: float) -> tuple[float, float]:
    """Wall seconds of one run and the GPU seconds the program itself prints (PolyBench times its
    kernels and the synchronisations after them); inf when cut off at `limit`, nan when it
    printed none."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return float("inf"), float("inf")
    elapsed = time.perf_counter() - t0
    if proc.returncode:
        print(f"  exit {proc.returncode}: {' '.join(cmd[-3:])}: {proc.stderr.decode(errors='replace')[-400:]}", flush=True)
    found = GPU_TIME.search(proc.stdout)
    return elapsed, float(found.group(1)) if found else float("nan")


def without_cpu_reference(source: Path, out: Path) -> Path:
    """A copy of a PolyBench program that skips its CPU reference run and comparison (its
    `#define RUN_ON_CPU`): the reference never touches the GPU, and on GRAMSCHM it takes two
    minutes of the run's two minutes and two seconds, hiding every GPU overhead."""
    folder = out / "gpu-only" / "CUDA" / source.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    common = folder.parent.parent / "common"
    if not common.exists():
        common.symlink_to(source.parent.parent.parent / "common")
    for item in source.parent.iterdir():
        text = item.read_text(errors="replace")
        if item.suffix == ".cu":
            text = text.replace("#define RUN_ON_CPU", "/* RUN_ON_CPU left out */")
        (folder / item.name).write_text(text)
    return folder / source.name


def clean(folder: Path) -> None:
    for path in folder.glob("t.jsonl*"):
        path.unlink()


def build(sources: Path, out: Path, flags: list[str], tag: str, size: int | None = None,
          cpu_reference: bool = True) -> dict[str, Path]:
    """The six programs built with `flags` (in parallel): name -> executable."""
    poly = sources / "polybench" / "CUDA"
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

    def one(name: str) -> tuple[str, Path]:
        source = poly / name / PROGRAMS[name]
        if size and name == "GRAMSCHM":
            source = resized(source, size, out)
        if not cpu_reference:
            source = without_cpu_reference(source, out)
        exe = out / f"{name}-{tag}"
        subprocess.run([nvcc, *flags, *COMPAT, "-o", str(exe), str(source)], check=True, capture_output=True)
        return name, exe

    with ThreadPoolExecutor(max_workers=len(PROGRAMS)) as pool:
        return dict(pool.map(one, PROGRAMS))


def time_modes(modes: dict[str, tuple[list[str], dict[str, str]]], work: Path, repeat: int, slow: float,
               limit: float) -> dict[str, dict]:
    out = {}
    for mode, (cmd, env) in modes.items():
        runs, gpu = [], []
        for _ in range(repeat):
            clean(work)
            seconds, gpu_seconds = timed(cmd, env, work, limit)
            runs.append(seconds)
            gpu.append(gpu_seconds)
            if seconds > slow:
                break  # one run is enough to place it far from the target
        out[mode] = {"median_s": statistics.median(runs), "gpu_s": statistics.median(gpu), "runs": len(runs)}
    return out


def findings(trace: Path, env: dict[str, str], cwd: Path) -> list:
    proc = subprocess.run([sys.executable, "-m", "gpulint", "analyze", "--format", "json", "--min-bytes", "0", str(trace)],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    try:
        found = json.loads(proc.stdout or "[]")
    except ValueError:
        return [["unreadable", proc.stderr[-300:]]]
    keys = ("accessed_percent", "slices", "kernel", "coefficient_of_variation")
    return sorted([f["code"], Path(f["filename"]).name, f["location"]["row"],
                   {k: f["properties"][k] for k in keys if k in f["properties"]}] for f in found)


def compare_findings(sources: Path, out: Path, envs: dict[str, dict[str, str]], sample: int | None = None) -> dict:
    """Each program's access-level findings under each checkout (and, with `sample`, under this
    one's `--sample N`, whose launches left out contribute only their arguments)."""
    exes = build(sources, out, ["-O3", "-g", "-lineinfo"], "g", size=128)
    runs = [(label, env, []) for label, env in envs.items()]
    if sample:
        runs.append((f"sample {sample}", envs["after"], ["--sample", str(sample)]))
    result = {}
    for name, exe in exes.items():
        result[name] = {}
        for label, env, options in runs:
            trace = out / f"{name}-{label.replace(' ', '')}.jsonl"
            for old in out.glob(trace.name + "*"):
                old.unlink()
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(trace), "--level", "access",
                                   *options, "--", str(exe)], env=env, cwd=out, capture_output=True, text=True,
                                  timeout=300)
            seconds = time.perf_counter() - t0
            result[name][label] = {"exit": proc.returncode, "seconds": round(seconds, 2),
                                   "findings": findings(trace, envs["after"], out) if trace.exists() else "no trace"}
        same = len({json.dumps(r["findings"]) for r in result[name].values()}) == 1
        result[name]["same"] = same
        print(f"{name:<9} findings {'the same' if same else 'DIFFER'}: " +
              "; ".join(f"{label} {r['findings'] if not same else len(r['findings'])}"
                        for label, r in result[name].items() if label != "same"), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--baseline", type=Path, help="a folder holding an older `gpulint` package (before)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--slow", type=float, default=30.0, help="a run longer than this is not repeated [30 s]")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a run is cut off [120]")
    parser.add_argument("--only", nargs="*", help="only these programs")
    parser.add_argument("--skip", nargs="*", default=[], help="modes to leave out (memcheck, before, ...)")
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument("--compare-findings", action="store_true")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="also time `gpulint run --level access --sample N` (and the baseline's, with --baseline)")
    parser.add_argument("--cpu-reference", action="store_true",
                        help="time the programs with their CPU reference run (minutes on GRAMSCHM) [left out]")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sources = args.sources.resolve()
    envs = {"after": package_env(REPO)}
    if args.baseline:
        envs["before"] = package_env(args.baseline.resolve())
    for label, env in envs.items():  # build each collector once, outside the timings
        proc = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(out / "warm.jsonl"), "--level", "access",
                               "--", "true"], env=env, capture_output=True, text=True)
        print(f"collector ({label}) ready: exit {proc.returncode} {proc.stderr.strip()[-300:]}", flush=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                         text=True) if shutil.which("nvidia-smi") else None
    results: dict = {"device": smi.stdout.strip() if smi else None, "date": time.strftime("%Y-%m-%d"), "rows": []}
    print(f"device: {results['device']}", flush=True)
    if args.compare_findings:
        results["findings"] = compare_findings(sources, out, envs, args.sample)
    exes = build(sources, out, POLYBENCH_FLAGS, "O3", cpu_reference=args.cpu_reference)
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/compute-sanitizer/compute-sanitizer"
    work = out / "work"
    work.mkdir(exist_ok=True)
    trace = str(work / "t.jsonl")
    extra: dict[str, dict[str, str]] = {}
    if args.ablation:
        sys.path.insert(0, str(REPO))
        from gpulint.dynamic.collectors.native import build as builder
        from gpulint.dynamic.collectors.native import runner

        built = runner.prepare()
        chain = builder.toolchain()
        empty = out / "empty_patch.fatbin"
        sm = "sm_{}{}".format(*builder.detect_device().compute_capability)
        subprocess.run([str(chain.nvcc), "--fatbin", "--keep-device-functions", "-Xptxas", "--compile-as-tools-patch",
                        f"-arch={sm}", "-DGPULINT_EMPTY_PATCH", "-diag-suppress", "177", "-I",
                        str(chain.sanitizer.include), "-I", str(builder.SOURCES), "-o", str(empty),
                        str(builder.SOURCES / "gpulint_patch.cu")], check=True)
        extra["collector"] = runner.program_environment(built, trace, "access")
        extra["empty patch"] = {**extra["collector"], "GPULINT_PATCH": str(empty)}
    for name, exe in exes.items():
        if args.only and name not in args.only:
            continue
        modes = {"native": ([str(exe)], dict(os.environ)),
                 "access": ([sys.executable, "-m", "gpulint", "run", "-o", trace, "--level", "access", "--", str(exe)],
                            envs["after"])}
        if "before" in envs:
            modes["before"] = ([sys.executable, "-m", "gpulint", "run", "-o", trace, "--level", "access", "--", str(exe)],
                               envs["before"])
        if args.sample:
            for label, env in envs.items():
                modes[f"{'access' if label == 'after' else label} sample {args.sample}"] = (
                    [sys.executable, "-m", "gpulint", "run", "-o", trace, "--level", "access", "--sample",
                     str(args.sample), "--", str(exe)], env)
        modes["memcheck"] = ([sanitizer, "--tool", "memcheck", str(exe)], dict(os.environ))
        for label, env in extra.items():
            modes[label] = ([str(exe)], env)
        modes = {m: v for m, v in modes.items() if m not in args.skip}
        times = time_modes(modes, work, args.repeat, args.slow, args.limit)
        native, native_gpu = times["native"]["median_s"], times["native"]["gpu_s"]
        row = {"program": name, **{f"{m}_s": round(v["median_s"], 3) for m, v in times.items()},
               **{f"{m}_gpu_s": round(v["gpu_s"], 4) for m, v in times.items()},
               **{f"{m}_runs": v["runs"] for m, v in times.items()},
               **{f"{m}_x": round(v["median_s"] / native, 2) for m, v in times.items() if m != "native"},
               **{f"{m}_gpu_x": round(v["gpu_s"] / native_gpu, 2) for m, v in times.items() if m != "native"}}
        results["rows"].append(row)
        print(f"{name:<9} native {native:.3f}s (GPU {native_gpu:.3f}s)  " + "  ".join(
            f"{m} {row[f'{m}_x']:.2f}x (GPU {row[f'{m}_gpu_x']:.2f}x)" +
            (f" ({v['runs']} run)" if v["runs"] < args.repeat else "")
            for m, v in times.items() if m != "native"), flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1))
    rows = results["rows"]
    if rows:
        medians = {key[:-2]: statistics.median(r[key] for r in rows) for key in rows[0] if key.endswith("_x")}
        results["medians"] = medians
        print("median slowdown: " + ", ".join(f"{m} {x:.2f}x" for m, x in medians.items()))
        for key, what in (("access", "wall"), ("access_gpu", "GPU time")):
            if key in medians:
                worst = max(r[f"{key}_x"] for r in rows)
                print(f"access level, {what}: worst {worst:.2f}x (target <= {TARGET_EACH}x: "
                      f"{'met' if worst <= TARGET_EACH else 'not met'}), median {medians[key]:.2f}x (target <= "
                      f"{TARGET_MEDIAN}x: {'met' if medians[key] <= TARGET_MEDIAN else 'not met'})")
    (out / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
