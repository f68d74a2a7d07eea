"""The Python frontend: tree-sitter-python -> object histories of device tensors and buffers.

Each function body (and the module body) is a scope with its own timeline. Device objects are
created by framework factories with a CUDA device, transfers (`.cuda()`, `.to(dev)`), CuPy,
Numba and cuda-python allocators, and by computing on device objects. Loops stand for the
kernels they launch (one launch site each), so the shared rules measure distances in loops.
docs/python-semantics.md is the contract this module implements.
"""
from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import replace
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from tree_sitter import Language, Node, Parser

from gpulint import models
from gpulint.findings import Location
from gpulint.history import Access, Distance, Guard, Kind, ObjectHistory, Op, Size, SizeUnit, Timeline, Touch, Unit
from gpulint.models import torch as torch_models
from gpulint.models.api import ALWAYS, DEVICE_KEYWORD, EXTENTS, TEMPLATE, Api, Role
from gpulint.sourcetext import char_column
from gpulint.static import unknown
from gpulint.static.python_grammar import (ALIAS, ALTERNATIVE, ARGUMENTS, ATTRIBUTE, BODY, CONDITION, CONSEQUENCE,
                                           DEFINITION, FUNCTION, LANGUAGE, LEFT, MODULE_NAME, NAME, OBJECT, OPERATOR,
                                           PARAMETERS, RIGHT, SUBSCRIPT, TYPE, VALUE)
from gpulint.static.python_names import Names, code_nodes
from gpulint.static.scope import Bindings, ScopeLowering

# Statements whose only effect on device objects is to read the names in them.
_READ_ONLY_STATEMENTS = {"assert_statement", "break_statement", "continue_statement", "print_statement",
                         "exec_statement", "type_alias_statement"}
_DEVICE_NAME = re.compile(r"device|dev\b|dev_|_dev|gpu|cuda", re.I)
# Parameters named as host data (`h_x`, `frames_host`, `img_np`): what they hold is on the host.
_HOST_NAME = re.compile(r"^(h|host|cpu|np)_|_(host|cpu|np|numpy)$", re.I)
# Annotations naming host data (`np.ndarray`, `list[float]`, `str`), once the imports resolve them.
_HOST_ANNOTATION = re.compile(r"^(numpy\.|PIL\.|pathlib\.)|^(list|List|tuple|Tuple|Sequence|Iterable|str|int|float|"
                              r"bool|bytes|dict|Dict|Path)$")
# The names (and keywords, and words in strings) an ASCII statement's text holds: a superset of
# the names it reads.
_NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
# In a binding: a device array the scope does not own (`a = cp.asarray(a)` of a parameter `a`,
# which is the caller's array when it is on the device already). Never an object of the scope.
_FOREIGN = -1


def _language() -> Language:
    return LANGUAGE


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(_language())


# The nodes under which a block or an import statement may lie in a tree without errors
# (tree-sitter-python's node-types.json): no expression holds a suite or an import.
_SUITE_HOLDERS = frozenset({"module", "block", "if_statement", "elif_clause", "else_clause", "for_statement",
                            "while_statement", "try_statement", "except_clause", "except_group_clause",
                            "finally_clause", "with_statement", "function_definition", "class_definition",
                            "decorated_definition", "match_statement", "case_clause"})


# The statements whose statements the lowering takes as its scope's own (besides a function's or
# class's body, and a decorated definition's definition).
_SCOPE_STATEMENT_HOLDERS = frozenset({"if_statement", "try_statement", "with_statement", "block", "else_clause",
                                      "elif_clause", "except_clause", "finally_clause", "for_statement",
                                      "while_statement"})


class _Survey(NamedTuple):
    """What one walk of a file's statements finds."""

    blocks: list[Node]
    imports: list[Node]
    matches: list[Node]  # `match` statements
    # The functions that are scopes: those reached from the module through the bodies of
    # functions, classes and `_SCOPE_STATEMENT_HOLDERS`, in the order the lowering takes them.
    functions: list[Node]


def _survey(root: Node) -> _Survey:
    """Every block, every import statement, every `match` statement and every function scope of a
    file, in one walk that enters statements only (and whatever holds a syntax error, where
    anything may lie): walking every expression too cost a third of the parse.  Two stacks: the
    statements of a scope (where a function is a scope) and what lies elsewhere (in an expression,
    an error); nothing under the second is a scope's statement, so taking the first stack's nodes
    first leaves the functions in the order of one walk of the file (a stack of (node, scoped)
    pairs cost a quarter more, in the pairs)."""
    blocks: list[Node] = []
    imports: list[Node] = []
    matches: list[Node] = []
    functions: list[Node] = []
    scoped = list(root.named_children)
    elsewhere: list[Node] = []
    while scoped or elsewhere:
        in_scope = bool(scoped)
        node = scoped.pop() if in_scope else elsewhere.pop()
        kind = node.type
        if kind == "import_statement" or kind == "import_from_statement":
            imports.append(node)
            continue
        if kind == "block":
            blocks.append(node)
        elif kind == "match_statement":
            matches.append(node)
        if not (kind in _SUITE_HOLDERS or node.has_error):
            continue
        children = node.named_children
        if not in_scope:
            elsewhere.extend(children)
        elif kind == "function_definition" or kind == "class_definition":
            body = node.child_by_field_id(BODY)
            if kind == "function_definition" and body is not None:
                functions.append(node)
            for child in children:
                (scoped if child == body else elsewhere).append(child)
        elif kind == "decorated_definition":
            definition = node.child_by_field_id(DEFINITION)
            for child in children:
                (scoped if child == definition else elsewhere).append(child)
        elif kind in _SCOPE_STATEMENT_HOLDERS:
            scoped.extend(children)
        else:
            elsewhere.extend(children)
    return _Survey(blocks, imports, matches, functions)


def analyse(path: str, source: bytes, unknown_kinds: Counter | None = None) -> tuple[Unit, list[str]]:
    """Histories of every device object in a Python file, and the scopes skipped for syntax errors;
    statement kinds the frontend has no lowering for are counted into `unknown_kinds`."""
    tree = _parser().parse(source)
    module = _Module(path, source, tree.root_node)
    result = module.run()
    if unknown_kinds is not None:
        unknown_kinds.update(module.unknown)
    return result


def _makes_objects(row: Api) -> bool:
    """A function's row whose call may give a device value when no device object exists yet (the
    other roles' handlers act on objects they are given)."""
    return row.passes_device or row.role in (Role.FACTORY, Role.RAW_ALLOC, Role.TRANSFER, Role.FLUSH)


# The last names of the rows that may make a device object (or flush) from nothing, and the
# methods that may (`x.cuda()`, `x.to(dev)`: the other methods' handlers need a device receiver).
_MAKERS_BY_NAME = frozenset(name.rsplit(".", 1)[-1] for name, row in models.FUNCTIONS.items() if _makes_objects(row))
_MAKING_METHODS = frozenset(name for name, row in models.MEMBERS.items() if row.role is Role.TRANSFER)
# What may stand between a called name and its `(`, read backwards (the pattern runs over the
# reversed source so that it starts with `(`, which the regular expression engine finds fast):
# whitespace, a comment (`#...` up to the line's end) or a line continuation.
_GAP_BACKWARDS = rb"(?:\s|\n[^\n]*#|\n\r?\\)*"
# Literals and the parts of a string outside its `{...}`: their value reads no name.
_READS_NOTHING = frozenset({"integer", "float", "true", "false", "none", "ellipsis", "string_start", "string_content",
                            "string_end", "escape_sequence"})
# The smallest named nodes around a `(` that is no code.
_NOT_CODE = frozenset({"comment", "string", "string_content", "string_start", "string_end", "escape_sequence"})


@lru_cache(maxsize=64)
def _maker_calls_backwards(aliases: tuple[str, ...]) -> re.Pattern[bytes]:
    """In the reversed source: the `(` of a call of a maker's name (or of a name the imports
    alias to one), or of a making method (after a `.`)."""
    def backwards(names):
        return b"|".join(re.escape(n.encode()[::-1]) for n in sorted(names))

    return re.compile(rb"\(" + _GAP_BACKWARDS + rb"(?:(?:" + backwards(_MAKERS_BY_NAME | set(aliases)) + rb")\b|(?:"
                      + backwards(_MAKING_METHODS) + rb")" + _GAP_BACKWARDS + rb"\.)")


class _Bindings(Bindings):
    """Bindings, plus how many names hold each object, so "is this object still bound anywhere?"
    is one look-up (a scan of every binding made rebinding quadratic in a function's statements:
    8,000 assignments took 2 s)."""

    def __init__(self) -> None:
        super().__init__()
        self.holders: dict[int, int] = {}
        # `Bindings.get` is the dict's own: the lowering asks it for most names it meets, and a
        # method calling `dict.get` cost twice the look-up (the dict is never replaced).
        self.get = self._values.get  # type: ignore[method-assign,assignment]

    def _changed(self, name: str, old: set[int] | None, new: set[int] | None) -> None:
        for oid in old or ():
            left = self.holders[oid] - 1
            if left:
                self.holders[oid] = left
            else:
                del self.holders[oid]
        for oid in new or ():
            self.holders[oid] = self.holders.get(oid, 0) + 1

    def held(self, oid: int) -> bool:
        return oid in self.holders


