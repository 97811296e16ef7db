"""Helpers for the merge, concurrency, crash, corruption and transaction tests: the shard
byte format parsed independently of the library, CRC-32C, and arrays written by
shardwright, zarr-python or TensorStore.

A shard with the usual index codecs (``bytes`` little-endian + ``crc32c``) ends (or, with
``index_location="start"``, begins) with ``n_slots`` pairs of little-endian u64
``(offset, nbytes)`` followed by the CRC-32C of those pairs, little-endian.
``(2**64 - 1, 2**64 - 1)`` marks an empty slot.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import shardwright as sw

EMPTY = (2**64 - 1, 2**64 - 1)
PRODUCERS = ("shardwright", "zarr", "tensorstore")

try:  # pragma: no cover - whichever is installed
    import google_crc32c as _gcrc

    def crc32c(data: bytes) -> int:
        """CRC-32C (Castagnoli) of ``data``."""
        return int(_gcrc.value(bytes(data)))

except ImportError:  # pragma: no cover
    try:
        import crc32c as _crc

        def crc32c(data: bytes) -> int:
            """CRC-32C (Castagnoli) of ``data``."""
            return int(_crc.crc32c(bytes(data)))

    except ImportError:
        _TABLE = []
        for _n in range(256):
            _c = _n
            for _ in range(8):
                _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
            _TABLE.append(_c)

        def crc32c(data: bytes) -> int:
            """CRC-32C (Castagnoli) of ``data``, in pure Python."""
            crc = 0xFFFFFFFF
            for byte in bytes(data):
                crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
            return crc ^ 0xFFFFFFFF


def _crc32c_pure(data: bytes) -> int:
    """The pure-Python CRC-32C, used to cross-check whichever implementation is active."""
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def index_nbytes(n_slots: int) -> int:
    """Size of an encoded shard index of ``n_slots`` slots (pairs + checksum)."""
    return n_slots * 16 + 4


def split_index(shard: bytes, n_slots: int, location: str = "end") -> tuple[bytes, bytes]:
    """The encoded index (pairs + crc) of ``shard``, and the rest."""
    size = index_nbytes(n_slots)
    if location == "start":
        return shard[:size], shard[size:]
    return shard[-size:], shard[:-size]


def read_index(
    shard: bytes, n_slots: int, location: str = "end", check: bool = True
) -> list[tuple[int, int]]:
    """The ``(offset, nbytes)`` pairs of a stored shard, checking the CRC-32C."""
    index, _ = split_index(shard, n_slots, location)
    pairs, crc = index[:-4], struct.unpack("<I", index[-4:])[0]
    if check:
        assert crc32c(pairs) == crc, "index checksum mismatch"
    return [struct.unpack_from("<QQ", pairs, 16 * i) for i in range(n_slots)]


def encode_index(entries: Sequence[tuple[int, int]]) -> bytes:
    """An encoded index for ``entries`` with a correct CRC-32C."""
    pairs = b"".join(struct.pack("<QQ", o, n) for o, n in entries)
    return pairs + struct.pack("<I", crc32c(pairs))


def replace_index(shard: bytes, entries: Sequence[tuple[int, int]], location: str = "end") -> bytes:
    """``shard`` with its index replaced by one for ``entries`` (valid checksum)."""
    size = index_nbytes(len(entries))
    new = encode_index(entries)
    if location == "start":
        return new + shard[size:]
    return shard[:-size] + new


def chunk_bytes(shard: bytes, n_slots: int, location: str = "end") -> list[bytes | None]:
    """The encoded bytes of every slot's inner chunk (``None``: empty slot)."""
    out: list[bytes | None] = []
    for offset, nbytes in read_index(shard, n_slots, location):
        if (offset, nbytes) == EMPTY:
            out.append(None)
        else:
            assert offset + nbytes <= len(shard)
            out.append(shard[offset : offset + nbytes])
    return out


