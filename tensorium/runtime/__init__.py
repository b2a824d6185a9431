"""The target-neutral runtime: what runs and stores a compiled model, whatever machine it was compiled for.

- :mod:`~tensorium.runtime.executable`: the executable protocol every target's compiled form implements
  (run, peak_bytes, to_files / from_files, its target and launch plan);
- :mod:`~tensorium.runtime.memory`: the memory plan (which slot each intermediate buffer lives in);
- :mod:`~tensorium.runtime.kinds`: the executable class of each target kind that compiles;
- :mod:`~tensorium.runtime.artifact`: the artifact folder (IR, ``.npy`` constants, metadata, executable);
- :mod:`~tensorium.runtime.cache`: the in-memory and on-disk compile cache of artifacts.

The launch plan itself (steps, views, launch grids) is :mod:`tensorium.lowering.plan`, where it is made.
``executable`` and ``memory`` are contracts the backends implement and sit below them; ``kinds``,
``artifact`` and ``cache`` use the backends and sit above them (tests/test_imports.py).
"""