class _Value:
    """What evaluating an expression gave: objects it reads, and whether it is a new device object.
    A plain class with slots, not a dataclass: a dataclass's generated methods are compiled when
    the module is imported (1 ms of every run's start-up for this class and `_Call`)."""

    __slots__ = ("uses", "device", "kind", "api", "size", "initialising", "transfer_from", "staged_factory",
                 "cuda_pointer", "alias", "captures", "choice", "opaque")

    def __init__(self, uses: set[int] | None = None, device: bool = False, kind: Kind = Kind.TENSOR, api: str = "",
                 size: Size | None = None, initialising: bool = False, transfer_from: set[str] | None = None,
                 staged_factory: str | None = None, cuda_pointer: bool = False, alias: set[int] | None = None,
                 captures: frozenset[str] | None = None, choice: dict[int, Guard] | None = None,
                 opaque: bool = False) -> None:
        self.uses: set[int] = set() if uses is None else uses
        self.device = device  # the value is (or lives on) the device
        self.kind = kind
        self.api = api
        self.size = size
        self.initialising = initialising
        self.transfer_from = transfer_from  # names a host->device transfer copies from
        self.staged_factory = staged_factory  # `torch.randn(...).cuda()`: the host factory
        self.cuda_pointer = cuda_pointer  # cuda-python `err, ptr = cudaMalloc(n)`
        # The value IS these objects (`y = x`, `cp.asarray(d)` of a device `d`): binding it to a name
        # makes another name of them, not a new object.
        self.alias = alias
        # A function or lambda: the names it reads from the scope when called (a use of what they hold).
        self.captures = captures
        # `b if c else x`: the guard (an arm of the test `c`) under which the value is each object.
        self.choice = choice
        self.opaque = opaque  # computed by a callable no table knows (`vgg(x)`)

    def but(self, **changes) -> "_Value":
        """A copy with `changes` (what `dataclasses.replace` does: the other fields are shared)."""
        copy = _Value.__new__(_Value)
        for name in _Value.__slots__:
            setattr(copy, name, changes[name] if name in changes else getattr(self, name))
        return copy


def _in_units(value: _Value) -> Size | None:
    """A framework factory's size counts elements (`torch.empty(n)`); a raw allocation's, bytes."""
    if value.size is None or value.kind is Kind.DEVICE:
        return value.size
    return replace(value.size, unit=SizeUnit.ELEMENTS)


class _Call:
    """A call being lowered, its receiver and arguments evaluated: what every role's handler reads."""

    __slots__ = ("node", "qual", "last", "positional", "keywords", "uses", "arg_values", "receiver", "recv_node",
                 "recv_name")

    def __init__(self, node: Node, qual: str, last: str, positional: list[Node], keywords: dict[str, Node],
                 uses: set[int], arg_values: list[_Value], receiver: _Value | None, recv_node: Node | None,
                 recv_name: str) -> None:
        self.node = node
        self.qual = qual  # `torch.zeros`, as the imports resolve it ("" when the callee is no name)
        self.last = last  # its last name: the method of a method call
        self.positional = positional
        self.keywords = keywords
        self.uses = uses  # what the arguments (and a called module) read
        self.arg_values = arg_values
        self.receiver = receiver  # `x` of `x.f(...)` (also `torch` of `torch.f(...)`)
        self.recv_node = recv_node
        self.recv_name = recv_name  # the receiver when it is a plain name


def _torch_factory(qual: str) -> bool:
    """`torch.randn`, as far as host staging cares: any `torch.` name ending in a factory's."""
    return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in torch_models.FACTORY_NAMES


def _read_only(row: Api | None) -> bool:
    return row is not None and row.read_only


class _Module:
    def __init__(self, path: str, source: bytes, root: Node) -> None:
        self.path = path
        self.source = source
        self.ascii = source.isascii()  # columns need converting only when it is not
        self.text = _text_of(source, self.ascii)
        self.root = root
        self.aliases: dict[str, str] = {}
        self.qualified: dict[int, str] = {}  # `qualify`'s answers, by node id (the imports are read first)
        self.locations: dict[int, Location] = {}  # `location`'s answers, by node id
        self.constants: dict[str, int] = {}
        self.ids = itertools.count()
        self.unknown: Counter = Counter()  # statement kinds with no lowering, for -v
        self.histories: list[ObjectHistory] = []
        self.timelines: list[Timeline] = []
        self.skipped: list[str] = []
        # The offsets of the calls that may make a device object (and of what the lowering counts
        # as unknown), sorted: no statement without one of them makes an object (`_Scope.inert`).
        self.places: list[int] = []

    def location(self, node: Node) -> Location:
        """Where a node is (kept per node: a statement's events share it; a `Location` is frozen)."""
        known = self.locations.get(node.id)
        if known is None:
            known = self.locations[node.id] = self._location(node)
        return known

    def _location(self, node: Node) -> Location:
        (r0, c0), (r1, c1) = node.start_point, node.end_point
        if self.ascii:  # byte columns are character columns
            return Location(self.path, r0 + 1, c0 + 1, r1 + 1, c1 + 1)
        return Location(self.path, r0 + 1, char_column(self.source, node.start_byte, c0 + 1), r1 + 1,
                        char_column(self.source, node.end_byte, c1 + 1))

    def run(self) -> tuple[Unit, list[str]]:
        survey = _survey(self.root)
        self.collect_imports(survey.imports)
        scopes: list[tuple[str, Node]] = [("<module>", self.root)]
        scopes.extend((self.text(fn.child_by_field_id(NAME)), fn) for fn in survey.functions)
        lowered = self.scopes_to_lower([node for _, node in scopes], [m.start_byte for m in survey.matches])
        if lowered:  # what only the lowering reads (most files have no scope to lower)
            # Every suite's span, by start: a scope's are those within its body.
            self.blocks = sorted((n.start_byte, n.end_byte) for n in survey.blocks)
            self.collect_constants()
            self.names = Names(self.root, self.source, self.text, self.qualify)
        for index, (name, node) in enumerate(scopes):
            if index not in lowered:
                # No device object can come to be in it, so no rule has anything to say of it.
                self.timelines.append(_Scope.unlowered_timeline(self, name, node))
                continue
            scope = _Scope(self, name, node)
            body = node.child_by_field_id(BODY) if index else node
            scope.run(body.named_children if body is not None else [])
            if scope.has_errors:
                self.skipped.append(name)
                for h in scope.histories():
                    h.incomplete = True
            self.histories.extend(scope.histories())
            self.timelines.append(scope.timeline)
        # The names' facts call back into this module (`qualify`): a cycle through which every
        # history of the file stayed alive until the cyclic collector found it, and which made each
        # collection walk them all (a 70,000-line function: 15 us a line).  Broken here, the file's
        # objects go with its unit.
        if lowered:
            del self.names
        return Unit(self.path, self.histories, self.timelines, self.source, language="python"), self.skipped

    def scopes_to_lower(self, nodes: list[Node], unknown_at: list[int]) -> set[int]:
        """The indexes of the scopes (`nodes[0]` the module, then functions) whose own code may
        make a device object or flush the cache, those with a statement the lowering counts as
        unknown (at the offsets `unknown_at`) and those with syntax errors.  Every other scope
        gets an empty timeline without being lowered: it can hold no object (each object starts
        at a call that `may_make_objects` accepts, in its scope), and its events without objects
        are none that a rule reads (GL101 reads cache flushes, GL102 copies, both named there).
        The calls to look at are found by a regular expression over the file's bytes, not by a
        walk of its tree: the name of a maker, or of a name the imports alias to one, or a
        making method after a `.`, then `(`, with whitespace, comments and line continuations
        allowed in between."""
        calls = _maker_calls_backwards(tuple(sorted(alias for alias, target in self.aliases.items()
                                                     if target.rsplit(".", 1)[-1] in _MAKERS_BY_NAME)))
        last = len(self.source) - 1
        places = list(unknown_at)
        for match in calls.finditer(self.source[::-1]):
            at = last - match.start()  # the call's `(`
            node = self.root.named_descendant_for_byte_range(at, at + 1)
            if node is None or node.type in _NOT_CODE:
                continue  # `zeros(` in a comment or a string
            call = node.parent
            if call is None or call.type != "call" or call.child_by_field_id(ARGUMENTS) != node \
                    or self.may_make_objects(call):
                places.append(at)  # not a call as expected: lowered, to be safe
        self.places = sorted(places)
        lowered = {0} if nodes[0].has_error else set()
        if not places:  # only the scopes with syntax errors: no call to place in its function
            return lowered | {i for i, n in enumerate(nodes) if i and n.has_error}
        spans = sorted((n.start_byte, n.end_byte, i) for i, n in enumerate(nodes) if i)
        starts = [start for start, _, _ in spans]
        parents: list[int] = []  # into `spans`: the innermost function around each, -1 for none
        open_: list[int] = []
        for k, (start, _, i) in enumerate(spans):
            while open_ and spans[open_[-1]][1] <= start:
                open_.pop()
            parents.append(open_[-1] if open_ else -1)
            open_.append(k)
            if nodes[i].has_error:
                lowered.add(i)
        for at in places:
            k = bisect_right(starts, at) - 1
            while k >= 0 and spans[k][1] <= at:
                k = parents[k]
            lowered.add(spans[k][2] if k >= 0 else 0)
        return lowered

    def may_make_objects(self, call: Node) -> bool:
        """Whether this call may give a device value (or flush the cache) in a scope where no
        device value exists yet: what `_Scope.call` does with it then, read from its syntax
        alone.  A factory makes a device array only with a CUDA `device=` (or a template already
        on the device, which another call must have made), `.to(t)` only to a CUDA `t`; an
        allocator, an upload, a flush and a row that passes device arrays through always may."""
        function = call.child_by_field_id(FUNCTION)
        args = call.child_by_field_id(ARGUMENTS)
        qual = self.qualify(function)
        last = qual.rsplit(".", 1)[-1] if qual else (self.text(function).rsplit(".", 1)[-1] if function is not None else "")
        positional: list[Node] = []
        keywords: dict[str, Node | None] = {}
        for a in (args.named_children if args is not None else []):
            if a.type == "keyword_argument":
                keywords[self.text(a.child_by_field_id(NAME))] = a.child_by_field_id(VALUE)
            elif a.type != "comment":
                positional.append(a)
        row = models.function(qual, last)
        if row is not None and _makes_objects(row):
            if row.role is not Role.FACTORY or row.passes_device or row.device == ALWAYS or \
                    _is_cuda_device(self.text, keywords.get(DEVICE_KEYWORD)):
                return True
            return False  # a factory on the host: its handler says so, no method is asked
        member = models.member(last) if function is not None and function.type == "attribute" else None
        if member is None or member.role is not Role.TRANSFER:
            return False
        target = keywords.get(DEVICE_KEYWORD) or (positional[0] if positional else None)
        return member.device == ALWAYS or _is_cuda_device(self.text, target)

    def collect_imports(self, statements: list[Node]) -> None:
        """Import aliases from the import statements anywhere in the file; where two bind the same
        name, the first in the file wins (as the walk this replaced did)."""
        for node in sorted(statements, key=lambda n: n.start_byte, reverse=True):
            if node.type == "import_statement":
                for child in node.named_children:
                    if child.type == "aliased_import":
                        self.aliases[self.text(child.child_by_field_id(ALIAS))] = self.text(child.child_by_field_id(NAME))
                    elif child.type == "dotted_name":
                        full = self.text(child)
                        self.aliases[full.split(".")[0]] = full.split(".")[0]
            else:
                module = self.text(node.child_by_field_id(MODULE_NAME))
                for child in node.children_by_field_id(NAME):
                    if child.type == "aliased_import":
                        name = self.text(child.child_by_field_id(NAME))
                        self.aliases[self.text(child.child_by_field_id(ALIAS))] = f"{module}.{name}"
                    else:
                        name = self.text(child)
                        self.aliases[name] = f"{module}.{name}"

    def collect_constants(self) -> None:
        """Module-level `NAME = <int expression>`: sizes written with them are compile-time."""
        for node in self.root.named_children:
            if node.type != "expression_statement" or not node.named_children:
                continue
            assign = node.named_children[0]
            if assign.type != "assignment":
                continue
            left, right = assign.child_by_field_id(LEFT), assign.child_by_field_id(RIGHT)
            if left is not None and left.type == "identifier" and right is not None:
                value = self.fold(right)
                if value is not None:
                    self.constants[self.text(left)] = value

    def fold(self, node: Node | None) -> int | None:
        if node is None:
            return None
        kind = node.type
        if kind == "integer":
            try:
                return int(self.text(node).replace("_", ""), 0)
            except ValueError:
                return None
        if kind == "identifier":
            return self.constants.get(self.text(node))
        if kind == "parenthesized_expression" and node.named_children:
            return self.fold(node.named_children[0])
        if kind in ("tuple", "list", "expression_list"):
            total = 1
            for child in node.named_children:
                value = self.fold(child)
                if value is None:
                    return None
                total *= value
            return total
        if kind == "binary_operator":
            left = self.fold(node.child_by_field_id(LEFT))
            right = self.fold(node.child_by_field_id(RIGHT))
            op = self.text(node.child_by_field_id(OPERATOR))
            if left is None or right is None:
                return None
            try:
                return {"*": left * right, "+": left + right, "-": left - right, "//": left // right if right else None,
                        "<<": left << right, "**": left ** right if right < 64 else None}.get(op)
            except (ValueError, ZeroDivisionError):
                return None
        return None

    def qualify(self, node: Node | None) -> str:
        """`T.zeros` -> `torch.zeros`; `zeros` (from torch import zeros) -> `torch.zeros`.  Kept
        per node: the screen, the names' facts and the lowering ask of the same callees."""
        if node is None:
            return ""
        known = self.qualified.get(node.id)
        if known is None:
            known = self.qualified[node.id] = self._qualify(node)
        return known

    def _qualify(self, node: Node) -> str:
        if node.type == "identifier":
            name = self.text(node)
            return self.aliases.get(name, name)
        if node.type == "attribute":
            return f"{self.qualify(node.child_by_field_id(OBJECT))}.{self.text(node.child_by_field_id(ATTRIBUTE))}"
        return ""


