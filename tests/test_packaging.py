"""What a non-editable install ships: every file the package reads at run time (headers, the
native tools' sources, built on the user's machine) is package data."""
from __future__ import annotations

import glob
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")
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
