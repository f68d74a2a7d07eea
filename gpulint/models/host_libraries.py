"""Libraries that compute on the host only, as far as GPU memory cares: their functions launch no
GPU work and what they give lives on the host (a NumPy array, a PIL image, a path, a parsed
file), and so does whatever a method of such a value gives.  Matched by the module prefix the
imports resolve a call to (`np.load` -> `numpy.load`, `Image.open` -> `PIL.Image.open`)."""
from __future__ import annotations

HOST_MODULES = ("numpy.", "PIL.", "os.", "sys.", "math.", "time.", "datetime.", "json.", "re.", "csv.", "pickle.",
                "pathlib.", "glob.", "shutil.", "string.", "struct.", "hashlib.", "argparse.", "subprocess.", "io.",
                "gzip.", "zipfile.", "tarfile.", "pandas.", "h5py.", "yaml.", "imageio.", "matplotlib.", "scipy.",
                "sklearn.", "logging.", "warnings.", "platform.", "socket.", "urllib.")
