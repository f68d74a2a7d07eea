"""A small language-server client for the tests: JSON-RPC with `Content-Length` headers over a
`python -m gpulint server` subprocess's stdin and stdout, as an editor speaks to it."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPOSITORY = Path(__file__).resolve().parent.parent


class Client:
    def __init__(self, cwd: Path, env: dict[str, str] | None = None, python: list[str] | None = None) -> None:
        """`python`: what the interpreter runs instead of `-m gpulint server` (`-c CODE`)."""
        environ = dict(os.environ if env is None else env)
        # This checkout's gpulint, whatever an installed one says.
        environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPOSITORY), environ.get("PYTHONPATH")) if p)
        # A server that does not end can be made to print every thread's stack (`hung`).
        environ["PYTHONFAULTHANDLER"] = "1"
        self.proc = subprocess.Popen([sys.executable, *(python or ["-m", "gpulint", "server"])], cwd=cwd, env=environ,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.incoming: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []  # the server's own requests (each answered with null)
        self.next_id = 0
        # stderr is read as it comes: a server that logs more than a pipe holds (64 KiB) would
        # otherwise block on its next write, and look hung.
        self._stderr: list[bytes] = []
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()
        threading.Thread(target=self._read, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self._stderr.append(chunk)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.incoming.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            assert length is not None, "a message without Content-Length"
            self.incoming.put(json.loads(stream.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def _next(self, deadline: float) -> dict[str, Any]:
        try:
            message = self.incoming.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise TimeoutError("no message from the server in time") from None
        if message is None:
            raise EOFError(f"the server closed its output: {self.stderr()}")
        return message

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("id") == ident and "method" not in message:
                assert "error" not in message, message["error"]
                return message.get("result")
            if "method" in message and "id" in message:  # a request of the server's: answer it empty
                self.requests.append(message)
                self.send({"id": message["id"], "result": None})
            else:
                self.notifications.append(message)

    def wait_for(self, method: str, where: Callable[[dict[str, Any]], bool] = lambda p: True,
                 timeout: float = 60) -> dict[str, Any]:
        """The first notification `method` whose params satisfy `where` (already received or next)."""
        for i, message in enumerate(self.notifications):
            if message.get("method") == method and where(message["params"]):
                return self.notifications.pop(i)["params"]
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if "method" in message and "id" in message:
                self.requests.append(message)
                self.send({"id": message["id"], "result": None})
            elif message.get("method") == method and where(message["params"]):
                return message["params"]
            else:
                self.notifications.append(message)

    def stderr(self) -> str:
        """What the server wrote to stderr (all of it once the server has ended)."""
        if self.proc.poll() is not None:
            self._stderr_reader.join(timeout=10)
        return b"".join(self._stderr).decode("utf-8", "replace")

    def hung(self) -> str:
        """Every thread's stack of a server that is still running (faulthandler on SIGABRT)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.stderr()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