class _Scope(ScopeLowering):
    bindings: _Bindings

    def __init__(self, module: _Module, name: str, node: Node) -> None:
        super().__init__(name, _Bindings(), Distance.LOOPS)
        self.m = module
        self.text = module.text
        self.name = name
        self.node = node
        self.timeline.start_byte, self.timeline.end_byte = node.start_byte, node.end_byte
        self.has_errors = node.has_error if node.type == "function_definition" else False
        self.stmt_node: Node | None = None
        self.host_factories: dict[str, str] = {}  # name -> host factory that made it
        self._name_counts: Counter | None = None
        # name -> the expression last bound to it; its names are read only when a size asks.
        self.derived: dict[str, Node] = {}
        self.device_context: list[set[str]] = []  # names selecting the current device (`with Device(i)`)
        # Names bound to functions and lambdas of the scope (and, in the module, its functions):
        # the names each reads when called.
        self.closures: dict[str, frozenset[str]] = {}
        self.local_defs: dict[str, Node] = {}  # functions defined in this scope, by name
        # `src = buf if need else x`: the objects `src` was bound to, and the arm each is in.
        self.chosen: dict[str, tuple[frozenset[int], dict[int, Guard]]] = {}
        self._names: tuple[frozenset[str], frozenset[str]] | None = None
        self._loop_names: dict[tuple[int, int], tuple[set[str], set[str], set[str]]] = {}  # by the loop's span
        self.maybe_device = self.parameters_maybe_on_device()

    def bound(self) -> frozenset[str]:
        """The names this scope binds anywhere."""
        if self._names is None:
            self._names = self.m.names.scope_names(self.node)
        return self._names[0]

    def parameters_maybe_on_device(self) -> set[str]:
        """Parameters that may hold a device array of the caller's: all but those annotated or
        named as host data (`frames: np.ndarray`, `h_x`)."""
        params = self.node.child_by_field_id(PARAMETERS) if self.node.type == "function_definition" else None
        out: set[str] = set()
        for p in params.named_children if params is not None else []:
            name = p if p.type == "identifier" else p.child_by_field_id(NAME) or (
                p.named_children[0] if p.named_children else None)
            if name is None or name.type != "identifier" or _HOST_NAME.search(self.text(name)):
                continue
            annotation = p.child_by_field_id(TYPE)
            if annotation is not None:
                words = {self.m.qualify(n) for n in _walk(annotation) if n.type in ("identifier", "attribute")}
                if any(_HOST_ANNOTATION.search(w) for w in words) and not any(
                        w.startswith(("cupy", "torch", "numba")) for w in words):
                    continue
            out.add(self.text(name))
        return out

    def code_root(self) -> Node | None:
        """What the scope's code lies under: a function's body (nested scopes included), the module."""
        return self.node.child_by_field_id(BODY) if self.node.type == "function_definition" else self.node

    def name_count(self, name: str) -> int:
        """How many times `name` is written under the scope's body (nested scopes included).
        Counted on first need only: few scopes ever ask."""
        if self._name_counts is None:
            self._name_counts = Counter(self.text(n) for n in _walk(self.code_root()) if n.type == "identifier")
        return self._name_counts[name]

    # ------------------------------------------------------------------ results
    def histories(self) -> list[ObjectHistory]:
        return [h for h in self.objects.values() if h.alloc is not None]

    def location_of(self, node: Node) -> Location:
        return self.m.location(node)

    def statement_of(self, node: Node) -> tuple[int, int]:
        stmt = self.stmt_node or node
        return stmt.start_byte, stmt.end_byte

    @staticmethod
    def unlowered_timeline(module: _Module, name: str, node: Node) -> Timeline:
        """The timeline of a scope that is not lowered: its span and its end, no events (nothing
        in it touches a device object), no suites (they are for the fixes of objects)."""
        return Timeline(name=name, end=Location(module.path, node.end_point[0] + 1, 1), start_byte=node.start_byte,
                        end_byte=node.end_byte, distance=Distance.LOOPS)

    def run(self, body: list[Node]) -> None:
        _add_suites(self.timeline, self.m.blocks, self.node)
        self.block(body)
        if self.node.type == "module":
            # The module's functions read these globals whenever they are called, by this module
            # or by its importers: the objects they hold at the end live on with the module.
            self.stmt_node = None
            held = self.captured(self.with_closures(self.m.names.global_reads())) if self.objects else set()
            if held and body:
                self.escape(held, body[-1], "read by the module's functions")
        self.builder.finish(Location(self.m.path, self.node.end_point[0] + 1, 1), True, "end of scope")

    # ------------------------------------------------------------------ statements
    def block(self, stmts: list[Node]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def body_of(self, node: Node | None) -> list[Node]:
        if node is None:
            return []
        return node.named_children if node.type == "block" else [node]

    def stmt(self, node: Node) -> None:
        kind = node.type
        self.stmt_node = node
        if kind in ("function_definition", "decorated_definition"):
            self.define(node)
            return
        if kind in ("class_definition", "comment", "import_statement", "import_from_statement",
                    "future_import_statement", "pass_statement"):
            return
        if kind == "ERROR":
            self.has_errors = True
            return
        if kind == "expression_statement":
            if self.inert(node):
                for child in node.named_children:
                    if child.type == "assignment":
                        self.inert_assignment(child)
                return
            for child in node.named_children:
                self.expression_statement(child)
        elif kind == "if_statement":
            self.if_(node)
        elif kind in ("for_statement", "while_statement"):
            self.loop(node)
        elif kind == "with_statement":
            context: set[str] = set()
            for clause in node.named_children:
                if clause.type == "with_clause":
                    self.reads(clause, node)
                    for item in _walk(clause):
                        if item.type == "call" and self.m.qualify(item.child_by_field_id(FUNCTION)).rsplit(
                                ".", 1)[-1] in models.DEVICE_SELECTORS:
                            context |= _identifiers(self, item.child_by_field_id(ARGUMENTS))
            # `with cupy.cuda.Device(gpu_id):` — copies inside go to that device: it is an input.
            self.device_context.append(context)
            self.block(self.body_of(node.child_by_field_id(BODY)))
            self.device_context.pop()
        elif kind == "try_statement":
            for child in node.named_children:
                if child.type == "block":
                    self.block(child.named_children)
                elif child.type in ("except_clause", "finally_clause", "else_clause"):
                    inner = [c for c in child.named_children if c.type == "block"]
                    for b in inner:
                        self.block(b.named_children)
        elif kind == "delete_statement":
            for target in _flatten_targets(node.named_children):
                name = self.text(target)
                self.forget(name)
                oids = {o for o in self.bindings.pop(name, set()) if o in self.objects and not self.bindings.held(o)}
                if oids:
                    event = self.event(Op.FREE, "del", node)
                    for oid in oids:
                        self.objects[oid].frees.append(event)
        elif kind in ("return_statement", "raise_statement"):
            value = node.named_children[0] if node.named_children else None
            if value is not None and kind == "return_statement":
                # What is handed back escapes; what is only read to compute a host result does not.
                parts = value.named_children if value.type in ("tuple", "expression_list", "list") else [value]
                returned: set[int] = set()
                read: set[int] = set()
                for part in parts:
                    part_value = self.evaluate(part)
                    keeps = part_value.device or part_value.captures is not None  # a closure keeps what it reads
                    (returned if keeps or part.type in ("dictionary", "list", "tuple") else read).update(
                        part_value.uses)
                self.use(read | returned, node, "return")
                self.escape(returned, node, "return")
            elif value is not None:
                self.reads(value, node)
            self.event(Op.EXIT, "return", node, detail="return")
        elif kind in ("global_statement", "nonlocal_statement"):
            for n in node.named_children:
                for oid in self.objects_of(self.text(n)):
                    self.escape({oid}, node, "global")
        else:
            if kind not in _READ_ONLY_STATEMENTS:
                # `match`, say: its names are read, but its arms are not branches to the rules.
                unknown.skipped(self.m.unknown, "tree-sitter-python", kind, node.start_point[0] + 1)
            self.reads(node, node)

    def inert(self, node: Node) -> bool:
        """Whether lowering a statement can change nothing but what the names it binds are bound to:
        no call in it may make a device object or flush the cache (it holds none of the module's
        `places`) and none of the names in it holds an object or a function of the scope.  Its
        parts then read no object and give no device value, so no event comes of it; what is left
        is a binding's value (a host factory's, for GL102) and the names rebound.  Most statements
        of a lowered scope are inert (argument parsing, printing, host arithmetic)."""
        places = self.m.places
        at = bisect_left(places, node.start_byte)
        if at < len(places) and places[at] < node.end_byte:
            return False
        text = self.text(node)
        if not (self.m.ascii or text.isascii()):
            return False  # a name may hold characters that the token pattern does not take
        held, closures = self.bindings.get, self.closures
        for name in set(_NAME_TOKEN.findall(text)):
            if held(name) or name in closures:
                return False
        return True

    def inert_assignment(self, node: Node) -> None:
        """An assignment of an inert statement (`inert`): `assignment`, less everything that reads or
        writes objects, which there are none of.  Each value is `inert_value`'s."""
        left = node.child_by_field_id(LEFT)
        right = node.child_by_field_id(RIGHT)
        if right is None or left is None or left.type in ("subscript", "attribute"):
            return  # it binds no name
        targets = _flatten_targets([left])
        values = _paired_values(left, right, targets)
        if len(values) == len(targets):
            evaluated = [self.inert_value(value_node) for value_node in values]
            for target, value_node, value in zip(targets, values, evaluated):
                self.bind(target, value, node, value_node)
            return
        for target in targets:
            self.unbind(self.text(target), node)

    def inert_value(self, node: Node) -> _Value:
        """What `evaluate` gives for an expression of an inert statement, without evaluating its
        parts (each would give an empty value: no object read, not on the device).  What is left
        of it is what binding it reads: a call's row (a host factory's name) and a lambda's
        captures; every other expression gives nothing that binding reads."""
        while node.type == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                return _Value()
            node = inner[0]
        if node.type == "call":
            return self.inert_call(node)
        if node.type == "lambda":
            return self.evaluate(node)
        return _Value()

    def inert_call(self, node: Node) -> _Value:
        """`call(node, parts=False)`.  Where no table has a row for the callee (neither a function's
        nor, for a method, a member's), that is a host value named after the callee, whatever its
        arguments: `plain_function`'s (or `method`'s) last answer, every earlier test needing a
        row or a device part.  Most calls of inert assignments (`parser = argparse.ArgumentParser()`,
        `path = os.path.join(d, f)`) need no look at their arguments then."""
        function = node.child_by_field_id(FUNCTION)
        qual = self.m.qualify(function)
        last = qual.rsplit(".", 1)[-1] if qual else (self.text(function).rsplit(".", 1)[-1] if function is not None else "")
        if models.function(qual, last) is None and (
                function is None or function.type != "attribute" or models.member(last) is None):
            return _Value(api=qual)
        return self.call(node, parts=False)

    def define(self, node: Node) -> None:
        """`def f(...)`: from here on `f` names a function that reads, whenever it is called (or a
        kernel launched), what its free names hold at that moment."""
        fn = node.child_by_field_id(DEFINITION) if node.type == "decorated_definition" else node
        if fn is None or fn.type != "function_definition":
            return
        name = self.text(fn.child_by_field_id(NAME))
        if self.node.type == "module":
            captures = self.m.names.reach(name)
        else:
            captures = self.with_closures(self.m.names.free_names(fn))
            self.local_defs[name] = fn
        self.unbind(name, node)
        self.closures[name] = captures
        decorators = [self.m.qualify(_callee(c.named_children[0])) for c in node.named_children
                      if c.type == "decorator" and c.named_children]
        if any(not d.startswith("numba.") for d in decorators):
            # A decorator receives the function: it may keep it or call it right away.
            self.use(self.captured(captures), node, "decorator")

    def with_closures(self, names: frozenset[str]) -> frozenset[str]:
        """Free names, with those of the scope's functions and lambdas they call or pass on."""
        return names.union(*(self.closures[n] for n in names if n in self.closures))

    def captured(self, names: frozenset[str]) -> set[int]:
        return set().union(*(self.objects_of(n) for n in names))

    def forget(self, name: str) -> None:
        """`name` is rebound or deleted: what was known about its old value goes."""
        self.closures.pop(name, None)
        self.chosen.pop(name, None)
        self.maybe_device.discard(name)

    def expression_statement(self, node: Node) -> None:
        if node.type == "assignment":
            self.assignment(node)
        elif node.type == "augmented_assignment":
            target = node.child_by_field_id(LEFT)
            value = node.child_by_field_id(RIGHT)
            self.use(self.reads(value, node).uses, node, self.api_of(value) or "expression")
            self.use(self.reads(target, node).uses, node, f"`{self.text(node.child_by_field_id(OPERATOR))}`",
                     writes=True)
        elif node.type in ("yield", "await"):
            oids = self.reads(node, node).uses
            if node.type == "yield":
                self.escape(oids, node, "yield")
        else:
            value = self.evaluate(node)
            self.use(value.uses, node, value.api or self.api_of(node))

    def assignment(self, node: Node) -> None:
        left = node.child_by_field_id(LEFT)
        right = node.child_by_field_id(RIGHT)
        if right is None or left is None:
            return
        # Full overwrite through a subscript: `x[:] = v`, `x[...] = v`.
        if left.type == "subscript":
            base = left.child_by_field_id(VALUE)
            oids = self.objects_of(self.text(base)) if base is not None and base.type == "identifier" else set()
            value = self.evaluate(right)
            self.use(value.uses, node, value.api or "assignment")
            if oids:
                extent = self.slice_extent(left)
                if extent == "full":
                    self.write(oids, Op.COPY, "slice assignment", node, full=True)
                else:
                    self.use(oids, node, "slice assignment", size=extent if isinstance(extent, Size) else None,
                             writes=True)
            else:
                self.use(self.reads(left, node).uses, node, "assignment")
            return
        if left.type == "attribute":
            value = self.evaluate(right)
            self.use(value.uses, node, value.api or "assignment")
            obj = left.child_by_field_id(OBJECT)
            new = self.new_object(value, node, self.text(left)) if value.device and value.alias is None and (
                value.api or value.transfer_from) else set()
            if obj is not None:
                self.escape(value.uses | new, node, "stored")
            return
        targets = _flatten_targets([left])
        values = _paired_values(left, right, targets)
        if len(values) == len(targets):
            # Every value first, then the bindings: `a, b = b, a` swaps the two objects.
            evaluated = [self.evaluate(value_node, bound=target.type == "identifier")
                         for target, value_node in zip(targets, values)]
            for target, value_node, value in zip(targets, values, evaluated):
                self.bind(target, value, node, value_node)
            return
        value = self.evaluate(right, bound=True)
        if value.cuda_pointer and len(targets) >= 2:
            # cuda-python: `err, ptr = cudart.cudaMalloc(n)`
            for target in targets:
                if target is targets[1]:
                    self.bind(target, value, node, right)
                else:
                    self.unbind(self.text(target), node)
            return
        self.use(value.uses, node, value.api or "assignment")
        for target in targets:
            self.unbind(self.text(target), node)

    def bind(self, target: Node, value: _Value, stmt: Node, value_node: Node) -> None:
        name = self.text(target)
        self.derived[name] = value_node
        if target.type not in ("identifier",):
            self.use(value.uses, stmt, value.api or "assignment")
            if target.type in ("subscript", "attribute"):
                self.escape(value.uses, stmt, "stored")
            return
        if name == "_" and value.alias is None:
            value = value.but(device=False)  # `_ = model(x)`: discarded, as `model(x)` alone would be
        # A host tensor made by a factory, remembered for GL102.
        if not value.device and value.api and value.staged_factory is None:
            factory = value.api
            if _torch_factory(factory):
                self.host_factories[name] = factory
            else:
                self.host_factories.pop(name, None)
        else:
            self.host_factories.pop(name, None)
        if value.alias is not None:
            # Another name for the same objects (`y = x`, `src = buf if need else x`): no new object,
            # and no use (binding a name launches nothing); the reads that chose it are uses.
            self.use(value.uses - value.alias, stmt, "condition")
            self.unbind(name, stmt, keep=value.alias)
            self.bindings[name] = set(value.alias)
            if value.choice:
                self.chosen[name] = (frozenset(value.alias), value.choice)
            return
        if value.captures is not None:
            # A lambda (or another name of a function): its reads happen when it is called.
            self.unbind(name, stmt)
            self.closures[name] = value.captures
            return
        if value.device:
            new = self.new_object(value, stmt, name)
            self.unbind(name, stmt, keep=new)
            self.bindings[name] = new
        else:
            self.use(value.uses, stmt, value.api or "assignment")
            self.unbind(name, stmt)

    def unbind(self, name: str, stmt: Node, keep: set[int] | None = None) -> None:
        self.forget(name)
        old = self.bindings.pop(name, set())
        dead = {o for o in old if o in self.objects and not self.bindings.held(o) and o not in (keep or set())}
        if dead:
            event = self.event(Op.FREE, "rebind", stmt)
            for oid in dead:
                self.objects[oid].frees.append(event)

    def new_object(self, value: _Value, stmt: Node, name: str) -> set[int]:
        """Emit the events of creating a device object from `value` and return its id."""
        if value.uses:
            self.use(value.uses, stmt, value.api or "expression")
        if value.transfer_from is not None:
            names = frozenset(value.transfer_from).union(*self.device_context)
            detail = f"host-factory:{value.staged_factory}" if value.staged_factory else ""
            copy = self.event(Op.COPY, value.api, stmt, direction="h2d", names=names, detail=detail)
        else:
            copy = None
        oid = next(self.m.ids)
        # Computed from other device objects (not a factory, transfer or allocator): "derived".
        derived = not (value.size is not None or value.transfer_from is not None or value.initialising
                       or value.kind is not Kind.TENSOR or value.api.startswith(models.ALLOCATING_MODULES))
        alloc = self.event(Op.ALLOC, value.api or "expression", stmt, size=value.size,
                           names=value.size.names if value.size is not None else frozenset(),
                           detail="derived" if derived else "", opaque=value.opaque)
        history = ObjectHistory(name=name, timeline=self.timeline, alloc=alloc, size=_in_units(value), kind=value.kind)
        self.objects[oid] = history
        if copy is not None:
            history.touches.append(Touch(copy, Access.WRITE | Access.FULL, use=False, size=value.size))
        if value.initialising:
            init = self.event(Op.MEMSET, value.api, stmt, size=value.size)
            history.touches.append(Touch(init, Access.WRITE | Access.FULL, use=False, size=value.size, by_alloc=True))
        return {oid}

    def use(self, oids: set[int], node: Node, api: str, size: Size | None = None, writes: bool = False,
            definite: bool = True) -> None:
        """A use: reads (and, for in-place operations, writes) the objects."""
        oids = {o for o in oids if o in self.objects}
        if not oids:
            return
        names = size.names if size is not None else frozenset()
        access = Access.READ | (Access.WRITE if writes else Access.NONE)
        for guard, group in self.arms_of(oids, node):
            guards = None if guard is None else (*self.guard_stack, guard)
            event = self.event(Op.CALL, api or "expression", node, guards=guards, names=names)
            for oid in group:
                h = self.objects[oid]
                h.touches.append(Touch(event, access, use=True, size=size if size is not None else h.size,
                                       definite=definite))

    def arms_of(self, oids: set[int], node: Node) -> list[tuple[Guard | None, set[int]]]:
        """The objects grouped by the arm of a conditional expression they are reached through
        here: `src = buf if need else x` ... `f(src)` uses `buf` only where `need` holds (as if under
        `if need:`), unless `buf` is also named some other way."""
        valid = {name: choice for name, (held, choice) in self.chosen.items() if self.bindings.get(name) == held}
        if not valid:
            return [(None, oids)]
        read = _identifiers(self, node)
        groups: dict[Guard | None, set[int]] = {}
        for oid in oids:
            arms = {valid[n].get(oid) if n in valid else None for n in read if oid in self.bindings.get(n, ())}
            guard = arms.pop() if len(arms) == 1 else None
            groups.setdefault(guard, set()).add(oid)
        return list(groups.items())

    def write(self, oids: set[int], op: Op, api: str, node: Node, full: bool) -> None:
        event = self.event(op, api, node)
        for oid in oids:
            access = Access.WRITE | (Access.FULL if full else Access.NONE)
            self.objects[oid].touches.append(Touch(event, access, use=False, size=self.objects[oid].size))

    # ------------------------------------------------------------------ control flow
    def if_(self, node: Node) -> None:
        cond = node.child_by_field_id(CONDITION)
        self.use(self.reads(cond, node).uses, cond or node, "condition")
        arms: list[tuple[Node | None, list[Node]]] = [(cond, self.body_of(node.child_by_field_id(CONSEQUENCE)))]
        for alt in node.children_by_field_id(ALTERNATIVE):
            if alt.type == "elif_clause":
                arms.append((alt.child_by_field_id(CONDITION), self.body_of(alt.child_by_field_id(CONSEQUENCE))))
            else:
                arms.append((None, self.body_of(alt.child_by_field_id(BODY))))
        guard_id = next(self.guard_ids)
        has_else = arms[-1][0] is None and len(arms) > 1
        mark = self.bindings.checkpoint()
        arms_made: list[dict[str, set[int] | None]] = []
        for index, (arm_cond, body) in enumerate(arms):
            if index > 0 and arm_cond is not None:
                self.use(self.reads(arm_cond, node).uses, arm_cond, "condition")
            text = self.text(cond) if cond is not None else ""
            with self.guarded(Guard(guard_id, index, text, self.m.location(cond or node), frozenset(),
                                    node.start_byte, node.end_byte)):
                self.block(body)
            arms_made.append(self.bindings.undo(mark))  # the next arm starts from the bindings before the `if`
        self.bindings.join(arms_made, exhaustive=has_else)
        self.bindings.release()

    def loop(self, node: Node) -> None:
        values, contents, read = self.loop_names(node)
        with self.looping(self.m.location(node), values, contents, (node.start_byte, node.end_byte)) as loop_id:
            self.loop_body(node, loop_id, read)
        alt = node.child_by_field_id(ALTERNATIVE)
        if alt is not None:
            self.block(self.body_of(alt.child_by_field_id(BODY)))

    def loop_body(self, node: Node, loop_id: int, read: set[str]) -> None:
        body = self.body_of(node.child_by_field_id(BODY))
        cond = node.child_by_field_id(CONDITION) if node.type == "while_statement" else None
        # What the loop rebinds before anything in it may launch work (its own variables,
        # `x = batch.cuda()` at the top of its body) dies before the loop runs anything on the GPU
        # (a loop that runs no iteration launches nothing either).
        first, quiet = self.rebound_first(node, body, cond)
        for name, where in first:
            held = self.objects_of(name)
            if held and not any(held & self.objects_of(n) for n in self.names_before(node, where)):
                self.unbind(name, where)
        # The loop stands for the kernels its body launches: one launch site (none for a loop that
        # calls nothing that could launch one).  The first `quiet` parts were found to launch
        # nothing above, and unbinding names takes no reason to launch away from none.
        parts = ([cond] if cond is not None else []) + body
        launches = any(self.may_launch(part) for part in parts[quiet:])
        self.event(Op.LAUNCH, "loop", node, launches=1 if launches else 0, detail="loop")
        if node.type == "for_statement":
            # `zip(edges[:-1], edges[1:])` is consumed while the loop runs: a use inside it.
            right = node.child_by_field_id(RIGHT)
            self.use(self.reads(right, node).uses, right or node, "iteration")
        if node.type == "while_statement":
            self.use(self.reads(cond, node).uses, cond or node, "condition")
        else:
            left = node.child_by_field_id(LEFT)
            for target in _flatten_targets([left] if left is not None else []):
                self.unbind(self.text(target), node)
        # The loop's names, not every binding: linear overall.
        read = read - {name for name, _ in first}
        before = {name: self.objects_of(name) for name in read}
        self.block(body)
        # A name rebound in the loop and read by the loop carries its new object into the next
        # iteration (`m = m_next.cuda()` ... `m(inputs)`, `a, b = b, a`): that object is used again.
        # Not the names each iteration rebinds before reading them.
        carried: set[int] = set()
        for name in read:
            carried |= self.objects_of(name) - before[name]
        if carried:
            self.use(carried, node, "next iteration")

    def names_before(self, loop: Node, where: Node) -> set[str]:
        """The names an iteration reads before the statement `where` (its condition, what a `for`
        loop iterates, the statements before `where` in its body)."""
        if where is loop:
            return _identifiers(self, loop.child_by_field_id(RIGHT) or loop.child_by_field_id(CONDITION))
        out = _identifiers(self, loop.child_by_field_id(RIGHT) or loop.child_by_field_id(CONDITION))
        for stmt in self.body_of(loop.child_by_field_id(BODY)):
            if stmt is where or stmt == where:
                break
            out |= _identifiers(self, stmt)
        return out | _identifiers(self, where.named_children[0].child_by_field_id(RIGHT)
                                  if where.named_children else None)

    def rebound_first(self, loop: Node, body: list[Node], cond: Node | None) -> tuple[list[tuple[str, Node]], int]:
        """The names each iteration rebinds before it reads them and before anything in it may
        launch work (a `for` loop's variables, then the plain assignments at the top of its body,
        up to the first statement that may launch work), with where; and how many of the loop's
        parts (its condition, then its statements) were found to launch nothing on the way."""
        if cond is not None and self.may_launch(cond):
            return [], 0
        quiet = 1 if cond is not None else 0
        reads: set[str] = set(_identifiers(self, cond)) if cond is not None else set()
        out: list[tuple[str, Node]] = []
        if loop.type == "for_statement":
            reads |= _identifiers(self, loop.child_by_field_id(RIGHT))
            out += [(self.text(t), loop) for t in _flatten_targets([loop.child_by_field_id(LEFT)])
                    if t.type == "identifier" and self.text(t) not in reads]
        for stmt in body:
            assign = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
            if assign is None or assign.type != "assignment" or self.may_launch(stmt):
                break
            quiet += 1
            reads |= _identifiers(self, assign.child_by_field_id(RIGHT))
            out += [(self.text(t), stmt) for t in _flatten_targets([assign.child_by_field_id(LEFT)])
                    if t.type == "identifier" and self.text(t) not in reads]
        return out, quiet

    def may_launch(self, node: Node) -> bool:
        """Whether a statement (or a loop's condition) calls anything that may launch GPU work:
        not Python's own functions, host libraries and the methods of host values, nor a function
        of this file whose calls launch nothing, given host values."""
        for n in code_nodes(node):
            if n.type != "call" or not self.m.names.call_launches(n, self.node) or self.host_copy(n):
                continue
            defs = self.functions_called(n)
            if not defs or any(self.m.names.function_launches(d) for d in defs):
                return True
            function = n.child_by_field_id(FUNCTION)
            if self.captured(self.closures.get(self.text(function), frozenset())) or any(
                    self.bindings.get(self.text(a)) for a in _walk(n.child_by_field_id(ARGUMENTS))
                    if a.type == "identifier"):
                return True  # it computes on device objects
        return False

    def host_copy(self, call: Node) -> bool:
        """A copy of host data to the device (`batch.cuda()`, `x.to(dev)`, `cuda.to_device(h)`,
        `cp.asarray(h)`): a copy, no kernel."""
        function = call.child_by_field_id(FUNCTION)
        args = call.child_by_field_id(ARGUMENTS)
        positional = [a for a in (args.named_children if args is not None else []) if a.type not in (
            "keyword_argument", "comment")]
        row = models.function(self.m.qualify(function), "")
        if row is not None and (row.role is Role.TRANSFER or (row.role is Role.FACTORY and row.source is not None)):
            source = positional[row.source] if row.source is not None and len(positional) > row.source else None
        elif function is not None and function.type == "attribute":
            member = models.member(self.text(function.child_by_field_id(ATTRIBUTE)))
            if member is None or member.role is not Role.TRANSFER:
                return False
            target = next((a.child_by_field_id(VALUE) for a in (args.named_children if args is not None else [])
                           if a.type == "keyword_argument" and self.text(a.child_by_field_id(NAME)) == DEVICE_KEYWORD),
                          positional[0] if positional else None)
            if member.device != ALWAYS and not self.is_cuda_device(target):
                return False  # `x.to(torch.float16)`: a conversion, on the device if `x` is there
            source = function.child_by_field_id(OBJECT)
        else:
            return False
        root = _root_name(self, source)
        return source is not None and root is not None and not self.bindings.get(root)

    def functions_called(self, call: Node) -> list[Node]:
        """The functions of this file a call by plain name runs: one defined in this scope, else a
        top-level one (unless the scope binds the name to something else)."""
        function = call.child_by_field_id(FUNCTION)
        if function is None or function.type != "identifier":
            return []
        name = self.text(function)
        if name in self.local_defs:
            return [self.local_defs[name]]
        defs = self.m.names.top_defs.get(name)
        # `bound()` last: the first time, it walks the whole scope.
        if defs and (self.node.type == "module" or name not in self.bound()):
            return defs
        return []

    def loop_names(self, loop: Node) -> tuple[set[str], set[str], set[str]]:
        """In one walk of the loop: the names it rebinds, the names whose contents it may change
        (`x[i] = v`, `x.add_(y)`, `f(x)`), and the names it reads (not only assigns to).  An
        assignment marks the names it only assigns before the walk reaches them (tree-sitter's
        `Node.parent` searches down from the root: asking it per identifier was quadratic in the
        nesting depth, a 50,000-term expression took 40 s).  A loop inside is walked once, its
        names kept for its own lowering."""
        key = (loop.start_byte, loop.end_byte)
        known = self._loop_names.get(key)
        if known is not None:
            return known
        values: set[str] = set()
        contents: set[str] = set()
        read: set[str] = set()
        # Identifiers only assigned to (`x = ...`, `a, b = ...`): their assignment, met first,
        # records where they start.
        assigned: set[int] = set()
        stack: list[Node] = [loop]
        while stack:
            n = stack.pop()
            kind = n.type
            if kind == "identifier":
                if n.start_byte not in assigned:
                    read.add(self.text(n))
                continue
            if n is not loop and (kind == "for_statement" or kind == "while_statement"):
                # A loop inside: its names, walked once (its own lowering asks again).
                inner = self.loop_names(n)
                values |= inner[0]
                contents |= inner[1]
                read |= inner[2]
                continue
            children = n.named_children
            stack.extend(children)  # in any order: an assignment is met before what it holds
            if kind in ("assignment", "augmented_assignment"):
                left = n.child_by_field_id(LEFT)
                if kind == "assignment":
                    if left is not None and left.type == "identifier":
                        assigned.add(left.start_byte)
                    for child in children:
                        if child.type in ("pattern_list", "tuple_pattern"):
                            assigned.update(c.start_byte for c in child.named_children if c.type == "identifier")
                for target in _flatten_targets([left] if left is not None else []):
                    if target.type == "identifier":
                        values.add(self.text(target))
                    else:
                        root = _root_name(self, target)
                        if root:
                            contents.add(root)
            elif kind == "for_statement":
                left = n.child_by_field_id(LEFT)
                for target in _flatten_targets([left] if left is not None else []):
                    values.add(self.text(target))
            elif kind == "call":
                function = n.child_by_field_id(FUNCTION)
                method = None
                if function is not None and function.type == "attribute":
                    method = self.text(function.child_by_field_id(ATTRIBUTE))
                    if not _read_only(models.member(method)):
                        root = _root_name(self, function.child_by_field_id(OBJECT))
                        if root:
                            contents.add(root)
                args = n.child_by_field_id(ARGUMENTS)
                qual = self.m.qualify(function)
                if args is not None and not _read_only(models.member(method) if method is not None else None) \
                        and not qual.startswith(models.READ_ONLY_MODULES) and not _read_only(models.FUNCTIONS.get(qual)):
                    for a in args.named_children:
                        root = _root_name(self, a)
                        if root:
                            contents.add(root)
            elif kind == "named_expression":
                values.add(self.text(n.child_by_field_id(NAME)))
        self._loop_names[key] = (values, contents, read)
        return values, contents, read

    # ------------------------------------------------------------------ expressions
    def reads(self, node: Node | None, stmt: Node) -> _Value:
        """Evaluate an expression only for the device objects it reads."""
        if node is None:
            return _Value()
        return self.evaluate(node)

    def api_of(self, node: Node | None) -> str:
        if node is None:
            return ""
        for n in _walk(node):
            if n.type == "call":
                return self.m.qualify(n.child_by_field_id(FUNCTION)) or self.text(n.child_by_field_id(FUNCTION))
        return ""

    def objects_of(self, name: str) -> set[int]:
        """The objects of this scope `name` may hold."""
        return {o for o in self.bindings.get(name, ()) if o != _FOREIGN}

    def evaluate(self, node: Node, bound: bool = False) -> _Value:
        """The value of an expression; `bound` when it is the right-hand side of a binding."""
        kind = node.type
        if kind == "identifier":
            name = self.text(node)
            held = self.bindings.get(name)
            if held:
                return _Value(uses={o for o in held if o in self.objects}, device=True, alias=set(held))
            captures = self.closures.get(name)
            if captures is not None:  # a function of the scope: using it may run it
                return _Value(uses=self.captured(captures), captures=captures)
            return _Value()
        if kind in _READS_NOTHING or (kind == "string" and not any(
                c.type == "interpolation" for c in node.named_children)):
            return _Value()
        if kind == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) == 1:
                return self.evaluate(inner[0], bound)
        if kind == "conditional_expression" and len(node.named_children) == 3:
            return self.choice(node)
        if kind == "call":
            value = self.call(node)
            if value.transfer_from is not None and not bound:
                # `loss(out, w.to(device))`: an unnamed device copy, made and used right here.
                temp = self.new_object(value, self.stmt_node or node, self.text(node))
                self.use(temp, node, value.api)
                if _stored_in_container(self, node):
                    self.escape(temp, node, "stored")
                end = self.event(Op.FREE, "end of expression", node)  # a temporary dies with its statement
                for oid in temp:
                    self.objects[oid].frees.append(end)
                return _Value(uses=set(), device=True, api=value.api)
            return value
        if kind == "attribute":
            obj = self.evaluate(node.child_by_field_id(OBJECT))
            attr = self.text(node.child_by_field_id(ATTRIBUTE))
            row = models.member(attr)
            if row is not None and row.role in (Role.HOST_RESULT, Role.VIEW):
                return _Value(uses=obj.uses, device=obj.device and row.role is Role.VIEW, api=attr)
            return _Value(uses=obj.uses, device=False)
        if kind == "subscript":
            base = node.child_by_field_id(VALUE)
            inner = self.evaluate(base) if base is not None else _Value()
            extra: set[int] = set()
            for sub in node.children_by_field_id(SUBSCRIPT):
                extra |= self.evaluate(sub).uses
            size = None
            if inner.uses and base is not None and base.type == "identifier":
                extent = self.slice_extent(node)
                if isinstance(extent, Size):
                    size = extent
            if size is not None:
                self.use(inner.uses, node, "slicing", size=size)
                return _Value(uses=extra, device=inner.device, api="slice")
            return _Value(uses=inner.uses | extra, device=inner.device, api="subscript")
        if kind in ("binary_operator", "boolean_operator", "comparison_operator", "unary_operator", "not_operator"):
            value = _Value()
            for child in node.named_children:
                part = self.evaluate(child)
                value.uses |= part.uses
                value.device |= part.device
            value.api = "operator" if value.device else ""
            return value
        if kind == "lambda":
            captures = self.with_closures(self.m.names.free_names(node))
            return _Value(uses=self.captured(captures), captures=captures)
        if kind in ("generator_expression", "list_comprehension", "dictionary_comprehension",
                    "set_comprehension"):
            value = _Value()
            for n in _walk(node):
                if n.type == "identifier":
                    value.uses |= self.objects_of(self.text(n))
            return value
        value = _Value()
        for child in node.named_children:
            part = self.evaluate(child)
            value.uses |= part.uses
        return value

    def choice(self, node: Node) -> _Value:
        """`a if c else b`: when both arms are names of objects (or host values), the value is one
        of those objects, each under its arm of the test `c`; otherwise a value computed from all."""
        then_node, cond_node, else_node = node.named_children
        cond = self.evaluate(cond_node)
        arms = [self.evaluate(then_node), self.evaluate(else_node)]
        uses = cond.uses | arms[0].uses | arms[1].uses
        if any(arm.device and arm.alias is None for arm in arms) or not any(arm.alias for arm in arms):
            device = arms[0].device or arms[1].device
            return _Value(uses=uses, device=device, api="operator" if device else "")
        guard_id = next(self.guard_ids)
        choice: dict[int, Guard] = {}
        for branch, arm in enumerate(arms):
            for oid in arm.alias or ():
                if oid in self.objects and not any(oid in (other.alias or ()) for other in arms if other is not arm):
                    choice[oid] = Guard(guard_id, branch, self.text(cond_node), self.m.location(cond_node))
        return _Value(uses=uses, device=True, alias=(arms[0].alias or set()) | (arms[1].alias or set()),
                      choice=choice)

    def slice_extent(self, subscript: Node) -> Size | str | None:
        """`x[:n]` -> Size of `n`; `x[:]`/`x[...]` -> "full"; anything else -> None."""
        subs = subscript.children_by_field_id(SUBSCRIPT)
        if len(subs) != 1:
            return None
        sub = subs[0]
        if sub.type == "ellipsis":
            return "full"
        if sub.type != "slice":
            return None
        text = self.text(sub).replace(" ", "")
        if text == ":" or text == "::":
            return "full"
        parts = text.split(":")
        if len(parts) >= 2 and parts[0] == "" and parts[1] and (len(parts) == 2 or parts[2] == ""):
            stop = next((c for c in sub.named_children), None)
            value = self.m.fold(stop)
            names = frozenset(_identifiers(self, stop)) if stop is not None else frozenset()
            return Size(value, parts[1], value is not None, names | self.derived_names(names),
                        (stop.start_byte, stop.end_byte) if stop is not None else None)
        return None

    def derived_names(self, names: frozenset[str]) -> frozenset[str]:
        out: set[str] = set()
        pending = list(names)
        while pending:
            for n in _identifiers(self, self.derived.get(pending.pop())):
                if n not in out and n not in names:
                    out.add(n)
                    pending.append(n)
        return frozenset(out)

    def call(self, node: Node, parts: bool = True) -> _Value:
        """A call: its API's row (gpulint/models), then the handler of the row's role; a method
        call falls back on the receiver's row and PyTorch's in-place convention.  Without `parts`
        (a call of an inert statement) its receiver and arguments are not evaluated."""
        c = self.call_site(node, parts)
        row = models.function(c.qual, c.last)
        handler = self.FUNCTION_ROLES.get(row.role) if row is not None else None
        value = handler(self, row, c) if handler is not None else None
        if value is None and c.receiver is not None:
            value = self.method(c)
        return value if value is not None else self.plain_function(c)

    def call_site(self, node: Node, parts: bool = True) -> _Call:
        """Evaluate a call's receiver and arguments (their reads) and its `out=` write; without
        `parts`, each of them is an empty value (see `_Scope.inert`)."""
        evaluate = self.evaluate if parts else _nothing
        function = node.child_by_field_id(FUNCTION)
        args = node.child_by_field_id(ARGUMENTS)
        qual = self.m.qualify(function)
        last = qual.rsplit(".", 1)[-1] if qual else (self.text(function).rsplit(".", 1)[-1] if function is not None else "")
        positional: list[Node] = []
        keywords: dict[str, Node] = {}
        for a in (args.named_children if args is not None else []):
            if a.type == "keyword_argument":
                keywords[self.text(a.child_by_field_id(NAME))] = a.child_by_field_id(VALUE)
            elif a.type != "comment":
                positional.append(a)
        uses: set[int] = set()
        receiver: _Value | None = None
        recv_node: Node | None = None
        if function is not None and function.type == "attribute":
            recv_node = function.child_by_field_id(OBJECT)
            receiver = evaluate(recv_node)
        elif function is not None and function.type in ("identifier", "subscript"):
            # Calling a module moved to the device, a function of the scope (what it reads), a
            # kernel (`k[grid, block](...)`: what it reads of the module).
            uses |= evaluate(function).uses
        # out= targets are written, not read.
        out_node = keywords.pop("out", None)
        arg_values: list[_Value] = []
        for a in positional + [v for v in keywords.values() if v is not None]:
            arg_values.append(evaluate(a))
            uses |= arg_values[-1].uses
        out_oids = self.objects_of(self.text(out_node)) if out_node is not None and out_node.type == "identifier" else set()
        if out_oids:
            self.write(out_oids, Op.COPY, f"{last}(out=)", node, full=True)
        recv_name = self.text(recv_node) if recv_node is not None and recv_node.type == "identifier" else ""
        return _Call(node, qual, last, positional, keywords, uses, arg_values, receiver, recv_node, recv_name)

    def size(self, row: Api, positional: list[Node]) -> Size | None:
        """The size of what a row's call makes, from the arguments its `size` column names."""
        if row.size == EXTENTS:
            return self.size_of(positional)
        return self.size_of([positional[i] for i in row.size or () if -len(positional) <= i < len(positional)])

    # ------------------------------------------------------------------ calls of functions, by role
    def retaining(self, row: Api, c: _Call) -> _Value:
        held = c.uses | (c.receiver.uses if c.receiver is not None else set())
        if held:
            # From here on the holder uses them whenever it likes: uses we cannot see.
            self.use(held, c.node, c.qual, definite=False)
            self.escape(held, c.node, c.qual)
        return _Value()

    def factory(self, row: Api, c: _Call) -> _Value:
        passed = self.passed_through(row, c)
        if passed is not None:
            return passed
        size = self.size(row, c.positional)
        if row.device == ALWAYS:  # CuPy: the current device; `asarray(h)` copies a host `h` up
            source = c.positional[row.source] if row.source is not None and len(c.positional) > row.source else None
            transfer = _identifiers(self, source) if source is not None and not self.evaluate(source).device else None
            # A host->device copy initialises the array itself: no separate fill.
            return _Value(uses=c.uses, device=True, api=c.qual, size=size,
                          initialising=row.initialises and transfer is None, transfer_from=transfer)
        # PyTorch: where `device=` says, else where the template lives (`zeros_like(x)`), else the host.
        # `torch.tensor(data, device=)` is modelled as a fill: its data are Python values.
        like = row.device == TEMPLATE and c.positional and self.evaluate(c.positional[0]).device
        device_kw = c.keywords.get(DEVICE_KEYWORD)
        if self.is_cuda_device(device_kw) or (like and device_kw is None):
            return _Value(uses=c.uses if not like else set(), device=True, api=c.qual, size=size,
                          initialising=row.initialises)
        return _Value(uses=c.uses, device=False, api=c.qual, size=size)

    def raw_alloc(self, row: Api, c: _Call) -> _Value:
        return _Value(uses=c.uses, device=True, kind=row.kind, api=c.qual, size=self.size(row, c.positional),
                      cuda_pointer=row.returns_status)

    def upload(self, row: Api, c: _Call) -> _Value | None:
        """`numba.cuda.to_device(h)`: a copy of `h`; of a device array, that array itself; with
        `copy=False`, an array shaped like `h` with nothing copied in."""
        if row.source is None or len(c.positional) <= row.source:
            return None
        passed = self.passed_through(row, c)
        if passed is not None:
            return passed
        source_node = c.positional[row.source]
        source = c.arg_values[row.source]
        size = self.size(row, c.positional)
        copy = c.keywords.get(row.copy_keyword) if row.copy_keyword else None
        if copy is not None and self.text(copy) == "False":
            return _Value(uses=c.uses, device=True, api=c.qual, size=size, initialising=False)
        return _Value(uses=c.uses, device=True, api=c.qual, size=size, initialising=False,
                      transfer_from=None if source.device else _identifiers(self, source_node))

    def passed_through(self, row: Api, c: _Call) -> _Value | None:
        """`cp.asarray(d)`, `torch.as_tensor(d, device=dev)`, `cuda.to_device(d)` of a device array
        `d` give `d` itself: another name of its object, or, for a parameter that may hold the
        caller's device array, a device value that is no object of this scope."""
        if not row.passes_device or row.source is None or len(c.positional) <= row.source:
            return None
        device_kw = c.keywords.get(DEVICE_KEYWORD)
        if device_kw is not None and not self.is_cuda_device(device_kw):
            return None  # to the host
        source, value = c.positional[row.source], c.arg_values[row.source]
        if source.type == "identifier":
            if value.alias:
                return _Value(uses=c.uses - value.uses, device=True, alias=set(value.alias), api=c.qual)
            if row.converts and self.text(source) in self.maybe_device and (row.device == ALWAYS or device_kw is not None):
                return _Value(uses=c.uses, device=True, alias={_FOREIGN}, api=c.qual)
            return None
        if value.device:  # computed on the device right here: that value
            return _Value(uses=c.uses, device=True, api=value.api or "expression")
        return None

    def free(self, row: Api, c: _Call) -> _Value | None:
        if not c.positional:
            return None
        oids = self.objects_of(self.text(c.positional[0]))
        if oids:
            event = self.event(Op.FREE, c.last, c.node)
            for oid in oids:
                self.objects[oid].frees.append(event)
        return _Value()

    def flush(self, row: Api, c: _Call) -> _Value:
        self.event(Op.FLUSH, c.qual or c.last, c.node)
        return _Value()

    def overwrite_argument(self, row: Api, c: _Call) -> _Value | None:
        """`cupy.copyto(dst, src)`: the first argument is written whole, the others read."""
        dst = self.objects_of(self.text(c.positional[0])) if c.positional else set()
        if not dst:
            return None
        rest: set[int] = set()
        for a in c.positional[1:]:
            rest |= self.evaluate(a).uses
        self.use(rest, c.node, c.qual)
        self.write(dst, row.write, c.qual, c.node, full=True)
        return _Value()

    FUNCTION_ROLES = {Role.RETAINING: retaining, Role.FACTORY: factory, Role.RAW_ALLOC: raw_alloc,
                      Role.TRANSFER: upload, Role.FREE: free, Role.FLUSH: flush, Role.FULL_WRITE: overwrite_argument}

    # ------------------------------------------------------------------ calls of methods, by role
    def method(self, c: _Call) -> _Value:
        row = models.member(c.last)
        handler = self.METHOD_ROLES.get(row.role) if row is not None else None
        value = handler(self, row, c) if handler is not None else None
        if value is None:
            value = self.in_place(c)
        if value is None:
            # Computed from a device receiver: a device value, unless the method gives a host one.
            assert c.receiver is not None
            if c.receiver.device and (row is None or row.role is not Role.HOST_RESULT):
                return _Value(uses=c.uses | c.receiver.uses, device=True, api=f".{c.last}()")
            if self.computes_on_device(c):  # `self.backbone(x)`
                return _Value(uses=c.uses | c.receiver.uses, device=True, api=f".{c.last}()", opaque=True)
            return _Value(uses=c.uses | c.receiver.uses, device=False, api=f".{c.last}()" if c.receiver.uses else c.qual)
        return value

    def overwrite_receiver(self, row: Api, c: _Call) -> _Value | None:
        """`x.copy_(y)`, `x.fill_(v)`, `x.normal_()`: x is written whole, the arguments read."""
        assert c.receiver is not None
        if not (c.receiver.uses and c.recv_name):
            return None
        self.use(c.uses, c.node, c.last)
        self.write(self.objects_of(c.recv_name), row.write, f".{c.last}()", c.node, full=True)
        return _Value(device=True)

    def move(self, row: Api, c: _Call) -> _Value | None:
        """`.cuda()`, `.to(dev)`: from the host, a transfer (GL102/GL103 read what it copies from)."""
        assert c.receiver is not None
        target = c.keywords.get(DEVICE_KEYWORD) or (c.positional[0] if c.positional else None)
        to_device = row.device == ALWAYS or self.is_cuda_device(target)
        if to_device and not c.receiver.device:
            staged = None
            if c.recv_node is not None and c.recv_node.type == "call":
                inner_qual = self.m.qualify(c.recv_node.child_by_field_id(FUNCTION))
                if _torch_factory(inner_qual):
                    staged = inner_qual
            elif c.recv_name in self.host_factories and self.name_count(c.recv_name) <= 2:
                staged = self.host_factories[c.recv_name]
            names = _identifiers(self, c.recv_node) if c.recv_node is not None else set()
            names |= _identifiers(self, target)  # `x.to(devices[i])`: the destination is an input too
            return _Value(uses=c.uses | c.receiver.uses, device=True, api=f".{c.last}()", transfer_from=names,
                          staged_factory=staged)
        if to_device or c.receiver.device:
            return _Value(uses=c.uses | c.receiver.uses, device=True, api=f".{c.last}()")
        return None

    def factory_method(self, row: Api, c: _Call) -> _Value | None:
        """`x.new_zeros(n)`: on the receiver's device."""
        assert c.receiver is not None
        if not c.receiver.device:
            return None
        return _Value(uses=c.uses, device=True, api=f".{c.last}()", size=self.size(row, c.positional),
                      initialising=row.initialises)

    def in_place(self, c: _Call) -> _Value | None:
        """An in-place method (`add_`, `index_add_`): a use that writes."""
        assert c.receiver is not None
        if not (c.receiver.device and torch_models.in_place(c.last) and c.recv_name):
            return None
        self.use(c.uses, c.node, f".{c.last}()")
        self.use(self.objects_of(c.recv_name), c.node, f".{c.last}()", writes=True)
        return _Value(device=True)

    METHOD_ROLES = {Role.FULL_WRITE: overwrite_receiver, Role.TRANSFER: move, Role.FACTORY: factory_method}

    def plain_function(self, c: _Call) -> _Value:
        # Functions of the frameworks computing on device objects give device objects.
        if c.uses and c.qual.startswith(models.COMPUTING_MODULES):
            return _Value(uses=c.uses, device=True, api=c.qual)
        if len(c.positional) == 1 and c.arg_values and c.arg_values[0].cuda_pointer:
            # `ptr = checkCudaErrors(cudart.cudaMalloc(n))`: the error-check wrapper returns the pointer.
            inner = c.arg_values[0]
            inner.cuda_pointer = False
            return inner
        if self.computes_on_device(c):  # `feats = vgg(x)`
            return _Value(uses=c.uses, device=True, api=c.qual or f"{c.last}()", opaque=True)
        return _Value(uses=c.uses, device=False, api=c.qual)

    def computes_on_device(self, c: _Call) -> bool:
        """A callable no table knows (a module, a function of the program, a closure) given a device
        object: what it computes from it is on the device (DESIGN §4), unless it is a function of
        this file whose every `return` gives a host value."""
        function = c.node.child_by_field_id(FUNCTION)
        if function is None or function.type not in ("identifier", "attribute") or not any(
                v.device for v in c.arg_values):
            return False
        if models.function(c.qual, c.last) is not None or c.qual.startswith(models.NO_LAUNCH_PREFIXES):
            return False
        if function.type == "attribute" and models.member(c.last) is not None:
            return False
        defs = self.functions_called(c.node)
        return not defs or not all(self.m.names.returns_host(d) for d in defs)

    def size_of(self, positional: list[Node]) -> Size | None:
        if not positional:
            return None
        shape = positional[0] if len(positional) == 1 else None
        nodes = positional if shape is None else [shape]
        values = [self.m.fold(n) for n in nodes]
        names = frozenset().union(*(_identifiers(self, n) for n in nodes))
        text = "*".join(self.text(n) for n in nodes)
        total: int | None = 1
        for v in values:
            total = None if total is None or v is None else total * v
        constant = total is not None and all(n in self.m.constants for n in names)
        # A single scalar extent can be replaced as written; a shape tuple cannot.
        span = (shape.start_byte, shape.end_byte) if shape is not None and shape.type not in ("tuple", "list") else None
        return Size(total, text if total is None else str(total), constant, names | self.derived_names(names), span)

    def is_cuda_device(self, node: Node | None) -> bool:
        return _is_cuda_device(self.text, node)


