"""The CUDA backend's tests.

pytest imports this folder as the top-level package ``cuda`` (``--import-mode=importlib``, no ``tests/__init__``),
which would hide NVIDIA's ``cuda`` namespace package (cuda-bindings); extending the path keeps
``cuda.bindings`` importable in the same session.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
