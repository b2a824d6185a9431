"""The demo site of a WebGPU artifact: the artifact folder plus a page and the JavaScript runtime.

``tensorium compile MODEL -t webgpu -o site/`` writes the artifact (``metadata.json``, ``constants/*.npy``,
``webgpu/plan.json``, ``webgpu/weights.bin``, ``webgpu/kernels/*.wgsl``), then :func:`write_site` adds
``index.html`` and ``tensorium-webgpu.js`` (from :data:`JS_FOLDER`, shipped as package data), so any static
HTTP server on localhost or HTTPS serves a page that runs the model on ``navigator.gpu`` on inputs from
``.npy`` files or random ones, and shows the outputs and the time per run.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...errors import TensoriumError
from ...ir.core import Operation
from ...lowering.space import Config, tunable_kernels
from .emitter import Shader
from .executable import WebGPUExecutable

__all__ = [
    "JS_FOLDER",
    "RUNTIME_FILE",
    "SITE_FILES",
    "VARIANTS_FILE",
    "tuning_variants",
    "write_site",
    "write_variants",
]

JS_FOLDER = Path(__file__).with_name("js")
"""The JavaScript runtime, the demo page and the Node scripts that run them (``package.json`` there)."""
RUNTIME_FILE = "tensorium-webgpu.js"
SITE_FILES = ("index.html", RUNTIME_FILE)
"""What :func:`write_site` copies from :data:`JS_FOLDER` into an artifact folder."""
VARIANTS_FILE = "variants.json"


def write_site(
    folder: str | os.PathLike[str], built: tuple[Operation, Mapping[str, Config]] | None = None, variants: int = 8
) -> Path:
    """Add the demo page and the runtime to the WebGPU artifact at ``folder``; with ``built``, the module its
    executable was built from and the configs given, also up to ``variants`` shaders per tunable kernel for
    the page's tuning (:func:`write_variants`). Returns the page's path."""
    root = Path(folder)
    if not (root / "webgpu" / "plan.json").is_file():
        raise TensoriumError(f"{root}: not an artifact compiled with -t webgpu (no webgpu/plan.json)")
    for name in SITE_FILES:
        shutil.copyfile(JS_FOLDER / name, root / name)
    if built is not None and variants > 1:
        executable = WebGPUExecutable.from_files(root / "webgpu")
        write_variants(tuning_variants(*built, executable, variants), root / "webgpu")
    return root / "index.html"


def tuning_variants(
    module: Operation, configs: Mapping[str, Config], executable: WebGPUExecutable, count: int
) -> dict[str, list[Shader]]:
    """Other shaders of ``executable``'s tunable kernels (built from ``module`` with ``configs``), by kernel
    name: build ``n`` (of ``count``) takes the ``n``-th of each kernel's legal points, spread over its space
    (which the Target's limits already pruned); shaders whose WGSL differs from every one kept are kept."""
    target = executable.target
    spaces = {k.key: list(k.space.points()) for k in tunable_kernels(module, target)}
    found: dict[str, list[Shader]] = {}
    seen = {name: {shader.wgsl} for name, shader in executable.shaders.items()}
    for n in range(count):
        chosen = {key: points[n * len(points) // count] for key, points in spaces.items() if points}
        variant = WebGPUExecutable.build(module, target=target, configs={**configs, **chosen})
        for name, shader in variant.shaders.items():
            if name in seen and shader.wgsl not in seen[name] and shader.pieces is None:
                seen[name].add(shader.wgsl)
                found.setdefault(name, []).append(shader)
    return found


def write_variants(found: Mapping[str, Sequence[Shader]], folder: Path) -> None:
    """Write shaders ``found`` by kernel name as ``variants.json`` (their launch data) and ``variants/*.wgsl``
    beside an executable's ``plan.json``, which stays as it is."""
    (folder / "variants").mkdir(exist_ok=True)
    index: dict[str, list[dict[str, object]]] = {}
    for name, shaders in found.items():
        for n, shader in enumerate(shaders):
            file = f"variants/{name}.{n}.wgsl"
            (folder / file).write_text(shader.wgsl, encoding="utf-8")
            index.setdefault(name, []).append({"file": file, **shader.to_json()})
    (folder / VARIANTS_FILE).write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