def _is_cuda_device(text: Callable[[Node | None], str], node: Node | None) -> bool:
    """Whether an expression names a CUDA device: `"cuda:0"`, `device`, `torch.device("cuda")`."""
    if node is None:
        return False
    if node.type == "string":
        return "cuda" in text(node)
    if node.type == "call":
        args = node.child_by_field_id(ARGUMENTS)
        return "device" in text(node.child_by_field_id(FUNCTION)) and args is not None and any(
            _is_cuda_device(text, a) for a in args.named_children)
    if node.type in ("identifier", "attribute"):
        return bool(_DEVICE_NAME.search(text(node)))
    return False


def _text_of(source: bytes, ascii: bool) -> Callable[[Node | None], str]:
    """A node's text: of an ASCII file, a slice of the file decoded once (byte offsets are
    character offsets there); else its bytes decoded."""
    if ascii:
        chars = source.decode("ascii")

        def ascii_text(node: Node | None) -> str:
            return "" if node is None else chars[node.start_byte:node.end_byte]

        return ascii_text

    def text(node: Node | None) -> str:
        return "" if node is None else source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    return text


def _add_suites(timeline: Timeline, blocks: list[tuple[int, int]], scope: Node) -> None:
    """Every suite under the scope's body (nested scopes' too), for fixes: where a statement may
    go is span arithmetic."""
    within = scope.child_by_field_id(BODY) if scope.type == "function_definition" else scope
    if within is not None:
        first = bisect_left(blocks, (within.start_byte, -1))
        last = bisect_right(blocks, (within.end_byte, within.end_byte))
        timeline.blocks.extend(b for b in blocks[first:last] if b[1] <= within.end_byte)


