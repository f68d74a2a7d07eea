"""The formats other tools consume — grouped, json-lines, junit, gitlab (Code Quality), rdjson
(reviewdog) — each checked against the shape its consumer documents, and colour as NO_COLOR,
FORCE_COLOR and --color say."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpulint.cli import use_color
from test_cli import CLEAN, LATE_FREE, run

ALL = ("--select", "ALL", "--min-bytes", "0", "--no-cache")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "late.cu").write_text(LATE_FREE)
    (tmp_path / "again.cu").write_text(LATE_FREE)
    (tmp_path / "ok.cu").write_text(CLEAN)
    return tmp_path


def report(folder: Path, fmt: str, *paths: str) -> tuple[str, list[dict]]:
    result = run("check", *ALL, "--format", fmt, *(paths or (".",)), cwd=folder)
    assert result.exit_code in (0, 1), result.output
    reference = run("check", *ALL, "--format", "json", *(paths or (".",)), cwd=folder)
    return result.stdout, json.loads(reference.stdout)


def test_grouped_names_each_file_once(project: Path) -> None:
    text, findings = report(project, "grouped")
    lines = text.splitlines()
    assert [line for line in lines if line.endswith(".cu")] == ["again.cu", "late.cu"]
    body = [line for line in lines if line.startswith("  ")]
    assert len(body) == len(findings) and all(" GL0" in line for line in body)
    assert lines[-1].startswith(f"Found {len(findings)} findings in 3 files")


def test_json_lines_are_the_json_findings(project: Path) -> None:
    text, findings = report(project, "json-lines")
    assert [json.loads(line) for line in text.splitlines()] == findings
    assert report(project, "json-lines", "ok.cu")[0] == ""


def test_junit_has_a_failed_case_per_finding_and_passes_clean(project: Path) -> None:
    text, findings = report(project, "junit")
    root = ET.fromstring(text)
    assert root.tag == "testsuites" and int(root.get("failures")) == len(findings) == int(root.get("tests"))
    cases = root.findall("testsuite/testcase")
    assert len(cases) == len(findings)
    for case, finding in zip(cases, findings):
        failure = case.find("failure")
        assert failure is not None and failure.get("type") == finding["code"] and failure.get("message") == finding["message"]
        assert case.get("file") == finding["filename"] and case.get("line") == str(finding["location"]["row"])
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase")) == int(suite.get("failures"))
    clean = ET.fromstring(report(project, "junit", "ok.cu")[0])
    assert clean.get("failures") == "0" and len(clean.findall("testsuite/testcase")) == 1
    assert clean.find("testsuite/testcase/failure") is None


# GitLab's documented Code Quality fields (docs.gitlab.com, "Code Quality report format").
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {"type": "object", "required": ["path", "lines"], "properties": {
                "path": {"type": "string"},
                "lines": {"type": "object", "required": ["begin"], "properties": {"begin": {"type": "integer", "minimum": 1}}},
            }},
        },
    },
}


def test_gitlab_code_quality(project: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    text, findings = report(project, "gitlab")
    issues = json.loads(text)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert len(issues) == len(findings)
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # identical files, still distinct issues
    assert [(i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues] == [
        (f["filename"], f["location"]["row"]) for f in findings]
    # The fingerprint survives the finding's line moving.
    source = project / "late.cu"
    before = {i["fingerprint"] for i in issues if i["location"]["path"] == "late.cu"}
    source.write_text("// moved\n" + source.read_text())
    after = {i["fingerprint"] for i in json.loads(report(project, "gitlab")[0]) if i["location"]["path"] == "late.cu"}
    assert before == after


# reviewdog's Diagnostic Format (proto/rdf/reviewdog.proto, as JSON).
_POSITION = {"type": "object", "required": ["line"], "properties": {"line": {"type": "integer", "minimum": 1},
                                                                     "column": {"type": "integer", "minimum": 1}}}
_RANGE = {"type": "object", "required": ["start"], "properties": {"start": _POSITION, "end": _POSITION}}
RDJSON_SCHEMA = {
    "type": "object",
    "required": ["diagnostics"],
    "properties": {
        "source": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
        "diagnostics": {"type": "array", "items": {
            "type": "object",
            "required": ["message", "location"],
            "properties": {
                "message": {"type": "string"},
                "location": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"},
                                                                                     "range": _RANGE}},
                "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
                "code": {"type": "object", "required": ["value"], "properties": {"value": {"type": "string"},
                                                                                 "url": {"type": "string"}}},
                "suggestions": {"type": "array", "items": {"type": "object", "required": ["range", "text"],
                                                           "properties": {"range": _RANGE, "text": {"type": "string"}}}},
                "related_locations": {"type": "array"},
            },
        }},
    },
}


def offset(text: bytes, position: dict) -> int:
    starts = [0] + [i + 1 for i, b in enumerate(text) if b == ord("\n")]
    return starts[position["line"] - 1] + position["column"] - 1


def test_rdjson_suggestions_apply_as_the_fixes_do(project: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    text, findings = report(project, "rdjson", "late.cu")
    result = json.loads(text)
    jsonschema.validate(result, RDJSON_SCHEMA)
    assert [d["code"]["value"] for d in result["diagnostics"]] == [f["code"] for f in findings]
    source = (project / "late.cu").read_bytes()
    fixed = [(d, f) for d, f in zip(result["diagnostics"], findings) if f["fix"]]
    assert fixed, "LATE_FREE has a fix"
    for diagnostic, finding in fixed:
        by_suggestion, by_fix = source, source
        for s in sorted(diagnostic["suggestions"], key=lambda s: -offset(source, s["range"]["start"])):
            a, b = offset(source, s["range"]["start"]), offset(source, s["range"]["end"])
            by_suggestion = by_suggestion[:a] + s["text"].encode() + by_suggestion[b:]
        for e in sorted(finding["fix"]["edits"], key=lambda e: -e["start"]):
            by_fix = by_fix[:e["start"]] + e["content"].encode() + by_fix[e["end"]:]
        assert by_suggestion == by_fix != source


@pytest.mark.parametrize("choice, environ, tty, expected", [
    ("auto", {}, True, True), ("auto", {}, False, False),
    ("auto", {"NO_COLOR": "1"}, True, False), ("auto", {"NO_COLOR": ""}, True, True),
    ("auto", {"FORCE_COLOR": "1"}, False, True), ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, True),
    ("always", {"NO_COLOR": "1"}, False, True), ("never", {"FORCE_COLOR": "1"}, True, False),
])
def test_colour_follows_the_flag_then_the_environment_then_the_terminal(choice, environ, tty, expected) -> None:
    assert use_color(choice, "text", None, environ, lambda: tty) is expected
    assert use_color(choice, "json", None, environ, lambda: tty) is False  # machine formats never
    assert use_color(choice, "text", "out.txt", environ, lambda: tty) is False  # nor files


def test_color_flag_reaches_the_output(project: Path) -> None:
    coloured = run("check", *ALL, "--color", "always", "late.cu", cwd=project)
    plain = run("check", *ALL, "--color", "never", "late.cu", cwd=project)
    assert "\x1b[" in coloured.stdout and "\x1b[" not in plain.stdout
    assert click_unstyle(coloured.stdout) == plain.stdout


def click_unstyle(text: str) -> str:
    import click

    return click.unstyle(text)
