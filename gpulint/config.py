"""Settings: `[tool.gpulint]` in pyproject.toml (or a gpulint.toml) merged with CLI options, validated."""
from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FRONTENDS = ("auto", "tree-sitter", "clang")
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
# A run's findings whose site holds fewer bytes than this, and whose fix saves less, are hidden.
# 1 MiB is where PyTorch's caching allocator stops carving requests out of shared 2 MiB
# segments (its small pool): below it a fix rarely returns a byte to the device, and a training
# loop makes thousands of such tensors (biases, norms, scalars).  CUDA programs that matter
# allocate megabytes; `--min-bytes 0` shows everything.
DEFAULT_MIN_BYTES = 1 << 20
# The rules `check` and `fix` run when neither the command line nor a configuration file selects:
# those whose findings a labelled review of real code found worth a change (docs/review/README.md,
# 22 findings on 13 code bases, 100% true, 82% worth); the others are one `--select` away.
DEFAULT_SELECT = ("GL003", "GL102")
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000**2, "mb": 1000**2, "mib": 1 << 20,
          "g": 1000**3, "gb": 1000**3, "gib": 1 << 30}


def parse_bytes(value: Any) -> int:
    """`1048576`, `"64 KiB"`, `"1MiB"`, `"2 MB"` -> bytes; ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        if value < 0:
            raise ValueError(value)
        return value
    text = str(value).strip().lower().replace(" ", "")
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):]
    if not number or unit not in _UNITS:
        raise ValueError(value)
    amount = float(number) * _UNITS[unit]
    if amount < 0 or amount != amount:
        raise ValueError(value)
    return int(amount)


class ConfigError(Exception):
    """A setting that cannot be used; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Settings:
    """What one file is checked with: the rule selection, discovery, the frontend and its build's
    macros and paths, thresholds (a project's configuration resolved for a path, see `Resolver`)."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # (glob, codes): codes not reported in files matching the glob (relative to `root`).
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    # Globs of files to check beyond the known suffixes (`*.cpp.Cuda`): read as CUDA unless `.py`.
    extend_include: tuple[str, ...] = ()
    respect_gitignore: bool = True  # skip what git ignores (.gitignore, .git/info/exclude)
    force_exclude: bool = False  # `exclude` (and git's ignores) apply to files named on the command line too
    thresholds: dict[str, int] = field(default_factory=dict)
    frontend: str = "auto"
    compile_commands: str | None = None
    # The preprocessor's view of a build (`-D`/`-I` when there is no compile database): macros
    # defined (NAME or NAME=VALUE) and folders searched for `#include "..."`, relative to `root`.
    defines: tuple[str, ...] = ()
    include_paths: tuple[str, ...] = ()
    jobs: int = 0  # 0: all cores
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    reuse_tolerance: float = 0.10
    min_bytes: int = DEFAULT_MIN_BYTES
    verbose: bool = False
    # The folder of the configuration file these settings came from (patterns are relative to it).
    root: str | None = None
    config_file: str | None = None

    def enabled_codes(self, all_codes: list[str]) -> list[str]:
        """Codes that run: selected (all when nothing is selected) plus extend-select, minus ignored."""
        chosen = [c for c in all_codes
                  if not self.select or _matches(c, self.select) or _matches(c, self.extend_select)]
        return [c for c in chosen if not _matches(c, self.ignore)]

    def codes_for(self, path: Path, all_codes: list[str]) -> list[str]:
        """The enabled codes less those `per-file-ignores` turns off for `path`."""
        codes = self.enabled_codes(all_codes)
        ignored = tuple(code for pattern, codes_ in self.per_file_ignores if self.matches(path, (pattern,))
                        for code in codes_)
        return [c for c in codes if not _matches(c, ignored)] if ignored else codes

    def matches(self, path: Path, patterns: tuple[str, ...]) -> bool:
        """`path` (or one of its folders) matches a glob, taken relative to the config's folder."""
        texts = {path.as_posix()}
        if self.root is not None:
            try:
                texts.add(Path(os.path.abspath(path)).relative_to(self.root).as_posix())
            except ValueError:
                pass
        return any(fnmatch.fnmatch(text, p) or fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(text, f"*/{p}")
                   or fnmatch.fnmatch(text, f"{p}/*") or fnmatch.fnmatch(text, f"*/{p}/*")
                   for p in patterns for text in texts)

    def effective_jobs(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 1)

    def fingerprint(self) -> str:
        """What about these settings changes a file's findings (for the result cache)."""
        return repr((self.frontend, self.compile_commands, sorted(self.thresholds.items()), self.reuse_tolerance,
                     self.max_file_size, self.defines, self.include_paths))


