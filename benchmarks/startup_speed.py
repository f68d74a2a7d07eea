"""Start-up of gpulint (issue 19, point 4): what an editor or a pre-commit run of one small file
costs, and what `gpulint run --level object` adds before the program starts.

    python benchmarks/startup_speed.py [--repeat 15] [--repo PATH]

Each case runs `--repeat` times after one warm-up run (which also writes the bytecode caches);
the figures are the best CPU time (the children's rusage, user + sys) and the best wall time.
Every figure is printed twice: in total, and minus `python -c pass` (the interpreter's own
start-up with this environment's site-packages: the floor of any Python tool).  The target of
0.10 s is judged on both: **own** = gpulint's cost above that floor, **total** = what the user
waits for.

Cases: `python -c pass`; `python -m gpulint --version`; the `gpulint` console script's
`--version` (when pip installed one next to this interpreter; it runs this checkout too, first on
PYTHONPATH); `check` of a
2-line .cu and of a 2-line .py (no configuration, no git work tree, `--no-cache`: the analysis is
done, not read back); pre-commit's command (`check --force-exclude` in a git work tree with a
.gitignore and a `[tool.gpulint]` table); and `run --level object -o T -- /bin/true` minus
`/bin/true` alone: what gpulint costs the traced program before it starts.  On a machine with an
NVIDIA GPU the run is real (the collector is built by the warm-up run); elsewhere a simulated
device answers the device check (a toolkit folder with a stand-in nvcc and Sanitizer files, the
device's answer and a built collector in the cache, and the machine key that `/proc` gives on a
GPU machine fixed), so every step before the exec runs as it does on a GPU machine.

`--repo PATH` times another checkout (an unpacked older commit, for a before/after).  Always
exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, machine_description, today  # noqa: E402  (the harness lives next to this script)

TARGET_S = 0.10
SMALL_CU = "__global__ void fill(float *a) { a[threadIdx.x] = 1.0f; }\nint main() { return 0; }\n"
SMALL_PY = "import torch\nx = torch.zeros(4, device=\"cuda\")\n"
# `gpulint run` with the machine key fixed (on a GPU machine it comes from /proc/driver/nvidia):
# with the simulated toolkit and cache below, every step before the exec is the real one.
SIMULATED_RUN = ("import sys\n"
                 "from gpulint.dynamic.collectors.native import build\n"
                 "build._machine_key = lambda: 'simulated-device'\n"
                 "from gpulint.cli import main\n"
                 "sys.argv[0] = 'gpulint'\n"
                 "main()\n")
SIMULATED_CUDA = "12.8"
SIMULATED_ARCH = (9, 0)


def environment(repo: Path) -> dict[str, str]:
    """This environment with `repo` first on PYTHONPATH and bytecode caching on (with
    PYTHONDONTWRITEBYTECODE every run would compile gpulint again and time that)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONPATH"] = str(repo) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def simulated_device(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """A CUDA toolkit folder (a stand-in nvcc and Sanitizer files) and a gpulint cache that holds
    the device's answer and a built collector: the environment in which SIMULATED_RUN finds
    everything a GPU machine's warm cache would give it."""
    toolkit = folder / "cuda"
    (toolkit / "bin").mkdir(parents=True, exist_ok=True)
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {SIMULATED_CUDA}, V{SIMULATED_CUDA}.0'\n")
    nvcc.chmod(0o755)
    sanitizer = toolkit / "compute-sanitizer"
    (sanitizer / "include").mkdir(parents=True, exist_ok=True)
    (sanitizer / "include" / "sanitizer.h").write_text("")
    (sanitizer / "libsanitizer-public.so").write_bytes(b"")
    cache = folder / "cache" / "gpulint" / "native"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "device-simulated-device.json").write_text(json.dumps(
        {"name": "simulated", "compute_capability": list(SIMULATED_ARCH), "driver_version": 13000}))
    source_hash = subprocess.run(
        [sys.executable, "-c", "from gpulint.dynamic.collectors.native import build; print(build.source_hash())"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    built = cache / f"cuda{SIMULATED_CUDA}-sm_{SIMULATED_ARCH[0]}{SIMULATED_ARCH[1]}-{source_hash}"
    built.mkdir(parents=True, exist_ok=True)
    (built / "libgpulint_tool.so").write_bytes(b"")
    (built / "gpulint_patch.fatbin").write_bytes(b"")
    return {**env, "PATH": f"{toolkit / 'bin'}{os.pathsep}{env.get('PATH', '')}", "CUDA_HOME": str(toolkit),
            "XDG_CACHE_HOME": str(folder / "cache")}


def has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def best(cmd: list[str], cwd: Path, env: dict[str, str], repeat: int) -> tuple[float, float, int]:
    """(best CPU seconds, best wall seconds, exit status of the last run) over `repeat` runs,
    after one untimed warm-up run."""
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu = wall = float("inf")
    code = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        code = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        wall = min(wall, time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return cpu, wall, code


def precommit_repo(folder: Path) -> Path | None:
    """A git work tree as pre-commit sees one: a .gitignore, a `[tool.gpulint]` table, one staged file."""
    git = shutil.which("git")
    if git is None:
        return None
    folder.mkdir()
    if subprocess.run([git, "init", "-q"], cwd=folder, capture_output=True).returncode != 0:
        return None
    (folder / ".gitignore").write_text("build/\n*.o\n.gpulint_cache/\n")
    (folder / "pyproject.toml").write_text("[tool.gpulint]\nexclude = [\"third_party\"]\n")
    (folder / "small.cu").write_text(SMALL_CU)
    # pre-commit names files git tracks (staged ones): gpulint asks git which, not the rules.
    if subprocess.run([git, "add", "small.cu"], cwd=folder, capture_output=True).returncode != 0:
        return None
    return folder


def cases(work: Path, env: dict[str, str], gpu: bool) -> list[tuple[str, list[str], Path, dict[str, str]]]:
    python = sys.executable
    gpulint = [python, "-m", "gpulint"]
    plain = work / "plain"
    plain.mkdir()
    (plain / "small.cu").write_text(SMALL_CU)
    (plain / "small.py").write_text(SMALL_PY)
    found = [("python -c pass", [python, "-c", "pass"], plain, env),
             ("python -m gpulint --version", [*gpulint, "--version"], plain, env)]
    # The script pip writes next to this interpreter (a version manager's shim on PATH, pyenv's,
    # would add its own start-up, a bash script's, and time that).
    script = Path(python).parent / "gpulint"
    if script.is_file():
        found.append(("gpulint --version (console script)", [str(script), "--version"], plain, env))
    found += [("check small.cu", [*gpulint, "check", "--no-cache", "small.cu"], plain, env),
              ("check small.py", [*gpulint, "check", "--no-cache", "small.py"], plain, env)]
    repo = precommit_repo(work / "precommit")
    if repo is not None:
        found.append(("pre-commit: check --force-exclude small.cu",
                      [*gpulint, "check", "--no-cache", "--force-exclude", "small.cu"], repo, env))
    trace = str(work / "t.jsonl")
    if gpu:
        found.append(("run --level object -- /bin/true", [*gpulint, "run", "--level", "object", "-o", trace, "--",
                                                          "/bin/true"], plain, env))
    else:
        found.append(("run --level object -- /bin/true (simulated device)",
                      [python, "-c", SIMULATED_RUN, "run", "--level", "object", "-o", trace, "--", "/bin/true"],
                      plain, simulated_device(work / "device", env)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per case (best of N)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to time [default: this one]")
    args = parser.parse_args()
    env = environment(args.repo.resolve())
    gpu = has_gpu()
    print(f"machine: {machine_description()}{' with an NVIDIA GPU' if gpu else ' (no GPU)'}")
    print(f"date:    {today()}")
    print(f"repo:    {args.repo.resolve()}")
    print(f"timing:  best of {args.repeat} after a warm-up run; CPU = children's user+sys; floor = python -c pass")
    print()
    with tempfile.TemporaryDirectory(prefix="gpulint-startup-") as tmp:
        work = Path(tmp)
        try:
            found = cases(work, env, gpu)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"cannot prepare the cases: {exc}")
            return
        native_true = best(["/bin/true"], work, env, args.repeat)
        rows = []
        floor = None
        for name, cmd, cwd, case_env in found:
            cpu, wall, code = best(cmd, cwd, case_env, args.repeat)
            if name.startswith("run "):  # the program itself is not gpulint's start-up
                cpu, wall = cpu - native_true[0], wall - native_true[1]
            if floor is None:
                floor = (cpu, wall)
            rows.append((name, cpu, wall, code))
    assert floor is not None
    print("| case | exit | CPU s | wall s | CPU − floor | wall − floor | own ≤ 0.10 s | total ≤ 0.10 s |")
    print("|---|---:|---:|---:|---:|---:|:-:|:-:|")
    for name, cpu, wall, code in rows:
        own = cpu - floor[0]
        print(f"| {name} | {code} | {cpu:.3f} | {wall:.3f} | {own:+.3f} | {wall - floor[1]:+.3f} | "
              f"{'yes' if own <= TARGET_S else 'NO'} | {'yes' if cpu <= TARGET_S else 'NO'} |")
    print()
    print(f"`run` rows are minus /bin/true alone ({native_true[0]:.4f} s CPU, {native_true[1]:.4f} s wall); "
          "the target columns judge CPU time.")


if __name__ == "__main__":
    main()
