"""Python's own functions and the methods of its containers, strings, files and loggers, as far
as GPU memory cares: they launch nothing, and some change nothing they are given (columns:
gpulint/models/api.py)."""
from __future__ import annotations

from gpulint.models.api import Api, Role

_NO_LAUNCH = Api(Role.PLAIN, launches=False)
_READ_ONLY = Api(Role.PLAIN, launches=False, read_only=True)
# What they give is a Python value on the host (a number, a string, a file), whatever they are given.
_HOST = Api(Role.HOST_RESULT, launches=False, read_only=True)

FUNCTIONS: dict[str, Api] = {
    **dict.fromkeys(("print", "range", "enumerate", "zip", "min", "max", "any", "all", "reversed", "getattr"),
                    _READ_ONLY),
    **dict.fromkeys(("len", "isinstance", "issubclass", "float", "int", "str", "bool", "bytes", "repr", "format",
                     "hash", "id", "ord", "chr", "callable", "hasattr", "type", "open"), _HOST),
    **dict.fromkeys(("list", "dict", "set", "tuple", "sorted", "sum", "abs", "round", "divmod", "setattr"),
                    _NO_LAUNCH),
}

MEMBERS: dict[str, Api] = {
    **dict.fromkeys(("keys", "values", "items"), _READ_ONLY),
    **dict.fromkeys(("copy", "count", "index"), Api(Role.PLAIN, read_only=True)),
    **dict.fromkeys(("append", "extend", "insert", "pop", "update", "join", "format", "split", "strip", "startswith",
                     "endswith", "replace", "lower", "upper", "write", "read", "close", "info", "debug", "warning",
                     "error"), _NO_LAUNCH),
    # Strings' and files' own methods (no tensor or array has a method of these names).
    **dict.fromkeys(("rstrip", "lstrip", "rsplit", "splitlines", "encode", "decode", "isdigit", "isalpha",
                     "isalnum", "isspace", "zfill", "ljust", "rjust", "center", "casefold", "capitalize", "find",
                     "rfind", "readline", "readlines", "writelines", "seek", "tell"), _NO_LAUNCH),
}

# Modules whose functions launch nothing.
NO_LAUNCH_PREFIXES = ("time.", "logging.", "os.", "sys.", "math.", "random.", "json.", "re.", "itertools.")

# Methods that keep their argument in the container they are called on.
CONTAINER_STORES = frozenset({"append", "extend", "insert", "add", "put", "setdefault"})
