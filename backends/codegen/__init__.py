"""What the two Numba code generators (``numba_cpu`` and the staged ``numba_cuda``) share:
the source emitter base (:mod:`.source_emitter`: parameters, slots, regions, IR comments), the
namer and line writer with typed literals (:mod:`.source`), the scalar expressions of the
elementwise ops (:mod:`.scalar_ops`), the fusion policy (:mod:`.fusion`), which loop buffers
may be written in place (:mod:`.inplace_rows`), canonical kernel texts (:mod:`.canonical`) and
the registry each backend keeps its one table of lowerings in (:mod:`.lowering`).

A backend imports these, never another backend's modules.
"""
