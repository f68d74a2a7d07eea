"""Start-up stays small (issue 19, point 4): `gpulint check` of one small file and `gpulint run
--level object` up to the exec import what that path needs and nothing heavy.  No timing here
(benchmarks/startup_speed.py times it): each test runs the real command in a fresh interpreter and
reads `sys.modules` at the end (for `run`, at the moment it would exec the program), so a module-
level import of a heavy package added anywhere on the path fails here."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from startup_speed import SIMULATED_RUN, SMALL_CU, SMALL_PY, environment, simulated_device  # noqa: E402

# Never on the path of one small file's check, whatever its language: the dynamic side's packages,
# the other output formats' and frontend's, the pool, pathspec (no git work tree here).
HEAVY = {"numpy", "rich", "clang", "sarif_om", "attr", "cuda", "elftools", "matplotlib", "pathspec",
         "multiprocessing", "concurrent", "asyncio", "typing_extensions"}
NOT_FOR_CHECK = ("gpulint.dynamic", "gpulint.output.sarif", "gpulint.output.json_format", "gpulint.output.github",
                 "gpulint.static.cuda_clang", "gpulint.static.compile_db", "gpulint.fixloop", "gpulint.fixes.from_sarif")

# Runs the command line given after `-c CODE` and prints the modules loaded by its end.
CHECK = ("import json, sys\n"
         "from gpulint.cli import main\n"
         "sys.argv[0] = 'gpulint'\n"
         "try:\n"
         "    main()\n"
         "except SystemExit as exc:\n"
         "    code = exc.code\n"
         "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n")


def loaded(code: str, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, set[str], str]:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), done.stdout + done.stderr


def heavy_ones(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def no_config_above(folder: Path) -> bool:
    return not any((f / name).is_file() for f in [folder, *folder.parents] for name in ("pyproject.toml", "gpulint.toml"))


@pytest.mark.parametrize("name, text, needed, other", [
    ("small.cu", SMALL_CU, ["tree_sitter_cuda", "gpulint.static.cuda_treesitter", "gpulint.static.lower"],
     ["tree_sitter_python", "gpulint.static.python"]),
    ("small.py", SMALL_PY, ["tree_sitter_python", "gpulint.static.python"],
     ["tree_sitter_cuda", "gpulint.static.cuda_treesitter", "gpulint.static.lower"]),
], ids=["cuda", "python"])
def test_check_of_one_small_file_imports_its_frontend_and_nothing_heavy(tmp_path: Path, name: str, text: str,
                                                                        needed: list[str], other: list[str]) -> None:
    (tmp_path / name).write_text(text)
    code, modules, output = loaded(CHECK, ["check", "--no-cache", name], tmp_path, environment(ROOT))
    assert code == 0 and "in 1 file" in output, output
    assert all(m in modules for m in needed), [m for m in needed if m not in modules]
    assert heavy_ones(modules) == []
    assert sorted(m for m in modules if m in other or m.startswith(NOT_FOR_CHECK)) == []
    # A check with no configuration file above it reads no TOML.
    if no_config_above(tmp_path):
        assert "tomllib" not in modules


def test_version_imports_no_analysis(tmp_path: Path) -> None:
    code, modules, output = loaded(CHECK, ["--version"], tmp_path, environment(ROOT))
    assert code == 0 and "gpulint, version" in output
    assert sorted(m for m in modules if m.startswith(("gpulint.engine", "gpulint.rules", "gpulint.static",
                                                      "gpulint.dynamic", "tree_sitter", "tomllib"))) == []
    assert heavy_ones(modules) == []


@pytest.mark.skipif(not Path("/bin/true").is_file(), reason="needs /bin/true")
def click_imports_subprocess() -> bool:
    """click 8.5 imports uuid, which imports subprocess below Python 3.12: not gpulint's to avoid."""
    probe = "import sys, click; print('subprocess' in sys.modules)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "True"


