"""What the CUDA lowering (lower.py) and the Python one (python.py) both do while they turn one
scope (a function, a module body) into a timeline: the builder, the loops and guards around the
statement being lowered, escapes, and the bindings of names to objects that branches fork and
join.  Each frontend says where its syntax nodes are (`location_of`, `statement_of`)."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gpulint.findings import Location
from gpulint.history import Distance, Event, Guard, ObjectHistory, Op, TimelineBuilder


class Bindings:
    """Name -> the objects it may hold: a set, replaced whole, never changed in place.

    Branches: `checkpoint()` starts a journal of the values that changes replace, `undo()` takes
    an arm's changes back (the next arm starts from the state before the branch) and says what
    they had made, `join()` binds each name to what any arm left in it.  Copying every binding
    at every `if` was quadratic (20,000 tensors with an `if` each took 137 s); the journal costs
    each arm the time of its own changes.  Subclasses keep indexes through `_changed`."""

    def __init__(self) -> None:
        self._values: dict[str, set[int]] = {}
        self._journal: list[tuple[str, set[int] | None]] = []  # (name, value before the change; None: unbound)
        self._open = 0  # checkpoints not yet released

    def get(self, name: str, default=None):
        return self._values.get(name, default)

    def __setitem__(self, name: str, oids: set[int]) -> None:
        self._record(name)
        self._bind(name, oids)

    def pop(self, name: str, default=None):
        if name not in self._values:
            return default
        self._record(name)
        return self._unbind(name)

    def _bind(self, name: str, oids: set[int]) -> None:
        old = self._values.get(name)
        self._values[name] = oids
        self._changed(name, old, oids)

    def _unbind(self, name: str) -> set[int]:
        old = self._values.pop(name)
        self._changed(name, old, None)
        return old

    def _changed(self, name: str, old: set[int] | None, new: set[int] | None) -> None:
        """`name` was bound to `old` and now to `new` (None: unbound)."""

    def _record(self, name: str) -> None:
        if self._open:
            self._journal.append((name, self._values.get(name)))

    def checkpoint(self) -> int:
        self._open += 1
        return len(self._journal)

    def undo(self, mark: int) -> dict[str, set[int] | None]:
        """Back to the state at `mark`; what the changes since had made each name they changed."""
        made = {name: self._values.get(name) for name, _ in self._journal[mark:]}
        while len(self._journal) > mark:
            name, old = self._journal.pop()
            if old is None:
                if name in self._values:
                    self._unbind(name)
            else:
                self._bind(name, old)
        return made

    def join(self, arms: list[dict[str, set[int] | None]], exhaustive: bool) -> None:
        """After a branch whose arms made `arms` (from `undo`): a name may hold what any arm left
        in it, or, when no arm need run (`if` without `else`), what it held before."""
        for name in dict.fromkeys(name for made in arms for name in made):
            before = self._values.get(name)
            present = [value for value in [made.get(name, before) for made in arms] + ([] if exhaustive else [before])
                       if value is not None]
            if present:
                self[name] = set().union(*present)
            else:
                self.pop(name, None)

    def release(self) -> None:
        self._open -= 1
        if not self._open:
            self._journal.clear()


class ScopeLowering:
    """One scope's timeline being built, with the loops and guards around the current statement."""

    def __init__(self, name: str, bindings: Bindings, distance: Distance = Distance.LAUNCHES) -> None:
        self.builder = TimelineBuilder(name, distance)
        self.timeline = self.builder.timeline
        self.bindings = bindings
        self.objects: dict[int, ObjectHistory] = {}
        self.loop_stack: list[int] = []
        self.guard_stack: list[Guard] = []
        self.loop_ids = itertools.count(1)
        self.guard_ids = itertools.count(1)

    def location_of(self, where: Any) -> Location:
        """Where a syntax node (a Python node, a CUDA span) is, for the user."""
        raise NotImplementedError

    def statement_of(self, where: Any) -> tuple[int, int]:
        """The byte range of the statement an event at `where` belongs to (what fixes move)."""
        raise NotImplementedError

    def event(self, op: Op, api: str, where: Any, guards: tuple[Guard, ...] | None = None, **kwargs) -> Event:
        start, end = self.statement_of(where)
        return self.builder.append(op, api, self.location_of(where), tuple(self.loop_stack),
                                   tuple(self.guard_stack) if guards is None else guards, start, end, **kwargs)

    def escape(self, oids: set[int], where: Any, why: str) -> None:
        """The objects are kept where the analysis cannot follow them (returned, stored, retained)."""
        if not oids:
            return
        event = self.event(Op.ESCAPE, why, where)
        for oid in oids:
            self.objects[oid].escapes.append(event)

    @contextmanager
    def guarded(self, guard: Guard) -> Iterator[None]:
        """Lower a branch arm: its events carry the arm's guard."""
        self.guard_stack.append(guard)
        yield
        self.guard_stack.pop()

    @contextmanager
    def looping(self, location: Location, values: set[str], contents: set[str],
                span: tuple[int, int] | None) -> Iterator[int]:
        """Lower a loop's body: its events carry the loop (whose id this gives)."""
        loop_id = next(self.loop_ids)
        self.builder.open_loop(loop_id, location, values, contents, span)
        self.loop_stack.append(loop_id)
        yield loop_id
        self.loop_stack.pop()
