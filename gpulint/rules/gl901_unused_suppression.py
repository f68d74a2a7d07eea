from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from gpulint.findings import Applicability, Finding, Fix, Location
from gpulint.fixes.builders import remove_comment
from gpulint.rules.registry import RULES, Source, rule

if TYPE_CHECKING:
    from gpulint.suppressions import Suppression


@rule("GL901", "unused-suppression", "A `gpulint: ignore[...]` comment that suppresses nothing",
      languages=("cuda", "python"), source=Source.SUPPRESSIONS)
def unused_suppression(suppressions: dict[int, Suppression], source: bytes, display: str,
                       codes: list[str]) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `// gpulint: ignore[CODE]` (or `# gpulint: ignore[CODE]`) comment, or one of
    its codes, that matched no finding in this run. Its source is the file's suppression comments,
    after the other rules' findings were matched against them.

    ## Why is this bad?
    Stale suppressions hide the next real finding on that line and mislead readers about
    what the code does.

    ## Example
    ```cuda
    cudaMalloc(&d_a, bytes);  // gpulint: ignore[GL002]   (d_a is freed right after use now)
    ```

    ## Use instead
    ```cuda
    cudaMalloc(&d_a, bytes);
    ```

    ## Fix safety
    Removing the comment (or the unused code from it) is safe.
    """
    rule_name = RULES["GL901"].name
    reports: list[Finding] = []
    for sup in suppressions.values():
        if sup.codes is None:
            if not sup.used:
                where = "in this file" if sup.whole_file else "on this line"
                kind = "ignore-file" if sup.whole_file else "ignore"
                reports.append(Finding("GL901", rule_name, f"`gpulint: {kind}` suppresses nothing {where}",
                                       Location(display, sup.row, sup.column), properties={"origin": "static"},
                                       fix=Fix("remove the unused suppression", Applicability.SAFE,
                                               (remove_comment(display, source, sup.row, sup.column),))))
            continue
        unused = sorted(c for c in sup.codes - sup.used if c in codes)
        if unused:
            finding = Finding("GL901", rule_name, f"unused suppression of {', '.join(unused)}",
                              Location(display, sup.row, sup.column), properties={"origin": "static",
                                                                                 "unused": unused})
            if not sup.used:  # nothing on the line needs it: the whole comment goes
                finding.fix = Fix("remove the unused suppression", Applicability.SAFE,
                                  (remove_comment(display, source, sup.row, sup.column),))
            reports.append(finding)
    # A file-wide `ignore-file` (bare, or naming GL901) silences these reports too.
    file_wide = [s for s in suppressions.values() if s.whole_file]
    silencer = next((s for s in file_wide if s.codes is None or "GL901" in s.codes), None)
    if silencer is not None and reports:
        silencer.used.add("GL901")
        reports = [f for f in reports if f.location.row == silencer.row and silencer.codes is not None]
    yield from reports
