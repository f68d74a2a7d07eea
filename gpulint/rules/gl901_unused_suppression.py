from __future__ import annotations

from typing import Iterator

from gpulint.findings import Finding
from gpulint.history import Unit
from gpulint.rules.registry import RuleSettings, rule


@rule("GL901", "unused-suppression", "A `gpulint: ignore[...]` comment that suppresses nothing",
      languages=("cuda", "python"))
def unused_suppression(unit: Unit, settings: RuleSettings) -> Iterator[Finding]:
    """
    ## What it does
    Reports a `// gpulint: ignore[CODE]` (or `# gpulint: ignore[CODE]`) comment, or one of
    its codes, that matched no finding in this run. The engine raises this finding after the
    other rules ran; there is nothing to check in histories.

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
    return iter(())
