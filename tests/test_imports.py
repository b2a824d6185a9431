"""The direction of imports (docs/architecture.md): every module belongs to one layer, a layer imports only
from its own layer and the layers below it, the dialects do not import one another, and no modules import
each other in a cycle at module level.

Imports are read from the source with ``ast``: module-level ones (including those under
``if TYPE_CHECKING:``) and those inside functions (lazy imports obey the layers too, but do not count as
cycles, since they run after every module involved is loaded).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tensorium", "benchmarks")

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("tensorium.errors", "tensorium.gc_pause", "tensorium.paths", "tensorium.version")),
    (
        "ir",
        (
            "tensorium.ir.attributes",
            "tensorium.ir.builder",
            "tensorium.ir.core",
            "tensorium.ir.evaluate",
            "tensorium.ir.opdef",
            "tensorium.ir.parser",
            "tensorium.ir.printer",
            "tensorium.ir.rewrite",
            "tensorium.ir.semantics",
            "tensorium.ir.shapes",
            "tensorium.ir.storage",
            "tensorium.ir.types",
            "tensorium.ir.verifier",
            "tensorium.ir.dialects.builtin",
        ),
    ),
    ("dialects", ("tensorium.ir.dialects", "tensorium.ir.reference", "tensorium.ir")),
    ("targets", ("tensorium.targets",)),
    ("passes/lowering", ("tensorium.lowering", "tensorium.passes")),
    ("runtime contracts", ("tensorium.runtime.executable", "tensorium.runtime.memory")),
    ("backends", ("tensorium.backends",)),
    ("runtime", ("tensorium.runtime", "tensorium.autotune.records")),
    ("frontend", ("tensorium.frontend", "tensorium.interop")),
    ("api", ("tensorium.api", "tensorium.nn", "tensorium")),
    (
        "tools",
        (
            "tensorium.fuzz",
            "tensorium.bench",
            "tensorium.testing",
            "tensorium.autotune",
            "tensorium.frontend.pytorch_conformance",  # compiles each op through the API
        ),
    ),
    ("cli", ("tensorium.cli", "tensorium.__main__")),
    ("outside", ("benchmarks",)),
)
"""Layers from the bottom up; a module belongs to the layer of the longest prefix naming it (so
``tensorium.ir.dialects.builtin`` is in ``ir`` while the rest of ``tensorium.ir.dialects`` is in
``dialects``, and ``tensorium`` alone is the package root, the public API)."""

DIALECTS = "tensorium.ir.dialects"
SHARED_DIALECTS = ("builtin",)
"""Dialects every other dialect may import; the others share code only through the ir layer."""


@dataclass(frozen=True)
class Import:
    """``module`` imports ``target`` at ``line``; ``lazy`` when the import is inside a function."""

    module: str
    target: str
    line: int
    lazy: bool

    def __str__(self) -> str:
        where = f"{self.module.replace('.', '/')}.py:{self.line}"
        return f"{where}: {self.module} imports {self.target}{' (inside a function)' if self.lazy else ''}"


def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the packages by dotted name, with its file and whether it is a package."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _known(name: str, known: dict[str, tuple[Path, bool]]) -> str | None:
    """The module that importing ``name`` names: itself, or its nearest enclosing module (for names that are
    attributes of a module); None outside the packages."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _walk(
    node: ast.AST, module: str, is_package: bool, known: dict[str, tuple[Path, bool]], lazy: bool
) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.Import):
            names = [alias.name for alias in child.names]
        elif isinstance(child, ast.ImportFrom):
            base = _absolute(child, module, is_package)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in child.names]
        else:
            yield from _walk(child, module, is_package, known, inner)
            continue
        for name in names:
            target = _known(name, known)
            if target is not None and target != module:
                yield Import(module, target, child.lineno, lazy)


def imports(known: dict[str, tuple[Path, bool]]) -> Iterator[Import]:
    """Every import of one package module by another."""
    for module, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        yield from _walk(tree, module, is_package, known, False)


def layer(module: str) -> int | None:
    """The index in LAYERS of ``module``'s layer (longest matching prefix), or None when no layer names it."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


def _dialect(module: str) -> str | None:
    parts = module.split(".")
    if module.startswith(DIALECTS + ".") and len(parts) > 3 and parts[3] not in SHARED_DIALECTS:
        return parts[3]
    return None


KNOWN = modules()
IMPORTS = list(imports(KNOWN))


def test_every_module_has_a_layer() -> None:
    assert [m for m in KNOWN if layer(m) is None] == []


def test_no_layer_imports_a_higher_one() -> None:
    offending = [
        f"{i}  [{LAYERS[layer(i.module) or 0][0]} -> {LAYERS[layer(i.target) or 0][0]}]"
        for i in IMPORTS
        if (layer(i.target) or 0) > (layer(i.module) or 0)
    ]
    assert offending == [], "imports against the direction of the layers:\n" + "\n".join(offending)


def test_dialects_do_not_import_each_other() -> None:
    offending = [str(i) for i in IMPORTS if _dialect(i.module) and _dialect(i.target) not in (None, _dialect(i.module))]
    assert offending == [], "dialects importing other dialects:\n" + "\n".join(offending)


def test_no_module_level_import_cycles() -> None:
    graph = nx.DiGraph()
    graph.add_edges_from((i.module, i.target) for i in IMPORTS if not i.lazy)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], "modules importing each other at module level: " + "; ".join(map(" <-> ".join, cycles))


def test_the_checker_sees_imports() -> None:
    """The checks above would pass vacuously if the parser found nothing: spot-check what it finds."""
    found = {(i.module, i.target, i.lazy) for i in IMPORTS}
    assert ("tensorium.api", "tensorium.runtime.artifact", False) in found
    assert ("tensorium.cli.app", "tensorium.cli.bench", False) in found
    assert any(i.lazy for i in IMPORTS)
    assert layer("tensorium.ir.dialects.builtin") == 1 and layer("tensorium.ir.dialects.graph.nn") == 2
    assert layer("tensorium") == layer("tensorium.api")
    runtime = [layer(m) for m in ("tensorium.runtime.memory", "tensorium.backends.cpu", "tensorium.runtime.artifact")]
    assert runtime == sorted(set(runtime)), "the runtime's contracts below the backends, its artifacts above"
