"""Interop both ways with zarr-python and TensorStore: exact values and dtypes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr
import zarr.codecs
import zarr.storage
from conftest import assert_same, reference, temp_files, write_all

SHAPE = (37, 45, 19)
SHARDS = (16, 16, 16)
CHUNKS = (8, 8, 4)

DTYPES = ["uint16", "int32", "float32", "float64", "bool", "complex64", "int8", "uint64"]
CODECS = ["zstd", "blosc", "gzip"]
LOCATIONS = ["start", "end"]


def zarr_compressors(codec: str) -> dict:
    """zarr-python keyword arguments for ``codec`` (zstd: zarr-python's default)."""
    if codec == "zstd":
        return {}
    if codec == "blosc":
        return {"compressors": [zarr.codecs.BloscCodec()]}
    if codec == "gzip":
        return {"compressors": [zarr.codecs.GzipCodec()]}
    if codec is None:
        return {"compressors": []}
    raise AssertionError(codec)


def read_zarr(path: Path) -> np.ndarray:
    return zarr.open_array(str(path), mode="r")[...]


def read_tensorstore(path: Path) -> np.ndarray:
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    return ts.open(spec).result().read().result()


def assert_both_readers(path: Path, expected: np.ndarray) -> None:
    assert_same(read_zarr(path), expected)
    assert_same(read_tensorstore(path), expected)


def fill_chunk_by_chunk(a: sw.Array, data: np.ndarray) -> None:
    stats = write_all(a, data)
    assert all(s["puts"] <= 1 and s["gets"] == 0 for s in stats), stats


# --------------------------------------------------------------------------------------
# (a) created by zarr-python, filled by shardwright, read by zarr-python and TensorStore
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("location", LOCATIONS)
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("dtype", DTYPES[:6])
def test_zarr_python_created_shardwright_filled(tmp_path, dtype, codec, location):
    path = tmp_path / "zp.zarr"
    zarr.create_array(
        store=str(path),
        shape=SHAPE,
        dtype=dtype,
        chunks=CHUNKS,
        shards={"shape": SHARDS, "index_location": location},
        **zarr_compressors(codec),
    )
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["codecs"][0]["configuration"]["index_location"] == location
    a = sw.open(path)
    assert (a.shape, a.chunks, a.shards, a.dtype) == (SHAPE, CHUNKS, SHARDS, np.dtype(dtype))
    ref = reference(SHAPE, dtype, seed=DTYPES.index(dtype) * 10 + CODECS.index(codec))
    fill_chunk_by_chunk(a, ref)
    assert_both_readers(path, ref)
    assert_same(a[...], ref)
    assert temp_files(path) == []


def test_zarr_python_created_with_defaults(tmp_path):
    path = tmp_path / "zp.zarr"
    zarr.create_array(store=str(path), shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    ref = reference(SHAPE, "uint16", seed=1)
    fill_chunk_by_chunk(sw.open(path), ref)
    assert_both_readers(path, ref)


def test_zarr_python_written_with_defaults_rewritten_and_emptied(tmp_path):
    # zarr-python 3.4's defaults: explicit little-endian bytes codecs, zstd, a crc32c
    # index at the end; it validates nested sharding and refuses empty or truncated
    # shards on read. Written by zarr-python, rewritten in part by shardwright, then one
    # shard emptied: shardwright deletes it (never stores an empty shard), so both
    # readers see the fill value there.
    path = tmp_path / "zp.zarr"
    z = zarr.create_array(store=str(path), shape=SHAPE, dtype="int32", chunks=CHUNKS, shards=SHARDS)
    codecs = json.loads((path / "zarr.json").read_text())["codecs"]
    inner = codecs[0]["configuration"]["codecs"]
    assert inner[0]["name"] == "bytes"
    if zarr.__version__.startswith("3.4"):
        assert inner[0]["configuration"] == {"endian": "little"}
    expected = reference(SHAPE, "int32", seed=21)
    z[...] = expected
    a = sw.open(path)
    rewrite_some(a, expected, seed=22)
    with a.write_shard((0, 0, 0)) as w:
        w[w.shard] = 0  # every chunk of the shard: the fill value
    expected[0:16, 0:16, 0:16] = 0
    assert w.stats["deletes"] == 1
    assert not (path / "c" / "0" / "0" / "0").exists()
    assert_both_readers(path, expected)
    assert_same(z[...], expected)


@pytest.mark.parametrize("dtype", ["uint16", "float64", "uint64", "int8"])
def test_zarr_python_created_unsharded(tmp_path, dtype):
    path = tmp_path / "zp.zarr"
    zarr.create_array(store=str(path), shape=(21, 10), dtype=dtype, chunks=(8, 4))
    a = sw.open(path)
    assert a.shards is None
    ref = reference((21, 10), dtype, seed=3)
    fill_chunk_by_chunk(a, ref)
    assert_both_readers(path, ref)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"serializer": zarr.codecs.BytesCodec(endian="big")},
        {"filters": [zarr.codecs.TransposeCodec(order=(2, 0, 1))]},
        {"fill_value": 7},
        {"chunk_key_encoding": {"name": "default", "separator": "."}},
        {"chunk_key_encoding": {"name": "v2", "separator": "."}},
    ],
    ids=["big-endian", "transpose", "fill-value", "dot-separator", "v2-keys"],
)
@pytest.mark.parametrize("sharded", [True, False], ids=["sharded", "unsharded"])
def test_zarr_python_created_other_settings(tmp_path, kwargs, sharded):
    path = tmp_path / "zp.zarr"
    shape = (20, 9, 6)
    zarr.create_array(
        store=str(path),
        shape=shape,
        dtype="uint16",
        chunks=(4, 3, 2),
        shards=(8, 6, 4) if sharded else None,
        **kwargs,
    )
    a = sw.open(path)
    ref = reference(shape, "uint16", seed=4)
    ref[:4, :3, :2] = a.fill_value  # one chunk of the fill value
    fill_chunk_by_chunk(a, ref)
    assert_both_readers(path, ref)
    assert_same(a[...], ref)


