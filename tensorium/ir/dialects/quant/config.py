"""QuantConfig: what post-training quantization (the ``quantize`` pass) does to a model's weights, and its short
spelling ``w4g128``; ``tensorium.compile(model, quantize=...)`` takes either."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....errors import PassError

METHODS = ("rtn", "gptq", "awq")
"""Weight quantization methods implemented: round to nearest (per channel or per group), and GPTQ and AWQ
(from calibration inputs)."""
CALIBRATED_METHODS = ("gptq", "awq")
PLANNED_METHODS: tuple[str, ...] = ()
"""Methods the API names but that are not implemented yet (an error says so)."""


@dataclass(frozen=True)
class QuantConfig:
    """Weight-only post-training quantization of constant matmul weights (and optionally embeddings).

    ``bits`` per weight (1..8); ``group`` weights along the contraction share a scale (0: one scale per
    output channel); ``method`` how codes are chosen (``"rtn"``, or ``"gptq"`` and ``"awq"``, which need
    ``calibration``: a list of input batches of the model, each a tuple of arrays like one call's arguments,
    kept in a registry under a content key that the pass text names); ``signed``: symmetric signed codes without
    zero points (default: unsigned codes with a float zero point per group, which suits skewed weights);
    weights of fewer than ``min_elements`` elements stay in float; ``embeddings`` quantizes constant
    embedding tables too. ``bits_by_sensitivity`` (a width above ``bits``; 0: off) gives that width to the
    matmul weights whose outputs suffer most at ``bits`` (measured on the calibration inputs, or by the weight
    error without them; :mod:`tensorium.passes.sensitivity`) until they hold ``sensitive_fraction`` of the
    quantized elements. ``rearrange`` sorts each weight's input channels by their largest magnitude before
    quantizing per group, so that outlier channels share groups, and permutes the activation to match in the
    op that computes it (:mod:`tensorium.passes.fold_scales`; a ``graph.gather`` where it cannot). Every bad
    option is a PassError naming it.
    """

    bits: int = 4
    group: int = 128
    method: str = "rtn"
    signed: bool = False
    min_elements: int = 4096
    embeddings: bool = False
    calibration: Any = ""
    """Calibration batches (given as a list, stored as their registry key)."""
    bits_by_sensitivity: int = 0
    sensitive_fraction: float = 0.25
    rearrange: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.calibration, str):
            object.__setattr__(self, "calibration", register_calibration(self.calibration))
        if isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 1 <= self.bits <= 8:
            raise PassError(f"quantize: bits must be 1..8, got {self.bits!r}")
        if isinstance(self.group, bool) or not isinstance(self.group, int) or self.group < 0:
            raise PassError(f"quantize: group must be 0 (per channel) or a positive group size, got {self.group!r}")
        if self.method in PLANNED_METHODS:
            raise PassError(f"quantize: method '{self.method}' is not implemented yet (implemented: rtn)")
        if self.method not in METHODS:
            raise PassError(f"quantize: unknown method '{self.method}' (implemented: {', '.join(METHODS)})")
        if self.signed and self.bits < 2:
            raise PassError("quantize: signed (symmetric) codes need bits >= 2; 1-bit weights are unsigned")
        wide = self.bits_by_sensitivity
        if isinstance(wide, bool) or not isinstance(wide, int) or (wide and not self.bits < wide <= 8):
            raise PassError(
                f"quantize: bits_by_sensitivity must be 0 (off) or a width in {self.bits + 1}..8 (above bits="
                f"{self.bits}), got {wide!r}"
            )
        if not isinstance(self.sensitive_fraction, (int, float)) or not 0 <= self.sensitive_fraction <= 1:
            raise PassError(f"quantize: sensitive_fraction must be in [0, 1], got {self.sensitive_fraction!r}")
        if self.rearrange not in (True, False):
            raise PassError(f"quantize: rearrange must be true or false, got {self.rearrange!r}")
        if self.rearrange and not self.group:
            raise PassError("quantize: rearrange needs groups (group > 0): per channel, the order does not matter")
        if self.min_elements < 0:
            raise PassError(f"quantize: min_elements must be >= 0, got {self.min_elements}")
        if self.method in CALIBRATED_METHODS and not self.calibration:
            raise PassError(
                f"quantize: method '{self.method}' needs calibration inputs: QuantConfig(method='{self.method}', "
                "calibration=[inputs, ...])"
            )
        calibration_batches(self.calibration)

    @staticmethod
    def parse(text: str) -> QuantConfig:
        """The config spelled ``w4g128`` (4 bits, groups of 128), ``w3`` (per channel) or ``w8g32s`` (signed)."""
        m = re.fullmatch(r"w(\d+)(?:g(\d+))?(s?)", text.strip())
        if m is None:
            raise PassError(f"quantize: bad spec '{text}' (expected like 'w4g128', 'w3' or 'w8g32s')")
        return QuantConfig(bits=int(m.group(1)), group=int(m.group(2) or 0), signed=bool(m.group(3)))

    @staticmethod
    def of(value: QuantConfig | str) -> QuantConfig:
        """``value`` as a config (parsing a spec string)."""
        if isinstance(value, QuantConfig):
            return value
        if isinstance(value, str):
            return QuantConfig.parse(value)
        raise PassError(f"quantize= takes a QuantConfig or a spec like 'w4g128', got {type(value).__name__}")

    def pass_text(self) -> str:
        """This config as the ``quantize{...}`` pass of a pipeline (options that differ from the defaults)."""
        changed = [
            f"{f.name.replace('_', '-')}={str(value).lower() if isinstance(value, bool) else value}"
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) != f.default
        ]
        return "quantize" + ("{" + ",".join(changed) + "}" if changed else "")


_CALIBRATION: dict[str, tuple[tuple[np.ndarray, ...], ...]] = {}


def register_calibration(batches: Sequence[Any]) -> str:
    """Keep calibration ``batches`` (each an array or a tuple of arrays: one call's inputs) under a key made of
    their content, which a ``quantize{calibration=KEY}`` pass reads back; PassError for an empty list."""
    if isinstance(batches, np.ndarray) or not isinstance(batches, Sequence) or not batches:
        raise PassError("quantize: calibration must be a non-empty list of input batches (one call's inputs each)")
    stored = tuple(
        tuple(np.asarray(a) for a in (batch if isinstance(batch, (tuple, list)) else (batch,))) for batch in batches
    )
    digest = hashlib.sha256()
    for batch in stored:
        for array in batch:
            digest.update(f"{array.dtype}{array.shape}".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    key = digest.hexdigest()[:16]
    _CALIBRATION[key] = stored
    return key


def calibration_batches(key: str) -> tuple[tuple[np.ndarray, ...], ...]:
    """The batches registered under ``key`` (none for ""); PassError for a key this process does not know."""
    if not key:
        return ()
    found = _CALIBRATION.get(key)
    if found is None:
        raise PassError(f"quantize: no calibration batches registered as '{key}' in this process")
    return found
