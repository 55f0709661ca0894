"""Generated code remembered by graph: a graph compiled before (in any process) skips code
generation. The entry, keyed by a hash of the graph's text (types, attributes, constants'
digests and source locations: everything the generator reads), the backend's sources and the
versions, holds the generated source and what the executable needs besides it (``plan_<key>.
json``, constants in ``plan_<key>.npz``, never pickled), next to the generated modules in the
disk cache. Graphs with a ``py_function`` are not remembered (their callables live in the
process). Both files are sealed with their SHA-256 (``numba_cache.write_verified``), checked
before they are parsed, and the metadata records the constants' digest too: a damaged entry is
deleted, regenerated and rewritten, with one warning.
"""
from __future__ import annotations

import hashlib
import io
import json
import pathlib

import numpy as np

from stagecraft.backends import numba_cache
from stagecraft.backends.numba_cpu.codegen import Generated, generate
from stagecraft.ir.graph import Graph

_FORMAT = "stagecraft.numba_plan/2"  # 2: sealed files


def generated(graph: Graph, library: str) -> Generated:
    """``generate(graph)``, read back from the disk cache when this graph was generated before.

    >>> import os, tempfile, unittest.mock
    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("double")
    >>> x = b.param(TensorType(dtypes.float32, (2,)), "x")
    >>> (y,) = b.add("add", [x, x], [x.type])
    >>> g = b.build([y])
    >>> with unittest.mock.patch.dict(os.environ, STAGECRAFT_CACHE_DIR=tempfile.mkdtemp()):
    ...     first = generated(g, "lib")
    ...     with unittest.mock.patch(__name__ + ".generate", side_effect=AssertionError):
    ...         again = generated(g, "lib")   # from the disk: no code generation
    >>> again.source == first.source, again.param_indices == first.param_indices
    (True, True)
    """
    key = hashlib.sha256("\0".join((graph.to_text(locs=True), library, _FORMAT,
                                    numba_cache.VERSION)).encode()).hexdigest()
    base = numba_cache.cache_dir() / f"plan_{key}"
    meta, arrays = base.with_suffix(".json"), base.with_suffix(".npz")
    try:
        gen = _read(meta, arrays)
    except (OSError, ValueError, KeyError, TypeError) as e:  # verified, yet not a plan
        numba_cache.discard(meta, f"code plan; {type(e).__name__}: {e}", also=[arrays])
        gen = None
    if gen is not None:
        return gen
    gen = generate(graph)
    if not gen.host_fns:
        _write(gen, meta, arrays)
    return gen


def _read(meta: pathlib.Path, arrays: pathlib.Path) -> Generated | None:
    """The plan stored at ``meta`` (and ``arrays``); None when absent or damaged (deleted, with
    one warning, by ``read_verified``)."""
    text = numba_cache.read_verified(meta)
    if text is None:
        return None
    doc = json.loads(text.decode("utf-8"))
    if doc["format"] != _FORMAT:
        raise ValueError(f"format {doc['format']!r}, expected {_FORMAT!r}")
    consts: tuple = ()
    if doc["num_consts"]:
        data = numba_cache.read_verified(arrays)
        if data is None or hashlib.sha256(data).hexdigest() != doc["consts_sha256"]:
            if data is not None:  # intact, but not the constants this plan was written with
                numba_cache.discard(arrays, "the constants of another code plan")
            meta.unlink(missing_ok=True)
            return None
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            consts = tuple(z[f"c{i}"] for i in range(doc["num_consts"]))
    return Generated(doc["source"], tuple(doc["param_indices"]), consts,
                     tuple(doc["assigned"]), (), int(doc["num_results"]))


def _write(gen: Generated, meta: pathlib.Path, arrays: pathlib.Path) -> None:
    consts_sha256 = None
    if gen.consts:
        buf = io.BytesIO()
        np.savez(buf, **{f"c{i}": c for i, c in enumerate(gen.consts)})
        numba_cache.write_verified(arrays, buf.getvalue())
        consts_sha256 = hashlib.sha256(buf.getvalue()).hexdigest()
    doc = {"format": _FORMAT, "source": gen.source, "param_indices": list(gen.param_indices),
           "assigned": list(gen.assigned), "num_results": gen.num_results,
           "num_consts": len(gen.consts), "consts_sha256": consts_sha256}
    # The metadata last: a reader that finds it finds the constants too.
    numba_cache.write_verified(meta, json.dumps(doc).encode("utf-8"))