def _matches(code: str, patterns: tuple[str, ...]) -> bool:
    return any(p == "ALL" or code.startswith(p) for p in patterns)


# Keys of [tool.gpulint] / gpulint.toml, and what each must hold.
_KEYS = {"select": "a list of rule codes", "extend-select": "a list of rule codes", "ignore": "a list of rule codes",
         "per-file-ignores": "a table of glob = [rule codes]", "exclude": "a list of glob patterns",
         "threshold": "a table of rule code = integer", "frontend": f"one of {', '.join(FRONTENDS)}",
         "compile-commands": "a path to compile_commands.json", "jobs": "a non-negative integer",
         "max-file-size": "a positive number of bytes", "reuse-tolerance": "a fraction in [0, 1)",
         "min-bytes": 'a number of bytes (an integer, or a string such as "64 KiB")',
         "extend-include": "a list of glob patterns", "respect-gitignore": "true or false",
         "force-exclude": "true or false", "defines": "a list of NAME or NAME=VALUE strings",
         "include-paths": "a list of folders"}


def _toml():
    """The TOML reader, imported when a configuration file is read: `gpulint run` and a check with
    no pyproject.toml above it never pay for it."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def find_config(start: Path, known: dict[Path, Path | None] | None = None) -> Path | None:
    """The nearest gpulint.toml, or pyproject.toml with a [tool.gpulint] table, at or above `start`.
    `known`: what earlier look-ups of one run found for each folder they passed (a tree's folders
    share their parents: without it, each looked at every folder up to `/` again)."""
    current = start.resolve()
    passed: list[Path] = []
    found: Path | None = None
    for folder in [current, *current.parents]:
        if known is not None and folder in known:
            found = known[folder]
            break
        passed.append(folder)
        own = folder / "gpulint.toml"
        if own.is_file():
            found = own
            break
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            tomllib = _toml()
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{pyproject}: cannot read: {exc}") from exc
            if "gpulint" in data.get("tool", {}):
                found = pyproject
                break
    if known is not None:
        known.update(dict.fromkeys(passed, found))
    return found


def load_file(path: Path) -> dict[str, Any]:
    tomllib = _toml()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    table = data.get("tool", {}).get("gpulint", {}) if path.name == "pyproject.toml" else data
    unknown = set(table) - set(_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KEYS))}")
    return table


def parse_thresholds(items: list[str] | dict[str, Any], known: list[str], threshold_codes: list[str]) -> dict[str, int]:
    pairs = items.items() if isinstance(items, dict) else (_split_threshold(i) for i in items)
    result: dict[str, int] = {}
    for code, value in pairs:
        code = code.strip().upper()
        if code not in known:
            raise ConfigError(f"--threshold {code}: no such rule")
        if code not in threshold_codes:
            raise ConfigError(f"--threshold {code}: this rule has no threshold (those that do: {', '.join(threshold_codes)})")
        if isinstance(value, bool):
            raise ConfigError(f"--threshold {code}={value}: the threshold must be an integer")
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"--threshold {code}={value}: the threshold must be an integer") from None
        if number < 1:
            raise ConfigError(f"--threshold {code}={number}: the threshold must be at least 1")
        result[code] = number
    return result


def _split_threshold(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"--threshold {item}: expected RULE=N, e.g. GL002=3")
    code, value = item.split("=", 1)
    return code, value


def validate_codes(patterns: tuple[str, ...], known: list[str], option: str) -> tuple[str, ...]:
    out = []
    for pattern in patterns:
        p = pattern.strip().upper()
        if not p:
            continue
        if p != "ALL" and not any(code.startswith(p) for code in known):
            raise ConfigError(f"{option} {pattern}: matches no rule code (see `gpulint rules`)")
        out.append(p)
    return tuple(out)


def _as_tuple(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(x.strip() for v in value for x in str(v).split(",") if x.strip())


def _file_values(path: Path, table: dict[str, Any], known: list[str], threshold_codes: list[str]) -> dict[str, Any]:
    """The settings a configuration file gives, validated; errors name the file and the key."""
    root = path.parent.resolve()
    out: dict[str, Any] = {"root": str(root), "config_file": str(path)}

    def bad(key: str, value: Any, why: str = "") -> ConfigError:
        return ConfigError(f"{path}: `{key} = {value!r}`: {why or 'expected ' + _KEYS[key]}")

    def strings(key: str) -> tuple[str, ...]:
        value = table[key]
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return _as_tuple(value)
        raise bad(key, value)

    for key in table:
        value = table[key]
        try:
            if key in ("select", "extend-select", "ignore"):
                out[key.replace("-", "_")] = validate_codes(strings(key), known, key)
            elif key in ("exclude", "extend-include"):
                out[key.replace("-", "_")] = strings(key)
            elif key == "defines":
                out["defines"] = strings(key)
            elif key == "include-paths":
                out["include_paths"] = tuple(str((root / folder).resolve()) for folder in strings(key))
            elif key in ("respect-gitignore", "force-exclude"):
                if not isinstance(value, bool):
                    raise bad(key, value)
                out[key.replace("-", "_")] = value
            elif key == "per-file-ignores":
                if not isinstance(value, dict):
                    raise bad(key, value)
                pairs = []
                for pattern, codes in value.items():
                    if not (isinstance(codes, str) or isinstance(codes, list) and all(isinstance(c, str) for c in codes)):
                        raise bad(key, value, f"the codes for {pattern!r} must be a list of rule codes")
                    pairs.append((pattern, validate_codes(_as_tuple(codes), known, f"{key} {pattern!r}:")))
                out["per_file_ignores"] = tuple(pairs)
            elif key == "threshold":
                if not isinstance(value, dict):
                    raise bad(key, value)
                out["thresholds"] = parse_thresholds(value, known, threshold_codes)
            elif key == "frontend":
                if value not in FRONTENDS:
                    raise bad(key, value)
                out["frontend"] = value
            elif key == "compile-commands":
                if not isinstance(value, str):
                    raise bad(key, value)
                resolved = (root / value).resolve()
                if not resolved.exists():
                    raise bad(key, value, f"{resolved} does not exist")
                out["compile_commands"] = str(resolved)
            elif key == "jobs":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise bad(key, value)
                out["jobs"] = value
            elif key == "max-file-size":
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise bad(key, value)
                out["max_file_size"] = value
            elif key == "reuse-tolerance":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                    raise bad(key, value)
                out["reuse_tolerance"] = float(value)
            elif key == "min-bytes":
                try:
                    out["min_bytes"] = parse_bytes(value)
                except ValueError:
                    raise bad(key, value) from None
        except ConfigError as exc:
            message = str(exc)
            raise ConfigError(message if message.startswith(str(path)) else f"{path}: `{key}`: {message}") from None
    return out


def _cli_values(cli: dict[str, Any], known: list[str], threshold_codes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, option in (("select", "--select"), ("extend_select", "--extend-select"), ("ignore", "--ignore")):
        if cli.get(key):
            out[key] = validate_codes(_as_tuple(cli[key]), known, option)
    if cli.get("exclude"):
        out["exclude"] = _as_tuple(cli["exclude"])
    if cli.get("extend_include"):
        out["extend_include"] = _as_tuple(cli["extend_include"])
    if cli.get("no_respect_gitignore"):
        out["respect_gitignore"] = False
    if cli.get("force_exclude"):
        out["force_exclude"] = True
    if cli.get("threshold"):
        out["thresholds"] = parse_thresholds(list(cli["threshold"]), known, threshold_codes)
    if cli.get("frontend"):
        if cli["frontend"] not in FRONTENDS:
            raise ConfigError(f"--frontend {cli['frontend']!r}: choose one of {', '.join(FRONTENDS)}")
        out["frontend"] = cli["frontend"]
    if cli.get("compile_commands"):
        out["compile_commands"] = str(Path(cli["compile_commands"]).resolve())
    if cli.get("jobs") is not None:
        out["jobs"] = cli["jobs"]
    if cli.get("min_bytes") is not None:
        try:
            out["min_bytes"] = parse_bytes(cli["min_bytes"])
        except ValueError:
            raise ConfigError(f"--min-bytes {cli['min_bytes']!r}: give a number of bytes (1048576, 64KiB, 1MiB)") from None
    out["verbose"] = bool(cli.get("verbose"))
    return out


def build(cli: dict[str, Any], known: list[str], threshold_codes: list[str], config: Path | None = None) -> Settings:
    """Settings from one configuration file (or none) overridden by CLI options."""
    values: dict[str, Any] = {}
    if config is not None:
        values.update(_file_values(config, load_file(config), known, threshold_codes))
    cli_values = _cli_values(cli, known, threshold_codes)
    thresholds = {**values.get("thresholds", {}), **cli_values.pop("thresholds", {})}
    values.update(cli_values)
    values["thresholds"] = thresholds
    if "select" not in values and cli.get("default_select"):
        values["select"] = tuple(cli["default_select"])
    return Settings(**values)


class Resolver:
    """The settings for each analysed path: the nearest configuration file to it wins, unless
    `--config FILE` names one for all or `--isolated` turns them off (as in Ruff)."""

    def __init__(self, cli: dict[str, Any], known: list[str], threshold_codes: list[str],
                 config: str | None = None, isolated: bool = False) -> None:
        self._cli, self._known, self._threshold_codes = cli, known, threshold_codes
        self._by_file: dict[Path | None, Settings] = {}
        self._by_dir: dict[Path, Settings] = {}
        self._configs: dict[Path, Path | None] = {}  # `find_config`'s answers, by folder
        self._fixed: Settings | None = None
        if config is not None:
            path = Path(config)
            if not path.is_file():
                raise ConfigError(f"--config {config}: no such file")
            self._fixed = self._settings(path)
        elif isolated:
            self._fixed = self._settings(None)
        self.base = self.for_dir(Path.cwd())  # reports a bad configuration before any work

    @classmethod
    def of(cls, settings: Settings) -> "Resolver":
        """Every path gets `settings` (for callers that built their own)."""
        resolver = cls.__new__(cls)
        resolver._fixed = resolver.base = settings
        resolver._by_dir, resolver._by_file, resolver._configs = {}, {}, {}
        return resolver

    def _settings(self, config: Path | None) -> Settings:
        if config not in self._by_file:
            self._by_file[config] = build(self._cli, self._known, self._threshold_codes, config)
        return self._by_file[config]

    def for_dir(self, folder: Path) -> Settings:
        if self._fixed is not None:
            return self._fixed
        key = Path(os.path.abspath(folder))
        if key not in self._by_dir:
            self._by_dir[key] = self._settings(find_config(key, self._configs))
        return self._by_dir[key]

    def for_path(self, path: Path) -> Settings:
        return self.for_dir(path if path.is_dir() else path.parent)
