"""Loop-level kernels to WGSL compute shaders: the emitter of the WebGPU backend.

A text subclass of :class:`~tensorium.backends.emitter.KernelEmitter`: each ``func.func`` kernel becomes
one WGSL module whose entry point ``main`` runs one invocation.

- A buffer argument the kernel touches is a storage binding ``@group(0) @binding(n)``, in argument order,
  ``read`` unless the kernel stores into it; its elements are a flat ``array<T>`` indexed row-major.
  Arguments the kernel never touches get no binding (:attr:`Shader.bindings` lists the argument positions
  bound). Dynamic dims (dynamic shapes) are read from one uniform buffer of sizes, bound last
  (``var<uniform> dims: array<vec4<i32>, n>``, slot ``k`` at ``dims[k / 4][k % 4]``); :attr:`Shader.dims`
  says which argument dim each slot holds, and the runtimes fill it before each launch.
- ``gpu_block`` loops are ``workgroup_id`` and ``gpu_thread`` loops ``local_invocation_id`` along their
  axis, scaled by the step and offset by the lower bound; their trip counts are constants (the grid and
  the ``@workgroup_size``), except for a grid sized at run time (:attr:`Shader.dispatch`, grid 0 on
  those axes). Other loop kinds (serial, unroll, vectorize, parallel) are WGSL ``for`` loops
  in each invocation.
- ``loop.barrier`` is ``workgroupBarrier()``; ``shared`` buffers are module-scope ``var<workgroup>``
  arrays, ``local`` ones function-scope arrays.
- Types: ``f32``; ``f16`` (``enable f16``) when the Target has ``shader-f16``; ``bf16`` is held in f32 (the
  ``decompose`` stage rounds it); ``i32``, ``u32``; ``i1`` is ``bool`` in registers and ``u32`` in storage;
  ``index`` is ``i32`` (the limit passes prove every index fits). Types WGSL cannot store are held packed in
  ``u32`` words (:func:`packed_bits`): 8-bit integers and k-bit codes four to a word, 16-bit integers and f16
  without ``shader-f16`` two to a word, in the byte order of the host's arrays (so the runtimes upload and read
  back the arrays' own bytes); a load shifts the element out of its word (sign-extending signed integers), a
  store into a buffer the kernel writes (then ``array<atomic<u32>>``) clears and sets the element's bits with
  ``atomicAnd``/``atomicOr``, so invocations writing other elements of the same word never race. In registers
  such integers are ``i32``/``u32`` wrapped to their width after each op that can leave it, f16 is ``f32``
  rounded to the nearest f16 (ties to even) after each op that rounds; ``shared`` and ``local`` arrays hold
  them widened. ``i64`` is held in ``i32`` where the limit pass :mod:`tensorium.lowering.webgpu_int64` proved
  every value of it fits 32 bits (the runtimes narrow i64 inputs and constants, checked, and widen outputs); f64
  and ``u64`` are a CompileError naming the value.
- ``exp``, ``log``, ``sqrt``, ``sin``... are WGSL's builtins; ``tanh``, ``erf``, integer division and
  remainder come from the shared decompositions (:mod:`tensorium.lowering.decompose`). ``max``/``min``
  propagate NaN and ``pow`` handles negative bases with integer exponents, as the loop dialect says.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...errors import CompileError
from ...ir.core import Operation, Value
from ...ir.dialects.builtin import func_body, func_name
from ...ir.evaluate import op_location
from ...ir.types import BufferType, FloatType, IndexType, IntegerType, QuantizedType, ScalarType, Type
from ...lowering.webgpu_int64 import held_in_i32
from ...lowering.webgpu_limits import concat_pieces
from ...lowering.webgpu_schedule import (
    bound_arguments,
    constant_index,
    dispatch_expression,
    storage_bindings,
    trip_count,
)
from ...targets import Target
from ..emitter import KernelEmitter, op_error

AXES = "xyz"
MAX_UNROLL_TRIPS = 16
"""``unroll`` loops of at most this many iterations are unrolled in the WGSL text (:meth:`WGSLEmitter.emit_unroll`)."""
F16_FEATURE = "shader-f16"
_MATH = {
    "loop.exp": "exp",
    "loop.log": "log",
    "loop.sqrt": "sqrt",
    "loop.rsqrt": "inverseSqrt",
    "loop.floor": "floor",
    "loop.abs": "abs",
}
_INFIX = {"loop.add": "+", "loop.sub": "-", "loop.mul": "*", "loop.div": "/", "loop.rem": "%"}
_BITWISE = {"loop.and": "&", "loop.or": "|", "loop.xor": "^"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
NONFINITE_FN = "f32_from_bits"
NONFINITE_HELPER = f"fn {NONFINITE_FN}(bits: u32) -> f32 {{ return bitcast<f32>(bits); }}"
INT_POW_HELPERS = {
    f"int_pow_{t}": (
        f"fn int_pow_{t}(a: {t}, b: {t}) -> {t} {{\n"
        + (
            "  if (b < 0i) { if (a == 1i) { return 1i; } if (a == -1i) { return select(1i, -1i, (b & 1i) != 0i); }"
            " return 0i; }\n"
            if t == "i32"
            else ""
        )
        + f"  var r: {t} = {t}(1); var x: {t} = a; var e: {t} = b;\n"
        + f"  loop {{ if (e == {t}(0)) {{ break; }} if ((e & {t}(1)) != {t}(0)) {{ r = r * x; }} x = x * x;"
        + " e = e >> 1u; }\n"
        + "  return r;\n}"
    )
    for t in ("i32", "u32")
}
"""Integer powers by squaring (wrapping as WGSL's integer products do; negative powers give 0 unless the base is
+-1, as the loop dialect says), by the name the emitter calls."""
"""inf and NaN through a function call: ``bitcast<f32>(0x7f800000u)`` is a const-expression, and Dawn's
validator (Chrome's) refuses a const-expression that is not finite where wgpu's accepts it."""
PACKED_HELPERS = {
    "half_value": (
        "fn half_value(h: u32) -> f32 {\n"
        "  let sign = (h & 0x8000u) << 16u; let e = (h >> 10u) & 0x1fu; let m = h & 0x3ffu;\n"
        "  if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }\n"
        "  if (e == 0u) { return bitcast<f32>(sign | bitcast<u32>(f32(m) * 5.9604644775390625e-08)); }\n"
        "  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));\n}"
    ),
    "half_bits": (
        "fn half_bits(x: f32) -> u32 {\n"
        "  let b = bitcast<u32>(x); let sign = (b >> 16u) & 0x8000u; let a = b & 0x7fffffffu;\n"
        "  if (a >= 0x7f800000u) { return sign | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u); }\n"
        "  if (a >= 0x38800000u) { return sign | ((a - 0x38000000u) >> 13u); }\n"
        "  return sign | u32(round(bitcast<f32>(a) * 16777216.0));\n}"
    ),
    "half_round": (
        "fn half_round(x: f32) -> f32 {\n"
        "  let b = bitcast<u32>(x); let a = b & 0x7fffffffu;\n"
        "  if (a >= 0x7f800000u) { return x; }\n"
        "  if (a < 0x38800000u) { return round(x * 16777216.0) * 5.9604644775390625e-08; }\n"
        "  let r = (b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u;\n"
        "  if ((r & 0x7fffffffu) >= 0x47800000u) { return bitcast<f32>((b & 0x80000000u) | 0x7f800000u); }\n"
        "  return bitcast<f32>(r);\n}"
    ),
    "float_low_bits": (
        "fn float_low_bits(x: f32, m: f32) -> u32 {\n"
        "  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0u; }\n"
        "  let t = trunc(x);\n"
        "  if (t >= 9223372036854775808.0) {\n"
        "    let w = (bitcast<u32>(m) >> 23u) - 127u;\n"
        "    return select(0xffffffffu, (1u << w) - 1u, w < 32u);\n"
        "  }\n"
        "  if (t < -9223372036854775808.0) { return 0u; }\n"
        "  return u32(t - m * floor(t / m));\n}"
    ),
}
"""Helpers of the types held packed (:func:`packed_bits`): an f16's bits to f32 and back (exact; the value is
already an f16), an f32 rounded to the nearest f16 (ties to even, overflow to inf, as the interpreter's f16
arithmetic), and a float's truncation wrapped to ``m = 2**width`` (the loop dialect's cast: saturate to the
i64 range, NaN 0, then wrap; the saturated top ``m - 1`` from ``m``'s exponent, as ``u32(m - 1.0)`` is not exact
for ``m = 2**32``), by the name the emitter calls."""
_EXACT_HALF = frozenset({"loop.load", "loop.select", "loop.max", "loop.min", "loop.neg", "loop.abs"})
"""Ops whose f16 result is one of their operands (or its negation) exactly: not rounded again."""
_WRAPPING = frozenset(
    {"loop.add", "loop.sub", "loop.mul", "loop.div", "loop.neg", "loop.fma", "loop.pow", "loop.shl", "loop.bitcast"}
)
"""Integer ops whose result can leave a narrow type's range in a 32-bit register: wrapped to its width after."""


