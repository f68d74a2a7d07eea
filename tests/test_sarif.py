"""SARIF 2.1.0: schema-valid, with the fields GitHub code scanning requires."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from conftest import FIXTURES, ROOT
from gpulint.cli import main

# OASIS's SARIF 2.1.0 schema, shipped with the tests so that validation never skips.
SCHEMA = json.loads((ROOT / "tests" / "schemas" / "sarif-schema-2.1.0.json").read_text())


def sarif_for(*paths: str, cwd: Path = ROOT, extra: tuple[str, ...] = ()) -> dict:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        # Every rule and every size (module-scoped callers run before the conftest fixture that
        # makes that the tests' default).
        result = CliRunner().invoke(main, ["check", "--format", "sarif", "--min-bytes", "0", *(extra or ("--select", "ALL")),
                                           *paths], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


# Every SARIF the suite produces: the CUDA and Python fixtures, the example, a file with a GL900.
@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, dict]:
    bad = tmp_path_factory.mktemp("bad")
    (bad / "empty.cu").write_text("")
    (bad / "ok.cu").write_text("__global__ void k(float *a) { a[0] = 1; }\n"
                               "int main() { float *d; cudaMalloc(&d, 4); k<<<1,1>>>(d); return 0; }  // gpulint: ignore[GL005]\n")
    return {
        "cuda": sarif_for(str((FIXTURES / "cuda").relative_to(ROOT))),
        "python": sarif_for(str((FIXTURES / "python").relative_to(ROOT))),
        "example": sarif_for("examples"),
        "bad": sarif_for(".", cwd=bad),
    }


def test_every_log_is_schema_valid(logs) -> None:
    for log in logs.values():
        jsonschema.validate(log, SCHEMA)


def test_github_required_fields(logs) -> None:
    for name, log in logs.items():
        assert log["$schema"] and log["version"] == "2.1.0"
        run = log["runs"][0]
        driver = run["tool"]["driver"]
        assert driver["name"] == "gpulint" and driver["version"] and driver["informationUri"]
        ids = [r["id"] for r in driver["rules"]]
        assert ids == sorted(ids)
        for rule in driver["rules"]:
            assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
            assert rule["help"]["text"] and rule["help"]["markdown"].startswith("## What it does")
            assert rule["helpUri"].endswith(rule["id"]) and rule["name"]
            props = rule["properties"]
            assert props["tags"] and props["precision"] in ("very-high", "high", "medium", "low")
            assert props["problem.severity"] in ("error", "warning", "recommendation")
        assert run["automationDetails"]["id"] == "gpulint/"
        assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
        assert run["results"], name
        for result in run["results"]:
            assert ids[result["ruleIndex"]] == result["ruleId"]
            assert result["level"] in ("error", "warning", "note") and result["message"]["text"]
            loc = result["locations"][0]["physicalLocation"]
            assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
            assert not loc["artifactLocation"]["uri"].startswith(("/", "file:"))
            assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
            assert ":" in result["partialFingerprints"]["primaryLocationLineHash"]
            for related in result.get("relatedLocations", []):
                assert related["physicalLocation"]["region"]["startColumn"] >= 1 and related["message"]["text"]


def test_results_match_the_json_output_and_leave_suppressed_findings_out(logs) -> None:
    bad = logs["bad"]["runs"][0]["results"]
    # empty.cu is GL900 (an error); ok.cu's GL005 is suppressed and absent.
    assert [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in bad] \
        == [("GL900", "error", "empty.cu")]
    example = logs["example"]["runs"][0]["results"]
    assert len(example) == 13
    hashes = [r["partialFingerprints"]["primaryLocationLineHash"] for r in example]
    assert len(set(hashes)) == len({(r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in example})


def test_line_hash_survives_moved_lines(tmp_path: Path) -> None:
    code = (ROOT / "examples" / "heat_pipeline.cu").read_text()
    (tmp_path / "a.cu").write_text(code)
    before = {r["ruleId"] + r["message"]["text"].split(" at line")[0]: r["partialFingerprints"]["primaryLocationLineHash"]
              for r in sarif_for("a.cu", cwd=tmp_path)["runs"][0]["results"]}
    (tmp_path / "a.cu").write_text("// a new header comment\n\n" + code)
    after = {r["ruleId"] + r["message"]["text"].split(" at line")[0]: r["partialFingerprints"]["primaryLocationLineHash"]
             for r in sarif_for("a.cu", cwd=tmp_path)["runs"][0]["results"]}
    shared = set(before) & set(after)
    assert shared and all(before[k] == after[k] for k in shared)


def _multitool() -> str | None:
    explicit = os.environ.get("SARIF_MULTITOOL")
    if explicit and Path(explicit).exists():
        return explicit
    tools = ROOT / ".ci" / "tools"
    if shutil.which("node") and (tools / "node_modules").is_dir():
        found = subprocess.run(["node", "-e", "console.log(require('@microsoft/sarif-multitool-linux'))"],
                               cwd=tools, capture_output=True, text=True)
        path = found.stdout.strip()
        if found.returncode == 0 and path and Path(path).exists():
            return path
    return None


@pytest.mark.skipif(_multitool() is None, reason="sarif-multitool not installed (.ci/run installs it into .ci/tools)")
def test_sarif_multitool_with_github_rules(logs, tmp_path: Path) -> None:
    for name, log in logs.items():
        path = tmp_path / f"{name}.sarif"
        path.write_text(json.dumps(log))
        proc = subprocess.run([_multitool(), "validate", "--rule-kind", "Sarif;Ghas", str(path)],
                              capture_output=True, text=True, timeout=300)
        errors = [line for line in proc.stdout.splitlines() if ": error " in line]
        assert proc.returncode == 0 and not errors, "\n".join(errors[:10]) or proc.stdout[-2000:]


def test_a_finding_without_a_line_in_every_format(tmp_path: Path) -> None:
    """A binary built without -g: the finding names the file and the function, never a line, in
    every format, and the SARIF stays valid (no region; a logical location for the function)."""
    from gpulint.findings import Finding, Location, finding_from_dict, finding_to_dict
    from gpulint.output import FORMATS

    where = Location(str(tmp_path / "app"), 0, 0, symbol="main")
    found = [Finding("GL005", "memory-leak", "`cudaMalloc#1 (4.0 MiB)` is never freed", where,
                     properties={"peak_saved_bytes": 0})]
    assert finding_from_dict(finding_to_dict(found[0])).location == where
    text = FORMATS["text"](found, files=1)
    assert f"{tmp_path / 'app'}: in main: GL005" in text and ":0:" not in text
    assert "line=" not in FORMATS["github"](found)
    data = json.loads(FORMATS["json"](found))
    assert data[0]["location"] == {"row": 0, "column": 0, "symbol": "main"}
    log = json.loads(FORMATS["sarif"](found, rules=["GL005"], root=tmp_path))
    location = log["runs"][0]["results"][0]["locations"][0]
    assert "region" not in location["physicalLocation"]
    assert location["logicalLocations"] == [{"fullyQualifiedName": "main", "kind": "function"}]
    if SCHEMA is not None:
        jsonschema.validate(log, SCHEMA)
    with pytest.raises(ValueError):
        Location("app", 0, 0)  # no line and no function: never built
