"""What the names of a Python file are, before any scope of it is lowered: the names a function
or lambda reads from the scopes around it (its closure, or the module's globals), the names of a
scope that only ever hold host values (strings, numbers, NumPy arrays, files), and the calls that
may launch GPU work.  The Python frontend (python.py) asks; these answers depend on syntax and
the models tables only, never on the objects a scope's lowering tracks.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator

from tree_sitter import Node

from gpulint import models
from gpulint.models.api import Role
from gpulint.static.python_grammar import (ALIAS, ARGUMENTS, ATTRIBUTE, BODY, DEFINITION, FUNCTION, LEFT, NAME, OBJECT,
                                           PARAMETERS, RIGHT, SUPERCLASSES, VALUE)

# Nodes that open a scope of their own: their bodies are not the enclosing scope's code.
SCOPE_NODES = ("function_definition", "class_definition", "lambda")
_LITERALS = ("string", "concatenated_string", "integer", "float", "true", "false", "none", "ellipsis")
# Expressions whose value is host-only when every part of them is.
_COMPOSITES = ("parenthesized_expression", "expression_list", "tuple", "list", "set", "dictionary", "pair",
               "binary_operator", "boolean_operator", "comparison_operator", "unary_operator", "not_operator",
               "conditional_expression", "slice", "subscript", "keyword_argument", "argument_list")
# The node kinds `scope_names` binds names at; every other node is only walked through.
_BINDERS = frozenset({"function_definition", "class_definition", "assignment", "augmented_assignment",
                      "for_statement", "for_in_clause", "with_item", "named_expression", "import_statement",
                      "import_from_statement", "global_statement", "nonlocal_statement", "delete_statement",
                      "except_clause"})
# The node kinds `_targets` finds bound names in.
_TARGETS = frozenset({"assignment", "augmented_assignment", "for_statement", "for_in_clause",
                      "as_pattern_target", "named_expression", "delete_statement"})
_HOLDS_STATEMENTS: dict[str, bool] = {}  # `_holds_statements` by node kind, as met
# In an expression's text, what may bind a name there: `:=`, a comprehension's `for` (not the
# `for` in `format`, `forward`, `transforms`; a digit may stand right before it: `[1for x in y]`).
_NAME_START_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_BYTES = _NAME_START_BYTES | frozenset(b"0123456789")
# Nodes with nothing under them that could bind a name, whatever their text.
_BINDS_NOTHING = frozenset({"identifier", "comment", "integer", "float", "true", "false", "none", "ellipsis",
                            "dotted_name"})
_PATTERNS = ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list",
             "parenthesized_expression", "list_splat_pattern")


def _holds_statements(kind: str) -> bool:
    """Whether a node of this kind may hold a statement (or a binding at statement level: `a = b
    = c`'s inner assignment); every other node is part of an expression, where only `:=` and a
    comprehension's `for` bind names."""
    return kind.endswith(("_statement", "_clause", "_definition")) or kind in (
        "module", "block", "assignment", "augmented_assignment", "ERROR")


def code_nodes(node: Node | None) -> Iterator[Node]:
    """`node` and what lies under it, not entering the bodies of the functions and classes defined
    there (a definition runs nothing); lambdas are entered (they run where they are passed)."""
    if node is None:
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and current.type in ("function_definition", "class_definition"):
            continue
        stack.extend(current.named_children[::-1])


def _key(node: Node) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


class Names:
    """The facts of one file's names, computed on demand and kept."""

    def __init__(self, root: Node, source: bytes, text: Callable[[Node | None], str],
                 qualify: Callable[[Node | None], str]) -> None:
        self.root = root
        self.source = source
        self.text = text
        self.qualify = qualify
        self._free: dict[tuple, frozenset[str]] = {}
        self._scope: dict[tuple, tuple[frozenset[str], frozenset[str]]] = {}
        self._launches: dict[tuple, bool] = {}
        self._returns_host: dict[tuple, bool] = {}
        self._parameters: dict[tuple, frozenset[str]] = {}
        # The module's functions by name (those defined at the top level, also under an `if`/`try`).
        self.top_defs: dict[str, list[Node]] = defaultdict(list)
        self.top_classes: list[Node] = []
        self._reach: dict[str, frozenset[str]] = {}
        self._binder_offsets: list[int] | None = None
        stack = list(root.named_children)
        while stack:
            node = stack.pop()
            if node.type == "decorated_definition":
                node = node.child_by_field_id(DEFINITION) or node
            if node.type == "function_definition":
                self.top_defs[self.text(node.child_by_field_id(NAME))].append(node)
            elif node.type == "class_definition":
                self.top_classes.append(node)
            elif node.type in ("if_statement", "try_statement", "with_statement", "block", "else_clause",
                               "elif_clause", "except_clause", "finally_clause"):
                stack.extend(node.named_children)

    def global_reads(self) -> frozenset[str]:
        """The names the module's functions and classes read from the module: its globals they use."""
        return frozenset().union(*(self.free_names(d) for ds in self.top_defs.values() for d in ds),
                                 *(self.free_names(c) for c in self.top_classes))

    def reach(self, name: str) -> frozenset[str]:
        """What a top-level function reads when called: its own free names and those of the
        top-level functions it calls (or launches, or passes on), at any depth."""
        cached = self._reach.get(name)
        if cached is None:
            seen, todo, names = {name}, [name], set()
            while todo:
                for d in self.top_defs.get(todo.pop(), ()):
                    for free in self.free_names(d):
                        names.add(free)
                        if free in self.top_defs and free not in seen:
                            seen.add(free)
                            todo.append(free)
            cached = self._reach[name] = frozenset(names)
        return cached

    # ------------------------------------------------------------------ free names
    def free_names(self, fn: Node) -> frozenset[str]:
        """The names a function, lambda or class body reads that it does not bind itself: what it
        reads from the scopes around it when it runs."""
        key = _key(fn)
        cached = self._free.get(key)
        if cached is not None:
            return cached
        self._free[key] = frozenset()  # a recursive definition reads nothing more through itself
        reads: set[str] = set()
        stores: set[str] = set()
        declared: set[str] = set()
        params = fn.child_by_field_id(PARAMETERS)
        for p in params.named_children if params is not None else []:
            self._parameter(p, reads, stores)
        if fn.type == "class_definition":
            self._reads(fn.child_by_field_id(SUPERCLASSES), reads, stores, declared)
        self._reads(fn.child_by_field_id(BODY), reads, stores, declared)
        free = frozenset(reads - (stores - declared))
        self._free[key] = free
        return free

    def _parameter(self, p: Node, reads: set[str], stores: set[str]) -> None:
        if p.type == "identifier":
            stores.add(self.text(p))
            return
        name = p.child_by_field_id(NAME)
        if name is None and p.named_children and p.named_children[0].type in ("identifier", "list_splat_pattern",
                                                                              "dictionary_splat_pattern"):
            name = p.named_children[0]
        for n in code_nodes(name):
            if n.type == "identifier":
                stores.add(self.text(n))
        value = p.child_by_field_id(VALUE)  # a default: read where the function is defined
        if value is not None:
            self._reads(value, reads, stores, set())

    def _reads(self, node: Node | None, reads: set[str], stores: set[str], declared: set[str]) -> None:
        if node is None:
            return
        stack = [node]
        while stack:
            n = stack.pop()
            kind = n.type
            if kind == "identifier":
                reads.add(self.text(n))
            elif kind in ("function_definition", "class_definition"):
                stores.add(self.text(n.child_by_field_id(NAME)))
                reads |= self.free_names(n)
            elif kind == "lambda":
                reads |= self.free_names(n)
            elif kind == "attribute":
                stack.append(n.child_by_field_id(OBJECT))
            elif kind == "keyword_argument":
                value = n.child_by_field_id(VALUE)
                if value is not None:
                    stack.append(value)
            elif kind in ("global_statement", "nonlocal_statement"):
                declared.update(self.text(c) for c in n.named_children if c.type == "identifier")
            elif kind in ("import_statement", "import_from_statement", "future_import_statement"):
                stores.update(self._imported(n))
            else:
                if kind in _TARGETS:
                    for target in self._targets(n):
                        stores.add(self.text(target))
                stack.extend(n.named_children)

    def _imported(self, node: Node) -> set[str]:
        names = set()
        for child in node.children_by_field_id(NAME):
            if child.type == "aliased_import":
                names.add(self.text(child.child_by_field_id(ALIAS)))
            else:
                names.add(self.text(child).split(".")[0])
        return names

    def _targets(self, node: Node) -> list[Node]:
        """The plain names a binding construct binds (`a, b = ...`, `for i in`, `as f`, `del x`)."""
        kind = node.type
        if kind in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
            return _names_in(node.child_by_field_id(LEFT))
        if kind == "as_pattern_target":
            return _names_in(node.named_children[0] if node.named_children else None)
        if kind == "named_expression":
            name = node.child_by_field_id(NAME)
            return [name] if name is not None else []
        if kind == "delete_statement":
            return [c for c in node.named_children if c.type == "identifier"]
        return []

    # ------------------------------------------------------------------ host values
    def scope_names(self, scope: Node) -> tuple[frozenset[str], frozenset[str]]:
        """(the names the scope binds, those of them that only ever hold host values)."""
        key = _key(scope)
        cached = self._scope.get(key)
        if cached is not None:
            return cached
        bindings: dict[str, list[frozenset[str] | None]] = defaultdict(list)
        if scope.type == "function_definition":
            params = scope.child_by_field_id(PARAMETERS)
            for p in params.named_children if params is not None else []:
                stores: set[str] = set()
                self._parameter(p, set(), stores)
                for name in stores:
                    bindings[name].append(None)  # whatever the caller passes
            body: Node | None = scope.child_by_field_id(BODY)
        else:
            body = scope
        # The walk of `code_nodes`, inline: it is the hottest loop of the names' facts.  It does
        # not enter an expression whose text has no `:=` and no word `for` (most of them): nothing
        # in it binds a name.  Where those are in the file is found once, for every scope.
        binders = self._binder_offsets
        if binders is None:
            binders = self._binder_offsets = _binder_offsets(self.source)
        holds_statements = _HOLDS_STATEMENTS
        # In any order: each name's bindings are a set of facts, and host-ness a fixed point.
        stack = list(body.named_children) if body is not None else []
        while stack:
            n = stack.pop()
            kind = n.type
            if kind not in _BINDERS:
                if kind in _BINDS_NOTHING:
                    continue
                holds = holds_statements.get(kind)
                if holds is None:
                    holds = holds_statements[kind] = _holds_statements(kind)
                if holds or n.has_error or _any_within(binders, n.start_byte, n.end_byte):
                    stack.extend(n.named_children)
                continue
            if kind in ("function_definition", "class_definition"):
                bindings[self.text(n.child_by_field_id(NAME))].append(None)
                continue  # a definition's body is a scope of its own
            stack.extend(n.named_children)
            if kind in ("assignment", "augmented_assignment"):
                left, right = n.child_by_field_id(LEFT), n.child_by_field_id(RIGHT)
                targets = _names_in(left)
                values = right.named_children if right is not None and left is not None and left.type in (
                    "pattern_list", "tuple_pattern") and right.type in ("expression_list", "tuple") and len(
                    right.named_children) == len(left.named_children) else None
                for i, target in enumerate(targets):
                    value = values[i] if values is not None and i < len(values) else right
                    deps = self.host_deps(value)
                    if kind == "augmented_assignment" and deps is not None:
                        deps = deps | {self.text(target)}
                    bindings[self.text(target)].append(deps)
            elif kind in ("for_statement", "for_in_clause"):
                deps = self.host_deps(n.child_by_field_id(RIGHT))
                for target in _names_in(n.child_by_field_id(LEFT)):
                    bindings[self.text(target)].append(deps)
            elif kind == "with_item":
                pattern = n.named_children[0] if n.named_children else None
                if pattern is not None and pattern.type == "as_pattern" and len(pattern.named_children) == 2:
                    deps = self.host_deps(pattern.named_children[0])
                    for target in _names_in(pattern.named_children[1].named_children[0]
                                            if pattern.named_children[1].named_children else None):
                        bindings[self.text(target)].append(deps)
            elif kind == "named_expression":
                name = n.child_by_field_id(NAME)
                if name is not None:
                    bindings[self.text(name)].append(self.host_deps(n.child_by_field_id(VALUE)))
            elif kind in ("import_statement", "import_from_statement", "global_statement", "nonlocal_statement",
                          "delete_statement"):
                names = self._imported(n) if kind.startswith("import") else {
                    self.text(t) for c in n.named_children for t in _names_in(c)}
                for name in names:
                    bindings[name].append(None)
            elif kind == "except_clause":  # `except E as e`
                for c in n.named_children:
                    if c.type == "as_pattern":
                        for target in c.named_children[1:]:
                            for t in _names_in(target.named_children[0] if target.named_children else None):
                                bindings[self.text(t)].append(None)
        host = {name for name, values in bindings.items() if all(v is not None for v in values)}
        depends: dict[str, set[str]] = {name: set().union(*(v for v in bindings[name] if v is not None))
                                        for name in host}
        dependents: dict[str, set[str]] = defaultdict(set)
        for name, deps in depends.items():
            for d in deps:
                dependents[d].add(name)
        work = [name for name in host if any(d not in host for d in depends[name])]
        while work:  # a name fed by one that may hold a device value may hold one too
            name = work.pop()
            if name in host:
                host.discard(name)
                work.extend(dependents[name])
        result = (frozenset(bindings), frozenset(host))
        self._scope[key] = result
        return result

    def holds_host(self, scope: Node, name: str) -> bool:
        """Whether `name` only ever holds host values in `scope` (`scope_names`).  A parameter never
        does (it holds whatever the caller passes): saying so needs no walk of the scope."""
        return name not in self.parameters(scope) and name in self.scope_names(scope)[1]

    def parameters(self, scope: Node) -> frozenset[str]:
        """The names a function's parameters bind (none for the module)."""
        key = _key(scope)
        cached = self._parameters.get(key)
        if cached is None:
            stores: set[str] = set()
            params = scope.child_by_field_id(PARAMETERS) if scope.type == "function_definition" else None
            for p in params.named_children if params is not None else []:
                self._parameter(p, set(), stores)
            cached = self._parameters[key] = frozenset(stores)
        return cached

    def host_deps(self, node: Node | None) -> frozenset[str] | None:
        """None when the expression may give a device value; else the names whose values it is
        made of (it is a host value when they all hold host values)."""
        deps: set[str] = set()
        stack = [node]
        while stack:  # iterative: an expression may nest 50,000 deep
            n = stack.pop()
            if n is None:
                return None
            kind = n.type
            if kind in _LITERALS:
                continue
            if kind == "identifier":
                deps.add(self.text(n))
            elif kind == "attribute":
                row = models.member(self.text(n.child_by_field_id(ATTRIBUTE)))
                if not (self.qualify(n).startswith(models.HOST_MODULES) or (row is not None and row.role is Role.HOST_RESULT)):
                    stack.append(n.child_by_field_id(OBJECT))  # `x.shape`, `np.float32` are host values
            elif kind == "call":
                part = self._call_part(n)
                if part is False:
                    return None
                if part is not None:
                    stack.append(part)
            elif kind in _COMPOSITES:
                stack.extend(c for c in n.named_children if c.type != "comment")
            else:
                return None
        return frozenset(deps)

    def _call_part(self, node: Node) -> Node | None | bool:
        """For a call's host-ness: None when its value is a host value whatever it is given, the
        part whose host-ness it has, or False when it may be a device value."""
        function = node.child_by_field_id(FUNCTION)
        if self.qualify(function).startswith(models.HOST_MODULES):
            return None  # `np.load(p)`, `os.path.join(d, f)`, `Image.open(p)`
        if function is not None and function.type == "identifier":
            row = models.FUNCTIONS.get(self.qualify(function))
            if row is not None and row.role is Role.HOST_RESULT:
                return None  # `len(x)`, `str(x)`, `open(p)`
            if row is not None and not row.launches:  # `sorted(names)`, `enumerate(lines)`
                return node.child_by_field_id(ARGUMENTS) or False
            return False
        if function is not None and function.type == "attribute":
            row = models.member(self.text(function.child_by_field_id(ATTRIBUTE)))
            if row is not None and row.role is Role.HOST_RESULT:
                return None  # `x.item()`, `x.tolist()`, `x.cpu()`
            if row is not None and row.role in (Role.TRANSFER, Role.FACTORY):
                return False  # `x.cuda()`, `x.new_zeros(n)`: on the device, wherever `x` is
            return function.child_by_field_id(OBJECT) or False  # a method of a host value
        return False

    # ------------------------------------------------------------------ launches
    def call_launches(self, call: Node, scope: Node) -> bool:
        """Whether a call in `scope` may launch GPU work, knowing which names hold host values there
        (`holds_host`, asked only for a method of a name); a call of a same-file function says
        True here (the caller looks into the function)."""
        function = call.child_by_field_id(FUNCTION)
        qual = self.qualify(function)
        method = self.text(function.child_by_field_id(ATTRIBUTE)) if function is not None and \
            function.type == "attribute" else ""
        if models.launches_nothing(qual, method):
            return False
        root = function
        while root is not None and root.type in ("attribute", "call", "subscript"):
            root = root.child_by_field_id(OBJECT) or root.child_by_field_id(FUNCTION) or \
                root.child_by_field_id(VALUE)
        if root is not None and root.type == "identifier" and root is not function:
            # A method of a host value (`line.rstrip()`), of what a host library gave (`Image.open(p).convert()`).
            # `holds_host` last: it may walk the whole scope.
            root_qual = self.qualify(root)
            return not (root_qual.startswith(models.HOST_MODULES) or f"{root_qual}.".startswith(models.HOST_MODULES)
                        or self.holds_host(scope, self.text(root)))
        return True

    def function_launches(self, fn: Node) -> bool:
        """Whether calling a function of this file may launch GPU work, through the calls in its
        body (host values given to it stay on the host)."""
        key = _key(fn)
        cached = self._launches.get(key)
        if cached is not None:
            return cached
        self._launches[key] = True  # recursion: assume it does
        answer = False
        for n in code_nodes(fn.child_by_field_id(BODY)):
            if n.type != "call" or not self.call_launches(n, fn):
                continue
            callee = self.callee(n)
            if callee is None or any(self.function_launches(d) for d in callee):
                answer = True
                break
        self._launches[key] = answer
        return answer

    def callee(self, call: Node) -> list[Node] | None:
        """The top-level functions of this file a call by plain name may run."""
        function = call.child_by_field_id(FUNCTION)
        if function is None or function.type != "identifier":
            return None
        return self.top_defs.get(self.text(function)) or None

    def returns_host(self, fn: Node) -> bool:
        """Every `return` of the function gives a host value (or it returns nothing)."""
        key = _key(fn)
        cached = self._returns_host.get(key)
        if cached is None:
            cached = self._returns_host[key] = self._every_return_host(fn)
        return cached

    def _every_return_host(self, fn: Node) -> bool:
        for n in code_nodes(fn.child_by_field_id(BODY)):
            if n.type in ("yield", "await"):
                return False
            if n.type == "return_statement" and n.named_children:
                deps = self.host_deps(n.named_children[0])
                # The names of host values, worked out only when a `return` gives a value.
                if deps is None or (deps and not deps <= self.scope_names(fn)[1]):
                    return False
        return True


def _binder_offsets(source: bytes) -> list[int]:
    """Where the file has `:=` and the word `for`, in order: what may bind a name in an expression.
    Found with `bytes.find` (a regular expression with these two branches tries every byte: 9x
    slower)."""
    found = []
    at = source.find(b":=")
    while at >= 0:
        found.append(at)
        at = source.find(b":=", at + 2)
    size = len(source)
    at = source.find(b"for")
    while at >= 0:
        if (at == 0 or source[at - 1] not in _NAME_START_BYTES) and (at + 3 >= size or source[at + 3] not in _NAME_BYTES):
            found.append(at)
        at = source.find(b"for", at + 3)
    found.sort()
    return found


def _any_within(offsets: list[int], start: int, end: int) -> bool:
    """Whether a sorted list holds an offset in [start, end)."""
    at = bisect_left(offsets, start)
    return at < len(offsets) and offsets[at] < end


def _names_in(node: Node | None) -> list[Node]:
    """The plain names a binding target binds (`a`, `a, (b, *c)`); not `x[i]` or `o.attr`."""
    if node is None:
        return []
    if node.type == "identifier":
        return [node]
    if node.type in _PATTERNS:
        return [n for child in node.named_children for n in _names_in(child)]
    return []
