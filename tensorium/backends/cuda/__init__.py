"""The CUDA backend: PTX through LLVM's NVPTX target (:mod:`.ptx`, :mod:`.emitter`) and the executable that
runs it through the CUDA driver API (:mod:`.executable`); see docs/cuda_backend.md."""
