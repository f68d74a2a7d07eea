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
    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}  # folder -> its own rules
        self._tops: dict[Path, Path | None] = {}  # folder -> the top of its work tree

    def ignored(self, path: Path, is_dir: bool = False) -> bool:
        """`path` is ignored by the rules of its work tree (folders above it are not asked: the
        walk never enters an ignored folder)."""
        path = Path(os.path.abspath(path))
        top = self._top(path.parent)
        if top is None:
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
