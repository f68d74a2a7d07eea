"""The project as one program: what each file's functions do, for the files that call them.

`gpulint check DIR` works in two passes.  The first summarises every file (a `FileSummary`: per
kernel, which parameters it reads and writes; per host function, its launches and what it does to
the pointers passed to it; which struct members it allocates, frees and uses, and which members
trade pointers); the engine gathers the summaries into a `Table`.  The second analyses each file
against the table: a call of a function, or a launch of a kernel, defined in another file (or in a
file pulled in by `#include "x.cu"`) counts as that function or kernel does, and a struct member
allocated in one file and freed or used in another is followed across them.

A file sees only what it asks for: the engine hands each analysis a `ProgramView` holding the
entries its names resolve to, and the view records what was asked (`FileSummary.refs`), so the
engine knows which summaries a file's result depends on (`digest_of_view` of `Table.view`): the cache
keys a result by them, and a file whose dependencies changed is analysed again.  Summaries of
functions that call functions of other files depend on those files' summaries: the engine repeats
the second pass over the files whose dependencies changed until nothing does.  When one process
analyses every file, the first pass already answers each file's names from the files summarised
before it (`LiveView`; the engine orders files so that definitions come first): a file whose
answers the whole table confirms is not analysed again.

Names resolve as the linker would find them, as well as a linter can: a file's own definition
first (never asked for), then a definition in a file it includes, then any other file's but one
that defines `main` (the root of another program).  Several
definitions of one name (two programs in one folder, `#if` variants) are merged conservatively,
as same-file overloads are.  Struct members are followed by member name among the files of one
program: a file defining `main` and the files it reaches through the definitions it uses and the
files it includes (see `Table._find_programs`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpulint.findings import Location
from gpulint.history import Access

if TYPE_CHECKING:  # the syntax tree is not needed to read summaries from the cache
    from gpulint.static.kernels import KernelSummary

HOST = "host:"
KERNEL = "kernel:"
SLOT = "slot:"
RETURNED = -1  # the parameter index of a struct the function returns by value


@dataclass
class HostSummary:
    """What calling a host function does to the pointers passed to it."""

    launches: int
    access: dict[int, Access] = field(default_factory=dict)  # parameter index -> use
    frees: set[int] = field(default_factory=set)
    escapes: set[int] = field(default_factory=set)
    host: set[int] = field(default_factory=set)  # parameters only the host dereferences (`s += p[i]`)
    nparams: int = 0
    conditional: bool = False  # defined under #if: the build may use another definition
    # Struct members reached through a parameter (`p->buf`, `p.buf` with `p` a pointer or
    # reference): (parameter index, member path) -> what the function does to them.
    member_allocs: dict[tuple[int, str], str] = field(default_factory=dict)  # -> the allocator (cudaMalloc)
    member_access: dict[tuple[int, str], Access] = field(default_factory=dict)
    member_frees: set[tuple[int, str]] = field(default_factory=set)
    # After the call a member may hold what these members held before it (a swap of `p->a` and `p->b`).
    member_moves: dict[tuple[int, str], set[str]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"launches": self.launches, "access": {str(k): v.value for k, v in sorted(self.access.items())},
                "frees": sorted(self.frees), "escapes": sorted(self.escapes), "host": sorted(self.host),
                "nparams": self.nparams,
                "conditional": self.conditional,
                "member_allocs": [[i, m, api] for (i, m), api in sorted(self.member_allocs.items())],
                "member_access": [[i, m, a.value] for (i, m), a in sorted(self.member_access.items())],
                "member_frees": sorted([i, m] for i, m in self.member_frees),
                "member_moves": [[i, m, sorted(v)] for (i, m), v in sorted(self.member_moves.items())]}

    @classmethod
    def from_json(cls, data: dict) -> "HostSummary":
        return cls(launches=data["launches"], access={int(k): Access(v) for k, v in data["access"].items()},
                   frees=set(data["frees"]), escapes=set(data["escapes"]), host=set(data["host"]), nparams=data["nparams"],
                   conditional=data["conditional"],
                   member_allocs={(i, m): api for i, m, api in data["member_allocs"]},
                   member_access={(i, m): Access(a) for i, m, a in data["member_access"]},
                   member_frees={(i, m) for i, m in data["member_frees"]},
                   member_moves={(i, m): set(v) for i, m, v in data["member_moves"]})


def kernel_to_json(k: "KernelSummary | dict") -> dict:
    if isinstance(k, dict):
        return k
    return {"name": k.name, "params": [[p.name, p.type, p.is_pointer] for p in k.params],
            "access": [a.value for a in k.access], "is_kernel": k.is_kernel,
            "stores": [[i, sorted(into)] for i, into in sorted(k.stores.items())]}


def kernel_from_json(data: "KernelSummary | dict") -> KernelSummary:
    if not isinstance(data, dict):
        return data
    from gpulint.static import syntax as s
    from gpulint.static.kernels import KernelSummary

    return KernelSummary(data["name"], [s.Param(n, t, p) for n, t, p in data["params"]],
                         [Access(a) for a in data["access"]], data["is_kernel"],
                         {i: set(into) for i, into in data["stores"]})


@dataclass
class MemberFacts:
    """What one file does to struct members, by member name (`*`: a whole struct passed on)."""

    allocated: set[str] = field(default_factory=set)
    frees: dict[str, tuple[int, int]] = field(default_factory=dict)  # member -> (row, column) of a free
    uses: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # member -> (access, row, column)
    groups: list[list[str]] = field(default_factory=list)  # members that trade pointers

    def to_json(self) -> dict:
        return {"allocated": sorted(self.allocated), "frees": {k: list(v) for k, v in sorted(self.frees.items())},
                "uses": {k: list(v) for k, v in sorted(self.uses.items())}, "groups": self.groups}

    @classmethod
    def from_json(cls, data: dict) -> "MemberFacts":
        return cls(set(data["allocated"]), {k: (v[0], v[1]) for k, v in data["frees"].items()},
                   {k: (v[0], v[1], v[2]) for k, v in data["uses"].items()}, [list(g) for g in data["groups"]])


def host_to_json(h: "HostSummary | dict") -> dict:
    return h if isinstance(h, dict) else h.to_json()


def host_from_json(h: "HostSummary | dict") -> HostSummary:
    return HostSummary.from_json(h) if isinstance(h, dict) else h


@dataclass
class FileSummary:
    """One file's contribution to the table, and the names it looked up in it.  Read from the
    cache, its kernels and host functions stay JSON until an analysis asks for them (a warm run
    compares digests and analyses nothing)."""

    path: str
    kernels: dict[str, list["KernelSummary | dict"]] = field(default_factory=dict)
    hosts: dict[str, list["HostSummary | dict"]] = field(default_factory=dict)
    members: MemberFacts = field(default_factory=MemberFacts)
    refs: list[str] = field(default_factory=list)  # `host:f`, `kernel:k`, `slot:buf`: asked of the table

    def to_json(self) -> dict:
        return {"path": self.path,
                "kernels": {n: [kernel_to_json(k) for k in ks] for n, ks in sorted(self.kernels.items())},
                "hosts": {n: [host_to_json(h) for h in hs] for n, hs in sorted(self.hosts.items())},
                "members": self.members.to_json(), "refs": self.refs}

    @classmethod
    def from_json(cls, data: dict) -> "FileSummary":
        return cls(data["path"], {n: list(ks) for n, ks in data["kernels"].items()},
                   {n: list(hs) for n, hs in data["hosts"].items()},
                   MemberFacts.from_json(data["members"]), list(data["refs"]))


@dataclass
class SlotFacts:
    """What the other files of the program do to one member name (and those it trades with)."""

    group: set[str]
    frees: list[Location] = field(default_factory=list)
    uses: list[tuple[Access, Location]] = field(default_factory=list)

    def to_json(self) -> list:
        return [sorted(self.group), [[f.path, f.row, f.column] for f in self.frees],
                [[a.value, u.path, u.row, u.column] for a, u in self.uses]]


class ProgramView:
    """The entries of the table one file's names resolve to; records which names were asked."""

    def __init__(self, hosts: dict[str, list["HostSummary | dict"]] | None = None,
                 kernels: dict[str, list["KernelSummary | dict"]] | None = None,
                 slots: dict[str, SlotFacts] | None = None) -> None:
        self._hosts = hosts or {}
        self._kernels = kernels or {}
        self._slots = slots or {}
        self.asked: dict[str, None] = {}

    def hosts(self, name: str) -> list[HostSummary]:
        self.asked[HOST + name] = None
        return [host_from_json(h) for h in self._hosts.get(name, [])]

    def kernels(self, name: str) -> list[KernelSummary]:
        self.asked[KERNEL + name] = None
        return [kernel_from_json(k) for k in self._kernels.get(name, [])]

    def slot(self, name: str) -> SlotFacts | None:
        self.asked[SLOT + name] = None
        return self._slots.get(name)


