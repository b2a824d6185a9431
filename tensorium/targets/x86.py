"""What x86 CPUs have: LLVM feature sets of the psABI levels and of named CPUs, and the host's caches.

LLVM knows the features of every CPU name, but llvmlite exposes them only for the host. Named CPUs are
therefore described here by the ISA level they implement (x86-64-v1..v4) plus the few extensions the
compiler cares about (integer dot products, bf16); a name LLVM knows that is missing from the table is
described by compiling a probe for it (:func:`probe_features`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

LEVELS: dict[str, tuple[str, ...]] = {
    "x86-64": ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2"),
}
LEVELS["x86-64-v2"] = (*LEVELS["x86-64"], "cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")
LEVELS["x86-64-v3"] = (*LEVELS["x86-64-v2"], "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
LEVELS["x86-64-v4"] = (*LEVELS["x86-64-v3"], "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")

_VNNI512 = ("avx512vnni",)
_BF16 = ("avx512bf16",)
_VBMI = ("avx512vbmi",)
"""``vpermb`` (byte table lookups: the k-bit GEMV's lut path)."""
CPUS: dict[str, tuple[str, ...]] = {
    "nehalem": LEVELS["x86-64-v2"],
    "westmere": LEVELS["x86-64-v2"],
    "sandybridge": (*LEVELS["x86-64-v2"], "avx", "xsave"),
    "ivybridge": (*LEVELS["x86-64-v2"], "avx", "xsave", "f16c"),
    "haswell": LEVELS["x86-64-v3"],
    "broadwell": LEVELS["x86-64-v3"],
    "skylake": LEVELS["x86-64-v3"],
    "alderlake": (*LEVELS["x86-64-v3"], "avxvnni"),
    "raptorlake": (*LEVELS["x86-64-v3"], "avxvnni"),
    "meteorlake": (*LEVELS["x86-64-v3"], "avxvnni"),
    "znver1": LEVELS["x86-64-v3"],
    "znver2": LEVELS["x86-64-v3"],
    "znver3": LEVELS["x86-64-v3"],
    "skylake-avx512": LEVELS["x86-64-v4"],
    "skx": LEVELS["x86-64-v4"],
    "cascadelake": (*LEVELS["x86-64-v4"], *_VNNI512),
    "cooperlake": (*LEVELS["x86-64-v4"], *_VNNI512, *_BF16),
    "icelake-client": (*LEVELS["x86-64-v4"], *_VNNI512, *_VBMI),
    "icelake-server": (*LEVELS["x86-64-v4"], *_VNNI512, *_VBMI),
    "tigerlake": (*LEVELS["x86-64-v4"], *_VNNI512, *_VBMI),
    "sapphirerapids": (*LEVELS["x86-64-v4"], *_VNNI512, *_BF16, *_VBMI, "avxvnni"),
    "emeraldrapids": (*LEVELS["x86-64-v4"], *_VNNI512, *_BF16, *_VBMI, "avxvnni"),
    "graniterapids": (*LEVELS["x86-64-v4"], *_VNNI512, *_BF16, *_VBMI, "avxvnni"),
    "znver4": (*LEVELS["x86-64-v4"], *_VNNI512, *_BF16, *_VBMI),
    "znver5": (*LEVELS["x86-64-v4"], *_VNNI512, *_BF16, *_VBMI, "avxvnni"),
    **LEVELS,
}
"""Enabled LLVM features of named x86 CPUs (the subset the compiler reads, never more than the CPU has)."""

HARDWARE_PREFETCH_FROM_BITS: dict[str, int] = {"znver4": 4}
"""CPUs whose hardware prefetchers alone keep the k-bit GEMV (``qgemv``) fed from this many bits per code up,
where the kernel's software prefetches only cost: on Zen 4 (4096 x 4096, 48 weight sets, 2 threads) k = 4..8
ran 4-30% faster without them and k = 2 14% slower, k = 3 the same either way (benchmarks/RESULTS.md, "Stop
32"). Every other CPU prefetches at every width (Emerald Rapids lost a third of its bandwidth without)."""


def software_prefetch_pays(cpu: str, bits: int) -> bool:
    """Whether the ``qgemv`` kernel's default asks ``cpu`` (an LLVM CPU name) to prefetch its ``bits``-bit weights
    (:data:`HARDWARE_PREFETCH_FROM_BITS`)."""
    return bits < HARDWARE_PREFETCH_FROM_BITS.get(cpu, 9)


DEFAULT_CACHES = {"x86-64-v4": (48 << 10, 1 << 20, 32 << 20), "default": (32 << 10, 512 << 10, 16 << 20)}
"""L1d, L2 and L3 bytes assumed for a CPU the OS cannot be asked about (a cross-compilation target)."""


_PROBE = r"""
import sys
from llvmlite import binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
module = llvm.parse_assembly(
    'define <16 x float> @probe(<16 x float> %a, <16 x float> %b, <16 x float> %c) '
    '"min-legal-vector-width"="512" "prefer-vector-width"="512" {\n'
    '  %r = call <16 x float> @llvm.fma.v16f32(<16 x float> %a, <16 x float> %b, <16 x float> %c)\n'
    '  ret <16 x float> %r\n}\n'
    'declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)\n'
)
machine = llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu=sys.argv[2])
sys.stdout.write(machine.emit_assembly(module))
"""


def probe_features(triple: str, cpu: str) -> tuple[str, ...] | None:
    """The vector features of ``cpu`` found by compiling a probe for it; None when LLVM does not know it.

    A ``<16 x float>`` multiply-add is compiled for the CPU: the widest registers in its assembly give the
    vector extension (zmm: AVX-512, ymm: AVX, xmm: SSE), ``vfmadd`` says FMA. The probe runs in a child
    process, since LLVM reports an unknown CPU name only on its standard error (and may then exit).
    """
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, triple, cpu], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0 or "not a recognized processor" in done.stderr:
        return None
    asm = done.stdout
    if "%zmm" in asm:
        features = LEVELS["x86-64-v4"]
    elif "%ymm" in asm:
        features = (*LEVELS["x86-64-v2"], "avx", "avx2")
    else:
        features = LEVELS["x86-64"]
    fma = "vfmadd" in asm
    return tuple(f for f in features if f != "fma") + (("fma",) if fma else ())


def host_caches() -> tuple[int, int, int] | None:
    """L1d, L2 and L3 bytes of this machine from Linux's sysfs; None where it does not say."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    found: dict[int, int] = {}
    try:
        for index in sorted(root.glob("index*")):
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            if kind == "Instruction":
                continue
            found[level] = _size((index / "size").read_text().strip())
    except (OSError, ValueError):
        return None
    if 1 not in found or 2 not in found:
        return None
    return found[1], found[2], found.get(3, found[2])


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([KMG]?)", text)
    if m is None:
        raise ValueError(text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]
