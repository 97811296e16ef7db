"""Transactions: region writes across shards, read-your-writes, one store per touched
shard at the end, abort, nested shard writers."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw
from conftest import reference, tree_digest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transaction_helpers import assert_stored

SHAPE = (20, 22)
CHUNKS = (3, 4)
SHARDS = (6, 8)  # 4 x 3 shards, the last row and column clipped
DTYPE = np.dtype("int32")


def make(tmp_path: Path, producer: str = "zarr", fill_value: int = 0):
    data = reference(SHAPE, DTYPE, seed=11) % 100_000
    array = sb.make_array(
        producer, tmp_path / "a.zarr", data, CHUNKS, SHARDS, fill_value=fill_value
    )
    return array, data


def shards_meeting(array: sw.Array, key) -> set[tuple[int, ...]]:
    mask = np.zeros(array.shape, dtype=bool)
    mask[key] = True
    return {s.index for s in array.iter_shards() if mask[s.slices].any()}


# --------------------------------------------------------------------------------------
# Splitting, read-your-writes, commit


def test_region_split_across_shards(tmp_path):
    array, data = make(tmp_path)
    before = tree_digest(array.path)
    model = data.copy()
    key = (slice(2, 19), slice(3, 21))  # meets all 12 shards, covers 2 of them whole
    block = np.arange(17 * 18, dtype=DTYPE).reshape(17, 18) - 50
    with array.transaction() as tx:
        tx[key] = block
        model[key] = block
        np.testing.assert_array_equal(tx[...], model)
        assert tree_digest(array.path) == before  # nothing stored yet
    stats = tx.stats
    touched = shards_meeting(array, key)
    assert len(touched) == 12
    assert stats["shards_written"] == 12 and stats["puts"] == 12
    mask = np.zeros(SHAPE, dtype=bool)
    mask[key] = True
    whole = {s.index for s in array.iter_shards() if mask[s.slices].all()}
    assert whole == {(1, 1), (2, 1)}
    assert stats["gets"] == 10 and stats["shards_committed_early"] == 0
    assert stats["conflicts"] == 0 and stats["deletes"] == 0
    for k in ("bytes_read", "bytes_written", "chunks_written", "chunks_partial", "chunks_kept"):
        assert k in stats
    assert_stored(array, model)


def test_commit_stores_every_touched_shard_once(tmp_path):
    """Whole shards need no read; each touched shard is stored with exactly one put."""
    array = sw.create(tmp_path / "a.zarr", shape=SHAPE, dtype=DTYPE, chunks=CHUNKS, shards=SHARDS)
    model = np.zeros(SHAPE, DTYPE)
    with array.transaction() as tx:
        for shard in array.iter_shards():
            tx[shard.slices] = sum(shard.index) + 1
            model[shard.slices] = sum(shard.index) + 1
        tx[0:6, 0:8] = 77  # rewrites a staged shard: still one put
        model[0:6, 0:8] = 77
    stats = tx.stats
    assert stats["shards_written"] == 12 == stats["puts"]
    assert stats["gets"] == 0 and stats["bytes_read"] == 0
    n_chunks = len(list(array.iter_chunks()))
    assert stats["chunks_written"] == n_chunks
    assert_stored(array, model)


def random_key(rng: np.random.Generator, shape: tuple[int, ...]):
    """A random basic-indexing key (slices, ints, Ellipsis) for a write."""
    key = []
    for n in shape:
        kind = rng.integers(5)
        if kind == 0:
            key.append(int(rng.integers(-n, n)))
        elif kind == 1:
            key.append(slice(None))
        else:
            a = int(rng.integers(0, n))
            key.append(slice(a, int(rng.integers(a + 1, n + 1))))
    if rng.random() < 0.2:
        at = int(rng.integers(0, len(key) + 1))
        key = [*key[:at], Ellipsis, *key[at + 1 :]]
    return tuple(key)


def test_read_your_writes_random(tmp_path):
    array, data = make(tmp_path)
    before = tree_digest(array.path)
    model = data.copy()
    rng = np.random.default_rng(2024)
    with array.transaction() as tx:
        for step in range(60):
            key = random_key(rng, SHAPE)
            shape = model[key].shape
            if rng.random() < 0.3:
                value = int(rng.integers(-1000, 1000))
            else:
                value = rng.integers(-(10**6), 10**6, size=shape).astype(DTYPE)
            tx[key] = value
            model[key] = value
            for _ in range(2):
                rkey = random_key(rng, SHAPE)
                np.testing.assert_array_equal(tx[rkey], model[rkey], err_msg=f"step {step}")
            if step % 10 == 0:
                np.testing.assert_array_equal(tx[...], model)
                np.testing.assert_array_equal(array[...], data)  # still the stored data
        assert tree_digest(array.path) == before
    assert tx.stats["shards_written"] == 12
    assert_stored(array, model)


def test_reads_with_steps_and_negative_indices(tmp_path):
    array, data = make(tmp_path)
    model = data.copy()
    tx = array.transaction()
    tx[4:15, 5:13] = -7
    model[4:15, 5:13] = -7
    keys = [
        (slice(None, None, 3), slice(1, None, 2)),
        (-1,),
        (slice(None, None, -1), 5),
        (Ellipsis, -3),
        (slice(18, 2, -4), slice(None)),
    ]
    for key in keys:
        np.testing.assert_array_equal(tx[key], model[key])
    tx.abort()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    writes=st.lists(
        st.tuples(
            st.integers(0, 19),
            st.integers(1, 20),
            st.integers(0, 21),
            st.integers(1, 22),
            st.integers(-5, 5),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    fill=st.sampled_from([0, 3]),
)
def test_read_your_writes_property(writes, fill):
    with tempfile.TemporaryDirectory() as d:
        array = sw.create(
            Path(d) / "a.zarr",
            shape=SHAPE,
            dtype=DTYPE,
            chunks=CHUNKS,
            shards=SHARDS,
            fill_value=fill,
        )
        with array.write_shard((1, 1)) as w:  # something stored to merge with
            w[6:12, 8:16] = np.arange(48, dtype=DTYPE).reshape(6, 8)
        model = array[...]
        with array.transaction() as tx:
            for i, (r0, rn, c0, cn, v, as_array) in enumerate(writes):
                key = (slice(r0, min(r0 + rn, 20)), slice(c0, min(c0 + cn, 22)))
                shape = model[key].shape
                if as_array:
                    value = np.full(shape, v * 100 + i, DTYPE) + np.arange(shape[1], dtype=DTYPE)
                else:
                    value = v
                tx[key] = value
                model[key] = value
                np.testing.assert_array_equal(tx[...], model)
        np.testing.assert_array_equal(array[...], model)
        np.testing.assert_array_equal(sb.read_zarr(array.path), model)


def test_keys_domains_ints_ellipsis_scalars(tmp_path):
    array, data = make(tmp_path)
    model = data.copy()
    with array.transaction() as tx:
        tx[sw.Domain((5, 6), (4, 9))] = np.ones((4, 9), DTYPE)
        model[5:9, 6:15] = 1
        tx[7, ...] = np.arange(22, dtype=DTYPE)
        model[7, ...] = np.arange(22)
        tx[..., -1] = 5
        model[..., -1] = 5
        tx[3] = np.int16(-2)
        model[3] = -2
        tx[-2, -3] = np.array(123, dtype=DTYPE)
        model[-2, -3] = 123
        tx[0:0, 4:9] = np.zeros((0, 5), DTYPE)  # empty: nothing
        np.testing.assert_array_equal(tx[...], model)
        with pytest.raises(sw.BoundsError):
            tx[sw.Domain((15, 0), (6, 3))] = 0
        with pytest.raises(sw.BoundsError):
            tx[20, 0] = 0
        with pytest.raises(sw.ShapeError):
            tx[0:2, 0:2] = np.zeros((3, 2), DTYPE)
        with pytest.raises(sw.DTypeError):
            tx[0:2, 0:2] = np.full((2, 2), 0.5)  # a fraction does not fit an integer dtype
        np.testing.assert_array_equal(tx[...], model)  # the failed writes staged nothing
    assert_stored(array, model)


def test_stored_changes_during_transaction_are_merged(tmp_path):
    """The merge happens at commit: a shard changed by another writer after the
    transaction's first write keeps that change where the transaction did not write."""
    array, data = make(tmp_path)
    model = data.copy()
    with array.transaction() as tx:
        tx[1:3, 1:3] = 9
        with array.write_shard((0, 0)) as w:
            w[4:6, 4:7] = -9
        np.testing.assert_array_equal(tx[4:6, 4:7], np.full((2, 3), -9))  # stored data
    model[1:3, 1:3] = 9
    model[4:6, 4:7] = -9
    assert_stored(array, model)


