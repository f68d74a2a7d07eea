"""The grouping benchmark: a small CNN trained for 200 steps (benchmarks/programs/cnn_train.py)
under `gpulint run`, and how many findings `gpulint analyze` gives per object, per site and rule,
and above the default `min-bytes`; plus the length of the text report.

    python benchmarks/cnn_grouping.py OUT [STEPS]
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    steps = sys.argv[2] if len(sys.argv) > 2 else "200"
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "cnn.jsonl"
    ran = subprocess.run([sys.executable, "-m", "gpulint", "run", "-o", str(trace), "--", sys.executable,
                          str(HERE / "programs" / "cnn_train.py"), steps], capture_output=True, text=True)
    (out / "cnn.run.log").write_text(ran.stdout + "\n--- stderr\n" + ran.stderr)

    from gpulint.config import Settings
    from gpulint.dynamic import analyze as analysis
    from gpulint.rules import RULES

    seen: dict = {}
    grouping = analysis.by_site

    def count(findings, model, min_bytes):
        seen["per_object"] = len(findings)
        seen["zero_byte"] = sum(1 for f in findings if f.properties.get("bytes") == 0)
        return grouping(findings, model, min_bytes)

    analysis.by_site = count
    grouped = analysis.analyze(trace, Settings(min_bytes=0), sorted(RULES))
    shown = analysis.analyze(trace, Settings(), sorted(RULES))
    keys = [(f.code, f.location.path, f.location.row) for f in grouped.findings]
    text = subprocess.run([sys.executable, "-m", "gpulint", "analyze", str(trace)], capture_output=True, text=True)
    (out / "cnn.analyze.txt").write_text(text.stdout)
    result = {"device": grouped.run.trace.meta.get("device"), "steps": int(steps), "exit": ran.returncode,
              "per_object_findings": seen["per_object"], "zero_byte_object_findings": seen["zero_byte"],
              "sites": len(set(keys)), "one_per_site_and_rule": len(keys) == len(set(keys)),
              "grouped_findings": len(grouped.findings), "shown_at_default_min_bytes": len(shown.findings),
              "hidden": len(shown.hidden), "text_report_lines": len(text.stdout.splitlines()),
              "peak": grouped.peaks.actual, "ranked": [f.properties.get("peak_saved_bytes", 0) for f in shown.findings],
              "codes": sorted({f.code for f in shown.findings})}
    (out / "cnn.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
