"""The demo site of a WebGPU artifact: the artifact folder plus a page and the JavaScript runtime.

``tensorium compile MODEL -t webgpu -o site/`` writes the artifact (``metadata.json``, ``constants/*.npy``,
``webgpu/plan.json``, ``webgpu/weights.bin``, ``webgpu/kernels/*.wgsl``), then :func:`write_site` adds
``index.html`` and ``tensorium-webgpu.js`` (from :data:`JS_FOLDER`, shipped as package data), so any static
HTTP server on localhost or HTTPS serves a page that runs the model on ``navigator.gpu`` on inputs from
``.npy`` files or random ones, and shows the outputs and the time per run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ...errors import TensoriumError

__all__ = ["JS_FOLDER", "RUNTIME_FILE", "SITE_FILES", "write_site"]

JS_FOLDER = Path(__file__).with_name("js")
"""The JavaScript runtime, the demo page and the Node scripts that run them (``package.json`` there)."""
RUNTIME_FILE = "tensorium-webgpu.js"
SITE_FILES = ("index.html", RUNTIME_FILE)
"""What :func:`write_site` copies from :data:`JS_FOLDER` into an artifact folder."""


def write_site(folder: str | os.PathLike[str]) -> Path:
    """Add the demo page and the runtime to the WebGPU artifact at ``folder``; returns the page's path."""
    root = Path(folder)
    if not (root / "webgpu" / "plan.json").is_file():
        raise TensoriumError(f"{root}: not an artifact compiled with -t webgpu (no webgpu/plan.json)")
    for name in SITE_FILES:
        shutil.copyfile(JS_FOLDER / name, root / name)
    return root / "index.html"
