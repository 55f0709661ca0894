"""Helpers shared by the test modules (import them as ``from support.<module> import ...``:
tests/conftest.py puts tests/ on ``sys.path``).

- ``op_examples``: the op table's examples with stable seeds, inputs for them, one staged
  function applying many examples (one compile per op);
- ``compare``: dtype/shape/value comparisons with each kind of check's tolerances;
- ``gradients``: the ``sum(out * w)`` objective and first/second-order tape gradients;
- ``ptx``: running the PTX type-check scripts of tests/backends/cuda/ in a subprocess.
"""
