"""The Python API: unsharded arrays, compressors, index locations, fill values, and
partial shard writes merging with the stored shard."""

from __future__ import annotations

import itertools
import json
import math

import google_crc32c
import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import assert_same, reference, tree_digest, write_all

# --------------------------------------------------------------------------------------
# Unsharded arrays, compressors, index locations, fill values
# --------------------------------------------------------------------------------------


def test_unsharded_array(tmp_path):
    path = tmp_path / "u.zarr"
    a = sw.create(path, shape=(5, 3), dtype="int32", chunks=(2, 2), shards=None)
    assert a.shards is None
    assert a.chunks == (2, 2)
    assert list(a.iter_shards()) == list(a.iter_chunks())
    assert [s.index for s in a.iter_shards()] == [(i, j) for i in range(3) for j in range(2)]
    ref = reference(a.shape, a.dtype, seed=4)
    stats = write_all(a, ref)
    assert [s["puts"] for s in stats] == [1] * 6
    assert all(s["gets"] == 0 for s in stats)
    assert_same(a[...], ref)
    with a.write_shard((2, 1)) as w:
        chunks = list(w.inner_chunks())
        assert chunks == [sw.Domain((4, 2), (1, 1))]
        w[chunks[0]] = 42
    assert a[4, 2] == 42
    assert (path / "c" / "2" / "1").is_file()
    np.testing.assert_array_equal(zarr.open_array(str(path))[...], a[...])


def test_unsharded_fill_value_chunk_removes_it(tmp_path):
    path = tmp_path / "u.zarr"
    a = sw.create(path, shape=(4, 4), dtype="u1", chunks=(2, 2))
    write_all(a, np.ones((4, 4), dtype="u1"))
    with a.write_shard((0, 0)) as w:
        w[next(w.inner_chunks())] = 0
    assert w.stats["chunks_empty"] == 1
    assert not (path / "c" / "0" / "0").exists()
    assert (a[0:2, 0:2] == 0).all() and (a[2:, 2:] == 1).all()


@pytest.mark.parametrize("compressor", ["zstd", "blosc", "gzip", None])
@pytest.mark.parametrize("sharded", [True, False])
def test_every_compressor(tmp_path, compressor, sharded):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path,
        shape=(17, 10),
        dtype="float32",
        chunks=(4, 5),
        shards=(8, 10) if sharded else None,
        compressor=compressor,
    )
    meta = json.loads((path / "zarr.json").read_text())
    chain = meta["codecs"][0]["configuration"]["codecs"] if sharded else meta["codecs"]
    names = [c["name"] for c in chain]
    assert names == ["bytes"] + ([compressor] if compressor else [])
    ref = reference(a.shape, a.dtype, seed=8)
    write_all(a, ref)
    assert_same(a[...], ref)
    assert_same(zarr.open_array(str(path))[...], ref)


def test_compression_actually_compresses(tmp_path):
    sizes = {}
    for compressor in ["zstd", "blosc", "gzip", None]:
        path = tmp_path / f"{compressor}.zarr"
        a = sw.create(
            path,
            shape=(64, 64),
            dtype="u2",
            chunks=(16, 16),
            shards=(64, 64),
            compressor=compressor,
        )
        write_all(a, np.zeros((64, 64), dtype="u2") + np.arange(64, dtype="u2") // 8 + 1)
        sizes[compressor] = (path / "c" / "0" / "0").stat().st_size
    raw = 64 * 64 * 2
    assert sizes[None] >= raw
    for compressor in ["zstd", "blosc", "gzip"]:
        assert sizes[compressor] < raw / 4, sizes


def _read_index(shard: bytes, n_slots: int, location: str) -> list[tuple[int, int]]:
    size = 16 * n_slots + 4
    index = shard[-size:] if location == "end" else shard[:size]
    raw, crc = index[:-4], index[-4:]
    assert google_crc32c.value(raw) == int.from_bytes(crc, "little")
    return [tuple(p) for p in np.frombuffer(raw, dtype="<u8").reshape(n_slots, 2).tolist()]


@pytest.mark.parametrize("location", ["start", "end"])
def test_index_location(tmp_path, location):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8), index_location=location
    )
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["codecs"][0]["configuration"]["index_location"] == location
    ref = reference(a.shape, a.dtype, seed=9)
    with a.write_shard((0, 0)) as w:
        chunks = list(w.inner_chunks())
        for c in chunks[:3]:
            w[c] = ref[c.slices]
        w[chunks[3]] = 0  # empty slot
    ref[4:8, 4:8] = 0
    assert_same(a[...], ref)
    assert_same(zarr.open_array(str(path))[...], ref)
    shard = (path / "c" / "0" / "0").read_bytes()
    entries = _read_index(shard, 4, location)
    index_size = 16 * 4 + 4
    data_start, data_stop = (
        (index_size, len(shard))
        if location == "start"
        else (
            0,
            len(shard) - index_size,
        )
    )
    assert entries[3] == (2**64 - 1, 2**64 - 1)
    stored = entries[:3]
    # inside the data area, in C order, not overlapping
    assert stored[0][0] == data_start
    for (o1, n1), (o2, _) in itertools.pairwise(stored):
        assert o1 + n1 <= o2
    assert stored[-1][0] + stored[-1][1] <= data_stop
    assert all(nbytes > 0 for _, nbytes in stored)


