"""`gpulint check --watch`: what counts as a change, the loop, and the command end to end."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from gpulint import watch
from test_cli import LATE_FREE



def test_snapshot_sees_edits_new_and_removed_files_and_configuration(tmp_path: Path) -> None:
    a = tmp_path / "a.cu"
    a.write_text("int x;\n")
    before = watch.snapshot([a], [str(tmp_path)])
    assert list(before) == [str(a)]
    assert watch.changed(before, watch.snapshot([a], [str(tmp_path)])) == []
    a.write_text("int x; int y;\n")  # a new size
    after = watch.snapshot([a], [str(tmp_path)])
    assert watch.changed(before, after) == [str(a)]
    (tmp_path / "gpulint.toml").write_text("[lint]\n")  # a configuration beside the files counts
    with_config = watch.snapshot([a], [str(tmp_path)])
    assert watch.changed(after, with_config) == [str(tmp_path / "gpulint.toml")]
    b = tmp_path / "b.cu"
    b.write_text("int z;\n")
    assert watch.changed(with_config, watch.snapshot([a, b], [str(tmp_path)])) == [str(b)]
    a.unlink()
    assert str(a) in watch.changed(with_config, watch.snapshot([a, b], [str(tmp_path)]))
    baseline = tmp_path / "base.json"
    baseline.write_text("{}")
    assert str(baseline) in watch.snapshot([b], [str(tmp_path)], [str(baseline)])


def test_the_loop_checks_again_after_a_change_and_survives_a_failed_round() -> None:
    states = iter([{"a": (1, 1)}, {"a": (1, 1)}, {"a": (2, 1)}, {"a": (2, 1)}, {"a": (3, 1)}])
    codes = iter([SystemExit(2), 1])
    calls: list[int] = []

    def check() -> int:
        calls.append(1)
        code = next(codes)
        if isinstance(code, BaseException):
            raise code
        return code

    out = io.StringIO()
    assert watch.loop(check, lambda: next(states), stream=out, rounds=2, sleep=lambda _: None) == 0
    assert len(calls) == 2
    text = out.getvalue()
    assert "checking (starting)" in text and "checking (a)" in text
    assert "exit 2;" in text and "exit 1;" in text


def test_ctrl_c_ends_the_watch_with_exit_0() -> None:
    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    assert watch.loop(lambda: 0, dict, stream=io.StringIO(), sleep=interrupted) == 0


def test_check_watch_end_to_end(tmp_path: Path) -> None:
    source = tmp_path / "app.cu"
    source.write_text("__global__ void k(float *p) { p[0] = 1.0f; }\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-m", "gpulint", "check", "--watch", "--no-cache", "--min-bytes", "0", "--format", "concise",
                             str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=tmp_path)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()

    def wait_for(text: str, count: int = 1) -> None:
        deadline = time.monotonic() + 60
        while sum(text in line for line in list(lines)) < count:
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, f"no {text!r} in:\n{''.join(lines)}"
            time.sleep(0.05)

    try:
        wait_for("watching")
        assert not any("GL003" in line for line in lines)
        time.sleep(0.05)  # a later modification time than the first snapshot's
        source.write_text(LATE_FREE)
        wait_for("watching", 2)
        assert any("checking (" in line and "app.cu" in line for line in lines), "".join(lines)
        assert any("GL003" in line for line in lines), "".join(lines)
        assert any("exit 1;" in line for line in lines)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, "".join(lines)
