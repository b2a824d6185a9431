"""The compile cache: compiled artifacts kept in memory and on disk, keyed by what determines them.

The key is the sha256 of the imported graph's printed IR, its input/output names and output tree,
the target, the pass pipeline and the Tensorium build (:func:`tensorium.version.build_id`: the version
and a digest of the package's files), so a changed compiler never reuses an old entry. Disk entries
are artifact folders (:mod:`tensorium.runtime.artifact`) under ``$TENSORIUM_CACHE_DIR``, else
``$XDG_CACHE_HOME/tensorium``, else ``~/.cache/tensorium``; they are written atomically, and a corrupt
entry (or a ``cpu`` entry whose object code was built for a CPU with features this host lacks) is
dropped with a warning and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..paths import cache_dir
from ..version import build_id
from .artifact import Artifact, ArtifactError, read_artifact, write_artifact

__all__ = ["MEMORY_ENTRIES", "cache_dir", "cache_key", "clear_memory", "lookup", "store"]

MEMORY_ENTRIES = 256
"""How many artifacts the in-memory cache keeps (least recently used ones are dropped first)."""

_MEMORY: OrderedDict[str, Artifact] = OrderedDict()


def cache_key(
    ir_text: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    output_tree: Any,
    target: str,
    pipeline: str,
) -> str:
    """The hex sha256 naming a compiled artifact."""
    header = json.dumps(
        {
            "version": build_id(),
            "target": target,
            "pipeline": pipeline,
            "inputs": list(input_names),
            "outputs": list(output_names),
            "tree": output_tree,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256((header + "\n" + ir_text).encode("utf-8")).hexdigest()


def clear_memory() -> None:
    """Forget every in-memory entry (the disk cache stays)."""
    _MEMORY.clear()


def lookup(key: str, disk: bool = True) -> tuple[Artifact | None, str | None]:
    """The cached artifact for ``key`` and where it came from ("memory" or "disk"), or (None, None)."""
    found = _MEMORY.get(key)
    if found is not None:
        _MEMORY.move_to_end(key)
        return found, "memory"
    if not disk:
        return None, None
    entry = cache_dir() / key
    if not entry.exists():
        return None, None
    try:
        artifact = read_artifact(entry)
    except ArtifactError as e:
        warnings.warn(f"tensorium: ignoring corrupt cache entry {entry} and rebuilding it ({e})", stacklevel=3)
        shutil.rmtree(entry, ignore_errors=True)
        return None, None
    _remember(key, artifact)
    return artifact, "disk"


def store(key: str, artifact: Artifact, disk: bool = True) -> None:
    """Keep ``artifact`` in memory and, with ``disk``, write it under the cache folder (failures only warn)."""
    _remember(key, artifact)
    if not disk:
        return
    try:
        write_artifact(artifact, cache_dir() / key)
    except (OSError, ArtifactError) as e:
        warnings.warn(f"tensorium: could not write the compile cache entry {cache_dir() / key} ({e})", stacklevel=3)


def _remember(key: str, artifact: Artifact) -> None:
    _MEMORY[key] = artifact
    _MEMORY.move_to_end(key)
    while len(_MEMORY) > MEMORY_ENTRIES:
        _MEMORY.popitem(last=False)
