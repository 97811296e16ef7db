"""Merging into, reading and overwriting corrupt shards.

A stored shard whose index fails its CRC-32C, whose index points past the end of its
data, or which is too short to hold an index is corrupt: a merge into it raises
:class:`CorruptShardError` naming the shard and stores nothing (the file keeps its bytes,
no temp file is left); reading it raises the same error. ``overwrite_corrupt=True``
rewrites it from the staged data and the fill value. A write of every inner chunk needs
no read, so it simply replaces a corrupt shard.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw

SHAPE = (16, 20)
CHUNKS = (4, 5)
SHARDS = (8, 10)
N_SLOTS = 4
FILL = 7
KEY = "c/0/0"


def make(tmp_path: Path, producer: str, location: str) -> tuple[sw.Array, np.ndarray]:
    data = (np.arange(np.prod(SHAPE), dtype="uint16").reshape(SHAPE) % 5000) + 100
    array = sb.make_array(
        producer, tmp_path / "a.zarr", data, CHUNKS, SHARDS, location, fill_value=FILL
    )
    return array, data


def index_range(shard: bytes, location: str) -> tuple[int, int]:
    size = sb.index_nbytes(N_SLOTS)
    return (0, size) if location == "start" else (len(shard) - size, len(shard))


def flip(shard: bytes, at: int) -> bytes:
    b = bytearray(shard)
    b[at] ^= 0x40
    return bytes(b)


def corrupt_checksum(shard: bytes, location: str, where: str) -> bytes:
    lo, hi = index_range(shard, location)
    at = {"crc": hi - 1, "last_pair": hi - 5, "first_pair": lo + 3, "nbytes": hi - 4 - 16 + 8}
    return flip(shard, at[where])


def corrupt_pointer(shard: bytes, location: str, how: str) -> bytes:
    """An index with a valid checksum whose entry 1 points outside the shard's data."""
    entries = sb.read_index(shard, N_SLOTS, location)
    offset, nbytes = entries[1]
    lo, hi = index_range(shard, location)
    data_end = lo if location == "end" else len(shard)
    if how == "past_end":
        entries[1] = (len(shard) * 4, nbytes)
    elif how == "too_long":
        entries[1] = (offset, len(shard))
    elif how == "into_index":
        entries[1] = (data_end - 2, 10) if location == "end" else (hi - 4, 8)
    elif how == "overflow":
        entries[1] = (2**63, 2**63 + 5)
    out = sb.replace_index(shard, entries, location)
    assert sb.read_index(out, N_SLOTS, location) == entries  # the checksum is right
    return out


CORRUPTIONS = [
    ("checksum", "crc"),
    ("checksum", "last_pair"),
    ("checksum", "first_pair"),
    ("checksum", "nbytes"),
    ("pointer", "past_end"),
    ("pointer", "too_long"),
    ("pointer", "into_index"),
    ("pointer", "overflow"),
    ("short", "truncated"),
    ("short", "empty"),
]


def corrupt(shard: bytes, location: str, kind: str, how: str) -> bytes:
    if kind == "checksum":
        return corrupt_checksum(shard, location, how)
    if kind == "pointer":
        return corrupt_pointer(shard, location, how)
    return shard[: sb.index_nbytes(N_SLOTS) - 1] if how == "truncated" else b""


@pytest.mark.parametrize("kind,how", CORRUPTIONS)
def test_merge_into_corrupt_shard_raises_and_stores_nothing(
    tmp_path, producer, location, kind, how
):
    array, _ = make(tmp_path, producer, location)
    path = array.path / KEY
    bad = corrupt(path.read_bytes(), location, kind, how)
    path.write_bytes(bad)
    before = sb.tree_bytes(array.path)
    w = array.write_shard((0, 0))
    w[1:3, 2:7] = 1
    w[4:8, 5:10] = 2  # a whole inner chunk as well
    with pytest.raises(sw.CorruptShardError) as info:
        w.commit()
    assert isinstance(info.value, sw.ShardwrightError)
    assert KEY in str(info.value), str(info.value)
    assert w.closed
    assert sb.tree_bytes(array.path) == before
    assert sb.temp_leftovers(array.path) == []
    # the same through the with block
    with pytest.raises(sw.CorruptShardError):
        with array.write_shard((0, 0)) as w2:
            w2[0, 0] = 3
    assert sb.tree_bytes(array.path) == before


@pytest.mark.parametrize("kind,how", CORRUPTIONS)
def test_reading_corrupt_shard_raises(tmp_path, location, kind, how):
    array, data = make(tmp_path, "shardwright", location)
    path = array.path / KEY
    path.write_bytes(corrupt(path.read_bytes(), location, kind, how))
    for key in [(Ellipsis,), (slice(0, 8), slice(0, 10)), (3, 4)]:
        with pytest.raises(sw.CorruptShardError):
            array[key]
    # other shards still read
    np.testing.assert_array_equal(array[8:16, :], data[8:16, :])
    np.testing.assert_array_equal(array[0:8, 10:20], data[0:8, 10:20])


def test_reading_corrupt_shard_error_names_the_shard(tmp_path):
    """The error of a read names the shard, as the error of a merge does."""
    array, _ = make(tmp_path, "shardwright", "end")
    path = array.path / KEY
    path.write_bytes(corrupt(path.read_bytes(), "end", "checksum", "crc"))
    with pytest.raises(sw.CorruptShardError) as info:
        array[...]
    assert KEY in str(info.value), str(info.value)


