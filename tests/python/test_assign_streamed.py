"""``a[key] = data`` and ``a.append(data)`` outside a block, written shard by shard from
the caller's array: the same data as numpy's assignment (read back here and by
zarr-python) for regions aligned with the shards or not, edge shards, fill values,
broadcasts, strided sources and dtype casts; every value checked before the first shard is
stored; one store of each shard (a get only for the shards covered in part); and, when a
store fails partway, shards whole, old or new."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
import shardwright as sw
import zarr
from shardwright.testing import FaultyStore

TARGETS = ["uint8", "int16", "uint16", "float32", "float64", "int32"]


def _region_key(rng: np.random.Generator, shape: tuple[int, ...], shards: tuple[int, ...]):
    """A basic key of integers and step-1 slices: aligned with the shards, or not."""
    key = []
    for n, s in zip(shape, shards):
        kind = rng.integers(4)
        if kind == 0:
            key.append(int(rng.integers(n)))
        elif kind == 1:  # aligned with the shard grid (up to the array's edge)
            lo = int(rng.integers(0, -(-n // s))) * s
            hi = min(n, lo + s * int(rng.integers(1, 3)))
            key.append(slice(lo, hi))
        else:
            lo = int(rng.integers(0, n))
            key.append(slice(lo, int(rng.integers(lo + 1, n + 1))))
    return tuple(key)


def _source(rng: np.random.Generator, target: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Data of ``shape`` whose values fit ``target``, of ``target`` or another dtype, laid
    out in C order, transposed or strided."""
    values = rng.integers(0, 100, size=shape)
    name = ["same", "int64", "float64", "uint8", "int32"][int(rng.integers(5))]
    dtype = target if name == "same" else np.dtype(name)
    layout = rng.integers(3)
    if layout == 1 and len(shape) > 1:
        return np.ascontiguousarray(values.T).astype(dtype).T
    if layout == 2 and shape:
        big = np.zeros(tuple(2 * n for n in shape), dtype=dtype)
        view = big[tuple(slice(None, None, 2) for _ in shape)]
        view[...] = values
        return view
    return values.astype(dtype)