def test_index_location_invalid(tmp_path):
    with pytest.raises(ValueError):
        sw.create(
            tmp_path / "a", shape=(4,), dtype="u1", chunks=(2,), shards=(4,), index_location="mid"
        )


@pytest.mark.parametrize(
    ("dtype", "fill_value"),
    [
        ("uint16", 0),
        ("uint16", 65535),
        ("int8", -128),
        ("float32", math.nan),
        ("float64", math.nan),
        ("float32", -math.inf),
        ("float64", 2.5),
        ("complex64", 1 - 1j),
        ("bool", True),
        ("bool", False),
    ],
)
def test_fill_values(tmp_path, dtype, fill_value):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path, shape=(6, 5), dtype=dtype, chunks=(2, 2), shards=(4, 4), fill_value=fill_value
    )
    expected_fill = np.array(fill_value, dtype=dtype)
    assert a.fill_value.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.fill_value, expected_fill)
    full = np.full(a.shape, fill_value, dtype=dtype)
    assert_same(a[...], full)
    # write one chunk with data, one with the fill value (not stored)
    with a.write_shard((0, 0)) as w:
        chunks = list(w.inner_chunks())
        data = reference(chunks[0].shape, a.dtype, seed=12)
        data.flat[0] = (not fill_value) if dtype == "bool" else (2 if fill_value == 1 else 1)
        w[chunks[0]] = data
        w[chunks[1]] = np.full(chunks[1].shape, fill_value, dtype=dtype)
    assert w.stats["chunks_empty"] == 1
    assert w.stats["chunks_written"] == 2
    full[chunks[0].slices] = data
    assert_same(a[...], full)
    assert_same(sw.open(path)[...], full)
    assert_same(zarr.open_array(str(path))[...], full)


def test_nan_fill_value_chunks_of_nan_are_empty(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(4,), dtype="float32", chunks=(2,), shards=(4,), fill_value=math.nan)
    assert np.isnan(a.fill_value)
    with a.write_shard((0,)) as w:
        w[sw.Domain((0,), (2,))] = math.nan
        w[sw.Domain((2,), (2,))] = np.full(2, np.nan, dtype="float32")
    assert w.stats["chunks_empty"] == 2
    assert w.stats["puts"] == 0
    assert not (path / "c" / "0").exists()
    assert np.isnan(a[...]).all()


# --------------------------------------------------------------------------------------
# Partial shard writes: merging with the stored shard
# --------------------------------------------------------------------------------------


def test_partial_write_keeps_other_chunks(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(10, 7), dtype="u2", chunks=(4, 4), shards=(8, 8))
    ref = reference(a.shape, a.dtype, seed=13)
    write_all(a, ref)
    old_size = (path / "c" / "0" / "0").stat().st_size
    with a.write_shard((0, 0)) as w:
        c = list(w.inner_chunks())[2]
        w[c] = np.full(c.shape, 7, dtype="u2")
    stats = w.stats
    assert stats["gets"] == 1
    assert stats["puts"] == 1
    assert stats["chunks_written"] == 1
    assert stats["chunks_kept"] == 3
    assert stats["bytes_read"] == old_size
    ref[c.slices] = 7
    assert_same(a[...], ref)
    assert_same(zarr.open_array(str(path))[...], ref)


def test_partial_write_of_a_new_shard_leaves_fill(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr", shape=(8, 8), dtype="i2", chunks=(4, 4), shards=(8, 8), fill_value=-1
    )
    with a.write_shard((0, 0)) as w:
        w[sw.Domain((4, 0), (4, 4))] = 3
    assert w.stats["puts"] == 1
    assert w.stats["gets"] <= 1
    expected = np.full((8, 8), -1, dtype="i2")
    expected[4:8, 0:4] = 3
    assert_same(a[...], expected)


