"""The cuda-python, Numba and CuPy collectors without a GPU: cuda-python's entry points are
stood in for by a fake module with the same calling conventions (the GPU tests run the real ones)."""
from __future__ import annotations

import sys
import types
from pathlib import Path

from gpulint.config import Settings
from gpulint.dynamic.analyze import analyze
from gpulint.dynamic.collectors import cuda_python_collector
from gpulint.dynamic.collectors.recorder import Recorder, session
from gpulint.dynamic.trace import TraceWriter, read_trace
from gpulint.rules import RULES


def fake_runtime() -> types.SimpleNamespace:
    """cudaMalloc & co. as cuda.bindings.runtime returns them: (error, value...) tuples."""
    memory = {"next": 1 << 32}

    def cudaMalloc(size):
        address = memory["next"]
        memory["next"] += (size + 255) // 256 * 256
        return (0, address)

    return types.SimpleNamespace(
        cudaMalloc=cudaMalloc, cudaFree=lambda p: (0,), cudaMemcpy=lambda d, s, n, k: (0,),
        cudaMemset=lambda p, v, n: (0,), cudaDeviceSynchronize=lambda: (0,),
        cuModuleGetFunction=lambda m, name: (0, 0xF00), cuLaunchKernel=lambda *a: (0,))


def test_cuda_python_calls_become_a_trace(tmp_path: Path) -> None:
    cudart = fake_runtime()
    recorder = Recorder(TraceWriter(tmp_path / "t.jsonl", collector="python"))
    collector = cuda_python_collector.install(recorder, cudart)
    _, early = cudart.cudaMalloc(4096)  # line A: allocated long before its first use
    _, a = cudart.cudaMalloc(4096)
    _, unused = cudart.cudaMalloc(1024)
    _, kernel = cudart.cuModuleGetFunction(None, b"scale")
    cudart.cudaMemcpy(a, 0, 4096, 1)
    for _ in range(3):
        cudart.cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, 0, ((a, 4096), (None, None)), 0)
    cudart.cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, 0, ((early + 64,), (None,)), 0)
    cudart.cudaMemcpy(0, a, 4096, 2)
    cudart.cudaFree(a)
    cudart.cudaFree(early)
    cudart.cudaDeviceSynchronize()
    collector.uninstall()
    recorder.writer.close()
    assert cudart.cudaMalloc.__name__ == "cudaMalloc" and not hasattr(cudart.cudaMalloc, "__wrapped__")
    events = read_trace(tmp_path / "t.jsonl").events
    kinds = [e["ev"] for e in events]
    assert kinds == ["alloc"] * 3 + ["memcpy"] + ["launch"] * 4 + ["memcpy", "free", "free", "sync"]
    launches = [e for e in events if e["ev"] == "launch"]
    assert [e["kernel"] for e in launches] == ["scale"] * 4
    assert launches[0]["reads"] == [2] and launches[3]["reads"] == [1]  # an address inside `early`
    assert events[3]["kind"] == "h2d" and events[8]["kind"] == "d2h"
    found = {(f.code, f.properties.get("object_id")) for f in analyze(tmp_path / "t.jsonl", Settings(min_bytes=0), sorted(RULES)).findings}
    assert ("GL001", 1) in found and ("GL004", 3) in found and ("GL005", 3) in found  # `unused` also leaks


def test_only_the_users_own_calls_are_recorded(tmp_path: Path) -> None:
    """A framework calling cuda-python (Numba does) is not recorded twice."""
    cudart = fake_runtime()
    recorder = Recorder(TraceWriter(tmp_path / "t.jsonl", collector="python"))
    cuda_python_collector.install(recorder, cudart)
    library = {}
    exec(compile("def allocate(rt):\n    return rt.cudaMalloc(64)\n", "/usr/lib/python3/site-packages/fw.py", "exec"),
         library)
    library["allocate"](cudart)
    cudart.cudaMalloc(64)
    recorder.writer.close()
    assert [e["ev"] for e in read_trace(tmp_path / "t.jsonl").events] == ["alloc"]


def test_session_attaches_when_the_program_imports_a_framework(tmp_path: Path, monkeypatch) -> None:
    import sys

    calls = []
    module = types.ModuleType("fakegpu")
    monkeypatch.setitem(sys.modules, "gpulint_fake_collector",
                        types.SimpleNamespace(install=lambda recorder, m: calls.append(m.__name__)))
    (tmp_path / "fakegpu.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(session, "FRAMEWORKS", (("fakegpu", "gpulint_fake_collector"),))
    with session(str(tmp_path / "t.jsonl")):
        assert calls == []
        import fakegpu  # noqa: F401
        assert calls == ["fakegpu"]
    sys.modules.pop("fakegpu", None)
    del module


def test_a_stack_shallower_than_the_skip_gives_the_last_site(tmp_path) -> None:
    """Autograd's engine thread calls the dispatch mode with no Python frames below it: asking for
    frames beyond the stack must give the last known site, not raise (it did, on CUDA backward)."""
    from gpulint.dynamic.collectors.recorder import Recorder, user_code_stack, user_stack
    from gpulint.dynamic.trace import TraceWriter

    with TraceWriter(tmp_path / "t.jsonl", collector="python") as writer:
        recorder = Recorder(writer)
        first = recorder.site_json(skip=1)
        assert str(Path(__file__).name) in first
        assert recorder.site_json(skip=10_000) == first
        assert user_code_stack(10_000) == () and user_stack(10_000) == []


def test_packages_installed_outside_site_packages_are_not_the_users(tmp_path, monkeypatch) -> None:
    """`pip install --target DIR` plus PYTHONPATH (how wheels are carried to a machine): files
    there are a library's, not the user's, or every finding lands inside the library."""
    from gpulint.dynamic.collectors import recorder

    installed, project = tmp_path / "wheels", tmp_path / "src"
    (installed / "numba_cuda").mkdir(parents=True)
    (installed / "numba_cuda-0.30.4.dist-info").mkdir()
    (project / "mymodel").mkdir(parents=True)
    (project / "mymodel.egg-info").mkdir()  # an editable install's: still the user's project
    monkeypatch.setattr(sys, "path", [str(installed), str(project), *sys.path])
    assert not recorder.is_user_file(str(installed / "numba_cuda" / "dispatcher.py"))
    assert recorder.is_user_file(str(project / "mymodel" / "train.py"))
