"""Progress for long work, on stderr and only for a person: a terminal, a format meant for people.
One line rewritten in place (`\\r`), with the seconds so far, cleared when the work ends, so
nothing of it is left in the scrollback or in a redirected log.  Work that ends within `delay`
seconds shows nothing (no flicker on every small run), and the line is rewritten at most every
`interval` seconds however often it is told (a `check` tells it once per file)."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None, delay: float = 0.3,
                 interval: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self.delay, self.interval = delay, interval
        self.shown = float("-inf")
        self.width = 0

    def __call__(self, what: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay or now - self.shown < self.interval:
            return
        self.shown = now
        line = f"gpulint: {what} ({now - self.started:.1f} s)"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def done(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
