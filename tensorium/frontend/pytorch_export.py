"""torch.export run the way real models need it.

:func:`export` registers the pytree types of libraries the model uses (HuggingFace's cache classes), checks
input dtypes, keeps torch's own logging off the terminal and turns failures into the advice of
:mod:`.export_advice`; :func:`widen_size_one` lets dims marked dynamic have size 0 or 1 in the example inputs
(torch would otherwise specialize them). :func:`decompose` runs the ATen decompositions around a torch bug
that loses lifted
constants of submodules.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .export_advice import TorchExportError, check_inference_graph, check_input_dtypes, translate_export_error

__all__ = ["decompose", "export", "quiet_torch", "register_known_pytrees", "widen_size_one"]


def _register_transformers_caches() -> None:
    from transformers.integrations.executorch import register_dynamic_cache_export_support

    register_dynamic_cache_export_support()
    try:
        from transformers.cache_utils import Cache
        from transformers.exporters.exporter_dynamo import register_pytree_node
    except ImportError:  # older transformers: DynamicCache is the one cache class export supports
        return
    pending = list(Cache.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        if cls not in torch.utils._pytree.SUPPORTED_NODES:
            register_pytree_node(cls)


# Library (top-level module name) -> how to register its container types as pytrees. A library is only
# consulted when the user's program has imported it.
_PYTREE_PROVIDERS: dict[str, Callable[[], None]] = {"transformers": _register_transformers_caches}
_registered: set[str] = set()


def register_known_pytrees() -> None:
    """Register the pytree types of every known library the program has imported (once each)."""
    for library, register in _PYTREE_PROVIDERS.items():
        if library in sys.modules and library not in _registered:
            _registered.add(library)
            with contextlib.suppress(ImportError):
                register()


@contextlib.contextmanager
def quiet_torch() -> Iterator[None]:
    """Keep torch's logs and warnings (fake-tensor tracebacks, deprecation notes) off the terminal."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"torch\..*")
            warnings.filterwarnings("ignore", message=r".*LeafSpec.* is deprecated", category=FutureWarning)
            yield
    finally:
        logger.setLevel(level)


def export(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dynamic_shapes: Any) -> Any:
    """``torch.export.export(strict=False)`` with known pytrees, quiet logs and failures as advice."""
    register_known_pytrees()
    check_input_dtypes(module, args, kwargs)
    try:
        try:
            with quiet_torch():
                exported = torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
        except torch._dynamo.exc.UserError as e:
            bounded = _with_suggested_bounds(dynamic_shapes, str(e))
            if bounded is None:
                raise
            with quiet_torch():
                exported = torch.export.export(module, args, kwargs, dynamic_shapes=bounded, strict=False)
    except Exception as e:
        raise translate_export_error(e) from e
    check_inference_graph(module, exported)
    return exported


_SUGGESTED = re.compile(r"^\s*(\w+) = Dim\('(\w+)'((?:, (?:min|max)=\d+)*)\)$", re.MULTILINE)


def _with_suggested_bounds(dynamic_shapes: Any, message: str) -> Any:
    """``dynamic_shapes`` with the min/max bounds torch suggests for its dims (``seq = Dim('seq', max=512)``
    when a model's position table holds 512 rows); None when torch suggests nothing of that form."""
    bounds = {
        name: {k: int(v) for k, v in re.findall(r"(min|max)=(\d+)", extra)}
        for name, same, extra in _SUGGESTED.findall(message)
        if name == same and extra
    }
    if not bounds:
        return None
    made: dict[str, Any] = {}

    def rebound(dim: Any) -> Any:
        name = getattr(dim, "__name__", None)
        if not isinstance(dim, torch.export.Dim) or not isinstance(name, str) or name not in bounds:
            return dim
        return made.setdefault(name, torch.export.Dim(name, **bounds[name]))

    return torch.utils._pytree.tree_map(rebound, dynamic_shapes, is_leaf=lambda x: isinstance(x, torch.export.Dim))


def widen_size_one(
    args: tuple[Any, ...], kwargs: dict[str, Any], specs: list[tuple[str, Any, Any]] | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The example inputs with every dim marked dynamic at size 0 or 1 grown to 2 (rows repeated, or zeros).

    torch.export specializes sizes 0 and 1 to constants, so a first call with batch 1 would fail with
    "Constraints violated"; the graph captured at size 2 is the general one.
    """
    if specs is None:
        return args, kwargs
    new_args, new_kwargs = list(args), dict(kwargs)
    for i, (name, value, spec) in enumerate(specs):
        if not isinstance(value, torch.Tensor) or not spec:
            continue
        axes = spec.keys() if isinstance(spec, dict) else [a for a, d in enumerate(spec) if d is not None]
        for axis in axes:
            if value.shape[axis] < 2:
                value = _grow(value, axis)
        if i < len(args):
            new_args[i] = value
        else:
            new_kwargs[name] = value
    return tuple(new_args), new_kwargs


def _grow(x: Any, axis: int) -> Any:
    if x.shape[axis] == 0:
        shape = list(x.shape)
        shape[axis] = 2
        return torch.zeros(shape, dtype=x.dtype)
    return torch.cat([x, x], dim=axis)


def decompose(exported: Any, table: dict[Any, Any]) -> Any:
    """``exported.run_decompositions(table)``, quiet.

    torch 2.13 re-lifts the tensor constants of submodules (``h.0.attn.lifted_tensor_0``, an empty cache
    buffer of HuggingFace models) under their unqualified names and then cannot find them; the constants
    are offered under both names.
    """
    for name in list(exported.constants):
        short = name.rsplit(".", 1)[-1]
        if short != name and short not in exported.constants:
            exported.constants[short] = exported.constants[name]
    try:
        with quiet_torch():
            return exported.run_decompositions(table)
    except Exception as e:
        raise TorchExportError(f"decomposing the exported graph failed: {type(e).__name__}: {e}") from e
