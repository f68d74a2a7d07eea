"""`gpulint fix --from-sarif` on hostile input (issue 15): anything that is not SARIF 2.1.0 of the
shape gpulint reads is `gpulint: error: ...` and exit 2, never a traceback, and no file changes."""
from __future__ import annotations

import json
import os

import pytest

from conftest import cli_in
from test_fix import DEAD

invoke = cli_in


@pytest.fixture
def recorded(tmp_path) -> dict:
    (tmp_path / "dead.cu").write_text(DEAD)
    assert invoke(tmp_path, "check", "--format", "sarif", "-o", "gl.sarif", "dead.cu").exit_code == 1
    return json.loads((tmp_path / "gl.sarif").read_text())


def replacement(log: dict) -> dict:
    fix = next(f for r in log["runs"][0]["results"] for f in r.get("fixes", []))
    return fix["artifactChanges"][0]["replacements"][0]


def _mutations():
    def runs_not_objects(log):
        log["runs"] = [1, 2]

    def region_null(log):
        replacement(log)["deletedRegion"] = None

    def uri_nul(log):
        fix = next(f for r in log["runs"][0]["results"] for f in r.get("fixes", []))
        fix["artifactChanges"][0]["artifactLocation"]["uri"] = "dead\u0000.cu"

    def inserted_not_string(log):
        replacement(log)["insertedContent"] = {"text": 42}

    def negative_offset(log):
        replacement(log)["deletedRegion"]["byteOffset"] = -3

    def bool_length(log):
        replacement(log)["deletedRegion"]["byteLength"] = True

    def wrong_version(log):
        log["version"] = "2.0.0"

    def not_sarif(log):
        log.clear()
        log["hello"] = "world"

    return [
        (runs_not_objects, "runs[0] should be an object"),
        (region_null, "deletedRegion should be an object"),
        (uri_nul, "uri should be a URI string without control characters"),
        (inserted_not_string, "insertedContent.text should be a string"),
        (negative_offset, "byteOffset should be a non-negative integer"),
        (bool_length, "byteLength should be a non-negative integer"),
        (wrong_version, "not SARIF 2.1.0 (version '2.0.0')"),
        (not_sarif, "the document has no `version`"),
    ]


@pytest.mark.parametrize("mutate, message", _mutations(), ids=lambda x: getattr(x, "__name__", ""))
def test_hostile_sarif_is_exit_2_and_changes_nothing(tmp_path, recorded, mutate, message) -> None:
    mutate(recorded)
    (tmp_path / "bad.sarif").write_text(json.dumps(recorded))
    result = invoke(tmp_path, "fix", "--apply", "--unsafe-fixes", "--from-sarif", "bad.sarif")
    assert result.exit_code == 2, result.output
    assert "gpulint: error: bad.sarif: " in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert (tmp_path / "dead.cu").read_text() == DEAD


def test_deep_nesting_and_non_files(tmp_path) -> None:
    (tmp_path / "dead.cu").write_text(DEAD)
    (tmp_path / "deep.sarif").write_text("[" * 100_000 + "]" * 100_000)
    result = invoke(tmp_path, "fix", "--apply", "--from-sarif", "deep.sarif")
    assert result.exit_code == 2 and "nested too deeply" in result.stderr
    (tmp_path / "folder.sarif").mkdir()
    result = invoke(tmp_path, "fix", "--apply", "--from-sarif", "folder.sarif")
    assert result.exit_code == 2 and "is a directory" in result.stderr  # click's own check
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.sarif")
        result = invoke(tmp_path, "fix", "--apply", "--from-sarif", "pipe.sarif")
        assert result.exit_code == 2 and "not a regular file" in result.stderr
    result = invoke(tmp_path, "fix", "--apply", "--from-sarif", "missing.sarif")
    assert result.exit_code == 2 and "no such file" in result.stderr
    assert (tmp_path / "dead.cu").read_text() == DEAD


def test_valid_sarif_still_applies(tmp_path, recorded) -> None:
    result = invoke(tmp_path, "fix", "--apply", "--from-sarif", "gl.sarif")
    assert result.exit_code in (0, 1), result.stderr
    assert (tmp_path / "dead.cu").read_text() != DEAD
