"""The shared vocabulary of gpulint: what a finding is, where it points, and how it could be fixed.

Static and dynamic analyses both produce `Finding`s; every output format and the fix engine
consume them and nothing else.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

DOCS_URL = "https://gpulint.dev/rules/{code}"


class Applicability(str, enum.Enum):
    """How safe it is to apply a fix without a human looking (Ruff's three levels)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, order=True)
class Location:
    """A source range. Rows and columns are 1-based; the end column is exclusive.

    A place in a binary built without line information is its file and function `symbol`, with
    row and column 0: no line is shown rather than a made-up one."""

    path: str
    row: int
    column: int
    end_row: int | None = None
    end_column: int | None = None
    symbol: str | None = None

    def __post_init__(self) -> None:
        # Column 0 is the classic SARIF upload failure; never let one be built by accident.
        if self.symbol is not None and self.row == 0 and self.column == 0:
            return
        if self.row < 1 or self.column < 1:
            raise ValueError(f"Location rows and columns are 1-based, got {self.row}:{self.column}")

    @property
    def has_line(self) -> bool:
        return self.row > 0

    @property
    def where(self) -> str:
        """`path:row`, or `path (in symbol)` where there is no line."""
        return f"{self.path}:{self.row}" if self.row else f"{self.path} (in {self.symbol or 'an unknown function'})"

    @property
    def end(self) -> tuple[int, int]:
        return (self.end_row or self.row, self.end_column or self.column)


@dataclass(frozen=True)
class Related:
    """A piece of evidence for a finding: an event at another place."""

    message: str
    location: Location


@dataclass(frozen=True)
class Edit:
    """Replace bytes [start, end) of `path` with `content`."""

    path: str
    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Fix:
    """A suggested change: its message, whether it is safe to apply unreviewed, and its edits."""

    message: str
    applicability: Applicability
    edits: tuple[Edit, ...]


class LazyFix:
    """A fix not built yet: its builder and the builder's inputs (events with their statement byte
    ranges, histories, the source bytes: never a syntax tree).  Most runs print no fix (`--format
    github`, `concise`, `--statistics`), and building one costs more than finding it; the finding
    builds it the first time its `fix` is read.  `refinements` run on the built fix, in order
    (`Finding.refine_fix`)."""

    __slots__ = ("build", "args", "refinements")

    def __init__(self, build: Callable[..., "Fix | None"], *args: Any) -> None:
        self.build = build
        self.args = args
        self.refinements: tuple[Callable[["Finding", "Fix | None"], "Fix | None"], ...] = ()


@dataclass
class Finding:
    """One reported waste of GPU memory: a rule's code and message at a location, with related
    locations, a fix and what the rule measured (`properties`)."""

    code: str
    name: str
    message: str
    location: Location
    related: tuple[Related, ...] = ()
    # A `Fix`, None, or a `LazyFix` built when first read (see the property below the class).
    fix: Fix | None = None
    # The GPU object the finding is about (variable or expression), when there is one.
    obj: str | None = None
    # Extra facts: inefficiency distance, sizes, static/dynamic origin, confirmation marks.  A
    # refinement of a lazy fix may add why it withheld the fix, so reading them builds such a fix.
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.row, self.location.column, self.code, self.message)

    def defer_fix(self, build: Callable[..., "Fix | None"], *args: Any) -> None:
        """The fix is `build(*args)`, built when first read (see `LazyFix`)."""
        self.__dict__["_fix"] = LazyFix(build, *args)

    def refine_fix(self, refine: Callable[["Finding", "Fix | None"], "Fix | None"]) -> None:
        """Pass the fix through `refine` (which may drop it and say why in `properties`): now when
        it is built, when it is built otherwise."""
        pending = self.__dict__["_fix"]
        if type(pending) is LazyFix:
            pending.refinements += (refine,)
        else:
            self.fix = refine(self, pending)

    @property
    def fix_pending(self) -> bool:
        """The fix is a `LazyFix` not built yet."""
        return type(self.__dict__["_fix"]) is LazyFix

    def _built_fix(self, pending: LazyFix) -> Fix | None:
        # No fix while it is built: a refinement that reads `properties` must not build it again.
        self.__dict__["_fix"] = None
        try:
            fix = pending.build(*pending.args)
            for refine in pending.refinements:
                fix = refine(self, fix)
        except BaseException:
            self.__dict__["_fix"] = pending  # a builder's bug shows at every read, never as "no fix"
            raise
        self.__dict__["_fix"] = fix
        return fix

    def __getstate__(self) -> dict[str, Any]:
        # Sent to another process (a worker's result) or stored: the fix as built, never its inputs.
        pending = self.__dict__["_fix"]
        if type(pending) is LazyFix:
            self._built_fix(pending)
        return self.__dict__


