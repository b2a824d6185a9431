"""An ONNX backend (``onnx.backend.base.Backend``) that imports models and runs them in the interpreter.

``onnx.backend.test.BackendTest(TensoriumBackend, __name__)`` runs ONNX's conformance cases with it.
``python -m tensorium.frontend.onnx_backend --report`` prints the pass rate over every node case.
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from ..backends import interp
from ..ir.types import TensorType
from .common import ImportedGraph, UnsupportedOpsError
from .onnx_context import to_storage
from .onnx_import import OnnxError, OnnxUnsupportedError, import_onnx

__all__ = ["TensoriumBackend", "TensoriumRep", "main", "run_node_case"]


class TensoriumRep(BackendRep):
    """A prepared model: imported once, or once per value of the inputs it must know (``frozen``).

    Node inputs that must be constants (a Reshape shape, Slice starts) may be graph inputs; the rep
    then imports the model again for each new value of those inputs, as compile() specializes.
    """

    def __init__(self, model: onnx.ModelProto, imported: ImportedGraph | None, frozen: Sequence[str] = ()):
        initializers = {i.name for i in model.graph.initializer}
        self.model = model
        self.input_names = [i.name for i in model.graph.input if i.name not in initializers]
        self.frozen = list(frozen)
        self.output_dtypes = [
            onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type) for o in model.graph.output
        ]
        self._cache: dict[tuple[bytes, ...], ImportedGraph] = {}
        if imported is not None:
            self._cache[()] = imported

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run on inputs given as a list in graph-input order, a mapping by name, or one array."""
        if isinstance(inputs, Mapping):
            by_name = dict(inputs)
        else:
            arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            by_name = dict(zip(self.input_names, arrays))
        empty = [name for name in self.input_names if name in by_name and by_name[name] is None]
        if empty:
            raise OnnxError(f"graph input '{empty[0]}' is an empty optional, which is not supported")
        imported = self._specialized(by_name)
        args = []
        for name, arg in zip(imported.input_names, _main_args(imported)):
            t = arg.type
            args.append(to_storage(by_name[name], t.element) if isinstance(t, TensorType) else by_name[name])
        outs = interp.run(imported.module, args)
        return tuple(np.asarray(o).astype(d, copy=False) for o, d in zip(outs, self.output_dtypes))

    def _specialized(self, by_name: dict[str, Any]) -> ImportedGraph:
        while True:
            frozen = {name: np.asarray(by_name[name]) for name in self.frozen}
            key = tuple(a.dtype.str.encode() + repr(a.shape).encode() + a.tobytes() for a in frozen.values())
            found = self._cache.get(key)
            if found is not None:
                return found
            try:
                found = self._cache[key] = import_onnx(self.model, constant_inputs=frozen)
                return found
            except OnnxUnsupportedError as e:
                more = [name for name in e.constant_inputs if name not in self.frozen]
                if not more:
                    raise
                self.frozen += more


def _main_args(imported: ImportedGraph) -> list[Any]:
    from ..ir.dialects.builtin import func_body, lookup_func

    main = lookup_func(imported.module, "main")
    assert main is not None
    return list(func_body(main).args)


class TensoriumBackend(Backend):
    """Runs ONNX models on CPU through the ONNX importer and the reference interpreter."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> TensoriumRep:
        """Import ``model``; the returned rep runs it (importing again per value of inputs that must be known)."""
        try:
            return TensoriumRep(model, import_onnx(model))
        except OnnxUnsupportedError as e:
            if not e.constant_inputs:
                raise
            return TensoriumRep(model, None, e.constant_inputs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        """Import and run ``model`` once."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Only the CPU is supported."""
        return device == "CPU"


def run_node_case(case: Any) -> None:
    """Run one ONNX node test case (from onnx.backend.test.loader) and raise when it fails."""
    from onnx.backend.test.runner import Runner

    rep = TensoriumBackend.prepare(case.model)
    for inputs, expected in case.data_sets:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outputs = rep.run([_array(t) for t in inputs])
        Runner.assert_similar_outputs([_array(t) for t in expected], outputs, rtol=case.rtol, atol=case.atol)


def _array(item: Any) -> Any:
    return onnx.numpy_helper.to_array(item) if isinstance(item, onnx.TensorProto) else item


def _case_op(case: Any) -> str:
    types = [n.op_type for n in case.model.graph.node]
    return types[0] if len(set(types)) == 1 else f"{types[-1]} (expanded)"


def report(verbose: bool = False) -> tuple[int, int, dict[str, int]]:
    """Run every node case; returns (passed, total, failures by op type); ``verbose`` prints each failure."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    failures: collections.Counter[str] = collections.Counter()
    passed = 0
    for case in cases:
        try:
            run_node_case(case)
            passed += 1
        except UnsupportedOpsError as e:
            for kind in sorted({item.op for item in e.items}):
                failures[kind] += 1
            if verbose:
                print(f"{case.name}_cpu: {e.items[0]}")
        except Exception as e:  # any failure counts against the case's op type
            failures[_case_op(case)] += 1
            if verbose:
                first = str(e).strip().splitlines()
                print(f"{case.name}_cpu: {type(e).__name__}: {' '.join(first[:3])[:300]}")
    return passed, len(cases), dict(failures)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--report`` prints the node-case pass rate and failures per op type."""
    parser = argparse.ArgumentParser(prog="python -m tensorium.frontend.onnx_backend")
    parser.add_argument("--report", action="store_true", help="run every ONNX node test case and print the pass rate")
    parser.add_argument("--verbose", action="store_true", help="print every failing case and why")
    args = parser.parse_args(argv)
    if not args.report:
        parser.print_help()
        return 0
    passed, total, failures = report(args.verbose)
    print(f"ONNX node cases: {passed} / {total} passed ({100.0 * passed / total:.1f}%)")
    print("failures by op type:")
    for op, count in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {op}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