def chunks_per_shard(array: sw.Array) -> tuple[int, ...]:
    """Inner chunks along each axis of a (full) shard."""
    return tuple(s // c for s, c in zip(array.shards, array.chunks))


def n_slots(array: sw.Array) -> int:
    """Inner chunk slots per shard (including slots outside the array at its edges)."""
    return math.prod(chunks_per_shard(array))


def slot_of(array: sw.Array, chunk: sw.Domain) -> int:
    """The C-order slot of ``chunk`` (an inner chunk) within its shard."""
    cps = chunks_per_shard(array)
    slot = 0
    for o, c, n in zip(chunk.origin, array.chunks, cps):
        slot = slot * n + (o // c) % n
    return slot


def shard_path(array: sw.Array, shard: sw.Domain) -> Path:
    """The file of ``shard`` (default chunk key encoding, ``/`` separator)."""
    return array.path.joinpath("c", *(str(i) for i in shard.index))


def shard_key(shard: sw.Domain | Sequence[int]) -> str:
    """The storage key of a shard, relative to the array: ``c/i/j/k``."""
    index = shard.index if isinstance(shard, sw.Domain) else tuple(shard)
    return "c/" + "/".join(str(i) for i in index)


def codecs_json(chunks: Sequence[int], index_location: str = "end", level: int = 3) -> list[dict]:
    """The ``codecs`` of a sharded array with zstd at ``level``, as all three write it."""
    return [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": list(chunks),
                "codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "zstd", "configuration": {"level": level, "checksum": False}},
                ],
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": index_location,
            },
        }
    ]


def ts_spec(path: Path | str, **extra) -> dict:
    """A TensorStore spec of the zarr3 array at ``path``."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    spec.update(extra)
    return spec


def make_array(
    producer: str,
    path: Path,
    data: np.ndarray,
    chunks: Sequence[int],
    shards: Sequence[int],
    index_location: str = "end",
    fill_value=0,
    level: int = 3,
) -> sw.Array:
    """Create an array holding ``data`` at ``path`` with ``producer`` (its metadata and
    every shard written by it) and open it with shardwright."""
    if producer == "shardwright":
        a = sw.create(
            path,
            shape=data.shape,
            dtype=data.dtype,
            chunks=chunks,
            shards=shards,
            fill_value=fill_value,
            compression_level=level,
            index_location=index_location,
        )
        for shard in a.iter_shards():
            with a.write_shard(shard) as w:
                for chunk in w.inner_chunks():
                    w[chunk] = data[chunk.slices]
    elif producer == "zarr":
        import zarr

        z = zarr.create_array(
            str(path),
            shape=data.shape,
            dtype=data.dtype,
            chunks=tuple(chunks),
            shards={"shape": tuple(shards), "index_location": index_location},
            compressors=zarr.codecs.ZstdCodec(level=level),
            fill_value=fill_value,
        )
        z[...] = data
    elif producer == "tensorstore":
        import tensorstore as ts

        metadata = {
            "shape": list(data.shape),
            "data_type": data.dtype.name,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shards)}},
            "chunk_key_encoding": {"name": "default"},
            "fill_value": fill_value.item() if hasattr(fill_value, "item") else fill_value,
            "codecs": codecs_json(chunks, index_location, level),
        }
        t = ts.open(ts_spec(path, metadata=metadata, create=True)).result()
        t[...] = data
    else:  # pragma: no cover
        raise AssertionError(producer)
    meta = json.loads((Path(path) / "zarr.json").read_text())
    assert meta["codecs"][0]["configuration"].get("index_location", "end") == index_location
    return sw.open(path)


def read_zarr(path: Path | str, key=Ellipsis) -> np.ndarray:
    """``key`` of the array at ``path`` read by zarr-python (a fresh handle)."""
    import zarr

    return np.asarray(zarr.open_array(str(path), mode="r")[key])


def read_ts(path: Path | str) -> np.ndarray:
    """The whole array at ``path`` read by TensorStore (a fresh handle, no cache)."""
    import tensorstore as ts

    t = ts.open(
        ts_spec(path, open=True), context=ts.Context({"cache_pool": {"total_bytes_limit": 0}})
    )
    return np.asarray(t.result().read().result())


def tree_bytes(root: Path | str) -> dict[str, bytes]:
    """Every file under ``root`` (relative path) mapped to its bytes."""
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            p = Path(folder) / name
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def temp_leftovers(root: Path | str) -> list[Path]:
    """Temporary files of the filesystem store left under ``root``."""
    return sorted(p for p in Path(root).rglob("*") if p.name.endswith(".shardwright-tmp"))
