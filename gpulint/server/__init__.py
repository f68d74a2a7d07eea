"""`gpulint server`: a language server over stdio (diagnostics, code actions, hover).

pygls is optional (`pip install 'gpulint[server]'`): importing gpulint never imports it; only
`serve` does, after saying clearly what is missing.  `project` (the workspace kept between edits)
needs no protocol library; `convert` maps findings to LSP types; `wiring` holds the handlers."""
from __future__ import annotations

MISSING = "the language server needs pygls, which is not installed: pip install 'gpulint[server]'"


class Unavailable(Exception):
    """pygls (or its lsprotocol) cannot be imported."""


def serve() -> None:
    """Serve the protocol on stdin/stdout until the client says exit."""
    try:
        from gpulint.server import wiring
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs", "attrs"):
            raise  # gpulint's own import error: a bug, not a missing extra
        raise Unavailable(MISSING) from exc

    wiring.serve()
