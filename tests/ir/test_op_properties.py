"""The op properties that passes, the verifier, the printer and the backends ask by op name come
from two checked tables: the op table (``OpDef``: ``stateful``, ``copying``) and the structural
ops' table (``ir/ops/structural.py``). Nothing else names a set of ops."""
from __future__ import annotations

import importlib

from stagecraft.backends.codegen import inplace_rows
from stagecraft.ir import OPS, printer, serialize
from stagecraft.ir import graph as ir_graph
from stagecraft.ir.ops.structural import STRUCTURAL, StructuralOp


def test_structural_ops_are_not_primitives_and_each_has_a_record():
    assert not set(STRUCTURAL) & set(OPS)
    assert all(isinstance(r, StructuralOp) and r.name == n and r.doc
               for n, r in STRUCTURAL.items())


def test_the_verifier_checks_every_structural_op():
    verifier = importlib.import_module("stagecraft.ir.verify")._Verifier  # ir.verify: the function
    assert sorted(n for n in STRUCTURAL if not hasattr(verifier, f"check_{n}")) == []


def test_the_derived_sets_follow_the_tables():
    assert ir_graph.STRUCTURAL_OPS == frozenset(STRUCTURAL)
    assert ir_graph.STATEFUL_OPS == {"read", "assign", "print", "py_function", "assert"}
    assert ir_graph.CONTROL_OPS == {"cond", "while", "call"}
    assert printer.REGION_LABELS == {"cond": ("then", "else"), "while": ("cond", "body"),
                                     "call": ("fn",)}
    assert set(serialize.STRUCTURAL_ATTRS) == set(STRUCTURAL) - {"py_function"}
    # Kernels that always write a fresh array: BLAS and LAPACK results, im2col convolutions.
    assert inplace_rows.COPYING == {
        "strided_slice", "gather", "matmul", "reduce_sum", "reduce_max", "reduce_min",
        "reduce_mean", "reduce_prod", "conv", "conv_backprop_input", "conv_backprop_filter",
        "cholesky", "eigh", "log_matrix_determinant", "lu", "matrix_determinant",
        "matrix_inverse", "matrix_solve", "qr", "svd", "triangular_solve",
        "eig", "fft", "rfft", "irfft"}


def test_structural_records_are_consistent():
    for name, r in STRUCTURAL.items():
        assert not (r.makes_refs and r.takes_refs), name
        assert len(set(r.attrs)) == len(r.attrs), name