# --------------------------------------------------------------------------------------
# Abort


def test_exception_inside_stores_nothing(tmp_path):
    array, _ = make(tmp_path)
    before = tree_digest(array.path)
    with pytest.raises(KeyError):
        with array.transaction() as tx:
            tx[...] = 1
            tx[2:9, 3:17] = np.ones((7, 14), DTYPE)
            with tx.write_shard((3, 2)) as w:
                for c in w.inner_chunks():
                    w[c] = 4
            raise KeyError("boom")
    assert tx.closed
    assert tree_digest(array.path) == before
    assert sb.temp_leftovers(array.path) == []


def test_abort_without_block_stores_nothing(tmp_path):
    array, _ = make(tmp_path)
    before = tree_digest(array.path)
    tx = array.transaction()
    tx[0:20, 0:22] = 1
    tx[5, 5] = 2
    tx.abort()
    assert tx.closed
    assert tree_digest(array.path) == before
    with pytest.raises(sw.ShardwrightError):
        tx[0, 0] = 1
    with pytest.raises(sw.ShardwrightError):
        tx.commit()
    assert tree_digest(array.path) == before


def test_abort_inside_block_stores_nothing_and_exits_cleanly(tmp_path):
    """``tx.abort()`` inside the ``with`` block: nothing stored, and leaving the block
    does not try to commit the aborted transaction."""
    array, _ = make(tmp_path)
    before = tree_digest(array.path)
    with array.transaction() as tx:
        tx[0:7, 0:9] = 1
        tx.abort()
    assert tx.closed
    assert tree_digest(array.path) == before


