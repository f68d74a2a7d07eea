"""Host stacks of real nvcc builds resolve to the line the user wrote, at every optimisation
level: the line-table reader keeps sequence ends (the static cudart under every `cudaMalloc`
frame has no rows, and must not take the user's last one), walks inline information (the C++
`cudaMalloc<T>` template is inlined at -O2), and without `-g` names the function, never a line.

No GPU is needed: the binaries are built here with nvcc and the stacks are the ones the native
collector records — [module, return-address offset, symbol], innermost first — with the return
addresses read off the binary's own call instructions (objdump)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulint.dynamic.symbols import has_host_lines, module, resolve_frames
from gpulint.dynamic.histories import _location

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
OBJDUMP = shutil.which("objdump")
pytestmark = pytest.mark.skipif(NVCC is None or OBJDUMP is None, reason="needs nvcc and objdump")

PROGRAM = """\
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = i;
}

static inline void make_scratch(void** p, size_t bytes) {
    cudaMalloc(p, bytes);  // helper
}

int main() {
    float* a = nullptr;
    float* b = nullptr;
    void* c = nullptr;
    cudaMalloc(&a, 1024 * sizeof(float));  // templated
    cudaMalloc((void**)&b, 4096);  // plain
    make_scratch(&c, 512);
    fill<<<4, 256>>>(a, 1024);
    cudaMemcpy(b, a, 4096, cudaMemcpyDeviceToDevice);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    printf("done\\n");
    return 0;
}
"""
CALL = re.compile(r"^\s*([0-9a-f]+):\s+call\s+([0-9a-f]+) <([^>]+)>")


def line_of(needle: str) -> int:
    return next(i for i, line in enumerate(PROGRAM.splitlines(), 1) if needle in line)


def build(tmp_path: Path, *flags: str) -> Path:
    source = tmp_path / "app.cu"
    source.write_text(PROGRAM)
    binary = tmp_path / ("app" + "".join(flags).replace("-", "_").replace(" ", ""))
    subprocess.run([NVCC, "-std=c++17", *flags, "-o", str(binary), str(source)], check=True, capture_output=True)
    return binary


def stacks_of_calls(binary: Path, callee: str) -> list[list[list]]:
    """Every stack from `main` down into `callee` (through the binary's own functions): the
    frames the collector records inside it — one in the callee's body (static cudart: no line
    table), then each caller's return address, innermost first."""
    text = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True,
                          check=True).stdout
    info = module(str(binary))
    base = info.load_base if info.exec_type else 0
    callers: dict[str, list[tuple[str, int]]] = {}  # callee -> (caller, return offset)
    starts: dict[str, int] = {}
    for block in text.split("\n\n"):
        head = re.search(r"^([0-9a-f]+) <([^>]+)>:$", block, re.M)
        if head is None:
            continue
        starts[head.group(2)] = int(head.group(1), 16)
        rows = block.splitlines()
        for here, after in zip(rows, rows[1:]):
            found = CALL.match(here)
            if found and ":" in after:
                callers.setdefault(found.group(3), []).append((head.group(2), int(after.split(":")[0], 16) - base))

    def up(function: str, frames: list[list], depth: int) -> list[list[list]]:
        if function == "main":
            return [frames]
        if depth > 4:
            return []
        return [stack for caller, back in callers.get(function, [])
                for stack in up(caller, frames + [[str(binary), hex(back), ""]], depth + 1)]

    inside = starts[callee] + 8 - base
    return up(callee, [[str(binary), hex(inside + 1), callee]], 0)


def located(stack: list[list]) -> tuple[str, int, str | None]:
    location, _ = _location(stack, "app", ())
    return Path(location.path).name, location.row, location.symbol


@pytest.mark.parametrize("flags", [("-O0", "-g"), ("-O2", "-g"), ("-O3", "-g"), ("-O3", "-g", "-lineinfo")])
def test_every_allocation_points_at_its_own_line(tmp_path: Path, flags: tuple[str, ...]) -> None:
    binary = build(tmp_path, *flags)
    stacks = stacks_of_calls(binary, "cudaMalloc")
    assert len(stacks) == 3, stacks
    assert sorted(located(s) for s in stacks) == sorted(
        ("app.cu", line_of(needle), None) for needle in ("// templated", "// plain", "// helper"))


@pytest.mark.parametrize("flags", [("-O0", "-g"), ("-O3", "-g")])
def test_inlined_template_gives_the_call_site(tmp_path: Path, flags: tuple[str, ...]) -> None:
    binary = build(tmp_path, *flags)
    templated = line_of("// templated")
    frames = [f for s in stacks_of_calls(binary, "cudaMalloc") for frame in s for f in resolve_frames(frame)]
    assert ["app.cu", templated] in [[Path(str(f[0])).name, f[1]] for f in frames]
    if "-O3" in flags:  # inlined: the header's row, then the user's call site from the inline entry
        chains = [resolve_frames(s[1]) for s in stacks_of_calls(binary, "cudaMalloc")]
        inlined = [c for c in chains if len(c) > 1]
        assert inlined and "cuda_runtime.h" in inlined[0][0][0] and inlined[0][1][1] in (
            templated, line_of("// helper"))


