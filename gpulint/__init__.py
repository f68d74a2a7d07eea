"""gpulint: find GPU memory waste in CUDA C/C++ and Python GPU code."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `with gpulint.trace("out.trace.jsonl"): ...` without importing torch for every gpulint user.
    if name == "trace":
        from gpulint.dynamic.collectors.torch_collector import trace

        return trace
    raise AttributeError(f"module 'gpulint' has no attribute {name!r}")
