"""The on-disk checkpoint format (version 1): TensorFlow's file names, our own contents.

A checkpoint *prefix* ``p`` names two files (a prefix is not a file itself):

* ``p.data-00000-of-00001``: a 32-byte header (magic ``b"SCKPDATA"``, little-endian uint32
  format version, 4 zero bytes, the 16-byte write id) followed by every array's raw
  little-endian bytes, C order, each starting at a multiple of 8;
* ``p.index``: a JSON object ``{"format": "stagecraft-checkpoint", "version": 1,
  "checksum": crc32, "content": {...}}`` where ``checksum`` is the CRC-32 of ``content``
  dumped with sorted keys and compact separators, and ``content`` holds ``write_id`` (hex, the
  same as in the data header), ``data_file`` (its base name), ``data_size`` (bytes),
  ``tensors`` (``{key: {"dtype", "shape", "offset", "length", "crc32"}}``) and ``document``
  (the caller's JSON: for checkpoints the object graph).

Nothing is ever unpickled: loading reads JSON and raw numbers only. Writes are atomic at every
instant (``write_bundle``): the data goes to a file no index names yet, and renaming the new index
over ``p.index`` commits it, so a crash, an exception or a concurrent writer leaves the previous
checkpoint or the new one, never a mix; the next write sweeps what killed writes left.
"""
from __future__ import annotations

import json
import os
import re
import zlib
from typing import Any, Iterator

import numpy as np

from stagecraft.ir import durable
from stagecraft.ir.dtypes import as_dtype
from stagecraft.ir.errors import DataLossError, NotFoundError
from stagecraft.state.checkpoint.schema import DTYPES as _DTYPES
from stagecraft.state.checkpoint.schema import HEADER as _HEADER
from stagecraft.state.checkpoint.schema import check_index

FORMAT_NAME = "stagecraft-checkpoint"
FORMAT_VERSION = 1
INDEX_SUFFIX = ".index"
DATA_SUFFIX = ".data-00000-of-00001"
_MAGIC = b"SCKPDATA"
_ALIGN = 8


def index_path(prefix: str) -> str:
    """The index file of the checkpoint at ``prefix``.

    >>> index_path("d/ckpt-1"), data_path("d/ckpt-1")
    ('d/ckpt-1.index', 'd/ckpt-1.data-00000-of-00001')
    """
    return os.fspath(prefix) + INDEX_SUFFIX


def data_path(prefix: str) -> str:
    """The data file of the checkpoint at ``prefix`` (see ``index_path``)."""
    return os.fspath(prefix) + DATA_SUFFIX


def bundle_exists(prefix: str) -> bool:
    """Whether a checkpoint index exists at ``prefix``.

    >>> bundle_exists("/nonexistent/ckpt-1")
    False
    """
    return os.path.isfile(index_path(prefix))


def delete_bundle(prefix: str) -> None:
    """Removes the files of the checkpoint at ``prefix`` (those that exist): the index first,
    so that no reader ever sees an index without its data.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "p"); write_bundle(p, {}, {})
    >>> delete_bundle(p); bundle_exists(p), os.listdir(os.path.dirname(p))
    (False, [])
    """
    named = _named_data_file(prefix)
    try:
        os.remove(index_path(prefix))
    except FileNotFoundError:
        pass
    for name in {os.path.basename(data_path(prefix)), named} - {None}:
        try:
            os.remove(os.path.join(os.path.dirname(os.fspath(prefix)), name))
        except FileNotFoundError:
            pass