def _get_fix(finding: Finding) -> Fix | None:
    fix = finding.__dict__["_fix"]
    return finding._built_fix(fix) if type(fix) is LazyFix else fix


def _set_fix(finding: Finding, fix: "Fix | LazyFix | None") -> None:
    finding.__dict__["_fix"] = fix


def _get_properties(finding: Finding) -> dict[str, Any]:
    fix = finding.__dict__["_fix"]
    if type(fix) is LazyFix and fix.refinements:
        finding._built_fix(fix)
    return finding.__dict__["_properties"]


def _set_properties(finding: Finding, properties: dict[str, Any]) -> None:
    finding.__dict__["_properties"] = properties


# Set after the dataclass is made, so that its fields, constructor, equality and repr stay as they
# were (they read and write through these properties): `Finding(..., fix=LazyFix(...))` and
# `finding.fix = LazyFix(...)` defer the build, and every reader gets the built `Fix` or None.
Finding.fix = property(_get_fix, _set_fix, doc="The fix, built on first read when it was given as a `LazyFix`.")  # type: ignore[assignment]
Finding.properties = property(_get_properties, _set_properties)  # type: ignore[assignment]


class Pairs(Sequence):
    """A finding's list of `[a, b]` integer pairs, kept as the two arrays (or lists) a run's
    analysis computed them in: GL006 can list hundreds of idle gaps for each of thousands of
    objects, and as Python lists those cost more memory than the rest of the analysis.  It reads
    and compares like the list of lists; outputs write it as one (`plain`)."""

    __slots__ = ("starts", "ends")

    def __init__(self, starts: Any, ends: Any) -> None:
        self.starts, self.ends = starts, ends

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self.tolist()[i]
        return [int(self.starts[i]), int(self.ends[i])]

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list[list[int]]:
        starts = self.starts.tolist() if hasattr(self.starts, "tolist") else list(self.starts)
        ends = self.ends.tolist() if hasattr(self.ends, "tolist") else list(self.ends)
        return [[a, b] for a, b in zip(starts, ends)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Pairs):
            other = other.tolist()
        return isinstance(other, (list, tuple)) and self.tolist() == [list(p) for p in other]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.tolist())


def plain(value: Any) -> Any:
    """A property's value as plain JSON data (`Pairs` as the list of lists it stands for)."""
    return value.tolist() if isinstance(value, Pairs) else value


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    """A plain-JSON form of a finding that `finding_from_dict` reads back exactly (the result cache)."""
    def loc(location: Location) -> list:
        return [location.path, location.row, location.column, location.end_row, location.end_column, location.symbol]

    fix = finding.fix
    return {
        "code": finding.code, "name": finding.name, "message": finding.message, "location": loc(finding.location),
        "related": [[r.message, loc(r.location)] for r in finding.related],
        "fix": None if fix is None else {"message": fix.message, "applicability": fix.applicability.value,
                                         "edits": [[e.path, e.start, e.end, e.content] for e in fix.edits]},
        "obj": finding.obj, "properties": {k: plain(v) for k, v in finding.properties.items()},
    }


def finding_from_dict(data: dict[str, Any]) -> Finding:
    fix = data["fix"]
    return Finding(
        code=data["code"], name=data["name"], message=data["message"], location=Location(*data["location"]),
        related=tuple(Related(message, Location(*location)) for message, location in data["related"]),
        fix=None if fix is None else Fix(fix["message"], Applicability(fix["applicability"]),
                                         tuple(Edit(*edit) for edit in fix["edits"])),
        obj=data["obj"], properties=data["properties"],
    )


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def measured_notes(finding: Finding) -> list[str]:
    """Lines every output format shows under a finding for what a run measured: the peak it would
    save, whether a trace confirmed it, a histogram."""
    props = finding.properties
    notes: list[str] = []
    if "confirmation" in props:
        notes.append(f"{props['confirmation']} by the run" + (f": {props['confirmation_detail']}"
                                                              if props.get("confirmation_detail") else ""))
    if "peak_saved_bytes" in props:
        saved = props["peak_saved_bytes"]
        peak = props.get("peak_bytes")
        of = f" of {human_bytes(peak)}" if peak else ""
        fixing = f"fixing this site ({props['objects']} objects)" if props.get("objects") else "fixing it"
        notes.append(f"{fixing} lowers the run's peak by {human_bytes(saved)} ({props.get('peak_saved_percent', 0)}%{of})"
                     if saved else f"{fixing} alone does not lower the run's peak")
    if props.get("histogram"):
        notes.append("access counts (accesses: elements):")
        notes.extend("  " + line for line in props["histogram"])
    return notes