@dataclass(frozen=True)
class Shader:
    """One kernel as WGSL: its source, the argument positions bound (binding ``n`` is ``bindings[n]``), which
    of those it writes, its workgroup size and grid (x, y, z), and the bytes of each scratch buffer in global
    memory it allocates (bound after the arguments)."""

    name: str
    wgsl: str
    bindings: tuple[int, ...]
    written: frozenset[int]
    workgroup: tuple[int, int, int]
    grid: tuple[int, int, int]
    scratch: tuple[int, ...] = ()
    pieces: tuple[int, ...] | None = None
    """For a concat whose inputs are contiguous runs of its result, their byte offsets there: the runtimes copy
    buffers instead of running the shader (:func:`~tensorium.lowering.webgpu_limits.concat_pieces`)."""
    dims: tuple[tuple[int, int], ...] = ()
    """The (argument position, axis) of each slot of the uniform buffer of dynamic sizes (bound last)."""
    dispatch: str | None = None
    """For a grid sized at run time: the JSON of its trip count's expression
    (:func:`~tensorium.lowering.webgpu_schedule.dispatch_expression`)."""
    scratch_sizes: tuple[str | None, ...] = ()
    """Per scratch buffer, the JSON of its bytes as an expression over the argument sizes where they are only
    known at run time (None where ``scratch`` has them)."""
    checks: tuple[str, ...] = ()
    """The messages of the kernel's run-time checks (``loop.check``: an index out of range...). A kernel with
    checks binds a 4-byte status buffer after its scratch buffers, where a failed check stores its number
    (``atomicMax``, 1-based); the runtimes zero it before each run and raise the message of a nonzero one after."""

    def to_json(self) -> dict[str, object]:
        """The shader's launch data as JSON (its WGSL is stored beside it)."""
        data: dict[str, object] = {
            "bindings": list(self.bindings),
            "written": sorted(self.written),
            "workgroup": list(self.workgroup),
            "grid": list(self.grid),
            "scratch": list(self.scratch),
        }
        if self.pieces is not None:
            data["pieces"] = list(self.pieces)
        if self.dims:
            data["dims"] = [list(d) for d in self.dims]
        if self.dispatch is not None:
            data["dispatch"] = json.loads(self.dispatch)
        if any(self.scratch_sizes):
            data["scratch_sizes"] = [json.loads(e) if e else None for e in self.scratch_sizes]
        if self.checks:
            data["checks"] = list(self.checks)
        return data


