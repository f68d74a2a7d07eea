"""JUnit XML, as CI systems read test reports (GitLab's `artifacts:reports:junit`, Jenkins, Azure):
one test suite per file, one failed test case per finding; a clean run is one passing case, so a
report with no findings still shows that gpulint ran."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from gpulint.findings import Finding


def render(findings: list[Finding], *, files: int = 0, **_: Any) -> str:
    root = ET.Element("testsuites", name="gpulint", tests=str(max(len(findings), 1)), failures=str(len(findings)))
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.location.path, []).append(f)
    for path, group in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(group)), failures=str(len(group)),
                              errors="0", skipped="0")
        for f in group:
            loc = f.location
            case = ET.SubElement(suite, "testcase", name=f"{f.code} {f.name}", classname=path,
                                 file=path, **({"line": str(loc.row)} if loc.has_line else {}))
            place = f"line {loc.row}, column {loc.column}" if loc.has_line else loc.where
            failure = ET.SubElement(case, "failure", message=f.message, type=f.code)
            failure.text = f"{place}: {f.code} {f.message}"
    if not findings:
        suite = ET.SubElement(root, "testsuite", name="gpulint", tests="1", failures="0", errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name=f"gpulint check ({files} file{'s' if files != 1 else ''})",
                      classname="gpulint")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
