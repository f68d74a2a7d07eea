"""What a non-editable install ships: every file the package reads at run time (headers, the
native tools' sources, built on the user's machine) is package data."""
from __future__ import annotations

import glob
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: gpulint depends on tomli there
    tomllib = pytest.importorskip("tomli")
ROOT = Path(__file__).resolve().parents[1]


def test_every_non_python_file_in_the_package_is_package_data():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["gpulint"]
    package = ROOT / "gpulint"
    files = [path.relative_to(package).as_posix() for path in package.rglob("*")
             if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts]
    assert files, "the package has native sources"
    # setuptools expands each pattern with glob(recursive=True): `*` stops at `/`, `**` does not
    shipped = {Path(name).as_posix() for pattern in patterns
               for name in glob.glob(pattern, root_dir=package, recursive=True)}
    missing = [name for name in files if name not in shipped]
    assert missing == []


def test_the_native_tools_sources_are_among_them():
    from gpulint.dynamic.collectors.native import build

    sources = {path.name for path in (ROOT / "gpulint").rglob("*") if path.is_file()}
    assert set(build.TOOL_SOURCES) <= sources


def requirements_for(platform: str, python: str, extras: tuple[str, ...] = ()) -> set[str]:
    """The distributions pip would install for gpulint itself on `platform` / `python`."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    lines = project["dependencies"] + [r for extra in extras for r in project["optional-dependencies"][extra]]
    for line in lines:
        requirement = Requirement(line)
        environment = {"sys_platform": platform, "python_version": python, "platform_system": platform.title()}
        if requirement.marker is None or requirement.marker.evaluate(environment):
            names.add(requirement.name)
    return names


@pytest.mark.parametrize("platform", ["darwin", "win32"])
@pytest.mark.parametrize("python", ["3.10", "3.14"])
def test_static_installs_need_nothing_of_the_dynamic_side(platform: str, python: str) -> None:
    """cuda-python has no macOS wheel: outside Linux neither it nor the DWARF reader comes along,
    and libclang is the `clang` extra everywhere."""
    names = requirements_for(platform, python)
    assert not names & {"cuda-python", "pyelftools", "libclang"}
    assert {"click", "tree-sitter", "tree-sitter-cuda", "tree-sitter-python", "numpy"} <= names
    assert ("tomli" in names) == (python == "3.10")  # tomllib arrived in 3.11
    assert "libclang" in requirements_for(platform, python, ("clang",))


def test_linux_installs_the_dynamic_side_by_default() -> None:
    names = requirements_for("linux", "3.11")
    assert {"cuda-python", "pyelftools"} <= names and "libclang" not in names and "tomli" not in names


def test_every_import_of_an_optional_package_is_lazy() -> None:
    """A platform without cuda-python, pyelftools or libclang imports gpulint's modules all the same:
    those packages are imported inside the functions that need them, never at a module's top."""
    import ast

    optional = ("cuda", "elftools", "clang", "tomli")
    offenders = []
    for path in (ROOT / "gpulint").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                          if n.split(".")[0] in optional]
    assert offenders == []


def test_the_clang_frontend_without_libclang_says_so_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpulint.static.cuda_clang as cuda_clang
    from test_cli import LATE_FREE, run

    monkeypatch.setattr(cuda_clang, "available", lambda: False)
    for name in ("a.cu", "b.cu"):
        (tmp_path / name).write_text(LATE_FREE)
    result = run("check", "--no-cache", "--frontend", "clang", "a.cu", "b.cu", cwd=tmp_path)
    assert result.exit_code == 1  # the findings, from tree-sitter
    assert result.stderr.count("the clang frontend needs libclang") == 1 and "gpulint[clang]" in result.stderr
    assert "needs libclang" not in run("check", "--no-cache", "a.cu", cwd=tmp_path).stderr


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_run_outside_linux_is_a_clear_error(platform: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_cli import run

    monkeypatch.setattr("sys.platform", platform)
    result = run("run", "--", "./app")
    assert result.exit_code == 2
    assert f"gpulint run needs Linux with an NVIDIA GPU and driver (this is {platform})" in result.stderr
