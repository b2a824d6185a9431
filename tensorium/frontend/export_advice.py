"""torch.export failures turned into advice: one Tensorium error per known cause, naming it and the fix.

torch.export reports its failures in its own terms (a pytree registration hint, "Constraints violated",
a meta kernel's shape check under twenty lines of fake-tensor logs). :func:`translate_export_error`
recognizes the known causes and raises one :class:`TorchExportError` subclass each, with the user's
source line where the traceback has one; :func:`check_input_dtypes` and :func:`check_inference_graph`
catch two causes torch.export itself lets through (a float64 input to a float32 model, a module left in
training mode).
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback
from typing import Any

from ..errors import TensoriumError

__all__ = [
    "DataDependentExportError",
    "InputDtypeError",
    "InputShapeError",
    "SpecializedDimError",
    "TorchExportError",
    "TrainingModeError",
    "UnregisteredPytreeError",
    "check_inference_graph",
    "check_input_dtypes",
    "translate_export_error",
    "user_frame",
]


class TorchExportError(TensoriumError):
    """torch.export could not capture the model (for a reason other than data-dependent control flow)."""


class DataDependentExportError(TensoriumError):
    """torch.export failed because Python control flow depends on tensor values (``if x.sum() > 0:``).

    Such models still compile through the TorchDynamo backend, which splits them at graph breaks.
    """


class UnregisteredPytreeError(TorchExportError):
    """An input or output holds tensors in a Python class torch's pytree does not know."""


class SpecializedDimError(TorchExportError):
    """A dim marked dynamic was specialized to a constant by the model's code."""


class TrainingModeError(TorchExportError):
    """The module is in training mode (dropout active, batch norm updating its statistics)."""


class InputDtypeError(TorchExportError):
    """A floating-point input's dtype differs from the model's parameters."""


class InputShapeError(TorchExportError):
    """An input's shape does not fit the model (an op's shape check failed while tracing)."""


_TORCH_DIR = os.path.dirname(os.path.abspath(str(__import__("torch").__file__)))
_STDLIB_DIR = sysconfig.get_paths()["stdlib"]
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_UNKNOWN_TYPE = re.compile(r"Found <class '([^']+)'> in (input|output), which is not a known type")
_SPECIALIZED = re.compile(r"You marked (\w+) as dynamic but your code specialized it to be a constant \((\d+)\)")
_SHAPE_HINTS = re.compile(
    r"shapes cannot be multiplied|must have same reduction dim|size of tensor a \(\d+\) must match|"
    r"shape '\[.*\]' is invalid for input of size|Expected .* to have \d+ channels|"
    r"expected input with shape|Expected size for first two dimensions|must match the size",
)
_DATA_DEPENDENT = re.compile(r"data[- ]dependent", re.IGNORECASE)
_TRAINING_OPS = {"aten.dropout.default", "aten.native_dropout.default", "aten.feature_dropout.default"}


def user_frame(error: BaseException) -> str | None:
    """``file:line in function: code`` of the innermost traceback frame outside torch, Python and Tensorium."""
    frames = traceback.extract_tb(error.__traceback__)
    cause = error.__cause__ or error.__context__
    while cause is not None:
        frames += traceback.extract_tb(cause.__traceback__)
        cause = cause.__cause__ or cause.__context__
    outside = [f for f in frames if not f.filename.startswith((_TORCH_DIR, _OWN_DIR, _STDLIB_DIR + os.sep, "<"))]
    if not outside:
        return None
    f = outside[-1]
    return f"{f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}"


def _at(error: BaseException) -> str:
    line = user_frame(error)
    return f" (at {line})" if line else ""


def translate_export_error(error: Exception) -> TensoriumError:
    """The Tensorium error for a torch.export failure: a known cause with its fix, or TorchExportError."""
    import torch

    text = str(error)
    first_line = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    data_dependent = isinstance(error, torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode)
    if data_dependent or _DATA_DEPENDENT.search(text):
        return DataDependentExportError(
            "torch.export cannot capture Python control flow that depends on tensor values "
            f"({first_line}){_at(error)}; compile with torch.compile(model, backend='tensorium') instead"
        )
    if match := _UNKNOWN_TYPE.search(text):
        cls, where = match.groups()
        return UnregisteredPytreeError(
            f"the model's {where} holds a {cls}, a class torch.export cannot look inside{_at(error)}; "
            "register it with torch.utils._pytree.register_pytree_node(cls, flatten, unflatten) "
            "(HuggingFace cache classes are registered automatically) or pass plain tensors, tuples and dicts"
        )
    if match := _SPECIALIZED.search(text):
        name, value = match.groups()
        return SpecializedDimError(
            f"dim '{name}' is marked dynamic, but the model's code fixes it to {value}{_at(error)}; "
            f"drop '{name}' from dynamic= or remove the code that depends on its value"
        )
    if _SHAPE_HINTS.search(text):
        return InputShapeError(f"an input's shape does not fit the model: {first_line}{_at(error)}")
    return TorchExportError(f"torch.export failed: {type(error).__name__}: {first_line}{_at(error)}")


def check_input_dtypes(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """InputDtypeError when a floating-point input's dtype differs from the module's floating parameters."""
    import torch

    if not isinstance(module, torch.nn.Module):
        return
    param_dtypes = {p.dtype for p in module.parameters() if p.is_floating_point()}
    if len(param_dtypes) != 1:
        return
    (expected,) = param_dtypes
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.dtype != expected:
            have, want = str(leaf.dtype).removeprefix("torch."), str(expected).removeprefix("torch.")
            raise InputDtypeError(
                f"input {i} is {have} but the model's parameters are {want}; convert the input "
                f"(x.to(torch.{want}), or x.astype(np.{want}) for numpy) or the model (model.to(torch.{have}))"
            )


def check_inference_graph(module: Any, exported: Any) -> None:
    """TrainingModeError when a module in training mode exported dropout or batch-norm statistic updates."""
    import torch

    if not (isinstance(module, torch.nn.Module) and module.training):
        return
    mutations = [
        spec.target
        for spec in exported.graph_signature.output_specs
        if spec.kind == torch.export.graph_signature.OutputKind.BUFFER_MUTATION
    ]
    found = sorted(
        {
            f"{kind} at {line}" if (line := _node_line(node)) else f"{kind} (node '{node.name}')"
            for node in exported.graph.nodes
            if (kind := _training_op(node)) is not None
        }
    )
    found += [f"buffer '{t}' updated" for t in sorted(mutations)]
    if not found:
        return
    raise TrainingModeError(
        f"the model is in training mode ({'; '.join(found)}); Tensorium compiles inference: call model.eval() first"
    )


def _training_op(node: Any) -> str | None:
    """ "dropout" or "batch norm" for a node that behaves differently in training mode, else None."""
    if node.op != "call_function":
        return None
    if str(node.target) in _TRAINING_OPS:  # (input, p, train): dropout with train=False is the identity
        return "dropout" if len(node.args) < 3 or node.args[2] is not False else None
    if str(node.target) == "aten.batch_norm.default" and len(node.args) > 5 and node.args[5]:
        return "batch norm"
    return None


def _node_line(node: Any) -> str | None:
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', trace)
    frames = [f for f in frames if not f[0].startswith((_TORCH_DIR, _OWN_DIR))]
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None