@pytest.mark.parametrize("seed", range(40))
def test_assignment_matches_numpy_and_zarr(seed: int, tmp_path) -> None:
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    chunks = tuple(int(rng.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * int(rng.integers(1, 4)) for c in chunks)
    shape = tuple(int(rng.integers(1, 3 * s + 2)) for s in shards)
    target = np.dtype(TARGETS[seed % len(TARGETS)])
    fill = int(rng.integers(0, 5))
    root = str(tmp_path / "a.zarr")
    a = sw.create(root, shape=shape, dtype=target, chunks=chunks, shards=shards, fill_value=fill)
    model = np.full(shape, fill, dtype=target)
    for _ in range(4):
        key = _region_key(rng, shape, shards)
        result = model[key].shape
        if rng.integers(3) == 0 and result:  # broadcast: fewer axes, or size-1 axes
            dropped = int(rng.integers(0, len(result) + 1))
            result = tuple(1 if rng.integers(3) == 0 else n for n in result[dropped:])
        data = _source(rng, target, result)
        a[key] = data
        model[key] = data
        assert np.array_equal(a[...], model), (key, data.dtype, data.shape)
    assert np.array_equal(zarr.open_array(root, mode="r")[...], model)


@pytest.mark.parametrize("seed", range(12))
def test_append_matches_numpy(seed: int, tmp_path) -> None:
    rng = np.random.default_rng(100 + seed)
    ndim = int(rng.integers(1, 4))
    chunks = tuple(int(rng.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * int(rng.integers(1, 4)) for c in chunks)
    shape = tuple(int(rng.integers(0, 2 * s + 1)) for s in shards)
    axis = int(rng.integers(ndim))
    root = str(tmp_path / "a.zarr")
    a = sw.create(root, shape=shape, dtype="int16", chunks=chunks, shards=shards, fill_value=3)
    model = np.full(shape, 3, dtype="int16")
    for _ in range(3):
        extent = list(model.shape)
        extent[axis] = int(rng.integers(1, 2 * shards[axis] + 2))
        data = _source(rng, np.dtype("int16"), tuple(extent))
        model = np.concatenate([model, data.astype("int16")], axis=axis)
        assert a.append(data, axis=axis) == model.shape
        assert np.array_equal(a[...], model)
    assert np.array_equal(zarr.open_array(root, mode="r")[...], model)


def _faulty(shape=(32, 32), shards=(8, 8)):
    root = tempfile.mkdtemp()
    sw.create(root, shape=shape, dtype="uint16", chunks=(4, 4), shards=shards)
    store = FaultyStore(root)
    return root, store, store.open()


def test_whole_shards_are_each_stored_once_without_a_get() -> None:
    _, store, a = _faulty()
    store.reset()
    a[...] = np.arange(32 * 32, dtype="int64").reshape(32, 32)  # cast chunk by chunk
    counts = store.counts()
    assert counts.get("get", 0) == 0
    assert sum(counts.get(op, 0) for op in ("put", "put_if", "complete")) == 16
    store.reset()
    a[4:30, 8:16] = np.ones((26, 8))  # two shards whole, two in part
    counts = store.counts()  # in part: one get each (to merge); one store per shard
    assert counts.get("get", 0) == 2
    assert sum(counts.get(op, 0) for op in ("put", "put_if", "complete")) == 4


def test_a_value_that_does_not_fit_in_the_last_chunk_stores_nothing() -> None:
    root, store, a = _faulty()
    data = np.arange(32 * 32, dtype="int64").reshape(32, 32)
    data[31, 31] = -1
    store.reset()
    with pytest.raises(sw.DTypeError) as raised:
        a[...] = data
    # the message of the whole array's check: its coordinate and index in the data
    assert "value -1 at array coordinate (31, 31) (index (31, 31) of the int64 data)" in str(
        raised.value
    )
    assert not {k: n for k, n in store.counts().items() if k != "get" and n}
    with pytest.raises(sw.DTypeError):
        a.append(data)
    assert a.shape == (32, 32)  # refused data grows nothing
    assert (zarr.open_array(root, mode="r")[...] == 0).all()


def test_a_failed_store_partway_leaves_each_shard_whole_and_starts_no_more() -> None:
    root, store, a = _faulty()
    new = np.arange(32 * 32, dtype="uint16").reshape(32, 32) + 1
    store.reset()
    store.inject("complete", 5, "fail")  # the sixth shard's store fails
    with pytest.raises(sw.ShardwrightError) as raised:
        a[...] = new
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "was not stored" in notes and "of 16 shards were stored" in notes
    got = zarr.open_array(root, mode="r")[...]
    whole = 0
    for y in range(0, 32, 8):
        for x in range(0, 32, 8):
            s = (slice(y, y + 8), slice(x, x + 8))
            assert (got[s] == 0).all() or np.array_equal(got[s], new[s]), s
            whole += np.array_equal(got[s], new[s])
    assert 5 <= whole < 16  # those before it stored; no further shard started
    store.reset()
    a[...] = new  # a retry writes it all
    assert np.array_equal(zarr.open_array(root, mode="r")[...], new)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (1, 9, 1), (4, 0, 3)])
@pytest.mark.parametrize("limit", [1, 3, 8, 24, 1000])
def test_check_blocks_tile_the_array_once_within_the_limit(shape, limit) -> None:
    from shardwright._oneshot import blocks

    seen = np.zeros(shape, dtype=int)
    for box in blocks(shape, 2, limit):
        seen[box] += 1
        assert seen[box].size * 2 <= max(limit, 2) or seen[box].size == 0
    assert (seen == 1).all()


def test_a_value_that_does_not_fit_is_found_in_any_check_block(monkeypatch, tmp_path) -> None:
    import shardwright._oneshot as oneshot

    monkeypatch.setattr(oneshot, "_CHECK_BYTES", 64)  # many blocks
    a = sw.create(str(tmp_path / "a.zarr"), shape=(6, 40), dtype="int8", chunks=(2, 8))
    data = np.arange(240, dtype="float64").reshape(6, 40) % 100
    a[...] = data
    bad = data + 1
    bad[5, 33] = 0.5
    bad[5, 39] = 1000
    with pytest.raises(sw.DTypeError) as raised:
        a[...] = bad
    assert str(raised.value).startswith("value 0.5 at array coordinate (5, 33)")
    assert "nor does 1 other value" in str(raised.value)
    assert np.array_equal(a[...], data)  # nothing stored