def storage_type(element: ScalarType, target: Target, what: str) -> str:
    """The WGSL type of ``element`` in a storage buffer (the word type ``u32`` for elements held packed, see
    :func:`packed_bits`); CompileError naming ``what`` when WebGPU has none."""
    if isinstance(element, IntegerType) and element.is_bool:
        return "u32"
    if packed_bits(element, target):
        return "u32"
    return scalar_type(element, target, what)


def packed_bits(element: ScalarType, target: Target) -> int:
    """The bits per element of a type WGSL cannot store (8-bit integers and 1..8-bit quant codes: 8, four per
    ``u32`` word; 16-bit integers, and f16 without ``shader-f16``: 16, two per word); 0 for the others."""
    if isinstance(element, QuantizedType):
        return 8
    if isinstance(element, IntegerType) and not element.is_bool and element.width <= 16:
        return 8 if element.width <= 8 else 16
    if isinstance(element, FloatType) and element.name == "f16" and F16_FEATURE not in target.features:
        return 16
    return 0


def scalar_type(t: Type, target: Target, what: str) -> str:
    """The WGSL type of a register value of type ``t``; CompileError naming ``what`` when WebGPU has none.
    Integers narrower than 32 bits are held in ``i32``/``u32`` (wrapped to their width after each op), ``i64``
    in ``i32`` (where :mod:`tensorium.lowering.webgpu_int64` proved its values fit); f16 is
    ``f16`` with ``shader-f16``, else held in ``f32`` (rounded to f16 after each op)."""
    if isinstance(t, IndexType):
        return "i32"
    if isinstance(t, FloatType):
        if t.name in ("f32", "bf16"):
            return "f32"
        if t.name == "f16":
            return "f16" if F16_FEATURE in target.features else "f32"
    if isinstance(t, QuantizedType):
        return "i32" if t.signed else "u32"
    if isinstance(t, IntegerType):
        if t.is_bool:
            return "bool"
        if t.width <= 32 or held_in_i32(t):
            return "i32" if t.signed else "u32"
    raise CompileError(f"{what}: WebGPU has no {t} (WGSL has 32-bit integers, f32 and f16; no 64-bit types)")