def test_run_at_the_object_level_execs_with_almost_nothing_imported(tmp_path: Path) -> None:
    """Every step `gpulint run` takes before the exec on a GPU machine with its caches warm (the
    device's answer, nvcc's version, the built collector), with the device simulated; the exec
    itself records the modules loaded and the program it would start."""
    env = simulated_device(tmp_path / "device", environment(ROOT))
    record = tmp_path / "exec.json"
    at_exec = ("import json, os\n"
               "def record(program, argv, env):\n"
               f"    json.dump({{'argv': argv, 'tool': env.get('CUDA_INJECTION64_PATH'), 'modules': sorted(sys.modules)}},"
               f" open({str(record)!r}, 'w'))\n"
               "    os._exit(0)\n"
               "os.execvpe = record\n")
    code = SIMULATED_RUN.replace("from gpulint.cli import main", at_exec + "from gpulint.cli import main")
    for _ in range(2):  # the first run caches nvcc's version (it runs nvcc), as a GPU machine's first run does
        done = subprocess.run([sys.executable, "-c", code, "run", "--level", "object", "-o",
                               str(tmp_path / "t.jsonl"), "--", "/bin/true"], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
    assert done.returncode == 0 and record.is_file(), done.stderr
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["/bin/true"] and seen["tool"].endswith("libgpulint_tool.so")
    modules = set(seen["modules"])
    assert heavy_ones(modules) == []
    assert sorted(m for m in modules if m.startswith(("gpulint.engine", "gpulint.rules", "gpulint.static",
                                                      "gpulint.dynamic.histories", "gpulint.dynamic.trace",
                                                      "gpulint.dynamic.symbols", "gpulint.findings",
                                                      "gpulint.history", "tree_sitter"))
                  or m == "tomllib" or m == "subprocess" and not click_imports_subprocess()) == []
    # What it does need: the collector's runner and builder, and the section-table reader.
    assert {"gpulint.dynamic.collectors.native.runner", "gpulint.dynamic.collectors.native.build",
            "gpulint.dynamic.elf"} <= modules
    assert "built without -g" in done.stderr  # /bin/true has no line table: said before the exec

def test_ignore_files_of_comments_alone_need_no_pathspec(tmp_path: Path) -> None:
    """`git init` writes a `.git/info/exclude` of comments: pre-commit's `--force-exclude` then has
    no rule to match and imports no matcher; one real rule brings it in, and it applies."""
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("# git ls-files --others --exclude-from=.git/info/exclude\n\n   \n")
    (tmp_path / "small.cu").write_text(SMALL_CU)
    args = ["check", "--no-cache", "--force-exclude", "small.cu"]
    code, modules, output = loaded(CHECK, args, tmp_path, environment(ROOT))
    assert code == 0 and "in 1 file" in output, output
    assert "pathspec" not in modules
    (tmp_path / ".gitignore").write_text("# generated sources\nsmall.cu\n")
    code, modules, output = loaded(CHECK, args, tmp_path, environment(ROOT))
    assert "pathspec" in modules and "no files to check" in output, output


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_named_files_git_tracks_are_not_matched_against_its_rules(tmp_path: Path) -> None:
    """Git's ignore rules are for untracked files: a tracked file pre-commit names is checked even
    where a rule matches it (force-added), and asking git which named files it tracks (one `git
    ls-files`) spares the run pathspec's import; an untracked named file matching a rule is skipped."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("generated*.cu\n")
    for name in ("small.cu", "generated_kept.cu", "generated_new.cu"):
        (tmp_path / name).write_text(SMALL_CU)
    subprocess.run([*git, "add", "small.cu", ".gitignore"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-f", "generated_kept.cu"], cwd=tmp_path, check=True)

    code, modules, output = loaded(CHECK, ["check", "--no-cache", "--force-exclude", "small.cu",
                                           "generated_kept.cu"], tmp_path, environment(ROOT))
    assert code == 0 and "in 2 files" in output, output
    assert "pathspec" not in modules

    code, modules, output = loaded(CHECK, ["check", "--no-cache", "--force-exclude", "small.cu",
                                           "generated_kept.cu", "generated_new.cu"], tmp_path, environment(ROOT))
    assert code == 0 and "in 2 files" in output, output  # the untracked one is matched, and skipped
    assert "pathspec" in modules
