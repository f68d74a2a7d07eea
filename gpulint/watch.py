"""`gpulint check --watch`: check, then check again whenever a checked file or a configuration
changes, until Ctrl-C (as Ruff's `--watch`).

Changes are found by polling the files' modification times and sizes: a few thousand `stat`
calls every half second cost a few milliseconds, work the same on every platform and file system
(network mounts and containers included, where change notifications often stay silent), and need
no dependency.  Each round runs the whole check, so the project-wide view is rebuilt; the
`.gpulint_cache/` keeps unchanged files from being analysed again.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TextIO

# What changes a check's result besides the checked files themselves.
CONFIG_NAMES = ("gpulint.toml", "pyproject.toml", ".gitignore")  # what config.find_config and discovery read

Snapshot = dict[str, tuple[int, int]]


def snapshot(files: Iterable[Path], roots: Iterable[str], extra: Iterable[str] = ()) -> Snapshot:
    """Modification time and size of every file, of the configuration files in their folders and
    the folders above the roots, and of `extra` (a baseline, a trace); a missing file is absent."""
    paths: set[Path] = {Path(p) for p in extra}
    folders: set[Path] = set()
    for f in files:
        paths.add(f)
        folders.add(f.parent)
    for root in roots:
        here = Path(root).absolute()
        folders.update([here, *here.parents] if here.is_dir() else here.parents)
    for folder in folders:
        paths.update(folder / name for name in CONFIG_NAMES)
    out: Snapshot = {}
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            continue
        out[str(path)] = (info.st_mtime_ns, info.st_size)
    return out


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """The files added, removed or modified between two snapshots, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def loop(check: Callable[[], int], files: Callable[[], Snapshot], *, stream: TextIO | None = None,
         interval: float = 0.5, rounds: int | None = None, sleep: Callable[[float], None] = time.sleep) -> int:
    """Run `check` now and after every change `files` shows; returns 0 on Ctrl-C (or after `rounds`
    checks, for tests).  A check that fails (exit 2, a configuration error) does not end the
    watch: the next change may fix it."""
    out = stream or sys.stderr
    done = 0
    try:
        seen = files()
        reason = "starting"
        while True:
            if out.isatty():
                out.write("\x1b[2J\x1b[H")  # a clean screen for each round, as Ruff's --watch
            out.write(f"gpulint: {datetime.now():%H:%M:%S} checking ({reason})\n")
            out.flush()
            try:
                code = check()
            except SystemExit as exc:  # the check's own errors end one round, not the watch
                code = exc.code if isinstance(exc.code, int) else 2
            sys.stdout.flush()
            done += 1
            out.write(f"gpulint: exit {code}; watching {len(seen):,} files for changes (Ctrl-C to stop)\n")
            out.flush()
            if rounds is not None and done >= rounds:
                return 0
            while True:
                sleep(interval)
                now = files()
                moved = changed(seen, now)
                if moved:
                    seen = now
                    reason = moved[0] if len(moved) == 1 else f"{moved[0]} and {len(moved) - 1} more"
                    break
    except KeyboardInterrupt:
        out.write("\n")
        return 0
