"""The GitHub Action (`action.yml`) run as GitHub runs it, without GitHub: its inputs, its
`${{ }}` expressions and `if:` conditions evaluated, its shell steps run with bash in a project,
its `uses:` steps checked for what they would be given."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
LATE_FREE = """#include <cuda_runtime.h>
__global__ void k(float* a) { a[threadIdx.x] = 1; }
int main() {
  float* d_a; float* d_b;
  cudaMalloc(&d_a, 64 << 20);
  cudaMalloc(&d_b, 64 << 20);
  k<<<1, 32>>>(d_a);
  k<<<1, 32>>>(d_b);
  k<<<1, 32>>>(d_b);
  cudaFree(d_b);
  cudaFree(d_a);
  return 0;
}
"""


class Runner:
    """One job's run of the action: its context (inputs, github, steps' outputs) and what the
    `uses:` steps were given."""

    def __init__(self, workspace: Path, inputs: dict[str, str], bin_dir: Path) -> None:
        defaults = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        unknown = set(inputs) - set(defaults)
        assert not unknown, f"not inputs of the action: {unknown}"
        self.inputs = {**defaults, **inputs}
        self.workspace = workspace
        self.bin_dir = bin_dir
        self.outputs: dict[str, dict[str, str]] = {}
        self.used: list[tuple[str, dict[str, str]]] = []
        self.ran: list[str] = []

    def value(self, name: str) -> str:
        parts = name.split(".")
        if parts[0] == "inputs":
            return self.inputs[".".join(parts[1:])]
        if parts[0] == "github" and parts[1:] == ["action_path"]:
            return str(ROOT)
        if parts[0] == "steps" and parts[2] == "outputs":
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"an expression this test does not evaluate: {name}")

    def expand(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), str(text))

    def condition(self, text: str | None) -> bool:
        """The `A == 'x'` / `A != 'x'` terms joined by `&&` that the action uses."""
        if text is None:
            return True
        result = True
        for term in EXPRESSION.sub(r"\1", text).split("&&"):
            match = re.fullmatch(r"\s*([\w.-]+)\s*(==|!=)\s*'([^']*)'\s*", term)
            assert match, f"a condition this test does not evaluate: {term}"
            left, op, right = match.groups()
            result &= (self.value(left) == right) == (op == "==")
        return result

    def run(self) -> int:
        for step in ACTION["runs"]["steps"]:
            if not self.condition(step.get("if")):
                continue
            if "uses" in step:
                self.used.append((step["uses"], {k: self.expand(v) for k, v in step.get("with", {}).items()}))
                continue
            output = self.workspace / f".output-{len(self.ran)}"
            output.write_text("")
            env = {**os.environ, **{k: self.expand(v) for k, v in step.get("env", {}).items()},
                   "GITHUB_OUTPUT": str(output), "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}"}
            self.ran.append(step.get("name", step["run"][:30]))
            proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=self.workspace, env=env,
                                  capture_output=True, text=True)
            self.log = proc.stdout + proc.stderr
            if "id" in step:
                lines = [line.split("=", 1) for line in output.read_text().splitlines() if "=" in line]
                self.outputs[step["id"]] = dict(lines)
            if proc.returncode:
                return proc.returncode
        return 0


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """`gpulint` as the install step leaves it, and a `python` that records what pip is asked to
    install instead of installing it (the real interpreter for everything else)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "gpulint").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gpulint "$@"\n')
    (folder / "python").write_text(
        '#!/bin/sh\nif [ "$1 $2 $3" = "-m pip install" ]; then echo "$@" > "$PIP_ASKED"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    for script in folder.iterdir():
        script.chmod(0o755)
    return folder


def project(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.cu").write_text(source)
    return folder


def test_findings_go_to_code_scanning_and_keep_the_job_green(tmp_path: Path, bin_dir: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_ASKED", str(tmp_path / "pip-args"))
    runner = Runner(project(tmp_path, LATE_FREE), {"paths": "src", "args": "--select ALL --min-bytes 0"}, bin_dir)
    assert runner.run() == 0, runner.log
    assert (tmp_path / "pip-args").read_text().split() == ["-m", "pip", "install", "--disable-pip-version-check",
                                                           str(ROOT)]
    outputs = runner.outputs["check"]
    sarif = json.loads((runner.workspace / outputs["sarif-file"]).read_text())
    results = sarif["runs"][0]["results"]
    assert int(outputs["findings"]) == len(results) > 0
    assert {r["ruleId"] for r in results} >= {"GL002"}
    assert runner.used == [("actions/setup-python@v5", {"python-version": "3.12"}),
                           ("github/codeql-action/upload-sarif@v3", {"sarif_file": "gpulint.sarif",
                                                                     "category": "gpulint"})]
    assert "Fail on findings" not in runner.ran


def test_fail_on_findings_fails_the_job(tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_ASKED", str(tmp_path / "pip-args"))
    runner = Runner(project(tmp_path, LATE_FREE), {"paths": "src", "args": "--select ALL --min-bytes 0",
                                                   "fail-on-findings": "true", "upload": "false",
                                                   "version": "gpulint==0.1.0", "sarif-file": "out/gl.sarif"},
                    bin_dir)
    (runner.workspace / "out").mkdir()
    assert runner.run() == 1
    assert runner.ran[-1] == "Fail on findings" and "finding(s)" in runner.log
    assert (tmp_path / "pip-args").read_text().split()[-1] == "gpulint==0.1.0"
    assert [uses for uses, _ in runner.used] == ["actions/setup-python@v5"]  # no upload
    assert (runner.workspace / "out" / "gl.sarif").is_file()


def test_a_clean_project_passes_even_when_failing_on_findings(tmp_path: Path, bin_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_ASKED", str(tmp_path / "pip-args"))
    clean = "#include <cuda_runtime.h>\nint main() { return 0; }\n"
    runner = Runner(project(tmp_path, clean), {"fail-on-findings": "true"}, bin_dir)
    assert runner.run() == 0, runner.log
    assert runner.outputs["check"]["findings"] == "0" and "Fail on findings" not in runner.ran


def test_an_error_fails_the_check_step(tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2 (a usage or internal error) is never read as findings."""
    monkeypatch.setenv("PIP_ASKED", str(tmp_path / "pip-args"))
    runner = Runner(project(tmp_path, LATE_FREE), {"args": "--select NOPE"}, bin_dir)
    assert runner.run() == 2
    assert "::error title=gpulint::gpulint check failed (exit 2)" in runner.log
    assert runner.ran[-1] == "Check" and not [u for u, _ in runner.used if "upload-sarif" in u]
