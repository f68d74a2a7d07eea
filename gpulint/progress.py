"""Progress for long work, on stderr and only for a person: a terminal, a format meant for people.
One line rewritten in place (`\\r`), with the seconds so far, cleared when the work ends, so
nothing of it is left in the scrollback or in a redirected log."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self.width = 0

    def __call__(self, what: str) -> None:
        if not self.enabled:
            return
        line = f"gpulint: {what} ({time.monotonic() - self.started:.1f} s)"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def done(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
