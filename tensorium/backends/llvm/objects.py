"""Object code as one file: a single object, or several bundled as a standard ``ar`` archive.

A cold compile turns each kernel into an object file of its own on the LLVM worker threads, in parallel and
overlapping the emission of the next kernels, instead of code generation of one linked module on one thread
afterwards. Artifacts and the kernel cache still hold one byte string (``kernels.o``): either one object or an
``ar`` archive of several (readable with ``ar t`` and ``objdump -d``), which :func:`unpack_objects` splits again
for the JIT to load together.
"""

from __future__ import annotations

from collections.abc import Sequence
from ctypes import string_at

from llvmlite import binding as llvm
from llvmlite.binding import ffi

from ...errors import TensoriumError

__all__ = ["emit_object_unlocked", "load_objects", "pack_objects", "unpack_objects"]

_MAGIC = b"!<arch>\n"
_HEADER = 60


def pack_objects(objects: Sequence[bytes]) -> bytes:
    """One object as it is; several as an ``ar`` archive of members ``k0.o``, ``k1.o``, ..."""
    if len(objects) == 1:
        return bytes(objects[0])
    parts = [_MAGIC]
    for i, data in enumerate(objects):
        name = f"k{i}.o/".encode()
        header = b"%-16s%-12d%-6d%-6d%-8s%-10d`\n" % (name, 0, 0, 0, b"644", len(data))
        assert len(header) == _HEADER
        parts += [header, data, b"\n" if len(data) % 2 else b""]
    return b"".join(parts)


def unpack_objects(code: bytes) -> list[bytes]:
    """The object files of :func:`pack_objects`' result (a lone object is a list of one)."""
    if not code.startswith(_MAGIC):
        return [code]
    objects, at = [], len(_MAGIC)
    while at < len(code):
        header = code[at : at + _HEADER]
        if len(header) < _HEADER or header[58:60] != b"`\n":
            raise TensoriumError(f"object code: a damaged archive member header at byte {at}")
        size = int(header[48:58])
        start = at + _HEADER
        if start + size > len(code):
            raise TensoriumError(f"object code: archive member at byte {at} runs past the end ({size} bytes)")
        objects.append(code[start : start + size])
        at = start + size + (size % 2)
    return objects


def load_objects(engine: llvm.ExecutionEngine, code: bytes) -> None:
    """Add the object files of ``code`` (one object or an archive) to ``engine`` and finalize it (llvmlite copies
    each object's bytes)."""
    for part in unpack_objects(code):
        engine.add_object_file(llvm.ObjectFileRef.from_data(part))
    engine.finalize_object()


def emit_object_unlocked(machine: llvm.TargetMachine, module: llvm.ModuleRef) -> bytes:
    """``machine.emit_object(module)`` without llvmlite's process-wide lock, for a ``module`` in an LLVM context
    of its own and a ``machine`` used by this thread alone (where LLVM is thread-safe; ctypes releases the GIL),
    so that several threads generate code at once."""
    emit = getattr(ffi.lib.LLVMPY_TargetMachineEmitToMemory, "_cfn", None)
    if emit is None:
        return bytes(machine.emit_object(module))
    with ffi.OutputString() as error:
        buffer = emit(machine, module, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        return string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