def test_write_shard_abort_inside_block_exits_cleanly(tmp_path):
    """The same for a shard writer: ``w.abort()`` inside its block."""
    array, _ = make(tmp_path)
    before = tree_digest(array.path)
    with array.write_shard((0, 0)) as w:
        w[0:3, 0:4] = 1
        w.abort()
    assert w.closed
    assert tree_digest(array.path) == before


# --------------------------------------------------------------------------------------
# Shard writers inside a transaction


def test_tx_write_shard_stages_without_io(tmp_path):
    array, data = make(tmp_path)
    before = tree_digest(array.path)
    model = data.copy()
    with array.transaction() as tx:
        tx[4:8, 6:10] = 5  # meets shards (0,0), (0,1), (1,0), (1,1)
        model[4:8, 6:10] = 5
        with tx.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                w[c] = np.full(c.shape, c.index[0] * 10 + c.index[1], DTYPE)
                model[c.slices] = c.index[0] * 10 + c.index[1]
            w[2:5, 3:6] = -1  # a region in the nested writer
            model[2:5, 3:6] = -1
        assert w.stats["puts"] == 0 and w.stats["gets"] == 0
        assert tree_digest(array.path) == before  # its commit staged, stored nothing
        # the nested writer's data lies over what the transaction staged before it
        np.testing.assert_array_equal(tx[...], model)
        tx[0, 0] = 1000  # and the transaction goes on writing over it
        model[0, 0] = 1000
    stats = tx.stats
    assert stats["shards_written"] == 4 and stats["puts"] == 4
    # shard (0, 0) was written whole: no read
    assert stats["gets"] == 3
    assert_stored(array, model)


def test_tx_write_shard_exception_drops_only_its_writes(tmp_path):
    array, data = make(tmp_path)
    model = data.copy()
    with array.transaction() as tx:
        tx[1:4, 1:4] = 7
        model[1:4, 1:4] = 7
        with pytest.raises(RuntimeError):
            with tx.write_shard((0, 0)) as w:
                w[0:6, 0:8] = 99
                w[2, 2] = 98
                raise RuntimeError("inside the shard writer")
        assert w.closed
        np.testing.assert_array_equal(tx[...], model)  # its writes are gone, ours stay
        tx[5, 5] = 8
        model[5, 5] = 8
        with tx.write_shard((1, 1)) as w2:
            w2[7, 9] = 6
        model[7, 9] = 6
    assert tx.stats["shards_written"] == 2
    assert_stored(array, model)


def test_tx_write_shard_later_regions_win(tmp_path):
    """Two nested writers and plain writes of the same shard, in order: later wins."""
    array, data = make(tmp_path)
    model = data.copy()
    with array.transaction() as tx:
        with tx.write_shard((2, 1)) as w:
            w[13:17, 9:15] = 1
        tx[14:16, 10:12] = 2
        with tx.write_shard((2, 1)) as w:
            w[15:18, 11:16] = 3
            w[12:15, 12:16] = 4  # a whole inner chunk in the nested writer ...
        tx[13, 13] = 5  # ... then written in part by the transaction
        tx[15:18, 8:12] = 6  # a whole inner chunk in the transaction ...
        with tx.write_shard((2, 1)) as w:
            w[16, 9:11] = 7  # ... then written in part by a nested writer
        model[13:17, 9:15] = 1
        model[14:16, 10:12] = 2
        model[15:18, 11:16] = 3
        model[12:15, 12:16] = 4
        model[13, 13] = 5
        model[15:18, 8:12] = 6
        model[16, 9:11] = 7
        np.testing.assert_array_equal(tx[12:18, 8:16], model[12:18, 8:16])
    assert tx.stats["puts"] == 1 and tx.stats["gets"] == 1
    assert_stored(array, model)
