"""Interop with upstream MLIR: export of the graph dialect to ``func``/``linalg``/``tensor``/``arith``/``math``
text that MLIR's own Python bindings parse and verify, import of that subset back into the graph dialect,
and IREE (an MLIR compiler) as a second reference (docs/mlir_interop.md)."""