@pytest.mark.parametrize("flags", [("-O0", "-g"), ("-O3", "-g")])
def test_address_past_the_users_code_resolves_to_nothing(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """The static cudart lies after the user's last row: it has no line, and its symbol says what
    it is."""
    binary = build(tmp_path, *flags)
    inside = stacks_of_calls(binary, "cudaMalloc")[0][0]
    assert resolve_frames(inside) == [[str(binary), 0, "cudaMalloc"]]


@pytest.mark.parametrize("flags", [("-O3",), ("-O3", "-lineinfo"), ("-O0",)])
def test_without_g_findings_name_the_function(tmp_path: Path, flags: tuple[str, ...]) -> None:
    binary = build(tmp_path, *flags)
    assert has_host_lines(str(binary)) is False
    stacks = stacks_of_calls(binary, "cudaMalloc")
    found = {(name, row, symbol.split("(")[0]) for name, row, symbol in map(located, stacks)}
    assert stacks and found <= {(binary.name, 0, "main"), (binary.name, 0, "make_scratch")}
    assert (binary.name, 0, "main") in found


def test_with_g_has_host_lines(tmp_path: Path) -> None:
    assert has_host_lines(str(build(tmp_path, "-O2", "-g"))) is True
    assert has_host_lines(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("flags", [("-O3", "-g"), ("-O3",)])
def test_analyze_points_at_the_user_line_or_says_why_not(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """A leak recorded with the stacks the collector sees in the real binary: with -g it is at the
    user's line; without, it names `main` and `analyze` warns once."""
    from gpulint.config import Settings
    from gpulint.dynamic.analyze import analyze
    from gpulint.rules import RULES

    binary = build(tmp_path, *flags)
    stacks = [s for s in stacks_of_calls(binary, "cudaMalloc") if len(s) == 2]  # called from main itself
    events = [{"ev": "meta", "version": 1, "collector": "native", "argv": [str(binary)]}]
    for obj, stack in enumerate(stacks, 1):
        events.append({"ev": "alloc", "t": obj, "obj": obj, "size": 1 << 20, "api": "cudaMalloc", "stream": 0,
                       "site": stack})
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    result = analyze(path, Settings(), sorted(RULES))
    leaks = [f for f in result.findings if f.code in ("GL004", "GL005")]
    assert leaks
    if "-g" in flags:
        assert {f.location.row for f in leaks} <= {line_of(n) for n in ("// templated", "// plain", "// helper")}
        assert not [w for w in result.warnings if "without -g" in w]
    else:
        assert {(f.location.row, f.location.symbol) for f in leaks} == {(0, "main")}
        assert [w for w in result.warnings if "built without -g" in w] == [
            f"{binary}: built without -g: findings show function names only; rebuild with -g"]


def test_gpulint_run_warns_before_the_program_starts(tmp_path: Path) -> None:
    """At the object level the program replaces gpulint's process, so the warning comes first;
    here (no GPU needed) it is printed even though the run then stops for want of a GPU."""
    binary = build(tmp_path, "-O3", "-lineinfo")
    done = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(tmp_path / "t.jsonl"), "--", str(binary)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert f"gpulint: warning: {binary}: built without -g: findings show function names only; rebuild with -g" \
        in done.stderr
    with_g = build(tmp_path, "-O0", "-g")
    done = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(tmp_path / "t.jsonl"), "--", str(with_g)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert "without -g" not in done.stderr


def test_without_pyelftools_analyze_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An install that skipped the dependencies cannot read line tables: the findings fall back to
    function names, and the warning names the missing package rather than blaming the build."""
    from gpulint.config import Settings
    from gpulint.dynamic.analyze import analyze
    from gpulint.rules import RULES

    binary = build(tmp_path, "-O3", "-g")
    stacks = [s for s in stacks_of_calls(binary, "cudaMalloc") if len(s) == 2]
    events = [{"ev": "meta", "version": 1, "collector": "native", "argv": [str(binary)]},
              {"ev": "alloc", "t": 1, "obj": 1, "size": 1 << 20, "api": "cudaMalloc", "stream": 0, "site": stacks[0]}]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    for name in [m for m in sys.modules if m == "elftools" or m.startswith("elftools.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "elftools", None)  # import elftools... raises ImportError
    module.cache_clear()
    try:
        result = analyze(path, Settings(), sorted(RULES))
    finally:
        module.cache_clear()
    assert all(f.location.row == 0 for f in result.findings)
    assert [w for w in result.warnings if "pyelftools is not installed" in w]
    assert not [w for w in result.warnings if "built without -g" in w]
