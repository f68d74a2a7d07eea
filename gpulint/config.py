"""Settings: `[tool.gpulint]` in pyproject.toml (or a gpulint.toml) merged with CLI options, validated."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FRONTENDS = ("auto", "tree-sitter", "clang")
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024


class ConfigError(Exception):
    """A setting that cannot be used; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    thresholds: dict[str, int] = field(default_factory=dict)
    frontend: str = "auto"
    compile_commands: str | None = None
    jobs: int = 0  # 0: all cores
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    reuse_tolerance: float = 0.10
    verbose: bool = False

    def enabled_codes(self, all_codes: list[str]) -> list[str]:
        """Codes that run: selected (all when nothing is selected) minus ignored."""
        def matches(code: str, patterns: tuple[str, ...]) -> bool:
            return any(p == "ALL" or code.startswith(p) for p in patterns)

        chosen = [c for c in all_codes if not self.select or matches(c, self.select)]
        return [c for c in chosen if not matches(c, self.ignore)]

    def effective_jobs(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 1)


_KEYS = {"select", "ignore", "exclude", "threshold", "frontend", "compile-commands", "jobs", "max-file-size",
         "reuse-tolerance"}


def find_config(start: Path) -> Path | None:
    """The nearest gpulint.toml, or pyproject.toml with a [tool.gpulint] table, at or above `start`."""
    current = start.resolve()
    for folder in [current, *current.parents]:
        own = folder / "gpulint.toml"
        if own.is_file():
            return own
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{pyproject}: cannot read: {exc}") from exc
            if "gpulint" in data.get("tool", {}):
                return pyproject
    return None


def load_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    table = data.get("tool", {}).get("gpulint", {}) if path.name == "pyproject.toml" else data
    unknown = set(table) - _KEYS
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


def build(cli: dict[str, Any], known: list[str], threshold_codes: list[str], start: Path | None = None) -> Settings:
    """Settings from the config file found at or above `start` overridden by CLI options."""
    config_path = find_config(start or Path.cwd())
    file_values = load_file(config_path) if config_path is not None else {}

    def pick(cli_key: str, file_key: str, default: Any) -> Any:
        value = cli.get(cli_key)
        if value not in (None, (), []):
            return value
        return file_values.get(file_key, default)

    def as_tuple(value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            return tuple(v for v in value.split(",") if v)
        return tuple(x for v in value for x in str(v).split(",") if x)

    frontend = pick("frontend", "frontend", "auto")
    if frontend not in FRONTENDS:
        raise ConfigError(f"frontend {frontend!r}: choose one of {', '.join(FRONTENDS)}")
    jobs = pick("jobs", "jobs", 0)
    if not isinstance(jobs, int) or jobs < 0:
        raise ConfigError(f"jobs {jobs!r}: must be a non-negative integer")
    max_size = pick("max_file_size", "max-file-size", DEFAULT_MAX_FILE_SIZE)
    if not isinstance(max_size, int) or max_size <= 0:
        raise ConfigError(f"max-file-size {max_size!r}: must be a positive number of bytes")
    tolerance = pick("reuse_tolerance", "reuse-tolerance", 0.10)
    if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise ConfigError(f"reuse-tolerance {tolerance!r}: must be a fraction in [0, 1)")
    thresholds = dict(parse_thresholds(file_values.get("threshold", {}), known, threshold_codes))
    thresholds.update(parse_thresholds(list(cli.get("threshold") or []), known, threshold_codes))
    compile_commands = pick("compile_commands", "compile-commands", None)
    return Settings(
        select=validate_codes(as_tuple(pick("select", "select", ())), known, "--select"),
        ignore=validate_codes(as_tuple(pick("ignore", "ignore", ())), known, "--ignore"),
        exclude=as_tuple(pick("exclude", "exclude", ())),
        thresholds=thresholds,
        frontend=frontend,
        compile_commands=str(compile_commands) if compile_commands else None,
        jobs=jobs,
        max_file_size=max_size,
        reuse_tolerance=float(tolerance),
        verbose=bool(cli.get("verbose")),
    )