def _digest(value: object) -> str:
    import hashlib  # here: most runs never take one (2.5 ms of a check's start-up)

    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:24]


class Definitions:
    """Which files define each host function and kernel: the part of the table that resolves
    their names.  Grows a file at a time, so that one process analysing files in turn can answer a
    file's names from the files already summarised (see `LiveView`)."""

    def __init__(self, includes: dict[str, list[str]]) -> None:
        self.summaries: dict[str, FileSummary] = {}
        self.includes = includes
        self._hosts: dict[str, list[str]] = {}
        self._kernels: dict[str, list[str]] = {}

    def add(self, path: str, summary: FileSummary) -> None:
        """`path`'s summary (a file is added once)."""
        self.summaries[path] = summary
        for name in summary.hosts:
            self._hosts.setdefault(name, []).append(path)
        for name in summary.kernels:
            self._kernels.setdefault(name, []).append(path)

    def _definers(self, path: str, defined: dict[str, list[str]], name: str) -> list[str]:
        """The files whose definition of `name` a call in `path` reaches: an included file's, else
        any other's but a file defining `main` (another program's, as far as a linter can tell)."""
        files = [f for f in defined.get(name, ()) if f != path]
        if not files:  # most names asked: a library's or a system header's function
            return files
        included = set(self.includes.get(path, ()))
        return [f for f in files if f in included] or [f for f in files if "main" not in self.summaries[f].hosts]

    def definitions(self, path: str, ref: str) -> list:
        """The summaries a `host:` or `kernel:` ref of `path` resolves to."""
        if ref.startswith(HOST):
            name = ref[len(HOST):]
            return [h for f in self._definers(path, self._hosts, name) for h in self.summaries[f].hosts[name]]
        name = ref[len(KERNEL):]
        return [k for f in self._definers(path, self._kernels, name) for k in self.summaries[f].kernels[name]]

    def live_view(self, path: str) -> "LiveView":
        """A view for analysing `path` now, against the files summarised so far."""
        return LiveView(self, path)


