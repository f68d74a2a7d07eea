"""Size folding: allocation, copy and memset sizes folded through macros, constants and sizeof.

`fold(expr)` returns a `Size`: the integer value when the expression is a compile-time
constant, and a normalised text in which every constant part is folded (`n * sizeof(float)`
becomes `n*4`), so that two runtime sizes written the same way compare equal.
"""
from __future__ import annotations

import operator
from typing import Callable

from gpulint.history import Size
from gpulint.static import syntax as s

# sizeof of the types GPU code allocates most; pointers are 8 bytes on every CUDA host.
_SIZEOF = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1, "__nv_fp8_e4m3": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4, "uint32_t": 4, "half2": 4, "__half2": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "double": 8, "size_t": 8,
    "int64_t": 8, "uint64_t": 8, "ptrdiff_t": 8, "float2": 8, "int2": 8, "uint2": 8, "cuComplex": 8,
    "cuFloatComplex": 8, "float3": 12, "int3": 12, "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
    "cuDoubleComplex": 16, "double4": 32, "long double": 16,
}

_LIMIT = 1 << 64  # folded values outside (-2**64, 2**64) are unknown
_BINARY: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.floordiv, "%": operator.mod,
    "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor,
}
_PRECEDENCE = {"*": 5, "/": 5, "%": 5, "+": 4, "-": 4, "<<": 3, ">>": 3, "&": 2, "^": 1, "|": 0}


def sizeof_type(type_text: str) -> int | None:
    t = " ".join(type_text.replace("const", " ").replace("volatile", " ").split())
    if t.endswith("*"):
        return 8
    return _SIZEOF.get(t)


