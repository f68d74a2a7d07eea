"""GitLab Code Quality (`artifacts:reports:codequality`): a JSON array of issues in the subset of
the Code Climate format GitLab reads — description, check_name, fingerprint, severity and
location.path / location.lines.begin.  The fingerprint is the baseline's (code, file, line text,
occurrence), so an issue keeps its identity across commits that move it."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from gpulint.baseline import Fingerprints
from gpulint.findings import Finding
from gpulint.output import level

# GitLab's severities: info, minor, major, critical, blocker.
_SEVERITY = {"error": "critical", "warning": "major", "note": "info"}


def render(findings: list[Finding], **_: Any) -> str:
    prints = Fingerprints()
    seen: Counter = Counter()
    issues = []
    for f in findings:
        key = prints.of(f)
        seen[key] += 1  # two findings with one fingerprint stay two issues
        issues.append({
            "description": f"{f.code} {f.message}",
            "check_name": f"{f.code} {f.name}",
            "fingerprint": hashlib.sha256(f"{key}:{seen[key]}".encode()).hexdigest(),
            "severity": _SEVERITY[level(f.code)],
            "location": {"path": f.location.path, "lines": {"begin": max(f.location.row, 1)}},
        })
    return json.dumps(issues, indent=1) + "\n"
