"""gpulint: find GPU memory waste in CUDA C/C++ and Python GPU code."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `with gpulint.trace("out.trace.jsonl"): ...`, imported only by those who trace.
    if name == "trace":
        from gpulint.dynamic.collectors.recorder import session

        return session
    raise AttributeError(f"module 'gpulint' has no attribute {name!r}")