def test_partial_write_emptying_a_chunk(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    ref = reference(a.shape, a.dtype, seed=14) | 1
    write_all(a, ref)
    with a.write_shard((0, 0)) as w:
        w[sw.Domain((0, 4), (4, 4))] = 0
    assert w.stats["chunks_kept"] == 3
    assert w.stats["chunks_empty"] == 1
    ref[0:4, 4:8] = 0
    assert_same(a[...], ref)
    entries = _read_index((path / "c" / "0" / "0").read_bytes(), 4, "end")
    assert entries[1] == (2**64 - 1, 2**64 - 1)


def test_writing_only_fill_values_deletes_the_shard(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    write_all(a, reference(a.shape, a.dtype) | 1)
    assert (path / "c" / "0" / "0").exists()
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 0
    assert w.stats["chunks_empty"] == 4
    assert w.stats["puts"] == 0
    assert not (path / "c" / "0" / "0").exists()
    assert (a[...] == 0).all()


def test_empty_writer_does_no_io(small, tmp_path):
    before = tree_digest(tmp_path / "small.zarr")
    with small.write_shard((0, 0)) as w:
        pass
    assert w.stats["puts"] == 0 and w.stats["gets"] == 0 and w.stats["chunks_written"] == 0
    assert tree_digest(tmp_path / "small.zarr") == before


def test_full_overwrite_of_existing_shard_reads_nothing(small):
    write_all(small, reference(small.shape, small.dtype))
    stats = write_all(small, reference(small.shape, small.dtype, seed=1))
    assert all(s["gets"] == 0 and s["puts"] == 1 for s in stats)
    assert_same(small[...], reference(small.shape, small.dtype, seed=1))


@pytest.mark.parametrize("url", ["ftp://bkt/x.zarr", "sftp://b/a.zarr", "webdav://c/a"])
def test_a_url_is_never_taken_for_a_local_path(tmp_path, monkeypatch, url):
    # Used to say "no Zarr v3 array at 's3:/bkt/x.zarr'" (and create made a folder "s3:").
    monkeypatch.chdir(tmp_path)
    scheme = url.split(":")[0]
    with pytest.raises(sw.UnsupportedError, match=f"'{scheme}://' URLs are not supported"):
        sw.open(url)
    with pytest.raises(sw.UnsupportedError, match=f"'{scheme}://' URLs"):
        sw.create(url, shape=(4,), dtype="uint8", chunks=(2,))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["s3://bkt/x.zarr", "gs://b/a.zarr", "az://c/a"])
def test_object_store_urls_go_to_the_object_store_with_their_options_checked(
    tmp_path, monkeypatch, url
):
    # A misspelt option is refused (object_store would ignore it and use the environment);
    # nothing is made locally.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sw.UnsupportedError, match='unknown storage option "endpiont"'):
        sw.open(url, storage_options={"endpiont": "http://127.0.0.1:1"})
    with pytest.raises(sw.UnsupportedError, match="unknown storage option"):
        sw.create(url, shape=(4,), dtype="u1", chunks=(2,), storage_options={"endpiont": "x"})
    assert list(tmp_path.iterdir()) == []


def test_storage_options_are_only_for_urls(tmp_path):
    with pytest.raises(TypeError, match="storage_options are for object-store URLs"):
        sw.create(
            tmp_path / "a.zarr",
            shape=(4,),
            dtype="u1",
            chunks=(2,),
            storage_options={"region": "x"},
        )
    assert not (tmp_path / "a.zarr").exists()


def test_memory_urls_share_one_store_per_process():
    a = sw.create(
        "memory:///storage-test/a.zarr",
        shape=(6,),
        dtype="i2",
        chunks=(2,),
        shards=(4,),
        overwrite=True,
    )
    a.map_chunks(lambda c: c.index[0] + 1)
    b = sw.open("memory:///storage-test/a.zarr")
    assert b[...].tolist() == [1, 1, 2, 2, 3, 3]
    assert b.url == "memory:///storage-test/a.zarr" and b.path == b.url
    with pytest.raises(sw.ShardwrightError, match="already exists"):
        sw.create("memory:///storage-test/a.zarr", shape=(2,), dtype="u1", chunks=(2,))
    c = sw.create(
        "memory:///storage-test/a.zarr", shape=(2,), dtype="u1", chunks=(2,), overwrite=True
    )
    assert c[...].tolist() == [0, 0]
    with pytest.raises(sw.ArrayNotFoundError, match=r"memory:///storage-test/none\.zarr"):
        sw.open("memory:///storage-test/none.zarr")
    with pytest.raises(sw.UnsupportedError, match="take no options"):
        sw.open("memory:///storage-test/a.zarr", storage_options={"region": "x"})


def test_a_file_url_is_a_local_path(tmp_path):
    a = sw.create(f"file://{tmp_path}/a%20b.zarr", shape=(4,), dtype="uint8", chunks=(2,))
    a.map_chunks(lambda c: 3)
    assert (tmp_path / "a b.zarr" / "zarr.json").is_file()
    assert sw.open(f"file://{tmp_path}/a%20b.zarr")[...].tolist() == [3, 3, 3, 3]