class Folder:
    """Folds expressions of one translation unit; `scope` adds the const locals of a function."""

    def __init__(self, macros: dict[str, s.Macro], constants: dict[str, s.Expr] | None = None) -> None:
        self.macros = macros
        self.constants = dict(constants or {})

    @classmethod
    def for_unit(cls, tu: s.TranslationUnit) -> "Folder":
        constants: dict[str, s.Expr] = {}
        for decl in tu.globals:
            for var in decl.vars:
                if var.init is not None and (var.is_const or var.is_constexpr) and not var.is_pointer:
                    constants[var.name] = var.init
        return cls(tu.macros, constants)

    def with_constant(self, name: str, value: s.Expr | None) -> None:
        if value is None:
            self.constants.pop(name, None)
        else:
            self.constants[name] = value

    def forget(self, name: str) -> None:
        self.constants.pop(name, None)

    # The value of an expression, or None when some part of it is only known at run time.
    def value(self, expr: s.Expr | None, _depth: int = 0) -> int | None:
        if expr is None or _depth > 32:
            return None
        # `type(...) is`, not isinstance: no syntax class has subclasses, and sizes fold every operand.
        if type(expr) is s.Literal:
            if not isinstance(expr.value, (int, float)) or isinstance(expr.value, float) and not expr.value.is_integer():
                return None  # `is_integer` is False for inf and NaN too
            value = int(expr.value)
            return value if -_LIMIT < value < _LIMIT else None
        if type(expr) is s.Name:
            if expr.id in self.constants:
                return self.value(self.constants[expr.id], _depth + 1)
            macro = self.macros.get(expr.id)
            if macro is not None:
                return self.value(macro.value, _depth + 1)
            return None
        if type(expr) is s.Sizeof:
            name = expr.type if expr.type is not None else expr.operand.id if isinstance(expr.operand, s.Name) else None
            if name is None:
                return None
            # `sizeof(double2)`: a type name the parser could not tell from a variable;
            # `sizeof(DATA_TYPE)` with `#define DATA_TYPE float`: the type the macro names.
            size = sizeof_type(name)
            macro = self.macros.get(name.strip())
            if size is None and macro is not None and macro.text:
                size = sizeof_type(macro.text)
            return size
        if type(expr) is s.Cast:
            return self.value(expr.operand, _depth + 1)
        if type(expr) is s.Unary:
            inner = self.value(expr.operand, _depth + 1)
            if inner is None:
                return None
            return {"-": -inner, "+": inner, "~": ~inner}.get(expr.op)
        if type(expr) is s.Binary:
            func = _BINARY.get(expr.op)
            if func is None:
                return None
            left = self.value(expr.left, _depth + 1)
            right = self.value(expr.right, _depth + 1)
            if left is None or right is None:
                return None
            if expr.op in ("<<", ">>") and not 0 <= right < 128:
                return None  # `1 << 100000000` would build a 12 MB integer; C leaves it undefined
            try:
                result = func(left, right)
            except (ZeroDivisionError, ValueError, OverflowError):
                return None
            # No size, count or offset of a real program is this large; hostile constants
            # (`1e308 * 1e308`) must not grow into huge integers through further folding.
            return result if -_LIMIT < result < _LIMIT else None
        if type(expr) is s.Conditional:
            cond = self.value(expr.cond, _depth + 1)
            if cond is None:
                return None
            return self.value(expr.then if cond else expr.orelse, _depth + 1)
        if type(expr) is s.Other and expr.kind == "paren" and len(expr.children) == 1:
            return self.value(expr.children[0], _depth + 1)
        return None

    def render(self, expr: s.Expr | None) -> str:
        """Normalised text: constant sub-expressions folded, no spaces, minimal parentheses."""
        if expr is None:
            return "?"
        value = self.value(expr)
        if value is not None:
            return str(value)
        if isinstance(expr, s.Name):
            return expr.id
        if isinstance(expr, s.Binary) and expr.op in _PRECEDENCE:
            prec = _PRECEDENCE[expr.op]
            left = self.render(expr.left)
            right = self.render(expr.right)
            if isinstance(expr.left, s.Binary) and _PRECEDENCE.get(expr.left.op, 9) < prec and self.value(expr.left) is None:
                left = f"({left})"
            if isinstance(expr.right, s.Binary) and _PRECEDENCE.get(expr.right.op, 9) <= prec and self.value(expr.right) is None:
                right = f"({right})"
            return f"{left}{expr.op}{right}"
        if isinstance(expr, s.Cast):
            return self.render(expr.operand)
        if isinstance(expr, s.Member):
            return f"{self.render(expr.base)}.{expr.field}"
        if isinstance(expr, s.Index):
            return f"{self.render(expr.base)}[{self.render(expr.index)}]"
        if isinstance(expr, s.Call):
            return f"{self.render(expr.callee)}({','.join(self.render(a) for a in expr.args)})"
        if isinstance(expr, s.Sizeof):
            return f"sizeof({expr.type if expr.type is not None else self.render(expr.operand)})"
        if isinstance(expr, s.Unary):
            return f"{expr.op}{self.render(expr.operand)}" if not expr.postfix else f"{self.render(expr.operand)}{expr.op}"
        if isinstance(expr, s.Literal):
            return expr.text
        if isinstance(expr, s.Other) and expr.kind == "paren" and len(expr.children) == 1:
            return self.render(expr.children[0])
        return f"<{type(expr).__name__.lower()}>"

    def constant_only(self, expr: s.Expr) -> bool:
        """True when every name in the expression is a compile-time constant."""
        stack: list[object] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, s.Sizeof):
                continue  # sizeof is always a compile-time constant
            if isinstance(node, s.Name) and node.id not in self.constants and node.id not in self.macros:
                return False
            if isinstance(node, s.Call):
                return False
            stack.extend(s.children(node))
        return True

    def fold(self, expr: s.Expr | None) -> Size | None:
        if expr is None:
            return None
        return Size(self.value(expr), self.render(expr), self.constant_only(expr), _names(expr))

    def product(self, *exprs: s.Expr) -> Size | None:
        """A size given as factors (cudaMallocPitch width*height, cuMemsetD32 count*4)."""
        values = [self.value(e) for e in exprs]
        text = "*".join(self.render(e) for e in exprs)
        total: int | None = 1
        for v in values:
            total = None if total is None or v is None or abs(total * v) >= _LIMIT else total * v
        return Size(total, text if total is None else str(total), all(self.constant_only(e) for e in exprs),
                    frozenset().union(*(_names(e) for e in exprs)))


def _names(expr: s.Expr) -> frozenset[str]:
    """Variables and macros an expression mentions, outside sizeof."""
    names: set[str] = set()
    stack: list[object] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, s.Sizeof):
            continue
        if isinstance(node, s.Name):
            names.add(node.id)
        stack.extend(s.children(node))
    return frozenset(names)