# --------------------------------------------------------------------------------------
# (b) created by shardwright, read by zarr-python and TensorStore
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("location", LOCATIONS)
@pytest.mark.parametrize("codec", [*CODECS, None])
@pytest.mark.parametrize("dtype", DTYPES)
def test_shardwright_created(tmp_path, dtype, codec, location):
    path = tmp_path / "sw.zarr"
    a = sw.create(
        path,
        shape=SHAPE,
        dtype=dtype,
        chunks=CHUNKS,
        shards=SHARDS,
        compressor=codec,
        index_location=location,
    )
    ref = reference(SHAPE, dtype, seed=5)
    fill_chunk_by_chunk(a, ref)
    assert_both_readers(path, ref)


@pytest.mark.parametrize("codec", [*CODECS, None])
def test_shardwright_created_unsharded(tmp_path, codec):
    path = tmp_path / "sw.zarr"
    a = sw.create(path, shape=(21, 10, 3), dtype="int32", chunks=(8, 4, 3), compressor=codec)
    ref = reference(a.shape, a.dtype, seed=6)
    fill_chunk_by_chunk(a, ref)
    assert_both_readers(path, ref)


@pytest.mark.parametrize(
    ("dtype", "fill_value"),
    [("float32", np.nan), ("float64", -np.inf), ("int16", -5), ("bool", True), ("complex64", 1j)],
)
def test_shardwright_created_fill_values_and_gaps(tmp_path, dtype, fill_value):
    """Unwritten shards, unwritten inner chunks and chunks of the fill value read back as
    the fill value in every reader."""
    path = tmp_path / "sw.zarr"
    a = sw.create(
        path, shape=SHAPE, dtype=dtype, chunks=CHUNKS, shards=SHARDS, fill_value=fill_value
    )
    expected = np.full(SHAPE, fill_value, dtype=dtype)
    ref = reference(SHAPE, dtype, seed=7)
    for n, shard in enumerate(a.iter_shards()):
        if n % 3 == 2:
            continue  # a shard never written
        with a.write_shard(shard) as w:
            for k, c in enumerate(w.inner_chunks()):
                if k % 4 == 1:
                    continue  # an inner chunk not written
                if k % 4 == 2:
                    w[c] = fill_value  # an inner chunk of the fill value
                    continue
                w[c] = ref[c.slices]
                expected[c.slices] = ref[c.slices]
    assert_both_readers(path, expected)
    assert_same(a[...], expected)


