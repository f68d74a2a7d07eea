"""The default CUDA C/C++ frontend: tree-sitter-cuda parse tree -> `syntax` tree.

Needs no toolkit, no compiler and no GPU.  Error recovery is tree-sitter's: a function whose
subtree contains an ERROR node is marked `has_errors` so rules that would draw evidence from
it can skip it.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from tree_sitter import Language, Node, Parser

from gpulint.static import field_id, unknown
from gpulint.static import syntax as s
from gpulint.static.cuda_api import AGGREGATES
from gpulint.static.includes import BuildView
from gpulint.static.preprocess import Mapping, preprocess

_CAST_CALLS = {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"}
_LITERAL_TYPES = {
    "number_literal", "char_literal", "string_literal", "concatenated_string", "raw_string_literal",
    "true", "false", "null", "nullptr", "user_defined_literal",
}
# Parse-tree nodes that are types or punctuation, never values: not lowered as expressions.
# Statement kinds that hold no work on device memory (declarations of types and names, pragmas):
# skipped on purpose, never counted.  Anything else without a lowering is `unknown`.
_NOT_STATEMENTS = {"function_definition", "comment", "preproc_call", "preproc_def", "preproc_function_def",
                   "preproc_include", "type_definition", "alias_declaration", "using_declaration",
                   "namespace_alias_definition", "static_assert_declaration", "struct_specifier", "class_specifier",
                   "enum_specifier", "union_specifier", "template_declaration"}
_NOT_EXPRESSIONS = {
    "type_descriptor", "primitive_type", "type_identifier", "sized_type_specifier", "template_argument_list",
    "comment", "type_qualifier", "storage_class_specifier", "abstract_pointer_declarator",
    "placeholder_type_specifier", "struct_specifier", "class_specifier", "enum_specifier",
}


_new_span = tuple.__new__


@lru_cache(maxsize=1)
def _language() -> Language:
    import tree_sitter_cuda

    return Language(tree_sitter_cuda.language())


@lru_cache(maxsize=1)
def _parser() -> Parser:
    """One parser per process (each `parse` call starts afresh; jobs are processes, not threads)."""
    return Parser(_language())


def _field(name: str) -> int:
    return field_id(_language(), name, "tree-sitter-cuda")


F_ALTERNATIVE = _field("alternative")
F_ARGUMENT = _field("argument")
F_ARGUMENTS = _field("arguments")
F_BODY = _field("body")
F_CONDITION = _field("condition")
F_CONSEQUENCE = _field("consequence")
F_DECLARATOR = _field("declarator")
F_FIELD = _field("field")
F_FUNCTION = _field("function")
F_INDICES = _field("indices")
F_INITIALIZER = _field("initializer")
F_LEFT = _field("left")
F_NAME = _field("name")
F_OPERATOR = _field("operator")
F_PARAMETERS = _field("parameters")
F_RIGHT = _field("right")
F_SIZE = _field("size")
F_TYPE = _field("type")
F_UPDATE = _field("update")
F_VALUE = _field("value")


def parse(path: str, source: bytes, view: BuildView | None = None, file: Path | None = None) -> s.TranslationUnit:
    """The syntax tree of the text the preprocessor makes of `source` (the file at `file`, for its
    local includes) in the build `view` (none: no -D, no -I); spans stay in `source`'s coordinates.
    When that text has syntax errors and the preprocessor left macros that might be why, the text
    with those expanded is parsed instead."""
    view = view or BuildView()
    pre = preprocess(source, file, view)
    text = pre.text
    tree = _parser().parse(text)
    if tree.root_node.has_error and pre.repairable:
        pre = preprocess(source, file, view, repair=True)
        text = pre.text
        tree = _parser().parse(text)
    lowering = _Lowering(path, text, pre.mapping, source)
    lowering.top_level(tree.root_node, scope=())
    if pre.header_macros:
        for name, value in pre.header_macros.items():
            if name not in lowering.macros:
                lowering.macros[name] = s.Macro(name=name, text=value, value=parse_expression(value) if value else None,
                                                span=s.Span(0, 0, 1, 1, 1, 1))
    tu = s.TranslationUnit(
        path=path,
        source=source,
        functions=lowering.functions,
        macros=lowering.macros,
        globals=lowering.globals,
        structs=lowering.structs,
        errors=lowering.errors,
        frontend="tree-sitter",
        unknown=dict(lowering.unknown),
        expanded=list(pre.expanded),
    )
    return tu


def has_syntax_errors(source: bytes) -> bool:
    """Whether tree-sitter needs error recovery anywhere in the file."""
    return _parser().parse(source).root_node.has_error


@lru_cache(maxsize=4096)
def parse_expression(text: str) -> s.Expr | None:
    """Parse the text of an object-like macro (or any C expression) into an `Expr`.  Kept per text:
    the files of a project define the same macros (`BLOCK_SIZE 256`), and nothing changes the
    expression once built (its spans are the wrapper's, never reported)."""
    wrapper = f"auto __gpulint_value = ({text});\n".encode()
    tree = _parser().parse(wrapper)
    decl = tree.root_node.named_children[0] if tree.root_node.named_children else None
    if decl is None or decl.type != "declaration" or tree.root_node.has_error:
        return None
    init = decl.child_by_field_id(F_DECLARATOR)
    if init is None or init.type != "init_declarator":
        return None
    value = init.child_by_field_id(F_VALUE)
    if value is None:
        return None
    return _Lowering("<macro>", wrapper).expr(value)


class _Lowering:
    def __init__(self, path: str, source: bytes, mapping: Mapping | None = None, original: bytes = b"") -> None:
        self.path = path
        self.source = source  # the text parsed: node offsets index it
        self.mapping = mapping  # parsed offsets -> `original` offsets, when they differ
        self.original = original
        # The original ranges of the macro uses expanded, by start.
        self.uses = [(piece[0], piece[1]) for piece in mapping.pieces if len(piece) == 3] if mapping else []
        self.use_starts = [start for start, _ in self.uses]
        # Rows and columns of spans, asked when one is reported: in the text parsed (tree-sitter's
        # points), or in the original when the preprocessor moved offsets.
        self.lines = s.Lines(original if mapping is not None else source)
        self.functions: list[s.Function] = []
        self.macros: dict[str, s.Macro] = {}
        self.globals: list[s.Decl] = []
        self.structs: dict[str, list[str]] = {}
        self.errors: list[s.Span] = []
        self.unknown: Counter = Counter()  # statement kinds skipped, for -v
        self.conditional_depth = 0
        self.called: set[str] = set()  # callee names met in the function being built
        self.aggregates = False  # whether the function being built holds an `api.AGGREGATES` kind

    # ------------------------------------------------------------------ helpers
    def span(self, node: Node) -> s.Span:
        # tuple.__new__ skips the named tuple's Python-level constructor: a span per node adds up.
        if self.mapping is not None:
            return _new_span(s.OffsetSpan, (self.mapping.start(node.start_byte), self.mapping.end(node.end_byte),
                                            self.lines))
        return _new_span(s.OffsetSpan, (node.start_byte, node.end_byte, self.lines))

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # ------------------------------------------------------------------ top level
    def top_level(self, node: Node, scope: tuple[str, ...], template: bool = False) -> None:
        for child in node.children:
            kind = child.type
            if kind == "function_definition":
                self.function(child, scope, template)
            elif kind == "template_declaration":
                self.top_level(child, scope, template=True)
            elif kind in ("declaration", "field_declaration"):
                if kind == "declaration" and not self._declares_function(child):
                    self.globals.append(self.declaration(child))
                self._structs_in(child)
            elif kind == "preproc_def":
                self.macro(child)
            elif kind in ("namespace_definition",):
                name = child.child_by_field_id(F_NAME)
                body = child.child_by_field_id(F_BODY)
                if body is not None:
                    self.top_level(body, scope + ((self.text(name),) if name is not None else ()))
            elif kind in ("struct_specifier", "class_specifier", "union_specifier"):
                self.struct(child, scope, template)
            elif kind in ("type_definition",):
                self._structs_in(child)
            elif kind in ("linkage_specification",):
                body = child.child_by_field_id(F_BODY)
                if body is not None:
                    if body.type == "function_definition":
                        self.function(body, scope, template)
                    else:
                        self.top_level(body, scope)
            elif kind in ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"):
                guarded = not _is_include_guard(child)
                self.conditional_depth += guarded
                self.top_level(child, scope, template)
                self.conditional_depth -= guarded
            elif kind in ("declaration_list", "field_declaration_list"):
                self.top_level(child, scope, template)
            elif kind == "ERROR":
                self.errors.append(self.span(child))
                self.top_level(child, scope, template)
            elif kind == "expression_statement":
                # A macro invocation at file scope (`REGISTER(x);`) parses as a statement.
                continue

    def _declares_function(self, node: Node) -> bool:
        declarator = _unwrap_declarator(node.child_by_field_id(F_DECLARATOR))
        return declarator is not None and declarator.type == "function_declarator"

    def _structs_in(self, node: Node) -> None:
        # `typedef struct { ... } Name;`: the struct is known by its typedef name.
        alias = None
        if node.type == "type_definition":
            declarator = node.child_by_field_id(F_DECLARATOR)
            alias = self.text(declarator) if declarator is not None and declarator.type == "type_identifier" else None
        for child in node.children:
            if child.type in ("struct_specifier", "class_specifier", "union_specifier"):
                self.struct(child, (), False, alias)

    def struct(self, node: Node, scope: tuple[str, ...], template: bool, alias: str | None = None) -> None:
        name_node = node.child_by_field_id(F_NAME)
        body = node.child_by_field_id(F_BODY)
        if body is None:
            return
        name = self.text(name_node) if name_node is not None else (alias or "<anonymous>")
        members: list[str] = []
        for child in body.children:
            if child.type == "field_declaration":
                for declarator in child.children_by_field_name("declarator"):
                    if declarator.type == "pointer_declarator" or (
                            declarator.type != "array_declarator" and _is_pointer_declarator(declarator)):
                        ident = _innermost_name(declarator)
                        if ident is not None:
                            members.append(self.text(ident))
                self._structs_in(child)
            elif child.type == "function_definition":
                self.function(child, scope + (name,), template)
            elif child.type == "template_declaration":
                self.top_level(child, scope + (name,), template=True)
            elif child.type in ("struct_specifier", "class_specifier"):
                self.struct(child, scope + (name,), template)
        self.structs.setdefault(name, []).extend(members)

    def macro(self, node: Node) -> None:
        name = node.child_by_field_id(F_NAME)
        value = node.child_by_field_id(F_VALUE)
        if name is None:
            return
        text = _strip_comments(self.text(value)).strip() if value is not None else ""
        self.macros[self.text(name)] = s.Macro(
            name=self.text(name), text=text, value=parse_expression(text) if text else None, span=self.span(node)
        )

    def function(self, node: Node, scope: tuple[str, ...], template: bool) -> None:
        declarator = _unwrap_declarator(node.child_by_field_id(F_DECLARATOR))
        body = node.child_by_field_id(F_BODY)
        if declarator is None or declarator.type != "function_declarator" or body is None:
            if node.has_error:
                self.errors.append(self.span(node))
            return
        name_node = declarator.child_by_field_id(F_DECLARATOR)
        raw_name = self.text(name_node) if name_node is not None else "<anonymous>"
        if name_node is not None and name_node.type == "template_function":
            raw_name = self.text(name_node.child_by_field_id(F_NAME))
        qualname = "::".join(s.strip_templates(part) for part in scope + (raw_name,))
        name = s.strip_templates(raw_name).rsplit("::", 1)[-1]
        specifiers = {self.text(c) for c in node.children if not c.is_named or c.type in ("storage_class_specifier",)}
        is_kernel = "__global__" in specifiers
        is_device = "__device__" in specifiers and "__host__" not in specifiers
        params: list[s.Param] = []
        plist = declarator.child_by_field_id(F_PARAMETERS)
        if plist is not None:
            for p in plist.named_children:
                if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                    continue
                pdecl = p.child_by_field_id(F_DECLARATOR)
                ptype = p.child_by_field_id(F_TYPE)
                if pdecl is None and ptype is not None and self.text(ptype) == "void":
                    continue  # `f(void)`
                ident = _innermost_name(pdecl) if pdecl is not None else None
                type_text = self.text(ptype) if ptype is not None else ""
                if pdecl is not None:
                    stars = _declarator_prefix(self, pdecl)
                    type_text = (type_text + " " + stars).strip()
                params.append(
                    s.Param(
                        name=self.text(ident) if ident is not None else "",
                        type=type_text,
                        is_pointer=pdecl is not None and _is_pointer_declarator(pdecl),
                        span=self.span(p),
                    )
                )
        outer, self.called = self.called, set()
        outer_aggregates, self.aggregates = self.aggregates, False
        block = self.block(body)
        called, self.called = frozenset(self.called), outer
        aggregates, self.aggregates = self.aggregates, outer_aggregates
        has_errors = node.has_error
        if has_errors:
            self.errors.append(self.span(node))
        self.functions.append(
            s.Function(
                span=self.span(node),
                name=name,
                params=params,
                body=block,
                is_kernel=is_kernel,
                is_device=is_device,
                is_template=template,
                qualname=qualname,
                name_span=self.span(name_node) if name_node is not None else None,
                has_errors=has_errors,
                in_conditional=self.conditional_depth > 0,
                called=called,
                aggregates=aggregates,
            )
        )

    # ------------------------------------------------------------------ statements
    def block(self, node: Node) -> s.Block:
        stmts: list[s.Stmt] = []
        for child in node.named_children:
            stmt = self.stmt(child)
            if stmt is not None:
                stmts.append(stmt)
        return s.Block(self.span(node), stmts)

    def stmt(self, node: Node) -> s.Stmt | None:
        stmt = self._stmt(node)
        if stmt is not None and self.uses:
            stmt.span = self._whole_use(stmt.span)
        return stmt

    def _whole_use(self, span: s.Span) -> s.Span:
        """A statement that starts or ends inside an expanded macro use spans the whole use and its
        `;` (`LAUNCH(k, n, d_x);`), as a statement the use stands for (what the clang frontend does)."""
        i = bisect.bisect_right(self.use_starts, span.start) - 1
        start, end = span.start, span.end
        if i >= 0 and self.uses[i][0] <= start < self.uses[i][1]:
            start = self.uses[i][0]
            end = max(end, self.uses[i][1])
        j = bisect.bisect_right(self.use_starts, max(end - 1, 0)) - 1
        if j >= 0 and self.uses[j][0] < end <= self.uses[j][1]:
            start = min(start, self.uses[j][0])
            end = self.uses[j][1]
        if (start, end) == (span.start, span.end):
            return span
        semicolon = re.match(rb"[ \t]*;", self.original[end:end + 64])
        if semicolon:
            end += semicolon.end()
        return _new_span(s.OffsetSpan, (start, end, self.lines))

    def _stmt(self, node: Node) -> s.Stmt | None:
        kind = node.type
        if kind == "compound_statement":
            return self.block(node)
        if kind == "expression_statement":
            inner = node.named_children[0] if node.named_children else None
            if inner is None or inner.type == "comment":
                return None
            return s.ExprStmt(self.span(node), self.expr(inner))
        if kind == "declaration":
            return self.declaration(node, local=True)
        if kind == "if_statement":
            cond = node.child_by_field_id(F_CONDITION)
            then = node.child_by_field_id(F_CONSEQUENCE)
            alt = node.child_by_field_id(F_ALTERNATIVE)
            if alt is not None and alt.type == "else_clause":
                alt = alt.named_children[-1] if alt.named_children else None
            return s.If(
                self.span(node),
                self._condition(cond),
                self.stmt(then) or s.Block(self.span(then), []) if then is not None else s.Block(self.span(node), []),
                self.stmt(alt) if alt is not None else None,
            )
        if kind == "for_statement":
            init = node.child_by_field_id(F_INITIALIZER)
            cond = node.child_by_field_id(F_CONDITION)
            update = node.child_by_field_id(F_UPDATE)
            body = node.child_by_field_id(F_BODY)
            init_stmt: s.Stmt | None = None
            if init is not None:
                init_stmt = self.declaration(init, local=True) if init.type == "declaration" else s.ExprStmt(self.span(init), self.expr(init))
            return s.Loop(
                self.span(node), "for", self._body(body, node), init_stmt,
                self.expr(cond) if cond is not None else None,
                self.expr(update) if update is not None else None,
            )
        if kind == "for_range_loop":
            declarator = node.child_by_field_id(F_DECLARATOR)
            right = node.child_by_field_id(F_RIGHT)
            init_stmt = None
            if declarator is not None:
                ident = _innermost_name(declarator)
                if ident is not None:
                    tnode = node.child_by_field_id(F_TYPE)
                    init_stmt = s.Decl(
                        self.span(declarator),
                        [s.VarDecl(self.span(declarator), self.text(ident), self.text(tnode) if tnode else "",
                                   _is_pointer_declarator(declarator), self.expr(right) if right is not None else None)],
                    )
            return s.Loop(self.span(node), "range_for", self._body(node.child_by_field_id(F_BODY), node), init_stmt,
                          self.expr(right) if right is not None else None, None)
        if kind == "while_statement":
            return s.Loop(self.span(node), "while", self._body(node.child_by_field_id(F_BODY), node), None,
                          self._condition(node.child_by_field_id(F_CONDITION)), None)
        if kind == "do_statement":
            cond = self._condition(node.child_by_field_id(F_CONDITION))
            body = self._body(node.child_by_field_id(F_BODY), node)
            if isinstance(cond, s.Literal) and cond.value == 0 or (isinstance(cond, s.Literal) and cond.text == "false"):
                # `do { ... } while (0)`: a statement-shaped macro body, not a loop.
                return s.Block(self.span(node), [body])
            return s.Loop(self.span(node), "do", body, None, cond, None)
        if kind == "switch_statement":
            cond = self._condition(node.child_by_field_id(F_CONDITION))
            body = node.child_by_field_id(F_BODY)
            cases: list[s.Stmt] = []
            labels: list[s.Expr | None] = []  # labels of empty cases falling through to the next
            if body is not None:
                for case in body.named_children:
                    if case.type != "case_statement":
                        stmt = self.stmt(case)
                        if stmt is not None:
                            cases.append(stmt)
                        continue
                    value = case.child_by_field_id(F_VALUE)
                    labels.append(self.expr(value) if value is not None else None)
                    inner = [self.stmt(c) for c in case.named_children if value is None or c.start_byte != value.start_byte]
                    inner = [x for x in inner if x is not None]
                    if not inner:
                        continue
                    case_block = s.Block(self.span(case), inner)
                    cases.append(s.If(self.span(case), s.case_condition(cond, labels, self.span(case)), case_block, None))
                    labels = []
            if body is not None and body.type == "compound_statement":  # the braces hold the cases
                return s.Block(self.span(node), [s.Block(self.span(body), cases)])
            return s.Block(self.span(node), cases)
        if kind == "return_statement":
            value = node.named_children[0] if node.named_children else None
            if value is not None and value.type == "comment":
                value = None
            return s.Return(self.span(node), self.expr(value) if value is not None else None)
        if kind in ("break_statement", "continue_statement", "goto_statement"):
            return s.Jump(self.span(node), kind.split("_", 1)[0])
        if kind == "labeled_statement":
            inner = node.named_children[-1] if node.named_children else None
            return self.stmt(inner) if inner is not None else None
        if kind == "try_statement":
            body = node.child_by_field_id(F_BODY)
            return self.block(body) if body is not None else None
        if kind in ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"):
            stmts = [self.stmt(c) for c in node.named_children]
            return s.Block(self.span(node), [x for x in stmts if x is not None])
        if kind == "ERROR":
            self.errors.append(self.span(node))
            return s.Unparsed(self.span(node), self.text(node))
        if kind in _NOT_STATEMENTS:
            return None
        unknown.skipped(self.unknown, "tree-sitter-cuda", kind, node.start_point[0] + 1)
        return None

    def _body(self, node: Node | None, parent: Node) -> s.Stmt:
        if node is None:
            return s.Block(self.span(parent), [])
        return self.stmt(node) or s.Block(self.span(node), [])

    def _condition(self, node: Node | None) -> s.Expr | None:
        if node is None:
            return None
        if node.type == "condition_clause":
            value = node.child_by_field_id(F_VALUE)
            init = node.child_by_field_id(F_INITIALIZER)
            if value is None:
                return None
            if value.type == "declaration":
                # `if (cudaError_t e = cudaMalloc(...))`: the declared value is the condition.
                inner = value.child_by_field_id(F_VALUE)
                if inner is not None:
                    return self.expr(inner)
                decl = self.declaration(value)
                inits = [v.init for v in decl.vars if v.init is not None]
                return inits[0] if inits else None
            if init is not None:
                return s.Other(self.span(node), "condition", [self.expr(c) for c in init.named_children] + [self.expr(value)])
            return self.expr(value)
        return self.expr(node)

    def declaration(self, node: Node, local: bool = False) -> s.Decl:
        type_node = node.child_by_field_id(F_TYPE)
        base_type = self.text(type_node) if type_node is not None else ""
        qualifiers = [self.text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")]
        is_const = "const" in qualifiers
        is_constexpr = "constexpr" in qualifiers
        is_static = "static" in qualifiers
        decls: list[s.VarDecl] = []
        for declarator in node.children_by_field_name("declarator"):
            init: s.Expr | None = None
            target = declarator
            if declarator.type == "init_declarator":
                target = declarator.child_by_field_id(F_DECLARATOR)
                value = declarator.child_by_field_id(F_VALUE)
                if value is not None:
                    init = self.expr(value)
            if target is None:
                continue
            target_type = target.type
            if target_type == "identifier":  # `int n = ...`, most declarations: the helpers below, short
                decls.append(s.VarDecl(self.span(declarator), self.text(target), base_type.strip(), False, init, is_const,
                                       is_constexpr, is_static, []))
                continue
            if target_type == "function_declarator":
                var = self._direct_init(target, base_type, is_const) if local else None
                if var is not None:
                    decls.append(var)
                continue
            ident = _innermost_name(target)
            if ident is None:
                continue
            dims = [self.expr(d) for d in _array_dims(target)]
            type_text = (base_type + " " + _declarator_prefix(self, target)).strip()
            decls.append(
                s.VarDecl(
                    self.span(declarator), self.text(ident), type_text, _is_pointer_declarator(target) and not dims,
                    init, is_const, is_constexpr, is_static, dims,
                )
            )
        return s.Decl(self.span(node), decls)

    def _direct_init(self, target: Node, base_type: str, is_const: bool) -> s.VarDecl | None:
        """`dim3 threads(BLOCK, BLOCK);` inside a function: tree-sitter reads a function declaration
        when every argument looks like a type; in a function body it is a variable."""
        name = target.child_by_field_id(F_DECLARATOR)
        params = target.child_by_field_id(F_PARAMETERS)
        if name is None or name.type != "identifier" or params is None:
            return None
        args: list[s.Expr] = []
        for p in params.named_children:
            if p.type == "comment":
                continue
            if p.child_by_field_id(F_DECLARATOR) is None:
                args.append(s.Name(self.span(p), s.strip_templates(self.text(p))))
            else:
                # `h(W * H)` read as a parameter `W *H`: keep the names it mentions.
                names = [s.Name(self.span(n), self.text(n)) for n in _descendants(p)
                         if n.type in ("identifier", "type_identifier")]
                args.append(s.Other(self.span(p), "expression", names))
        init = s.Other(self.span(params), "argument_list", args)
        return s.VarDecl(self.span(target), self.text(name), base_type, False, init, is_const)

    # ------------------------------------------------------------------ expressions
    def expr(self, node: Node) -> s.Expr:
        kind = node.type
        if self.mapping is None:
            # Names and numbers are most expressions (and most of them not from a macro): the shortest
            # way to them, without the dispatch and its calls.
            if kind == "identifier":
                start, end = node.start_byte, node.end_byte
                return s.Name(_new_span(s.OffsetSpan, (start, end, self.lines)),
                              self.source[start:end].decode("utf-8", "replace"))
            if kind == "number_literal":
                start, end = node.start_byte, node.end_byte
                text = self.source[start:end].decode("utf-8", "replace")
                return s.Literal(_new_span(s.OffsetSpan, (start, end, self.lines)), text, s.parse_number(text))
        if kind == "parenthesized_expression":
            return self._parenthesized(node)
        build = _EXPRESSIONS.get(kind)
        if build is not None:
            return build(self, node, self.span(node))
        if kind in AGGREGATES:
            self.aggregates = True
        return s.Other(self.span(node), kind, [self.expr(c) for c in node.named_children if c.type not in _NOT_EXPRESSIONS])

    def _parenthesized(self, node: Node) -> s.Expr:
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) == 1:
            return self.expr(inner[0])  # `(x)` is `x`: no span of its own to make
        return s.Other(self.span(node), "paren", [self.expr(c) for c in inner])

    def _name(self, node: Node, sp: s.Span) -> s.Expr:
        return s.Name(sp, self.text(node))

    def _qualified_name(self, node: Node, sp: s.Span) -> s.Expr:
        return s.Name(sp, s.strip_templates(self.text(node)))

    def _template_function(self, node: Node, sp: s.Span) -> s.Expr:
        name = node.child_by_field_id(F_NAME)
        return s.Name(sp, s.strip_templates(self.text(name) if name is not None else self.text(node)))

    def _literal(self, node: Node, sp: s.Span) -> s.Expr:
        text = self.text(node)
        return s.Literal(sp, text, s.parse_number(text) if node.type == "number_literal" else None)

    def _field(self, node: Node, sp: s.Span) -> s.Expr:
        base = node.child_by_field_id(F_ARGUMENT)
        field = node.child_by_field_id(F_FIELD)
        op = node.child_by_field_id(F_OPERATOR)
        return s.Member(
            sp, self.expr(base) if base is not None else s.Other(sp, "missing"),
            s.strip_templates(self.text(field)) if field is not None else "",
            op is not None and op.type == "->",  # an operator token's type is its text
        )

    def _subscript(self, node: Node, sp: s.Span) -> s.Expr:
        base = node.child_by_field_id(F_ARGUMENT)
        indices = node.child_by_field_id(F_INDICES)
        index_nodes = [c for c in indices.named_children if c.type != "comment"] if indices is not None else []
        index = self.expr(index_nodes[0]) if index_nodes else s.Other(sp, "missing")
        return s.Index(sp, self.expr(base), index)

    def _unary(self, node: Node, sp: s.Span) -> s.Expr:
        op = node.child_by_field_id(F_OPERATOR)
        arg = node.child_by_field_id(F_ARGUMENT)
        return s.Unary(sp, self.text(op) if op is not None else "", self.expr(arg) if arg is not None else s.Other(sp, "missing"))

    def _update(self, node: Node, sp: s.Span) -> s.Expr:
        op = node.child_by_field_id(F_OPERATOR)
        arg = node.child_by_field_id(F_ARGUMENT)
        postfix = arg is not None and op is not None and arg.start_byte < op.start_byte
        return s.Unary(sp, self.text(op) if op is not None else "++", self.expr(arg) if arg is not None else s.Other(sp, "missing"), postfix)

    def _binary(self, node: Node, sp: s.Span) -> s.Expr:
        return s.Binary(
            sp, self.text(node.child_by_field_id(F_OPERATOR)),
            self.expr(node.child_by_field_id(F_LEFT)), self.expr(node.child_by_field_id(F_RIGHT)),
        )

    def _assignment(self, node: Node, sp: s.Span) -> s.Expr:
        return s.Assign(
            sp, self.text(node.child_by_field_id(F_OPERATOR)),
            self.expr(node.child_by_field_id(F_LEFT)), self.expr(node.child_by_field_id(F_RIGHT)),
        )

    def _cast(self, node: Node, sp: s.Span) -> s.Expr:
        type_node = node.child_by_field_id(F_TYPE)
        value = node.child_by_field_id(F_VALUE)
        return s.Cast(sp, self.text(type_node) if type_node is not None else "", self.expr(value) if value is not None else s.Other(sp, "missing"))

    def _sizeof(self, node: Node, sp: s.Span) -> s.Expr:
        type_node = node.child_by_field_id(F_TYPE)
        value = node.child_by_field_id(F_VALUE)
        if type_node is not None:
            return s.Sizeof(sp, self.text(type_node), None)
        return s.Sizeof(sp, None, self.expr(value) if value is not None else None)

    def _conditional(self, node: Node, sp: s.Span) -> s.Expr:
        consequence = node.child_by_field_id(F_CONSEQUENCE)
        return s.Conditional(
            sp, self.expr(node.child_by_field_id(F_CONDITION)),
            self.expr(consequence) if consequence is not None else s.Other(sp, "missing"),
            self.expr(node.child_by_field_id(F_ALTERNATIVE)),
        )

    def _comma(self, node: Node, sp: s.Span) -> s.Expr:
        return s.Other(sp, "comma", [self.expr(node.child_by_field_id(F_LEFT)), self.expr(node.child_by_field_id(F_RIGHT))])

    def call(self, node: Node, sp: s.Span | None = None) -> s.Expr:
        sp = sp or self.span(node)
        function = node.child_by_field_id(F_FUNCTION)
        arguments = node.child_by_field_id(F_ARGUMENTS)
        args = [self.expr(a) for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
        launch: list[s.Expr] | None = None
        if node.child_count > 2:  # a plain call is its function and its arguments: nothing to look for
            for child in node.children:
                if child.type == "kernel_call_syntax":
                    launch = [self.expr(c) for c in child.named_children if c.type != "comment"]
        if function is not None and function.type == "template_function":
            name = function.child_by_field_id(F_NAME)
            name_text = self.text(name) if name is not None else ""
            if name_text in _CAST_CALLS and len(args) == 1:
                targs = function.child_by_field_id(F_ARGUMENTS)
                return s.Cast(sp, self.text(targs).strip("<>") if targs is not None else "", args[0])
        if function is not None and function.type in ("primitive_type", "sized_type_specifier") and len(args) == 1:
            return s.Cast(sp, self.text(function), args[0])  # `float(i)`
        callee = self.expr(function) if function is not None else s.Other(sp, "missing")
        call = s.Call(sp, callee, args, launch)
        if launch is None:
            self.called.add(s.callee_name(call))
        return call


# How each expression kind becomes an `Expr` (`_Lowering.expr`); kinds not here become `Other`.
_EXPRESSIONS = {
    "identifier": _Lowering._name, "field_identifier": _Lowering._name, "namespace_identifier": _Lowering._name, "this": _Lowering._name,
    "qualified_identifier": _Lowering._qualified_name,
    "template_function": _Lowering._template_function,
    **{kind: _Lowering._literal for kind in _LITERAL_TYPES},
    "field_expression": _Lowering._field,
    "subscript_expression": _Lowering._subscript,
    "pointer_expression": _Lowering._unary, "unary_expression": _Lowering._unary,
    "update_expression": _Lowering._update,
    "binary_expression": _Lowering._binary,
    "assignment_expression": _Lowering._assignment,
    "call_expression": _Lowering.call,
    "cast_expression": _Lowering._cast,
    "sizeof_expression": _Lowering._sizeof,
    "conditional_expression": _Lowering._conditional,
    "comma_expression": _Lowering._comma,
}

def _descendants(node: Node) -> list[Node]:
    out: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(current.named_children))
    return out


def _unwrap_declarator(node: Node | None) -> Node | None:
    """`float *f()`, `float &operator[](int)`: the function declarator under pointer/reference ones."""
    while node is not None and node.type in ("pointer_declarator", "reference_declarator"):
        inner = node.child_by_field_id(F_DECLARATOR)
        if inner is None:
            inner = next((c for c in node.named_children if c.type.endswith("declarator")), None)
        node = inner
    return node


def _strip_comments(text: str) -> str:
    """A macro body without its trailing `// ...` or embedded `/* ... */` comments."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//.*", "", text)


def _is_include_guard(node: Node) -> bool:
    """`#ifndef FOO_H` followed by `#define FOO_H`: the whole header, not a conditional definition."""
    if node.type != "preproc_ifdef":
        return False
    name = node.child_by_field_id(F_NAME)
    first = next((c for c in node.named_children if c.type not in ("identifier", "comment")), None)
    return (name is not None and first is not None and first.type == "preproc_def"
            and first.child_by_field_id(F_NAME) is not None
            and first.child_by_field_id(F_NAME).text == name.text)


def _is_pointer_declarator(node: Node) -> bool:
    current: Node | None = node
    while current is not None:
        if current.type in ("pointer_declarator", "abstract_pointer_declarator", "array_declarator", "abstract_array_declarator"):
            return True
        if current.type in ("init_declarator", "reference_declarator", "parenthesized_declarator", "attributed_declarator"):
            nxt = current.child_by_field_id(F_DECLARATOR)
            if nxt is None:
                nxt = next((c for c in current.named_children if c.type.endswith("declarator")), None)
            current = nxt
            continue
        return False
    return False


def _innermost_name(node: Node) -> Node | None:
    current: Node | None = node
    while current is not None:
        if current.type in ("identifier", "field_identifier", "qualified_identifier"):
            return current
        nxt = current.child_by_field_id(F_DECLARATOR)
        if nxt is None:
            nxt = next(
                (c for c in current.named_children if c.type.endswith("declarator") or c.type in ("identifier", "field_identifier")),
                None,
            )
        current = nxt
    return None


def _array_dims(node: Node) -> list[Node]:
    dims: list[Node] = []
    current: Node | None = node
    while current is not None and current.type in ("array_declarator", "pointer_declarator", "reference_declarator"):
        if current.type == "array_declarator":
            size = current.child_by_field_id(F_SIZE)
            if size is not None:
                dims.append(size)
        current = current.child_by_field_id(F_DECLARATOR)
    return list(reversed(dims))


def _declarator_prefix(lowering: _Lowering, node: Node) -> str:
    """The `*`/`&` part of a declarator (`float *a` -> `*`)."""
    parts: list[str] = []
    current: Node | None = node
    while current is not None:
        if current.type in ("pointer_declarator", "abstract_pointer_declarator"):
            parts.append("*")
        elif current.type in ("reference_declarator",):
            parts.append("&")
        elif current.type in ("array_declarator",):
            parts.append("[]")
        nxt = current.child_by_field_id(F_DECLARATOR)
        current = nxt
    return "".join(parts)


