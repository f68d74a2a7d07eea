"""Which paths git ignores: `.gitignore` files from the repository's top down to each folder, and
`.git/info/exclude`, with git's precedence (a deeper file's rule, and a later line, wins; nothing
inside an ignored folder comes back).  Pattern matching is pathspec's; outside a git work tree
nothing is ignored, as with git itself."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec


class GitIgnore:
    def __init__(self, named: "list[Path] | tuple[Path, ...]" = ()) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}  # folder -> its own rules
        self._tops: dict[Path, Path | None] = {}  # folder -> the top of its work tree
        # Files named on the command line, and which of them git tracks (asked once per work tree).
        self._named = {Path(os.path.abspath(p)) for p in named}
        self._tracked: dict[Path, set[Path] | None] = {}

    def ignored(self, path: Path, is_dir: bool = False) -> bool:
        """`path` is ignored by the rules of its work tree (folders above it are not asked: the
        walk never enters an ignored folder).  A file named on the command line that git tracks
        is not: git's rules apply only to untracked files (pre-commit names tracked files, and
        the rules' matcher, pathspec, would cost each of its runs 25 ms of start-up)."""
        path = Path(os.path.abspath(path))
        top = self._top(path.parent)
        if top is None:
            return False
        if not is_dir and path in self._named and path in (self._tracked_in(top) or ()):
            return False
        verdict = None
        folders = [top, *(top / Path(*path.parent.relative_to(top).parts[:i + 1])
                          for i in range(len(path.parent.relative_to(top).parts)))]
        for folder in folders:  # top first: a deeper file's rules come later and win
            spec = self._spec(folder, top)
            if spec is None:
                continue
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            include = spec.check_file(relative).include
            if include is not None:
                verdict = include
        return bool(verdict)

    def _tracked_in(self, top: Path) -> set[Path] | None:
        """The named files under `top` that git tracks (one `git ls-files` for all of them), or
        None where git cannot say (not installed, a broken repository): then the rules decide."""
        if top not in self._tracked:
            import subprocess

            under = sorted(p for p in self._named if p.is_relative_to(top))
            try:
                done = subprocess.run(["git", "ls-files", "-z", "--cached", "--",
                                       *(p.relative_to(top).as_posix() for p in under)],
                                      cwd=top, capture_output=True, timeout=30)
            except (OSError, subprocess.SubprocessError):
                done = None
            if done is None or done.returncode != 0:
                self._tracked[top] = None
            else:
                self._tracked[top] = {top / name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0")
                                      if name}
        return self._tracked[top]

    def _top(self, folder: Path) -> Path | None:
        if folder not in self._tops:
            if (folder / ".git").exists():
                self._tops[folder] = folder
            else:
                self._tops[folder] = None if folder.parent == folder else self._top(folder.parent)
        return self._tops[folder]

    def _spec(self, folder: Path, top: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            lines: list[str] = []
            # `.git/info/exclude` ranks below the top folder's `.gitignore`: its lines come first.
            sources = ([top / ".git" / "info" / "exclude"] if folder == top else []) + [folder / ".gitignore"]
            for source in sources:
                try:
                    lines += source.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue
            if any(_is_rule(line) for line in lines):
                import pathspec  # only where there are rules to match: it costs start-up elsewhere

                self._specs[folder] = pathspec.GitIgnoreSpec.from_lines(lines)
            else:
                self._specs[folder] = None
        return self._specs[folder]


def _is_rule(line: str) -> bool:
    """A line that may match something: git skips blank lines (trailing spaces are not part of a
    pattern) and comments.  `.git/info/exclude` as `git init` writes it holds only comments, and
    pathspec alone costs a run 25 ms of start-up on Python 3.11 (its typing_extensions imports asyncio)."""
    return bool(line.rstrip(" ")) and not line.startswith("#")