def test_shardwright_partial_rewrites_read_by_both(tmp_path):
    path = tmp_path / "sw.zarr"
    a = sw.create(path, shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    expected = reference(SHAPE, "uint16", seed=8)
    fill_chunk_by_chunk(a, expected)
    new = reference(SHAPE, "uint16", seed=9)
    for shard in a.iter_shards(sw.Domain((10, 10, 10), (10, 10, 5))):
        with a.write_shard(shard) as w:
            for k, c in enumerate(w.inner_chunks()):
                if k % 5 == 0:
                    w[c] = new[c.slices]
                    expected[c.slices] = new[c.slices]
        assert w.stats["gets"] == 1 and w.stats["puts"] == 1
    assert_both_readers(path, expected)


# --------------------------------------------------------------------------------------
# (c) created and fully written by TensorStore / zarr-python, partially rewritten by
#     shardwright
# --------------------------------------------------------------------------------------

TS_COMPRESSORS = {
    "zstd": {"name": "zstd", "configuration": {"level": 3}},
    "gzip": {"name": "gzip", "configuration": {"level": 5}},
    "blosc": {
        "name": "blosc",
        "configuration": {
            "cname": "lz4",
            "clevel": 5,
            "shuffle": "shuffle",
            "typesize": 4,
            "blocksize": 0,
        },
    },
}


def tensorstore_create(path: Path, dtype: str, codec: str, location: str):
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, TS_COMPRESSORS[codec]]
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": str(path)},
        "metadata": {
            "shape": list(SHAPE),
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(SHARDS)}},
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": list(CHUNKS),
                        "codecs": codecs,
                        "index_codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "crc32c"},
                        ],
                        "index_location": location,
                    },
                }
            ],
        },
        "create": True,
    }
    return ts.open(spec).result()


def rewrite_some(a: sw.Array, expected: np.ndarray, seed: int, every: int = 3) -> None:
    """Rewrite every ``every``-th inner chunk of every shard; check one get (of a stored
    shard) and one put."""
    new = reference(a.shape, a.dtype, seed=seed)
    for shard in a.iter_shards():
        stored = a.path.joinpath("c", *map(str, shard.index)).is_file()
        written = 0
        with a.write_shard(shard) as w:
            chunks = list(w.inner_chunks())
            for k, c in enumerate(chunks):
                if k % every == 0:
                    w[c] = new[c.slices]
                    expected[c.slices] = new[c.slices]
                    written += 1
        stats = w.stats
        assert stats["chunks_written"] == written
        assert stats["puts"] == 1, stats
        assert (stats["gets"] == 1) if stored else (stats["gets"] <= 1), stats
        assert stats["chunks_kept"] <= len(chunks) - written
        if not stored:
            assert stats["chunks_kept"] == 0


@pytest.mark.parametrize(
    ("dtype", "codec", "location"),
    [
        *[("int32", codec, loc) for codec, loc in itertools.product(TS_COMPRESSORS, LOCATIONS)],
        ("float64", "zstd", "end"),
        ("uint16", "blosc", "start"),
        ("bool", "gzip", "end"),
    ],
)
def test_tensorstore_written_shardwright_partial_rewrite(tmp_path, dtype, codec, location):
    path = tmp_path / "ts.zarr"
    store = tensorstore_create(path, dtype, codec, location)
    expected = reference(SHAPE, dtype, seed=10)
    store[...].write(expected).result()
    a = sw.open(path)
    assert (a.shape, a.chunks, a.shards, a.dtype) == (SHAPE, CHUNKS, SHARDS, np.dtype(dtype))
    rewrite_some(a, expected, seed=11)
    assert_both_readers(path, expected)
    assert_same(a[...], expected)


def test_tensorstore_written_with_gaps_partial_rewrite(tmp_path):
    """TensorStore omits inner chunks of the fill value; a partial rewrite keeps them
    empty, and a shard TensorStore never wrote is created."""
    path = tmp_path / "ts.zarr"
    store = tensorstore_create(path, "int32", "zstd", "end")
    expected = np.zeros(SHAPE, dtype="int32")
    expected[0:20, 0:20, 0:10] = reference((20, 20, 10), "int32", seed=12)
    store[...].write(expected).result()
    assert not (path / "c" / "2" / "2" / "1").exists()
    a = sw.open(path)
    rewrite_some(a, expected, seed=13, every=4)
    assert_both_readers(path, expected)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("location", LOCATIONS)
def test_zarr_python_written_shardwright_partial_rewrite(tmp_path, codec, location):
    path = tmp_path / "zp.zarr"
    z = zarr.create_array(
        store=str(path),
        shape=SHAPE,
        dtype="float32",
        chunks=CHUNKS,
        shards={"shape": SHARDS, "index_location": location},
        **zarr_compressors(codec),
    )
    expected = reference(SHAPE, "float32", seed=14)
    z[...] = expected
    a = sw.open(path)
    rewrite_some(a, expected, seed=15)
    assert_both_readers(path, expected)
    assert_same(z[...], expected)