def _callee(node: Node) -> Node | None:
    """What a decorator calls or names: `cuda.jit` of `@cuda.jit(device=True)`."""
    return node.child_by_field_id(FUNCTION) if node.type == "call" else node


def _walk(node: Node | None):
    if node is None:
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.named_children[::-1])


def _nothing(node: Node | None, bound: bool = False) -> _Value:
    """The value of a part of an inert statement's call (see `_Scope.inert`)."""
    return _Value()


def _paired_values(left: Node, right: Node, targets: list[Node]) -> list[Node]:
    """The value bound to each target of `a, b = x, y`; else `[right]`, the one value of them all."""
    if right.type in ("expression_list", "tuple") and left.type in ("pattern_list", "tuple_pattern") and len(
            right.named_children) == len(targets):
        return right.named_children
    return [right]


def _flatten_targets(nodes: list[Node]) -> list[Node]:
    out: list[Node] = []
    for node in nodes:
        if node.type in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple"):
            out.extend(_flatten_targets(node.named_children))
        elif node.type not in ("comment",):
            out.append(node)
    return out


def _identifiers(scope: _Scope, node: Node | None) -> set[str]:
    return {scope.text(n) for n in _walk(node) if n.type == "identifier"} if node is not None else set()


def _stored_in_container(scope: _Scope, node: Node) -> bool:
    """`copies.append(cp.array(x))`, `d[k] = ...`-like container methods keep the value."""
    parent = node.parent
    if parent is None or parent.type != "argument_list" or parent.parent is None:
        return False
    function = parent.parent.child_by_field_id(FUNCTION)
    return function is not None and function.type == "attribute" and scope.text(
        function.child_by_field_id(ATTRIBUTE)) in models.CONTAINER_STORES


def _root_name(scope: _Scope, node: Node | None) -> str | None:
    while node is not None and node.type in ("attribute", "subscript", "call"):
        node = node.child_by_field_id(OBJECT) or node.child_by_field_id(VALUE) or node.child_by_field_id(FUNCTION)
    return scope.text(node) if node is not None and node.type == "identifier" else None
