"""tree-sitter-python's grammar as the Python frontend reads it: the language, and the ids of the
fields its walks ask for.

`node.child_by_field_id(BODY)` is `node.child_by_field_name("body")` without the look-up of the
field's name, which the binding repeats on every call (a scan of the grammar's field names): half
the cost of the call, and the frontend makes some 20,000 of them on pytorch/examples.
"""
from __future__ import annotations

import tree_sitter_python
from tree_sitter import Language

from gpulint.static import field_id

LANGUAGE = Language(tree_sitter_python.language())


def _field(name: str) -> int:
    return field_id(LANGUAGE, name, "tree-sitter-python")


ALIAS = _field("alias")
ALTERNATIVE = _field("alternative")
ARGUMENTS = _field("arguments")
ATTRIBUTE = _field("attribute")
BODY = _field("body")
CONDITION = _field("condition")
CONSEQUENCE = _field("consequence")
DEFINITION = _field("definition")
FUNCTION = _field("function")
LEFT = _field("left")
MODULE_NAME = _field("module_name")
NAME = _field("name")
OBJECT = _field("object")
OPERATOR = _field("operator")
PARAMETERS = _field("parameters")
RIGHT = _field("right")
SUBSCRIPT = _field("subscript")
SUPERCLASSES = _field("superclasses")
TYPE = _field("type")
VALUE = _field("value")