def write_bundle(prefix: str, document: dict, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` (by key) and the JSON-able ``document`` atomically at ``prefix``.

    The data goes to a file no index names yet (``p.data-00000-of-00001``, or
    ``p.data-<random>-00000-of-00001`` when that name is taken, e.g. by the version being
    overwritten), then the index naming it is renamed over ``p.index``: that one rename commits
    the new version, so ``prefix`` holds the old or the new checkpoint at every instant, and
    concurrent writers of one prefix never mix files. Afterwards the data files no index names
    and the temporaries of killed or failed writes of ``prefix`` are swept (``durable.sweep``).

    >>> import tempfile, os, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> write_bundle(os.path.join(d, "p"), {"note": "hi"}, {"x": np.arange(3, dtype="int32")})
    >>> sorted(os.listdir(d))
    ['p.data-00000-of-00001', 'p.index']
    >>> doc, arrays = read_bundle(os.path.join(d, "p")); doc, arrays["x"].tolist()
    ({'note': 'hi'}, [0, 1, 2])
    >>> write_bundle(os.path.join(d, "p"), {"note": "again"}, {})  # overwrite: a fresh name
    >>> len(os.listdir(d)), read_bundle(os.path.join(d, "p"))[0]
    (2, {'note': 'again'})
    """
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    if not base:
        raise ValueError(f"Checkpoint prefix {prefix!r} ends with a path separator; give a "
                         f"file name prefix such as {os.path.join(prefix, 'ckpt')!r}.")
    os.makedirs(directory, exist_ok=True)
    write_id = os.urandom(16)
    data = durable.create_locked(directory, _data_names(base))
    index = None
    try:
        tensors, size = _write_data(data, write_id, arrays)
        content = {"write_id": write_id.hex(), "data_file": os.path.basename(data.path),
                   "data_size": size, "tensors": tensors, "document": document}
        index = _write_index(directory, base, content)
        os.replace(index.path, index_path(prefix))  # the commit
    except BaseException:
        data.discard()
        if index is not None:
            index.discard()
        raise
    index.close()
    data.close()  # unlocked only now: a sweeper that can lock it sees the committed index
    durable.fsync_directory(directory)
    _sweep(directory, base)


def _data_names(base: str) -> Iterator[str]:
    """Candidate data file names: TensorFlow's, then fresh ones (see ``write_bundle``)."""
    yield base + DATA_SUFFIX
    while True:
        yield f"{base}.data-{os.urandom(8).hex()}-00000-of-00001"


def _named_data_file(prefix: str) -> str | None:
    """The data file name the index at ``prefix`` names; None if there is no readable index."""
    try:
        return read_index(prefix).get("data_file")
    except (NotFoundError, DataLossError, OSError):
        return None


def _sweep(directory: str, base: str) -> None:
    """Deletes the temporaries of killed or failed writes of the prefix ``base`` and its data
    files that the current index does not name (asked again once each candidate is locked)."""
    prefix = os.path.join(directory, base)
    durable.sweep(directory, durable.temp_pattern(base))
    unnamed = re.compile(re.escape(base) + r"\.data-(?:[0-9a-f]{16}-)?00000-of-00001$")
    if os.path.exists(index_path(prefix)) and _named_data_file(prefix) is None:
        return  # an unreadable index: keep every data file for whoever examines it
    durable.sweep(directory, unnamed, keep=lambda name: name == _named_data_file(prefix))


def sweep_numbered(directory: str, name: str) -> None:
    """``write_bundle``'s sweep for every prefix ``{name}-<N>`` of ``directory``: removes the
    temporaries and unnamed data files (e.g. of a checkpoint whose deletion was killed between
    its index and its data) that killed saves of any numbered checkpoint left."""
    numbered = re.compile(r"(\.?)(" + re.escape(name) + r"-[0-9]+)\.(data-|index$|[a-z]+[.-])")
    files: dict[str, list[str]] = {}
    for m in map(numbered.match, _listdir(directory)):
        if m:
            files.setdefault(m.group(2), []).append("temp" if m.group(1) else m.group(3))
    for base, kinds in sorted(files.items()):
        # A checkpoint with its index and one data file needs nothing (and no index read).
        if sorted(kinds) != ["data-", "index"]:
            _sweep(directory, base)


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory or ".")
    except OSError:
        return []


def _write_data(data: "durable.LockedFile", write_id: bytes,
                arrays: dict[str, np.ndarray]) -> tuple[dict, int]:
    fh = data.fh
    tensors = {}
    fh.write(_HEADER.pack(_MAGIC, FORMAT_VERSION, write_id))
    offset = _HEADER.size
    for key in sorted(arrays):
        arr = np.asarray(arrays[key])
        if arr.dtype.name not in _DTYPES:
            raise TypeError(f"Cannot checkpoint {key!r}: dtype {arr.dtype} is not "
                            f"supported (supported: {', '.join(_DTYPES)}).")
        raw = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        pad = -offset % _ALIGN
        fh.write(b"\0" * pad)
        offset += pad
        fh.write(raw)
        tensors[key] = {"dtype": arr.dtype.name, "shape": list(arr.shape),
                        "offset": offset, "length": len(raw),
                        "crc32": zlib.crc32(raw)}
        offset += len(raw)
    data.sync()
    return tensors, offset


def _write_index(directory: str, base: str, content: dict) -> "durable.LockedFile":
    body = {"format": FORMAT_NAME, "version": FORMAT_VERSION,
            "checksum": zlib.crc32(_canonical(content)), "content": content}
    # "format" and "version" first: recognizable
    text = json.dumps(body, separators=(",", ":")) + "\n"
    index = durable.create_locked(directory, durable.temp_names(base, "index"))
    try:
        index.fh.write(text.encode("utf-8"))
        index.sync()
    except BaseException:
        index.discard()
        raise
    return index


def _canonical(content: dict) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")


def read_index(prefix: str) -> dict:
    """The verified ``content`` of the index at ``prefix`` (``document``, ``tensors``, ...).

    Raises ``NotFoundError`` when the index does not exist and ``DataLossError`` when it is
    empty, truncated, corrupted, of another format or of a newer version.

    >>> import tempfile, os, numpy as np
    >>> p = os.path.join(tempfile.mkdtemp(), "p"); write_bundle(p, {}, {"x": np.zeros(2)})
    >>> read_index(p)["tensors"]["x"]["shape"]
    [2]
    """
    path = index_path(prefix)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise NotFoundError(f"Checkpoint index {path!r} does not exist.") from None
    if not raw.strip():
        raise DataLossError(f"Checkpoint index {path!r} is empty (truncated): the write that "
                            f"made it did not finish. Restore an older checkpoint.")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        if raw.lstrip().startswith(b"{") and FORMAT_NAME.encode() in raw[:200]:
            raise DataLossError(f"Checkpoint index {path!r} is truncated or corrupted (invalid "
                                f"JSON: {e}). Restore an older checkpoint.") from None
        raise DataLossError(f"Checkpoint index {path!r} is not a stagecraft checkpoint (wrong "
                            f"format: it is not JSON). TensorFlow's own binary checkpoints "
                            f"cannot be read; save them again with stagecraft.") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT_NAME:
        found = body.get("format") if isinstance(body, dict) else type(body).__name__
        raise DataLossError(f"Checkpoint index {path!r} is not a stagecraft checkpoint (wrong "
                            f"format: {found!r} instead of {FORMAT_NAME!r}).")
    version = body.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise DataLossError(f"Checkpoint index {path!r} has format version {version!r}, but "
                            f"this stagecraft reads versions 1 to {FORMAT_VERSION}; upgrade "
                            f"stagecraft to read it.")
    content = body.get("content")
    if not isinstance(content, dict) or zlib.crc32(_canonical(content)) != body.get("checksum"):
        raise DataLossError(f"Checkpoint index {path!r} is corrupted (checksum mismatch): its "
                            f"contents were changed after it was written.")
    return check_index(content, path)  # every field, before any is used


def read_bundle(prefix: str, keys: list[str] | None = None
                ) -> tuple[dict, dict[str, np.ndarray]]:
    """Reads the checkpoint at ``prefix``: ``(document, {key: array})``, every array checked
    against its CRC-32 (only ``keys`` when given). See ``write_bundle`` for an example."""
    for attempt in range(5):
        content = read_index(prefix)
        tensors = content["tensors"]
        dpath = _data_file_path(prefix, content)
        fh = _open_data(dpath, content)
        if fh is not None:
            break
        # Missing, or not this index's: a concurrent overwrite may have committed a new index
        # and swept (or reused the name of) the data file ours named; read the index again.
        if attempt == 4 or read_index(prefix).get("write_id") == content["write_id"]:
            try:  # not a concurrent write: the checks below say what is wrong
                fh = open(dpath, "rb")
            except FileNotFoundError:
                raise DataLossError(f"Checkpoint data file {dpath!r} is missing; its index "
                                    f"exists, so the checkpoint is incomplete. Restore an older "
                                    f"checkpoint.") from None
            break
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size < content["data_size"]:
            raise DataLossError(f"Checkpoint data file {dpath!r} is truncated: {size} bytes, "
                                f"the index expects {content['data_size']}. Restore an older "
                                f"checkpoint.")
        header = fh.read(_HEADER.size)
        magic, version, write_id = _HEADER.unpack(header)
        if magic != _MAGIC:
            raise DataLossError(f"Checkpoint data file {dpath!r} is not a stagecraft checkpoint "
                                f"data file (wrong format: bad magic bytes {magic!r}).")
        if version > FORMAT_VERSION:
            raise DataLossError(f"Checkpoint data file {dpath!r} has format version {version}, "
                                f"but this stagecraft reads versions 1 to {FORMAT_VERSION}.")
        if write_id.hex() != content["write_id"]:
            raise DataLossError(f"Checkpoint data file {dpath!r} does not belong to its index "
                                f"(another write replaced one of the two files). Restore an "
                                f"older checkpoint.")
        arrays = {}
        for key in (sorted(tensors) if keys is None else keys):
            arrays[key] = _read_tensor(fh, dpath, key, tensors[key])
    return content["document"], arrays


def _open_data(dpath: str, content: dict) -> Any:
    """The data file opened, when it exists and its header carries the index's write id; else
    None."""
    try:
        fh = open(dpath, "rb")
    except FileNotFoundError:
        return None
    header = fh.read(_HEADER.size)
    if len(header) == _HEADER.size and _HEADER.unpack(header)[2].hex() == content["write_id"]:
        fh.seek(0)
        return fh
    fh.close()
    return None


def _data_file_path(prefix: str, content: dict) -> str:
    """The data file the index of ``prefix`` names (a sibling whose name starts with the
    prefix's; indexes older than the fresh data names name TensorFlow's)."""
    name = content.get("data_file", os.path.basename(data_path(prefix)))
    base = os.path.basename(os.fspath(prefix))
    if not isinstance(name, str) or os.path.basename(name) != name or \
            not name.startswith(base + ".data-") or "/" in name or "\\" in name:
        raise DataLossError(f"Checkpoint index {index_path(prefix)!r} field 'data_file' is "
                            f"{name!r}, not a data file name of this prefix (expected "
                            f"'{base}.data-...'). The index is corrupted; restore an older "
                            f"checkpoint.")
    return os.path.join(os.path.dirname(os.fspath(prefix)), name)


def _read_tensor(fh: Any, dpath: str, key: str, meta: dict) -> np.ndarray:
    fh.seek(meta["offset"])
    raw = fh.read(meta["length"])
    if len(raw) != meta["length"]:
        raise DataLossError(f"Checkpoint data file {dpath!r} is truncated: tensor {key!r} "
                            f"needs {meta['length']} bytes at offset {meta['offset']}.")
    if zlib.crc32(raw) != meta["crc32"]:
        raise DataLossError(f"Checkpoint data file {dpath!r} is corrupted (checksum mismatch "
                            f"for tensor {key!r}). Restore an older checkpoint.")
    if meta["dtype"] not in _DTYPES:
        raise DataLossError(f"Checkpoint index for {dpath!r} gives tensor {key!r} the "
                            f"unsupported dtype {meta['dtype']!r}.")
    dtype = as_dtype(meta["dtype"]).np  # (bfloat16 is ml_dtypes', no name NumPy knows)
    arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(meta["shape"])
    return arr.astype(dtype)  # native byte order, an owned and writable copy