def test_zarr_python_written_unsharded_partial(tmp_path):
    path = tmp_path / "zp.zarr"
    z = zarr.create_array(store=str(path), shape=(21, 10), dtype="int16", chunks=(8, 4))
    expected = reference((21, 10), "int16", seed=16)
    z[...] = expected
    a = sw.open(path)
    new = reference((21, 10), "int16", seed=17)
    for shard in a.iter_shards(within=(slice(8, 16), slice(None))):
        with a.write_shard(shard) as w:
            for c in w.inner_chunks():
                w[c] = new[c.slices]
                expected[c.slices] = new[c.slices]
    assert_both_readers(path, expected)


def test_shardwright_and_zarr_python_interleaved(tmp_path):
    """zarr-python writes a region, shardwright rewrites some chunks, zarr-python writes
    again: each sees the other's data."""
    path = tmp_path / "zp.zarr"
    z = zarr.create_array(
        store=str(path), shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS
    )
    expected = np.zeros(SHAPE, dtype="uint16")
    expected[5:30, 5:30, 3:15] = 11
    z[5:30, 5:30, 3:15] = 11
    a = sw.open(z)
    with a.write_shard((1, 1, 0)) as w:
        c = next(w.inner_chunks())
        w[c] = 22
        expected[c.slices] = 22
    z[0:3, 40:45, :] = 33
    expected[0:3, 40:45, :] = 33
    assert_both_readers(path, expected)
    assert_same(a[...], expected)


# --------------------------------------------------------------------------------------
# (d) sw.open(zarr.Array) on a LocalStore, including group members
# --------------------------------------------------------------------------------------


def test_open_zarr_array_at_store_root(tmp_path):
    z = zarr.create_array(
        store=zarr.storage.LocalStore(str(tmp_path / "root.zarr")),
        shape=(20, 9),
        dtype="int32",
        chunks=(4, 3),
        shards=(8, 9),
    )
    a = sw.open(z)
    assert a.path == tmp_path / "root.zarr"
    ref = reference(z.shape, "int32", seed=18)
    fill_chunk_by_chunk(a, ref)
    assert_same(z[...], ref)
    assert_same(read_tensorstore(tmp_path / "root.zarr"), ref)


def test_open_zarr_array_in_group(tmp_path):
    root = tmp_path / "group.zarr"
    g = zarr.open_group(str(root), mode="w")
    arr = g.create_array("arr", shape=(20, 9), dtype="float64", chunks=(4, 3), shards=(8, 9))
    sub = g.create_group("sub").create_array("x", shape=(7,), dtype="uint8", chunks=(2,))
    assert arr.path == "arr" and sub.path == "sub/x"
    a = sw.open(zarr.open_group(str(root), mode="r+")["arr"])
    assert a.path == root / "arr"
    ref = reference((20, 9), "float64", seed=19)
    fill_chunk_by_chunk(a, ref)
    assert_same(g["arr"][...], ref)
    assert_same(read_tensorstore(root / "arr"), ref)
    # a nested member of a group opened from the store root
    s = sw.open(zarr.open_array(store=zarr.storage.LocalStore(str(root)), path="sub/x"))
    assert s.shards is None and s.shape == (7,)
    fill_chunk_by_chunk(s, np.arange(1, 8, dtype="uint8"))
    assert_same(zarr.open_group(str(root))["sub/x"][...], np.arange(1, 8, dtype="uint8"))
    assert_same(read_tensorstore(root / "sub" / "x"), np.arange(1, 8, dtype="uint8"))
    # the group's own metadata is untouched
    assert json.loads((root / "zarr.json").read_text())["node_type"] == "group"


def test_open_group_array_by_path(tmp_path):
    root = tmp_path / "group.zarr"
    g = zarr.open_group(str(root), mode="w")
    g.create_array("arr", shape=(8,), dtype="int8", chunks=(2,), shards=(4,))
    a = sw.open(root / "arr")
    fill_chunk_by_chunk(a, np.arange(8, dtype="int8"))
    assert_same(g["arr"][...], np.arange(8, dtype="int8"))


def test_open_zarr_array_on_a_memory_store_writes_through_the_adapter():
    # Used to be refused ("only LocalStore for now").
    z = zarr.create_array(
        store=zarr.storage.MemoryStore(), shape=(4,), dtype="int8", chunks=(2,), shards=(4,)
    )
    a = sw.open(z)
    a.map_chunks(lambda c: c.index[0] - 3)
    assert z[...].tolist() == [-3, -3, -2, -2]


def test_open_zarr_group_is_not_an_array(tmp_path):
    root = tmp_path / "group.zarr"
    zarr.open_group(str(root), mode="w")
    with pytest.raises(sw.ShardwrightError):
        sw.open(root)
