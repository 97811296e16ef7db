"""The Python API: reading (a[key] against numpy) and corrupt shards."""

from __future__ import annotations

from pathlib import Path

import google_crc32c
import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same, reference, temp_files, tree_digest, write_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# --------------------------------------------------------------------------------------
# Reading: a[key] against numpy
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def readback(tmp_path_factory):
    path = tmp_path_factory.mktemp("read") / "r.zarr"
    a = sw.create(path, shape=(13, 9, 6), dtype="int32", chunks=(4, 3, 2), shards=(8, 6, 4))
    ref = reference(a.shape, a.dtype, seed=7)
    write_all(a, ref)
    return a, ref


INDEX_KEYS = [
    ...,
    (...,),
    (),
    0,
    -1,
    12,
    -13,
    (3, 0, 5),
    (-1, -1, -1),
    (3, slice(0, 8), slice(None)),
    (slice(None), 4),
    (..., 2),
    (1, ..., -2),
    (slice(2, 11, 3), ..., slice(None, None, 2)),
    (slice(None, None, -1),),
    (slice(-2, 1, -3), slice(7, None, -2), slice(None, None, -5)),
    (slice(-100, 100), slice(5, 5), slice(None)),
    (slice(20, 30),),
    (slice(None), slice(8, 2)),
    (slice(-3, None), slice(None, -7)),
    (np.int64(4), np.int8(-2)),
    (slice(np.int32(1), np.uint8(9), np.int16(2)),),
    (slice(12, -14, -1), 0),
    (0, 0, ...),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=[repr(k) for k in INDEX_KEYS])
def test_getitem_matches_numpy(readback, key):
    a, ref = readback
    got = a[key]
    expected = ref[key]
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == ref.dtype
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_getitem_matches_numpy_property(readback, data):
    a, ref = readback
    key = data.draw(hnp.basic_indices(ref.shape, allow_newaxis=False, allow_ellipsis=True))
    got = a[key]
    np.testing.assert_array_equal(got, ref[key])
    assert np.shape(got) == np.shape(ref[key])


@pytest.mark.parametrize("key", [13, -14, (0, 9), (0, 0, 6), (0, 0, -7), (0, 0, 0, 0)])
def test_getitem_out_of_bounds(readback, key):
    a, ref = readback
    with pytest.raises(IndexError):
        ref[key]
    with pytest.raises(sw.BoundsError):
        a[key]


@pytest.mark.parametrize("key", [1.5, "a", (..., ...)])
def test_getitem_not_basic_indexing(readback, key):
    a, _ = readback
    with pytest.raises(sw.ShardwrightError):
        a[key]


def test_getitem_returns_a_new_array(readback):
    a, ref = readback
    x = a[...]
    x[...] = 0
    assert_same(a[...], ref)


def test_read_unwritten_is_fill_value(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr", shape=(5, 5), dtype="i2", chunks=(2, 2), shards=(4, 4), fill_value=-7
    )
    assert_same(a[...], np.full((5, 5), -7, dtype="i2"))
    assert_same(a[1:3, 4], np.full(2, -7, dtype="i2"))


def test_numpy_slices_of_iterated_domains(small):
    ref = reference(small.shape, small.dtype)
    write_all(small, ref)
    for c in small.iter_chunks():
        assert_same(small[c.slices], ref[c.slices])
        assert small[c.slices].shape == c.shape


# --------------------------------------------------------------------------------------
# Corrupt shards
# --------------------------------------------------------------------------------------


def _corrupt_index_array(tmp_path: Path, index_location: str):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path,
        shape=(8, 8),
        dtype="uint16",
        chunks=(4, 4),
        shards=(8, 8),
        index_location=index_location,
    )
    ref = reference(a.shape, a.dtype, seed=2)
    write_all(a, ref)
    shard = path / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    where = slice(len(data) - 6, len(data) - 2) if index_location == "end" else slice(3, 7)
    data[where] = bytes(b ^ 0xA5 for b in data[where])
    shard.write_bytes(bytes(data))
    return a, path


@pytest.mark.parametrize("index_location", ["end", "start"])
def test_corrupt_index_on_read(tmp_path, index_location):
    a, _ = _corrupt_index_array(tmp_path, index_location)
    with pytest.raises(sw.CorruptShardError):
        a[...]
    with pytest.raises(sw.CorruptShardError):
        a[0, 0]
    with pytest.raises(sw.CorruptShardError):
        sw.open(tmp_path / "a.zarr")[5:6, 5:6]


@pytest.mark.parametrize("index_location", ["end", "start"])
def test_corrupt_index_on_partial_rewrite(tmp_path, index_location):
    a, path = _corrupt_index_array(tmp_path, index_location)
    before = tree_digest(path)
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1
    assert tree_digest(path) == before
    assert temp_files(path) == []


def test_full_rewrite_replaces_a_corrupt_shard_without_reading_it(tmp_path):
    a, _ = _corrupt_index_array(tmp_path, "end")
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 5
    assert w.stats["gets"] == 0
    assert (a[...] == 5).all()


@pytest.mark.parametrize(
    "content", [b"", b"x", b"\x00" * 68, bytes(range(256)) * 3], ids=["empty", "1", "68", "768"]
)
def test_garbage_shard(tmp_path, content):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    (path / "c" / "0").mkdir(parents=True)
    (path / "c" / "0" / "0").write_bytes(content)
    with pytest.raises(sw.CorruptShardError):
        a[...]
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1
    assert (path / "c" / "0" / "0").read_bytes() == content


def _rewrite_index(path: Path, n_slots: int, entries) -> None:
    """Replace the (end) index of a shard with ``entries`` and a valid checksum."""
    data = path.read_bytes()
    size = 16 * n_slots + 4
    raw = np.array(entries, dtype="<u8").tobytes()
    crc = google_crc32c.value(raw).to_bytes(4, "little")
    path.write_bytes(data[:-size] + raw + crc)


def test_index_pointing_outside_the_shard(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    write_all(a, reference(a.shape, a.dtype))
    shard = path / "c" / "0" / "0"
    _rewrite_index(shard, 4, [[0, 10], [10, 10], [20, 10**6], [2**64 - 2, 5]])
    with pytest.raises(sw.CorruptShardError):
        a[...]
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1


def test_chunk_bytes_that_do_not_decode(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    write_all(a, reference(a.shape, a.dtype))
    shard = path / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[0:8] = b"\xff" * 8
    shard.write_bytes(bytes(data))
    with pytest.raises(sw.ShardwrightError):
        a[0:4, 0:4]
