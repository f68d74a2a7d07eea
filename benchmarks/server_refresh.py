#!/usr/bin/env python3
"""How long does `gpulint server` take to refresh one file's diagnostics in a large project?

Copies a project (default: cuda-samples) to a temporary folder (the server writes
`.gpulint_cache/` there, as `gpulint check` does), and times in this process, in CPU time
(`time.process_time`, best of `--repeat` after the first), what the server does:

- indexing the workspace folder once (`Project.index`: the whole-project check), with the cache
  cold and then warm (a second start of the server);
- the first refresh of each file (its analysis against the folder's table, which is built then,
  and the conversion to LSP diagnostics);
- later edits: a comment appended, and a line inserted at the top (every row moves: where the
  file's summary records rows, it changes and the table is built again);
- for comparison, what a refresh costs that reads every file again: `check_paths` over the folder
  with the cache warm (bytes hashed, entries read, the table built) and cold.

Then, through the protocol (`python -m gpulint server` over stdio, as an editor), the wall time
from didOpen to the first diagnostics and to those against the whole program, and from each
didChange to its diagnostics (best of `--repeat`; wall time on a shared machine is noisy).
A benchmark, not a test: it always exits 0.

    python benchmarks/server_refresh.py --markdown
    python benchmarks/server_refresh.py --folder /work/realcode/cuda-samples --file Samples/.../main.cu
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
from harness import machine_description, today  # noqa: E402

FOLDER = Path("/work/realcode/cuda-samples")
FILES = ("Samples/2_Concepts_and_Techniques/eigenvalues/main.cu",  # 10 names resolved in other files
         "Samples/5_Domain_Specific/convolutionFFT2D/main.cpp",  # 8 such names, the most findings
         "Samples/5_Domain_Specific/marchingCubes/marchingCubes.cpp",  # 34 KB, 11 such names
         "Samples/0_Introduction/vectorAdd/vectorAdd.cu")  # one file alone


def cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def best(repeat: int, call: Callable[[], object]) -> float:
    return min(cpu(call) for _ in range(repeat))


def new_project():
    from gpulint.config import DEFAULT_SELECT, Resolver
    from gpulint.rules import RULES
    from gpulint.server.project import Project

    threshold_codes = [code for code, rule in RULES.items() if rule.has_threshold]
    resolver = Resolver({"jobs": 1, "default_select": DEFAULT_SELECT}, sorted(RULES), threshold_codes)
    return Project(Path.cwd(), resolver), resolver


def refresh(project, path: Path, data: bytes) -> int:
    """What the server does for one version of a buffer: analyse, convert."""
    from gpulint.server import convert

    result = project.analyse(path, data)
    places = convert.Places(result.path, convert.Positions(data))
    return len(convert.diagnostics(result.findings, places))


def key(finding) -> tuple:
    return (finding.location.row, finding.location.column, finding.code, finding.message)


def in_process(files: list[str], repeat: int) -> dict:
    from gpulint.engine import check_paths

    from gpulint.server import convert  # noqa: F401  (imported when the server starts, not in a refresh)

    figures: dict = {"files": {}}
    project, resolver = new_project()
    start = time.process_time()
    figures["indexed"] = project.index()
    figures["index_cold"] = time.process_time() - start
    figures["summaries"] = len(project.summaries)
    warm, _ = new_project()
    figures["index_warm"] = cpu(warm.index)
    for name in files:
        path = Path(name)
        data = path.read_bytes()
        fresh, _ = new_project()
        fresh.index()
        first = cpu(lambda: refresh(fresh, path, data))  # noqa: B023
        edits = iter(range(10**6))
        comment = best(repeat, lambda: refresh(fresh, path, data + f"\n// edit {next(edits)}\n".encode()))  # noqa: B023
        moved = best(repeat, lambda: refresh(fresh, path, b"\n" * (next(edits) % 2 + 1) + data))  # noqa: B023
        figures["files"][name] = {"bytes": len(data), "first": first, "comment": comment, "moved": moved,
                                  "findings": refresh(fresh, path, data),
                                  "server": sorted(key(f) for f in fresh.analyse(path, data).findings)}
    figures["check_warm"] = best(repeat, lambda: check_paths(["."], resolver, cache=True))
    # The server's findings of each file, unedited, are `check`'s findings of it in the whole folder.
    checked = check_paths(["."], resolver, cache=True).findings
    for name, f in figures["files"].items():
        f["same_as_check"] = f.pop("server") == sorted(key(g) for g in checked if g.location.path == name)
    shutil.rmtree(".gpulint_cache", ignore_errors=True)
    figures["check_cold"] = cpu(lambda: check_paths(["."], resolver, cache=False))
    return figures


def over_the_protocol(files: list[str], repeat: int) -> dict:
    """Wall seconds as an editor sees them (the server in its own process)."""
    from lsp_client import Client

    figures: dict = {}
    folder = Path.cwd()
    client = Client(folder)
    try:
        client.request("initialize", {"processId": None, "rootUri": folder.as_uri(), "capabilities": {},
                                      "workspaceFolders": [{"uri": folder.as_uri(), "name": "w"}]})
        client.notify("initialized", {})
        name = files[0]
        uri = (folder / name).absolute().as_uri()
        text = Path(name).read_text(encoding="utf-8", errors="replace")

        def published(version: int) -> None:
            client.wait_for("textDocument/publishDiagnostics",
                            lambda p: p["uri"] == uri and p.get("version") == version, timeout=600)

        start = time.perf_counter()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1,
                                                                "text": text}})
        published(1)
        figures["open_alone"] = time.perf_counter() - start
        published(1)  # again, against the whole program, once the folder is summarised
        figures["open_indexed"] = time.perf_counter() - start
        times = []
        for version in range(2, 2 + repeat):
            start = time.perf_counter()
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"text": text + f"\n// {version}\n"}]})
            published(version)
            times.append(time.perf_counter() - start)
        figures["change"] = min(times)
        client.request("shutdown", None)
        client.notify("exit", None)
    finally:
        client.close()
    return figures


def report(figures: dict, wall: dict, folder: Path, markdown: bool, all_rules: bool) -> None:
    ms = lambda s: f"{s * 1000:.0f} ms" if s < 10 else f"{s:.1f} s"  # noqa: E731
    rows = [(f"index the folder ({figures['indexed']} files, {figures['summaries']} CUDA summaries), cache cold",
             ms(figures["index_cold"])),
            ("index the folder, cache warm (the server's second start)", ms(figures["index_warm"]))]
    for name, f in figures["files"].items():
        short = Path(name).name
        same = "the same as `check .`" if f["same_as_check"] else "NOT the same as `check .`"
        rows += [(f"{short} ({f['bytes'] // 1024} KB, {f['findings']} diagnostics, {same}): first refresh",
                  ms(f["first"])),
                 (f"{short}: an edit in a comment", ms(f["comment"])),
                 (f"{short}: a line inserted at the top (every row moves)", ms(f["moved"]))]
    rows += [("every file again, `check_paths` with the cache warm", ms(figures["check_warm"])),
             ("every file again, `check_paths` without the cache", ms(figures["check_cold"]))]
    if wall:
        name = Path(FILES[0]).name
        rows += [(f"over stdio, wall: didOpen {name} -> first diagnostics (alone)", ms(wall["open_alone"])),
                 ("over stdio, wall: -> diagnostics against the whole program", ms(wall["open_indexed"])),
                 ("over stdio, wall: didChange -> diagnostics", ms(wall["change"]))]
    print(f"{folder}{' (every rule, min-bytes 0)' if all_rules else ' (default settings)'}: "
          f"{machine_description()}, {today()}")
    if markdown:
        print("\n| step | CPU time (best) |\n|---|---:|")
        for label, value in rows:
            print(f"| {label} | {value} |")
    else:
        for label, value in rows:
            print(f"{label:<100} {value:>10}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--file", action="append", help="a file of the folder to refresh (repeatable)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-protocol", action="store_true", help="skip the timings over stdio")
    parser.add_argument("--all-rules", action="store_true",
                        help="write a gpulint.toml selecting every rule with min-bytes 0 into the copy (the "
                             "default selection finds nothing in cuda-samples: no diagnostics to convert)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if not args.folder.is_dir():
        print(f"{args.folder}: no such folder; nothing timed")
        return
    files = args.file or [f for f in FILES if (args.folder / f).is_file()]
    with tempfile.TemporaryDirectory() as temp:
        copy = Path(temp) / args.folder.name
        shutil.copytree(args.folder, copy, ignore=shutil.ignore_patterns(".gpulint_cache", ".git"))
        os.chdir(copy)
        if args.all_rules:
            Path("gpulint.toml").write_text('select = ["ALL"]\nmin-bytes = 0\n')
        figures = in_process(files, args.repeat)
        shutil.rmtree(".gpulint_cache", ignore_errors=True)
        wall = {} if args.no_protocol else over_the_protocol(files, args.repeat)
        os.chdir(REPO)
    report(figures, wall, args.folder, args.markdown, args.all_rules)


if __name__ == "__main__":
    main()