class LiveView(ProgramView):
    """A view that answers each host function and kernel name when first asked, from the files
    summarised so far (`Definitions`), and no struct members (those need every file's summary).
    What it answered is what the result depends on, as for any view: when the whole table
    answers otherwise, the engine analyses the file again."""

    def __init__(self, definitions: Definitions, path: str) -> None:
        super().__init__()
        self._definitions = definitions
        self._path = path

    def hosts(self, name: str) -> list[HostSummary]:
        if HOST + name not in self.asked:
            found = self._definitions.definitions(self._path, HOST + name)
            if found:
                self._hosts[name] = found
        return super().hosts(name)

    def kernels(self, name: str) -> list[KernelSummary]:
        if KERNEL + name not in self.asked:
            found = self._definitions.definitions(self._path, KERNEL + name)
            if found:
                self._kernels[name] = found
        return super().kernels(name)


class Table(Definitions):
    """Every file's summary, and what each file's names resolve to."""

    def __init__(self, summaries: dict[str, FileSummary], includes: dict[str, list[str]]) -> None:
        super().__init__({path: [p for p in found if p in summaries] for path, found in includes.items()})
        for path, summary in summaries.items():
            self.add(path, summary)
        self._programs = self._find_programs()

    def _uses(self, path: str) -> list[str]:
        """The files whose definitions `path` uses, and those it includes."""
        used = list(self.includes.get(path, ()))
        for ref in self.summaries[path].refs:
            if ref.startswith(HOST):
                used += self._definers(path, self._hosts, ref[len(HOST):])
            elif ref.startswith(KERNEL):
                used += self._definers(path, self._kernels, ref[len(KERNEL):])
        return used

    def _find_programs(self) -> dict[str, list[frozenset[str]]]:
        """The programs each file belongs to.  A program is a file defining `main` and every file
        it reaches through the definitions it uses and the files it includes: two programs in one
        folder that share a header are still two.  Files no `main` reaches (a library) form
        programs with the files they are joined to by uses, either way."""
        uses = {path: self._uses(path) for path in self.summaries}
        programs: dict[str, list[frozenset[str]]] = {path: [] for path in self.summaries}
        for root in sorted(p for p, summary in self.summaries.items() if "main" in summary.hosts):
            reached = {root}
            pending = [root]
            while pending:
                for other in uses[pending.pop()]:
                    if other not in reached:
                        reached.add(other)
                        pending.append(other)
            program = frozenset(reached)
            for path in program:
                programs[path].append(program)
        parent = {path: path for path in self.summaries if not programs[path]}

        def find(p: str) -> str:
            while parent[p] != p:
                parent[p] = parent[parent[p]]
                p = parent[p]
            return p

        for path in parent:
            for other in uses[path]:
                if other in parent:
                    parent[find(other)] = find(path)
        groups: dict[str, set[str]] = {}
        for path in parent:
            groups.setdefault(find(path), set()).add(path)
        for group in groups.values():
            for path in group:
                programs[path].append(frozenset(group))
        return programs

    def _slot(self, path: str, name: str) -> SlotFacts | None:
        files = set().union(*self._programs.get(path, []))
        if len(files) < 2:
            return None
        members = [(p, self.summaries[p].members) for p in sorted(files)]
        group = {name}
        changed = True
        while changed:  # members that trade pointers anywhere in the program stand for each other
            changed = False
            for _, m in members:
                for g in m.groups:
                    if group & set(g) and not set(g) <= group:
                        group |= set(g)
                        changed = True
        facts = SlotFacts(group)
        for p, m in members:
            if p == path:
                continue
            for slot in sorted(group | {"*"}):
                if slot in m.frees:
                    row, column = m.frees[slot]
                    facts.frees.append(Location(p, row, column))
                if slot in m.uses:
                    access, row, column = m.uses[slot]
                    facts.uses.append((Access(access), Location(p, row, column)))
        if not facts.frees and not facts.uses and group == {name}:
            return None
        return facts

    def resolve(self, path: str, ref: str) -> object:
        """What `ref` resolves to for `path`: a list of summaries (hosts, kernels) or slot facts."""
        if ref.startswith((HOST, KERNEL)):
            return self.definitions(path, ref)
        return self._slot(path, ref[len(SLOT):])

    def view(self, path: str, refs: list[str]) -> ProgramView:
        """What the analysis of `path` needs: the entries its names (`refs`) resolve to."""
        hosts: dict[str, list] = {}
        kernels: dict[str, list] = {}
        slots: dict[str, SlotFacts] = {}
        for ref in refs:
            found = self.resolve(path, ref)
            if ref.startswith(HOST) and found:
                hosts[ref[len(HOST):]] = found
            elif ref.startswith(KERNEL) and found:
                kernels[ref[len(KERNEL):]] = found
            elif ref.startswith(SLOT) and found is not None:
                slots[ref[len(SLOT):]] = found
        return ProgramView(hosts, kernels, slots)


def digest_of_view(view: ProgramView) -> str:
    """What a view holds, as a digest (the empty view's is `NO_DEPENDENCIES`)."""
    # Reading the private tables here keeps the view's interface to what lowering asks.
    if not (view._hosts or view._kernels or view._slots):
        return NO_DEPENDENCIES  # most files' views: no JSON to write, no hash to take
    return _digest({"hosts": {n: [host_to_json(h) for h in hs] for n, hs in view._hosts.items()},
                    "kernels": {n: [kernel_to_json(k) for k in ks] for n, ks in view._kernels.items()},
                    "slots": {n: f.to_json() for n, f in view._slots.items()}})


# Not a digest: no view's digest (24 hexadecimal digits) can be it.
NO_DEPENDENCIES = "none"
