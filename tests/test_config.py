"""Configuration: the nearest file to each analysed path wins; `--config` and `--isolated` as in
Ruff; every bad key or value is an error that names the file and the key (exit 2)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_cli import LATE_FREE, run

# LATE_FREE has one GL002 (d_a) and one GL003 (d_b could reuse d_a's buffer).


def codes_by_file(result) -> dict[str, set[str]]:
    assert result.exit_code in (0, 1), result.output
    out: dict[str, set[str]] = {}
    for f in json.loads(result.output):
        out.setdefault(f["filename"], set()).add(f["code"])
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.gpulint]\nselect = ["GL002"]\n')
    for rel in ("top.cu", "sub/inner.cu", "sub/legacy/old.cu"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(LATE_FREE)
    return tmp_path


def test_nearest_configuration_wins(tree: Path) -> None:
    (tree / "sub" / "gpulint.toml").write_text('select = ["GL003"]\n')
    found = codes_by_file(run("check", "--format", "json", ".", cwd=tree))
    assert found == {"top.cu": {"GL002"}, "sub/inner.cu": {"GL003"}, "sub/legacy/old.cu": {"GL003"}}
    # The same from inside the subfolder, and for a single file named on the command line.
    assert codes_by_file(run("check", "--format", "json", "inner.cu", cwd=tree / "sub")) == {"inner.cu": {"GL003"}}
    assert codes_by_file(run("check", "--format", "json", "sub/inner.cu", cwd=tree)) == {"sub/inner.cu": {"GL003"}}


def test_extend_select_and_per_file_ignores(tree: Path) -> None:
    (tree / "sub" / "gpulint.toml").write_text(
        'select = ["GL002"]\nextend-select = ["GL003"]\n\n[per-file-ignores]\n"legacy/*" = ["GL002"]\n')
    found = codes_by_file(run("check", "--format", "json", ".", cwd=tree))
    assert found == {"top.cu": {"GL002"}, "sub/inner.cu": {"GL002", "GL003"}, "sub/legacy/old.cu": {"GL003"}}
    assert codes_by_file(run("check", "--format", "json", "--extend-select", "GL003", "top.cu", cwd=tree)) == \
        {"top.cu": {"GL002", "GL003"}}


def test_exclude_is_relative_to_the_configuration(tree: Path) -> None:
    (tree / "sub" / "gpulint.toml").write_text('select = ["GL002"]\nexclude = ["legacy"]\n')
    found = codes_by_file(run("check", "--format", "json", ".", cwd=tree))
    assert set(found) == {"top.cu", "sub/inner.cu"}


def test_config_option_and_isolated(tree: Path) -> None:
    (tree / "sub" / "gpulint.toml").write_text('select = ["GL003"]\n')
    (tree / "ci.toml").write_text('select = ["GL002", "GL003"]\n')
    found = codes_by_file(run("check", "--format", "json", "--config", "ci.toml", ".", cwd=tree))
    assert found == {name: {"GL002", "GL003"} for name in ("top.cu", "sub/inner.cu", "sub/legacy/old.cu")}
    isolated = codes_by_file(run("check", "--format", "json", "--isolated", "sub/inner.cu", cwd=tree))
    assert isolated == {"sub/inner.cu": {"GL002", "GL003"}}  # every rule, no file consulted
    missing = run("check", "--config", "nope.toml", ".", cwd=tree)
    assert missing.exit_code == 2 and "--config nope.toml: no such file" in missing.output


def test_thresholds_and_cli_override(tree: Path) -> None:
    (tree / "gpulint.toml").write_text('[threshold]\nGL002 = 2\n')
    assert codes_by_file(run("check", "--format", "json", "top.cu", cwd=tree)) == {"top.cu": {"GL003"}}
    assert codes_by_file(run("check", "--format", "json", "--threshold", "GL002=1", "top.cu", cwd=tree)) == \
        {"top.cu": {"GL002", "GL003"}}


def test_compile_commands_relative_to_the_configuration(tree: Path) -> None:
    (tree / "sub" / "db.json").write_text(json.dumps([{"directory": str(tree / "sub"), "file": "inner.cu",
                                                      "command": "nvcc -c inner.cu"}]))
    (tree / "sub" / "gpulint.toml").write_text('compile-commands = "db.json"\nselect = ["GL002"]\n')
    assert codes_by_file(run("check", "--format", "json", "sub/inner.cu", cwd=tree)) == {"sub/inner.cu": {"GL002"}}


@pytest.mark.parametrize("text, key", [
    ('select = 5\n', "select"),
    ('select = ["GL999"]\n', "select"),
    ('extend-select = ["XX"]\n', "extend-select"),
    ('frontend = "gcc"\n', "frontend"),
    ('jobs = -1\n', "jobs"),
    ('jobs = true\n', "jobs"),
    ('reuse-tolerance = 2\n', "reuse-tolerance"),
    ('exclude = [1, 2]\n', "exclude"),
    ('per-file-ignores = ["x"]\n', "per-file-ignores"),
    ('[per-file-ignores]\n"*.cu" = ["GL999"]\n', "per-file-ignores"),
    ('[threshold]\nGL002 = "many"\n', "threshold"),
    ('[threshold]\nGL900 = 2\n', "threshold"),
    ('compile-commands = "missing.json"\n', "compile-commands"),
    ('colour = "blue"\n', "colour"),
])
def test_bad_setting_names_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / "gpulint.toml").write_text(text)
    (tmp_path / "a.cu").write_text(LATE_FREE)
    for command in (["check", "a.cu"], ["fix", "--diff", "a.cu"]):
        result = run(*command, cwd=tmp_path)
        assert result.exit_code == 2, result.output
        assert "gpulint.toml" in result.output and key in result.output, result.output
