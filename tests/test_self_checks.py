"""gpulint's own code under the checks its README asks of contributors, as part of the one test
command: ruff (pyflakes, bugbear, complexity) on everything, mypy on the model, the findings and the
rules (both configured in pyproject.toml), and no import the layering forbids."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

from conftest import ROOT

PACKAGE = ROOT / "gpulint"


def _tool(module: str) -> None:
    if subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True).returncode != 0:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]' installs it)")


def test_ruff_finds_nothing() -> None:
    _tool("ruff")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    _tool("mypy")
    cache = ROOT / ".mypy_cache"
    existed = cache.exists()
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    if not existed:
        shutil.rmtree(cache, ignore_errors=True)
    assert done.returncode == 0, done.stdout + done.stderr


def _imports() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> gpulint modules it imports (at any depth of the file), and imports of private names
    across modules."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = defaultdict(set)
    private = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # Imports for annotations only (`if TYPE_CHECKING:`) never run: not an edge.
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and getattr(block.test, "id", getattr(block.test, "attr", "")) == "TYPE_CHECKING"
                       for statement in block.body for n in ast.walk(statement)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    if target in modules and target != name:
                        graph[name].add(target)
                        if target == base and alias.name.startswith("_") and not alias.name.startswith("__"):
                            private.append(f"{name} imports {base}.{alias.name}")
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules and a.name != name)
    return graph, private


def test_rules_read_only_the_model() -> None:
    graph, _ = _imports()
    bad = sorted(f"{m} imports {t}" for m, targets in graph.items() if m.startswith("gpulint.rules")
                 for t in targets if t.startswith(("gpulint.dynamic", "gpulint.static", "gpulint.engine")))
    assert not bad, bad


def test_no_import_cycles() -> None:
    graph, _ = _imports()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    # A parent package importing its own submodules for registration is not a cycle of work.
    cycles = sorted(f"{a} <-> {b}" for a in graph for b in graph[a]
                    if a < b and reaches(b, a) and not b.startswith(a + ".") and not a.startswith(b + "."))
    assert not cycles, cycles


def test_no_private_names_across_modules() -> None:
    _, private = _imports()
    assert not private, private