@pytest.mark.parametrize("kind,how", CORRUPTIONS)
def test_overwrite_corrupt_rewrites_from_staged_data_and_fill(
    tmp_path, producer, location, kind, how
):
    array, data = make(tmp_path, producer, location)
    path = array.path / KEY
    path.write_bytes(corrupt(path.read_bytes(), location, kind, how))
    with array.write_shard((0, 0), overwrite_corrupt=True) as w:
        w[1:3, 2:7] = np.arange(10, dtype="uint16").reshape(2, 5) + 500
        w[4:8, 5:10] = 2
    model = data.copy()
    model[0:8, 0:10] = FILL
    model[1:3, 2:7] = np.arange(10).reshape(2, 5) + 500
    model[4:8, 5:10] = 2
    st = w.stats
    assert (st["gets"], st["puts"], st["conflicts"]) == (1, 1, 0)
    assert st["chunks_decoded"] == 0 and st["chunks_kept"] == 0
    assert st["chunks_partial"] == 2 and st["chunks_written"] == 1
    np.testing.assert_array_equal(array[...], model)
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)
    np.testing.assert_array_equal(sb.read_ts(array.path), model)
    # the rewritten shard is well formed: the untouched chunk (fill) is an empty slot
    chunks = sb.chunk_bytes(path.read_bytes(), N_SLOTS, location)
    assert [c is None for c in chunks] == [False, False, True, False]
    assert sb.temp_leftovers(array.path) == []


def test_overwrite_corrupt_leaves_sound_shards_merged_normally(tmp_path, location):
    array, data = make(tmp_path, "zarr", location)
    with array.write_shard((0, 0), overwrite_corrupt=True) as w:
        w[1, 1] = 9
    model = data.copy()
    model[1, 1] = 9
    assert w.stats["chunks_decoded"] == 1 and w.stats["chunks_kept"] == 3
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)


def test_whole_shard_write_replaces_corrupt_shard_without_reading(tmp_path, location):
    array, data = make(tmp_path, "zarr", location)
    path = array.path / KEY
    path.write_bytes(corrupt(path.read_bytes(), location, "checksum", "crc"))
    with array.write_shard((0, 0)) as w:
        w[0:8, 0:10] = 11
    assert (w.stats["gets"], w.stats["puts"]) == (0, 1)
    model = data.copy()
    model[0:8, 0:10] = 11
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)


def test_merge_next_to_undecodable_chunk(tmp_path, location):
    """A valid index whose chunk 0 holds garbage: a merge that does not touch that chunk
    copies its bytes as they are (never decoded); one that covers it in part raises
    CorruptShardError naming the shard and stores nothing."""
    array, _ = make(tmp_path, "zarr", location)
    path = array.path / KEY
    shard = bytearray(path.read_bytes())
    offset, nbytes = sb.read_index(bytes(shard), N_SLOTS, location)[0]
    shard[offset : offset + nbytes] = b"\xff" * nbytes
    path.write_bytes(bytes(shard))
    with array.write_shard((0, 0)) as w:
        w[5, 6] = 1  # chunk 3
    assert w.stats["chunks_kept"] == 3 and w.stats["chunks_decoded"] == 1
    assert sb.chunk_bytes(path.read_bytes(), N_SLOTS, location)[0] == b"\xff" * nbytes
    before = sb.tree_bytes(array.path)
    with pytest.raises(sw.CorruptShardError):
        with array.write_shard((0, 0)) as w:
            w[1, 1] = 1  # chunk 0
    assert sb.tree_bytes(array.path) == before
    assert sb.temp_leftovers(array.path) == []


def test_undecodable_chunk_merge_error_names_the_shard(tmp_path):
    """The error of a merge into an inner chunk that does not decode names the shard, as
    the error of a merge into a shard with a bad index does."""
    array, _ = make(tmp_path, "zarr", "end")
    path = array.path / KEY
    shard = bytearray(path.read_bytes())
    offset, nbytes = sb.read_index(bytes(shard), N_SLOTS, "end")[0]
    shard[offset : offset + nbytes] = b"\xff" * nbytes
    path.write_bytes(bytes(shard))
    with pytest.raises(sw.CorruptShardError) as info:
        with array.write_shard((0, 0)) as w:
            w[1, 1] = 1
    assert KEY in str(info.value), str(info.value)


def test_transaction_with_corrupt_shard(tmp_path, location):
    """A transaction merging into a corrupt shard fails at commit with CorruptShardError
    and leaves that shard's bytes as they were; with overwrite_corrupt it rewrites it.
    Reading the corrupt shard inside the transaction raises too."""
    array, data = make(tmp_path, "shardwright", location)
    path = array.path / KEY
    bad = corrupt(path.read_bytes(), location, "pointer", "past_end")
    path.write_bytes(bad)
    with pytest.raises(sw.CorruptShardError):
        with array.transaction() as tx:
            tx[1:3, 2:7] = 1
    assert path.read_bytes() == bad
    tx = array.transaction()
    tx[8, 8] = 3
    with pytest.raises(sw.CorruptShardError):
        tx[0:2, 0:2]
    expected = data[8:16, :].copy()
    expected[0, 8] = 3
    np.testing.assert_array_equal(tx[8:16, :], expected)
    tx.abort()
    assert path.read_bytes() == bad
    np.testing.assert_array_equal(array[8:16, :], data[8:16, :])
    with array.transaction(overwrite_corrupt=True) as tx:
        tx[1:3, 2:12] = 1
    model = data.copy()
    model[0:8, 0:10] = FILL
    model[1:3, 2:12] = 1
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)
    assert tx.stats["shards_written"] == 2