class WGSLEmitter(KernelEmitter):
    """Emits each kernel of a loop module as one WGSL compute shader (see the module docstring)."""

    NAME: ClassVar[str] = "WebGPU"
    NATIVE: ClassVar[frozenset[str]] = frozenset({"loop.exp", "loop.log"})
    """exp and log are WGSL builtins; tanh (inaccurate in WGSL for large inputs), erf, sin, cos, atan, asin and
    acos (WGSL bounds sin's error on [-pi, pi] only, asin's loosely: lavapipe's is off by 4e-4), integer div/rem
    (WGSL's give ``a`` for ``a / 0``) and bf16 rounding come from the shared decompositions."""
    LOOP_KINDS: ClassVar[dict[str, str]] = {
        "serial": "emit_serial",
        "unroll": "emit_unroll",
        "vectorize": "emit_serial",
        "parallel": "emit_serial",
        "gpu_block": "emit_gpu_loop",
        "gpu_thread": "emit_gpu_loop",
    }
    OPS: ClassVar[dict[str, str]] = {
        **KernelEmitter.OPS,
        "loop.const": "emit_const",
        **dict.fromkeys(_INFIX, "emit_infix"),
        **dict.fromkeys(_BITWISE, "emit_bitwise"),
        **dict.fromkeys(_MATH, "emit_math"),
        "loop.max": "emit_minmax",
        "loop.min": "emit_minmax",
        "loop.pow": "emit_pow",
        "loop.neg": "emit_neg",
        "loop.fma": "emit_fma",
        "loop.cmp": "emit_cmp",
        "loop.select": "emit_select",
        "loop.cast": "emit_cast",
        "loop.bitcast": "emit_bitcast",
        "loop.shl": "emit_shift",
        "loop.shr": "emit_shift",
        "loop.if": "emit_if",
        "loop.alloc": "emit_alloc",
        "loop.dim": "emit_dim",
        "loop.load": "emit_load",
        "loop.store": "emit_store",
        "loop.barrier": "emit_barrier",
    }

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target
        self.shaders: dict[str, Shader] = {}
        self.lines: list[str] = []
        self.globals: list[str] = []
        self.depth = 1
        self.counter = 0
        self.buffers: dict[int, tuple[str, BufferType]] = {}
        self.workgroup = [1, 1, 1]
        self.grid = [1, 1, 1]
        self.scratch: list[int] = []
        self.bound = 0
        self.dims: dict[tuple[int, int], int] = {}
        self.positions: dict[int, int] = {}
        self.dynamic_grid = False
        self.scratch_sizes: list[str | None] = []
        self.alloc_dims: dict[int, dict[int, str]] = {}
        self.packed: dict[int, bool] = {}
        """Buffers held packed (:func:`packed_bits`), by value id: whether their words are atomic (written)."""
        self.dims_read = False
        self.checks: list[str] = []
        self.check_room = False
        """Whether the kernel has a storage binding to spare for its status buffer (else its checks are left out)."""

    def output(self) -> dict[str, Shader]:
        """The shaders emitted so far, by kernel name."""
        return self.shaders

    # --- kernels ----------------------------------------------------------------------------------
    def emit_function(self, func: Operation) -> None:
        """Emit one kernel as a WGSL module with entry point ``main``."""
        name = func_name(func)
        self.dynamic_grid = "gpu_dispatch" in func.attributes
        self.lines, self.globals, self.depth, self.counter = [], [], 1, 0
        self.workgroup, self.grid = [1, 1, 1], [1, 1, 1]
        self.env, self.buffers, self.scratch, self.dims, self.positions = {}, {}, [], {}, {}
        self.scratch_sizes, self.alloc_dims, self.packed = [], {}, {}
        args = func_body(func).args
        used = bound_arguments(func)
        stored = {id(op.operands[1]) for op in func.walk() if op.name == "loop.store"}
        bindings: list[int] = []
        written: set[int] = set()
        for position, arg in enumerate(args):
            t = arg.type
            if not isinstance(t, BufferType):
                raise CompileError(f"@{name}: argument #{position} is a scalar ({t}); WebGPU kernels take buffers only")
            if id(arg) not in used:
                continue
            for axis, d in enumerate(t.shape):
                if not isinstance(d, int):
                    self.dims[(position, axis)] = len(self.dims)
            self.positions[id(arg)] = position
            wgsl = storage_type(t.element, self.target, f"@{name} argument #{position} ({t})")
            access = "read_write" if id(arg) in stored else "read"
            if id(arg) in stored:
                written.add(position)
            var = f"b{position}"
            if packed_bits(t.element, self.target):
                self.packed[id(arg)] = id(arg) in stored
                if id(arg) in stored:
                    wgsl = "atomic<u32>"
            self.globals.append(f"@group(0) @binding({len(bindings)}) var<storage, {access}> {var}: array<{wgsl}>;")
            bindings.append(position)
            self.buffers[id(arg)] = (var, t)
        self.bound = len(bindings)
        self.dims_read = False
        self.checks = []
        limit = self.target.limit("max_storage_buffers_per_shader_stage")
        self.check_room = storage_bindings(func) < limit
        self.emit_block(func_body(func))
        if not self.dims_read:
            self.dims = {}  # none read (a compress's result rows): an unused uniform would leave the auto layout
        if self.checks:
            status = self.bound + len(self.scratch)
            self.globals.append(f"@group(0) @binding({status}) var<storage, read_write> status: array<atomic<u32>>;")
        if self.dims:
            number = self.bound + len(self.scratch) + (1 if self.checks else 0)
            vectors = -(-len(self.dims) // 4)
            self.globals.append(f"@group(0) @binding({number}) var<uniform> dims: array<vec4<i32>, {vectors}>;")
        header = ["enable f16;"] if any("f16" in line for line in (*self.globals, *self.lines)) else []
        if any(NONFINITE_FN in line for line in self.lines):
            self.globals.append(NONFINITE_HELPER)
        for helper_name, helper in (*INT_POW_HELPERS.items(), *PACKED_HELPERS.items()):
            if any(f"{helper_name}(" in line for line in self.lines):
                self.globals.append(helper)
        workgroup = ", ".join(map(str, self.workgroup))
        source = "\n".join(
            [
                *header,
                *self.globals,
                "",
                f"@compute @workgroup_size({workgroup})",
                "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {",
                *self.lines,
                "}",
                "",
            ]
        )
        self.shaders[name] = Shader(
            name,
            source,
            tuple(bindings),
            frozenset(written),
            tuple(self.workgroup),  # type: ignore[arg-type]
            tuple(self.grid),  # type: ignore[arg-type]
            tuple(self.scratch),
            concat_pieces(func),
            tuple(sorted(self.dims, key=self.dims.__getitem__)),
            str(func.attributes["gpu_dispatch"]) if "gpu_dispatch" in func.attributes else None,
            tuple(self.scratch_sizes) if any(self.scratch_sizes) else (),
            tuple(self.checks),
        )

    # --- text helpers -----------------------------------------------------------------------------
    def line(self, text: str) -> None:
        """Append one statement at the current depth."""
        self.lines.append("  " * self.depth + text)

    def let(self, op: Operation, expression: str) -> str:
        """Bind ``op``'s result to a new ``let`` of ``expression``; returns its name."""
        name = f"v{self.counter}"
        self.counter += 1
        t = op.results[0].type
        if self.half_in_f32(t) and op.name not in _EXACT_HALF:
            expression = f"half_round({expression})"
        elif op.name in _WRAPPING:
            expression = self.wrapped(t, expression)
        self.line(f"let {name}: {self.type_of(t, op)} = {expression};")
        return name

    def half_in_f32(self, t: Type) -> bool:
        """Whether ``t`` is f16 held in f32 registers (a target without ``shader-f16``)."""
        return isinstance(t, FloatType) and t.name == "f16" and F16_FEATURE not in self.target.features

    @staticmethod
    def wrapped(t: Type, expression: str) -> str:
        """``expression`` (a 32-bit register value) wrapped to the width of ``t`` when ``t`` is a narrower
        integer (sign-extended for signed ones); else ``expression`` unchanged."""
        if not isinstance(t, IntegerType) or t.is_bool or t.width >= 32:
            return expression
        if t.signed:
            return f"(({expression}) << {32 - t.width}u) >> {32 - t.width}u"
        return f"(({expression}) & {(1 << t.width) - 1}u)"

    def type_of(self, t: Type, op: Operation) -> str:
        """The WGSL type of a value of type ``t`` that ``op`` uses or makes."""
        try:
            return scalar_type(t, self.target, f"'{op.name}'")
        except CompileError as e:
            raise op_error(op, str(e).split(": ", 1)[1]) from None

    # --- loops and control ------------------------------------------------------------------------
    def emit_serial(self, op: Operation) -> None:
        """A ``for`` loop over ``[lower, upper)`` by ``step`` in each invocation."""
        lower, upper, step = self.operands(op)
        iv = f"it{self.counter}"
        self.counter += 1
        self.line(f"for (var {iv}: i32 = {lower}; {iv} < {upper}; {iv} = {iv} + {step}) {{")
        self.bind(op.regions[0].block.args[0], iv)
        self.nested(op)
        self.line("}")

    def emit_unroll(self, op: Operation) -> None:
        """An ``unroll`` loop with a constant trip count of at most :data:`MAX_UNROLL_TRIPS`: its body once per
        iteration, each in a block of its own with the induction variable a literal (so a register tile's
        private array is indexed by constants). Shader compilers of software adapters (SwiftShader's, in
        chromium) unroll little themselves. Any other ``unroll`` loop is a ``for`` loop."""
        trips = trip_count(op)
        if trips is None or trips > MAX_UNROLL_TRIPS:
            self.emit_serial(op)
            return
        lower, _, step = (constant_index(v) for v in op.operands)
        assert lower is not None and step is not None
        for n in range(trips):
            self.line("{")
            value = lower + n * step
            self.bind(op.regions[0].block.args[0], f"{value}i" if value >= 0 else f"({value}i)")
            self.nested(op)
            self.line("}")

    def emit_gpu_loop(self, op: Operation) -> None:
        """A ``gpu_block`` or ``gpu_thread`` loop: the workgroup or invocation id along its axis."""
        kind, axis = op.attr("kind"), int(op.attr("axis"))
        trips = trip_count(op)
        if trips is None and (kind != "gpu_block" or not self.dynamic_grid):
            raise op_error(op, f'of kind "{kind}" needs a constant trip count in the WebGPU backend')
        sizes = self.grid if kind == "gpu_block" else self.workgroup
        sizes[axis] = 0 if trips is None else trips
        lower, _, step = self.operands(op)
        builtin = "wid" if kind == "gpu_block" else "lid"
        name = f"{builtin}_{AXES[axis]}"
        self.line(f"let {name}: i32 = {lower} + i32({builtin}.{AXES[axis]}) * {step};")
        self.bind(op.regions[0].block.args[0], name)
        self.emit_block(op.regions[0].block)

    def nested(self, op: Operation) -> None:
        """Emit the body of ``op`` one level deeper."""
        self.depth += 1
        self.emit_block(op.regions[0].block)
        self.depth -= 1

    def emit_if(self, op: Operation) -> None:
        """``if (cond) { ... }``."""
        self.line(f"if ({self.value(op.operands[0])}) {{")
        self.nested(op)
        self.line("}")

    def emit_barrier(self, op: Operation) -> None:
        """``workgroupBarrier()``."""
        self.line("workgroupBarrier();")

    # --- memory -----------------------------------------------------------------------------------
    def emit_alloc(self, op: Operation) -> None:
        """A ``local`` (function-scope) or ``shared`` (workgroup) array, or for ``global`` a scratch storage
        buffer of the kernel, bound after its arguments, that the runtime allocates."""
        t = op.attr("type")
        assert isinstance(t, BufferType)
        if not t.is_static and t.space != "global":
            raise op_error(op, f"allocates {t} with dynamic dims; WebGPU arrays need static sizes")
        name = f"m{self.counter}"
        self.counter += 1
        size = max(1, t.num_elements or 1)
        if not t.is_static:
            self.emit_dynamic_scratch(op, t, name)
            return
        if t.space == "local":
            self.line(f"var {name}: array<{self.type_of(t.element, op)}, {size}>;")
        else:
            element = storage_type(t.element, self.target, f"'{op.name}' of {t}")
            bits = packed_bits(t.element, self.target)
            if t.space == "shared":
                element = self.type_of(t.element, op) if bits else element  # widened: one register per element
                self.globals.append(f"var<workgroup> {name}: array<{element}, {size}>;")
            else:
                number = self.bound + len(self.scratch)
                if bits:
                    self.packed[id(op.results[0])] = True
                    element = "atomic<u32>"
                self.globals.append(f"@group(0) @binding({number}) var<storage, read_write> {name}: array<{element}>;")
                itemsize = bits // 8 if bits else 4 if element in ("u32", "i32", "f32") else 2
                self.scratch.append(-(-size * itemsize // 4) * 4)
                self.scratch_sizes.append(None)
        self.buffers[id(op.results[0])] = (name, t)

    def emit_dynamic_scratch(self, op: Operation, t: BufferType, name: str) -> None:
        """A ``global`` scratch buffer with dynamic dims (sized by the alloc's operands): its bytes as an expression
        over the kernel's argument sizes (:attr:`Shader.scratch_sizes`), which the runtimes evaluate."""
        element = storage_type(t.element, self.target, f"'{op.name}' of {t}")
        bits = packed_bits(t.element, self.target)
        itemsize = bits // 8 if bits else 4 if element in ("u32", "i32", "f32") else 2
        if bits:
            self.packed[id(op.results[0])] = True
            element = "atomic<u32>"
            itemsize = 4  # whole words (a multiple of the elements' bytes)
        kernel = op
        while kernel.name != "func.func" and kernel.parent_op is not None:
            kernel = kernel.parent_op
        total: object = itemsize * math.prod(d for d in t.shape if isinstance(d, int))
        for value in op.operands:
            term = dispatch_expression(value, kernel)
            total = total * term if isinstance(total, int) and isinstance(term, int) else ["mul", total, term]
        number = self.bound + len(self.scratch)
        self.globals.append(f"@group(0) @binding({number}) var<storage, read_write> {name}: array<{element}>;")
        static = isinstance(total, int)
        self.scratch.append(max(4, int(total)) if isinstance(total, int) else 0)
        self.scratch_sizes.append(None if static else json.dumps(total))
        given = iter(self.values(tuple(op.operands)))
        self.alloc_dims[id(op.results[0])] = {a: next(given) for a, d in enumerate(t.shape) if not isinstance(d, int)}
        self.buffers[id(op.results[0])] = (name, t)

    def size(self, op: Operation, buffer: Value, axis: int) -> str:
        """The size of ``buffer`` along ``axis``: a constant, its slot of the uniform sizes, or for a dynamic
        scratch buffer the value its alloc was given."""
        t = buffer.type
        assert isinstance(t, BufferType)
        d = t.shape[axis]
        if isinstance(d, int):
            return f"{d}"
        if id(buffer) in self.alloc_dims:
            return self.alloc_dims[id(buffer)][axis]
        slot = self.dims.get((self.positions.get(id(buffer), -1), axis))
        if slot is None:
            raise op_error(op, f"reads a dynamic dim of {t}, which is not a kernel argument")
        self.dims_read = True
        return f"dims[{slot // 4}][{slot % 4}]"

    def emit_dim(self, op: Operation) -> str:
        """A size: a constant, or read from the uniform buffer of dynamic sizes."""
        return self.size(op, op.operands[0], int(op.attr("axis")))

    def linear(self, op: Operation, buffer: Value, indices: tuple[Value, ...]) -> str:
        """The row-major linear index of an element of ``buffer``."""
        linear = ""
        for axis, i in enumerate(self.values(indices)):
            linear = str(i) if not linear else f"({linear}) * {self.size(op, buffer, axis)} + {i}"
        return linear or "0"

    def address(self, op: Operation, buffer: Value, indices: tuple[Value, ...]) -> tuple[str, BufferType]:
        """``name[linear index]`` of an element of ``buffer`` and its type."""
        name, t = self.buffers[id(buffer)]
        return f"{name}[{self.linear(op, buffer, indices)}]", t

    def packed_word(self, op: Operation, buffer: Value, indices: tuple[Value, ...]) -> tuple[str, str, int]:
        """For a buffer held packed: a pointer-free reference to the word holding the element, the ``u32`` bit
        offset of the element in it (both as ``let`` names) and the element's bits."""
        name, t = self.buffers[id(buffer)]
        bits = packed_bits(t.element, self.target)
        per_word = 32 // bits
        at = f"e{self.counter}"
        self.counter += 1
        self.line(f"let {at}: u32 = u32({self.linear(op, buffer, indices)});")
        shift = f"s{self.counter}"
        self.counter += 1
        self.line(f"let {shift}: u32 = ({at} & {per_word - 1}u) * {bits}u;")
        return f"{name}[{at} >> {per_word.bit_length() - 1}u]", shift, bits

    def emit_load(self, op: Operation) -> str:
        """An element; ``i1`` elements of storage buffers are ``!= 0u``; an element held packed is taken out of
        its word (sign-extended for signed integers, through its bits for f16)."""
        buffer = op.operands[0]
        if id(buffer) in self.packed:
            word, shift, bits = self.packed_word(op, buffer, op.operands[1:])
            if self.packed[id(buffer)]:
                word = f"atomicLoad(&{word})"
            t = op.results[0].type
            if self.half_in_f32(t):
                return self.let(op, f"half_value(({word} >> {shift}) & 0xffffu)")
            if scalar_type(t, self.target, op.name) == "i32":
                return self.let(op, f"bitcast<i32>({word} << ({32 - bits}u - {shift})) >> {32 - bits}u")
            return self.let(op, f"({word} >> {shift}) & {(1 << bits) - 1}u")
        where, t = self.address(op, buffer, op.operands[1:])
        if _is_bool(t.element) and t.space != "local":
            return self.let(op, f"{where} != 0u")
        return self.let(op, where)

    def emit_store(self, op: Operation) -> None:
        """An element store; ``i1`` into storage as ``0u`` / ``1u``; an element held packed is put into its word
        by atomics (clear its bits, then set them), so invocations writing other elements of the same word do
        not race."""
        buffer = op.operands[1]
        value = self.value(op.operands[0])
        if id(buffer) in self.packed:
            word, shift, bits = self.packed_word(op, buffer, op.operands[2:])
            mask = (1 << bits) - 1
            code = f"half_bits({value})" if self.half_in_f32(op.operands[0].type) else f"(u32({value}) & {mask}u)"
            self.line(f"atomicAnd(&{word}, ~({mask}u << {shift}));")
            self.line(f"atomicOr(&{word}, {code} << {shift});")
            return
        where, t = self.address(op, buffer, op.operands[2:])
        if _is_bool(t.element) and t.space != "local":
            value = f"select(0u, 1u, {value})"
        self.line(f"{where} = {value};")

    # --- scalars ----------------------------------------------------------------------------------
    def emit_const(self, op: Operation) -> str:
        """A literal of the op's type (inf and NaN through their bits)."""
        value, t = op.attr("value"), op.results[0].type
        wgsl = self.type_of(t, op)
        if wgsl == "bool":
            return "true" if value else "false"
        if wgsl in ("f32", "f16"):
            if self.half_in_f32(t):
                return f"{_float_literal(float(np.float16(value)), wgsl)}"
            return self.let(op, _float_literal(float(value), wgsl))
        number = int(value)
        if wgsl == "u32":
            return f"{number % (1 << 32)}u"
        if not -(1 << 31) <= number < 1 << 31:
            raise op_error(op, f"constant {number} does not fit the 32-bit integers of WebGPU")
        if number == -(1 << 31):
            return "(-2147483647i - 1i)"  # WGSL reads -2147483648i as -(2147483648i), which is out of range
        return f"{number}i" if number >= 0 else f"({number}i)"

    def emit_infix(self, op: Operation) -> str:
        """``a + b``, ``a - b``, ``a * b``, ``a / b``, ``a % b`` (WGSL's float ``%`` truncates, as the loop
        dialect's ``rem``)."""
        a, b = self.operands(op)
        return self.let(op, f"{a} {_INFIX[op.name]} {b}")

    def emit_bitwise(self, op: Operation) -> str:
        """``&``, ``|``, ``^`` (on bools: ``&``, ``|``, ``!=``)."""
        a, b = self.operands(op)
        symbol = _BITWISE[op.name]
        if _is_bool(op.results[0].type) and symbol == "^":
            symbol = "!="
        return self.let(op, f"{a} {symbol} {b}")

    def emit_math(self, op: Operation) -> str:
        """A WGSL builtin of one argument."""
        (a,) = self.operands(op)
        return self.let(op, f"{_MATH[op.name]}({a})")

    def emit_minmax(self, op: Operation) -> str:
        """``max``/``min``, NaN when either operand is NaN (for floats)."""
        a, b = self.operands(op)
        fn = op.name.split(".")[1]
        if not isinstance(op.results[0].type, FloatType):
            return self.let(op, f"{fn}({a}, {b})")
        return self.let(op, f"select({fn}({a}, {b}), {a} + {b}, {a} != {a} || {b} != {b})")

    def emit_pow(self, op: Operation) -> str:
        """``a ** b`` for floats: ``pow(|a|, b)`` with the sign of odd integer powers of negative ``a``, NaN for
        other powers of negative ``a``, 1 for ``b = 0``; for 32-bit integers, a helper that squares
        (:data:`INT_POW_HELPERS`)."""
        a, b = self.operands(op)
        if not isinstance(op.results[0].type, FloatType):
            t = self.type_of(op.results[0].type, op)
            if f"int_pow_{t}" not in INT_POW_HELPERS:
                raise op_error(op, f"on {t} is not supported by the WebGPU backend")
            return self.let(op, f"int_pow_{t}({a}, {b})")
        t = self.type_of(op.results[0].type, op)
        magnitude = self.let(op, f"pow(abs({a}), {b})")
        whole = f"floor({b}) == {b}"
        odd = f"abs({b} % 2.0) == 1.0"
        negative = f"select({_float_literal(math.nan, t)}, select({magnitude}, -{magnitude}, {odd}), {whole})"
        zero = f"select({_float_literal(math.inf, t)}, {_float_literal(0.0, t)}, {b} > 0.0)"
        return self.let(
            op,
            f"select(select(select({magnitude}, {negative}, {a} < 0.0), {zero}, {a} == 0.0), 1.0, {b} == 0.0)",
        )

    def emit_neg(self, op: Operation) -> str:
        """``-a``; ``0u - a`` for unsigned integers, which WGSL does not negate (wrapping, as the loop dialect's
        unsigned negation does)."""
        (a,) = self.operands(op)
        if self.type_of(op.results[0].type, op) == "u32":
            return self.let(op, f"0u - {a}")
        return self.let(op, f"-({a})")

    def emit_fma(self, op: Operation) -> str:
        """``fma(a, b, c)`` for floats, ``a * b + c`` for integers."""
        a, b, c = self.operands(op)
        if isinstance(op.results[0].type, FloatType):
            return self.let(op, f"fma({a}, {b}, {c})")
        return self.let(op, f"{a} * {b} + {c}")

    def emit_check(self, op: Operation) -> None:
        """A ``loop.check``: a failed one stores its number in the kernel's status buffer (see :attr:`Shader.checks`);
        left out where the kernel has no storage binding to spare."""
        if not self.check_room:
            return
        (cond,) = self.operands(op)
        self.checks.append(f"{op_location(op)}{op.attr('message')}")
        self.line(f"if (!({cond})) {{ atomicMax(&status[0], {len(self.checks)}u); }}")

    def emit_cmp(self, op: Operation) -> str:
        """A comparison (WGSL orders no ``bool``s: ordered comparisons of them compare ``u32(x)``, false < true)."""
        a, b = self.operands(op)
        predicate = str(op.attr("predicate"))
        operand = op.operands[0].type
        if isinstance(operand, IntegerType) and operand.is_bool and predicate not in ("eq", "ne"):
            a, b = f"u32({a})", f"u32({b})"
        return self.let(op, f"{a} {_CMP[predicate]} {b}")

    def emit_select(self, op: Operation) -> str:
        """``select(b, a, cond)``."""
        cond, a, b = self.operands(op)
        return self.let(op, f"select({b}, {a}, {cond})")

    def emit_cast(self, op: Operation) -> str:
        """A conversion as ``graph.cast``: to ``bool`` is ``!= 0``, from ``bool`` 0 or 1, float to integer
        truncates (NaN gives 0; WGSL saturates to the 32-bit range, except for an i64 held in i32, which keeps
        the low 32 bits of the loop dialect's cast)."""
        (a,) = self.operands(op)
        source, result = op.operands[0].type, op.results[0].type
        src, dst = self.type_of(source, op), self.type_of(result, op)
        if self.half_in_f32(result) and not self.half_in_f32(source):
            return self.let(op, f"{dst}({a})")  # rounded to f16 by let
        narrow = isinstance(result, IntegerType) and not result.is_bool and result.width < 32
        if narrow and src in ("f32", "f16"):
            assert isinstance(result, IntegerType)
            bits = f"float_low_bits(f32({a}), {float(1 << result.width)!r})"
            return self.let(op, self.wrapped(result, bits if dst == "u32" else f"bitcast<i32>({bits})"))
        if narrow and source != result and src != "bool":
            return self.let(op, self.wrapped(result, f"{dst}({a})"))
        if dst == src:
            return str(a)
        if dst == "bool":
            zero = "false" if src == "bool" else _zero(src)
            return self.let(op, f"{a} != {zero}")
        if src == "bool":
            return self.let(op, f"select({_zero(dst)}, {_one(dst)}, {a})")
        if held_in_i32(result) and src in ("f32", "f16"):
            # an i64 held in i32 keeps the low 32 bits of the loop dialect's cast (saturate to i64, NaN 0), so
            # uses that wrap are exact; float_low_bits is exact for |t| >= 2**31, where the float's ulp is 2**8
            low = f"bitcast<i32>(float_low_bits(f32({a}), 4294967296.0))"
            return self.let(op, f"select({low}, i32({a}), abs(f32({a})) < 2147483648.0)")
        if dst in ("i32", "u32") and src in ("f32", "f16"):
            return self.let(op, f"select({dst}({a}), {_zero(dst)}, {a} != {a})")
        return self.let(op, f"{dst}({a})")

    def emit_bitcast(self, op: Operation) -> str:
        """``bitcast<T>(a)`` between 32-bit types."""
        (a,) = self.operands(op)
        source, result = op.operands[0].type, op.results[0].type
        if self.half_in_f32(source):
            return self.let(op, f"{self.type_of(result, op)}(half_bits({a}))")  # wrapped to 16 bits by let
        if self.half_in_f32(result):
            return self.let(op, f"half_value(u32({a}) & 0xffffu)")
        return self.let(op, f"bitcast<{self.type_of(result, op)}>({a})")

    def emit_shift(self, op: Operation) -> str:
        """``a << b`` / ``a >> b`` (arithmetic for ``i32``) with the loop dialect's meaning of amounts outside
        ``[0, 32)``: 0, or the sign for a signed ``shr`` (WGSL would take the amount modulo 32)."""
        a, b = self.operands(op)
        t = self.type_of(op.results[0].type, op)
        right = op.name == "loop.shr"
        fill = f"({a} >> 31u)" if right and t == "i32" else _zero(t)
        symbol = ">>" if right else "<<"
        amount = op.operands[1].defining_op()
        if amount is not None and amount.name == "loop.const":
            value = int(amount.attr("value"))
            return self.let(op, f"{a} {symbol} {value}u" if 0 <= value < 32 else fill)
        return self.let(op, f"select({fill}, {a} {symbol} u32({b}), u32({b}) < 32u)")


def _is_bool(t: Type) -> bool:
    return isinstance(t, IntegerType) and t.is_bool


def _zero(wgsl: str) -> str:
    return {"f32": "0.0f", "f16": "0.0h", "i32": "0i", "u32": "0u"}[wgsl]


def _one(wgsl: str) -> str:
    return {"f32": "1.0f", "f16": "1.0h", "i32": "1i", "u32": "1u"}[wgsl]


def _float_literal(value: float, wgsl: str) -> str:
    """A WGSL literal of ``value`` exactly (as its bits for inf, NaN and f32 values that print long)."""
    if wgsl == "f16":
        if math.isfinite(value):
            return f"{value!r}h"
        return f"f16({_float_literal(value, 'f32')})"
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if not math.isfinite(value):
        return f"{NONFINITE_FN}({bits}u)"
    return f"bitcast<f32>({bits}u)"


def compile_shaders(lowered: Operation, target: Target) -> dict[str, Shader]:
    """Every kernel of a lowered module (already mapped to workgroups) as a WGSL shader, by kernel name."""
    emitter = WGSLEmitter(target)
    emitter.emit_module(lowered)
    return emitter.output()


__all__ = ["Shader", "WGSLEmitter", "compile_shaders", "scalar_type", "storage_type"]
