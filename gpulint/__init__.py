"""gpulint: find GPU memory waste in CUDA C/C++ and Python GPU code."""

__version__ = "0.1.0"
