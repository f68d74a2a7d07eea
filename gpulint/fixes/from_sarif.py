"""Fixes recorded in a SARIF file (one gpulint wrote in CI, say), checked before they are applied.

Every artifact must lie inside the project root: no absolute paths, no `file:` URIs, no `..`, no
symlink leading out. Every replaced region must still hold the text the SARIF recorded.
Anything else refuses the whole file with a clear message: nothing is applied.
"""
from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from gpulint.findings import Edit


class FromSarifError(Exception):
    """The SARIF cannot be applied safely; the message says why."""


def load_edits(sarif_path: Path, root: Path, unsafe: bool = False) -> dict[Path, list[list[Edit]]]:
    """The recorded fixes by file (each fix a list of edits), after every safety check: safe
    ones (and unsafe ones with `unsafe`); display-only and unmarked fixes never."""
    if not sarif_path.is_file():  # a FIFO would block forever; a directory is no SARIF
        raise FromSarifError(f"{sarif_path}: cannot read SARIF: "
                             f"{'not a regular file' if sarif_path.exists() else 'no such file'}")
    try:
        log = json.loads(sarif_path.read_text(encoding="utf-8"))
    except RecursionError as exc:
        raise FromSarifError(f"{sarif_path}: cannot read SARIF: nested too deeply") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FromSarifError(f"{sarif_path}: cannot read SARIF: {exc}") from exc
    _check(log, _LOG, "", sarif_path)
    if log.get("version") != "2.1.0":
        raise FromSarifError(f"{sarif_path}: not SARIF 2.1.0 (version {log.get('version')!r})")
    root = root.resolve()
    fixes: dict[Path, list[list[Edit]]] = {}
    for run in log["runs"]:
        for result in run.get("results", []):
            for fix in result.get("fixes", []):
                applicability = (fix.get("properties") or {}).get("applicability")
                if applicability != "safe" and not (unsafe and applicability == "unsafe"):
                    continue
                per_file: dict[Path, list[Edit]] = {}
                for change in fix.get("artifactChanges", []):
                    path = _inside(change.get("artifactLocation", {}), root)
                    source = path.read_bytes()
                    for replacement in change.get("replacements", []):
                        per_file.setdefault(path, []).append(_edit(path, source, replacement, root))
                for path, edits in per_file.items():
                    fixes.setdefault(path, []).append(edits)
    return fixes


# The part of SARIF 2.1.0 this reads: ({field: shape}, required fields) for an object, [shape] for
# an array, a type or a named check for a scalar.  Everything else in the document is ignored.
_REGION = ({"byteOffset": "index", "byteLength": "index", "snippet": ({"text": str}, ())}, ("byteOffset", "byteLength"))
_REPLACEMENT = ({"deletedRegion": _REGION, "insertedContent": ({"text": str}, ())}, ("deletedRegion",))
_CHANGE = ({"artifactLocation": ({"uri": "uri", "uriBaseId": str}, ("uri",)), "replacements": [_REPLACEMENT]},
           ("artifactLocation", "replacements"))
_FIX = ({"properties": ({"applicability": str}, ()), "artifactChanges": [_CHANGE]}, ())
_LOG = ({"version": str, "runs": [({"results": [({"fixes": [_FIX]}, ())]}, ())]}, ("version", "runs"))


def _check(value, shape, where: str, sarif_path: Path) -> None:
    """Raise FromSarifError naming the JSON path of the first value not of its shape."""
    def wrong(expected: str) -> FromSarifError:
        return FromSarifError(f"{sarif_path}: not valid SARIF 2.1.0: {where or 'the document'} should be {expected}, "
                              f"not {json.dumps(value)[:60]}")

    if isinstance(shape, list):
        if not isinstance(value, list):
            raise wrong("an array")
        for i, item in enumerate(value):
            _check(item, shape[0], f"{where}[{i}]", sarif_path)
    elif isinstance(shape, tuple):
        fields, required = shape
        if not isinstance(value, dict):
            raise wrong("an object")
        for name in required:
            if name not in value:
                raise FromSarifError(f"{sarif_path}: not valid SARIF 2.1.0: {where or 'the document'} has no `{name}`")
        for name, inner in fields.items():
            if name in value:
                _check(value[name], inner, f"{where}.{name}" if where else name, sarif_path)
    elif shape == "index":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise wrong("a non-negative integer")
    elif shape == "uri":
        if not isinstance(value, str) or any(ord(ch) < 0x20 or ch == "\x7f" for ch in value):
            raise wrong("a URI string without control characters")
    elif not isinstance(value, shape):
        raise wrong("a string")


def _inside(location: dict, root: Path) -> Path:
    uri = location.get("uri", "")
    base = location.get("uriBaseId")
    parsed = urlparse(uri)
    if parsed.scheme or uri.startswith("/") or (base not in (None, "%SRCROOT%", "SRCROOT")):
        raise FromSarifError(f"refusing {uri!r}: only paths relative to the project root can be fixed")
    relative = PurePosixPath(unquote(uri))
    if relative.is_absolute() or ".." in relative.parts:
        raise FromSarifError(f"refusing {uri!r}: it points outside the project root")
    path = (root / relative).resolve()  # follows symlinks
    if root != path and root not in path.parents:
        raise FromSarifError(f"refusing {uri!r}: it resolves outside the project root ({path})")
    if not path.is_file():
        raise FromSarifError(f"refusing {uri!r}: no such file under the project root")
    return path


def _edit(path: Path, source: bytes, replacement: dict, root: Path) -> Edit:
    region = replacement.get("deletedRegion", {})
    start, length = region.get("byteOffset"), region.get("byteLength")
    if not isinstance(start, int) or not isinstance(length, int) or start < 0 or length < 0 or start + length > len(source):
        raise FromSarifError(f"{path.relative_to(root)}: a replacement's region is not inside the file")
    recorded = region.get("snippet", {}).get("text")
    actual = source[start:start + length].decode("utf-8", "replace")
    if recorded is None or recorded != actual:
        raise FromSarifError(f"{path.relative_to(root)}: the text at bytes {start}..{start + length} no longer "
                             f"matches what the SARIF recorded; re-run gpulint")
    return Edit(str(path), start, start + length, replacement.get("insertedContent", {}).get("text", ""))
