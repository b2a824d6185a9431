"""Running the JavaScript runtime from tests: under Node on Dawn, and in headless Debian chromium.

Both skip, saying why, where Node, the npm packages (``npm ci`` in tensorium/backends/webgpu/js, as .ci/run
does) or a WebGPU driver are missing. Dawn under Node refuses Mesa's lavapipe (it lacks a Vulkan feature
Dawn requires), so it runs on the SwiftShader Vulkan driver that Debian's chromium ships.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from tensorium.backends.webgpu.site import JS_FOLDER

CHROMIUM = Path(os.environ.get("TENSORIUM_CHROMIUM", "/usr/bin/chromium"))
SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
"""SwiftShader's Vulkan driver as Debian's chromium package installs it."""
TIMEOUT = 120


@functools.cache
def _missing(package: str) -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (apt-get install nodejs npm)"
    if not (JS_FOLDER / "node_modules" / package / "package.json").is_file():
        return f"the npm package {package} is not installed (npm ci in {JS_FOLDER})"
    return None


def require_dawn() -> None:
    """Skip unless Node, the npm ``webgpu`` package (Dawn) and a Vulkan driver Dawn accepts are here."""
    reason = _missing("webgpu")
    if reason is None and not SWIFTSHADER_ICD.is_file():
        reason = f"Dawn needs SwiftShader's Vulkan driver ({SWIFTSHADER_ICD}, apt-get install chromium)"
    if reason is not None:
        pytest.skip(reason)


def require_chromium() -> None:
    """Skip unless Node, the npm ``playwright-core`` package and Debian's chromium are here."""
    reason = _missing("playwright-core")
    if reason is None and not CHROMIUM.is_file():
        reason = f"chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    if reason is not None:
        pytest.skip(reason)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    if SWIFTSHADER_ICD.is_file():
        env["VK_ICD_FILENAMES"] = str(SWIFTSHADER_ICD)
    return env


def _node(script: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(JS_FOLDER / script), *args],
        cwd=JS_FOLDER,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _save_inputs(inputs: list[np.ndarray], folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for n, array in enumerate(inputs):
        np.save(folder / f"in{n}.npy", np.ascontiguousarray(array))
        files.append(str(folder / f"in{n}.npy"))
    return files


def _outputs(folder: Path) -> list[np.ndarray]:
    return [np.load(folder / f"out{n}.npy") for n in range(len(list(folder.glob("out*.npy"))))]


def run_node(
    folder: Path, inputs: list[np.ndarray], scratch: Path, tune_ms: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the artifact or executable ``folder`` under Node on ``inputs`` (after tuning its kernels within
    ``tune_ms``); its outputs go to ``scratch/out``."""
    tune = ["--tune", str(tune_ms)] if tune_ms is not None else []
    return _node("run-node.mjs", [*tune, str(folder), str(scratch / "out"), *_save_inputs(inputs, scratch / "in")])


def node_outputs(folder: Path, inputs: list[np.ndarray], scratch: Path) -> list[np.ndarray]:
    """The outputs of ``folder`` on ``inputs`` under Node/Dawn (an assertion error with Node's message)."""
    done = run_node(folder, inputs, scratch)
    assert done.returncode == 0, done.stderr
    return _outputs(scratch / "out")


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on localhost (a secure context, as WebGPU needs); yields its base URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def chromium_outputs(
    site: Path, inputs: list[np.ndarray], scratch: Path, screenshot: Path | None = None, tune_s: int | None = None
) -> tuple[list[np.ndarray], str]:
    """The outputs of the demo ``site`` on ``inputs`` in headless chromium (after the page's tuning within
    ``tune_s`` seconds) and what the script printed; a screenshot of the page after a run on random inputs
    where ``screenshot`` names a file."""
    extra = ["--screenshot", str(screenshot)] if screenshot is not None else []
    extra += ["--tune", str(tune_s)] if tune_s is not None else []
    with serve(site) as url:
        args = [f"{url}index.html", str(scratch / "out"), *extra, *_save_inputs(inputs, scratch / "in")]
        done = _node("run-chromium.mjs", args)
    assert done.returncode == 0, done.stderr
    return _outputs(scratch / "out"), done.stdout
