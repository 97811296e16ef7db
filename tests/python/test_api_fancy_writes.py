"""Writing zarr-python's fancy selections: ``a.oindex[k] = v``, ``a.vindex[k] = v``,
``a[k] = v`` with integer arrays, masks and slice steps, ``a.blocks[k] = v`` — each a
one-shot transaction, equal to zarr-python doing the same write and to numpy's model."""

from __future__ import annotations

import numpy as np
import pytest
import shardwright as sw
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SHAPE, CHUNKS, SHARDS = (9, 11), (2, 3), (4, 6)


def pair(tmp, fill=0):
    a = sw.create(tmp / "a.zarr", shape=SHAPE, dtype="int16", chunks=CHUNKS, shards=SHARDS)
    z = zarr.create_array({}, shape=SHAPE, dtype="int16", chunks=CHUNKS)
    base = np.arange(np.prod(SHAPE), dtype="int16").reshape(SHAPE)
    a[...] = base
    z[...] = base
    return a, z, base.copy()


def axis_index(draw, n):
    kind = draw(st.sampled_from(["list", "mask", "slice", "int"]))
    if kind == "list":
        return draw(
            st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda i: i % n)
        )
    if kind == "mask":
        mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        return np.array(mask)
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    start = draw(st.integers(0, n - 1))
    return slice(start, draw(st.integers(start, n)), draw(st.integers(1, 4)))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_orthogonal_writes_equal_zarr_python_and_numpy(tmp_path_factory, data):
    a, z, model = pair(tmp_path_factory.mktemp("o"))
    key = tuple(axis_index(data.draw, n) for n in SHAPE)
    ix = [
        np.arange(n)[k] if not isinstance(k, int) else np.array([k % n])
        for k, n in zip(key, SHAPE, strict=True)
    ]
    shape = model[np.ix_(*ix)].shape
    result = tuple(len(i) for i, k in zip(ix, key, strict=True) if not isinstance(k, int))
    value = (np.arange(int(np.prod(result)), dtype="int16") * 7 - 50).reshape(result)
    model[np.ix_(*ix)] = value.reshape(shape)
    a.oindex[key] = value
    z.oindex[key] = value
    np.testing.assert_array_equal(a[...], model)
    np.testing.assert_array_equal(z[...], model)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_pointwise_writes_equal_zarr_python_and_numpy(tmp_path_factory, data):
    a, z, model = pair(tmp_path_factory.mktemp("v"))
    points = data.draw(
        st.lists(
            st.tuples(st.integers(0, SHAPE[0] - 1), st.integers(0, SHAPE[1] - 1)),
            min_size=1,
            max_size=30,
            unique=True,
        )
    )
    rows, cols = (np.array(c) for c in zip(*points, strict=True))
    value = np.arange(len(points), dtype="int16") + 1000
    if data.draw(st.booleans()):
        model[rows, cols] = value
        a.vindex[rows, cols] = value
        z.vindex[rows, cols] = value
    else:  # a mask: its True elements in C order
        mask = np.zeros(SHAPE, bool)
        mask[rows, cols] = True
        value = value[: int(mask.sum())]
        model[mask] = value
        a[mask] = value  # a[mask] as zarr-python: pointwise
        z.vindex[mask] = value
    np.testing.assert_array_equal(a[...], model)
    np.testing.assert_array_equal(z[...], model)


def test_getitem_keys_write_the_way_they_read(tmp_path):
    a, _, model = pair(tmp_path)
    a[[1, 5], 2:8] = -1  # one integer array with slices: orthogonal
    model[[1, 5], 2:8] = -1
    a[::-3, 1] = [1, 2, 3]  # a negative step
    model[::-3, 1] = [1, 2, 3]
    a[[0, 8], [10, 0]] = [7, 8]  # one array per axis: pointwise
    model[[0, 8], [10, 0]] = [7, 8]
    a[[2, 2], [3, 3]] = [4, 5]  # a repeated point takes the last value, as numpy
    model[[2, 2], [3, 3]] = [4, 5]
    a.blocks[1, 1] = 9  # shard (1, 1), as zarr-python's blocks: rows 4:8, columns 6:11
    model[4:8, 6:11] = 9
    a.set_orthogonal_selection(([3], [0, 4]), 11)
    model[np.ix_([3], [0, 4])] = 11
    a.set_coordinate_selection(([4], [4]), 12)
    model[4, 4] = 12
    a.set_mask_selection(model == 100, 13)
    model[model == 100] = 13
    a.set_block_selection((0, 0), 14)
    model[0:4, 0:6] = 14
    np.testing.assert_array_equal(a[...], model)


def test_bad_fancy_writes_store_nothing(tmp_path):
    a, _, model = pair(tmp_path)
    with pytest.raises(sw.ShapeError):
        a.oindex[[0, 1], [2, 3]] = np.ones((3, 3), "int16")  # does not broadcast to (2, 2)
    with pytest.raises(sw.DTypeError):
        a.vindex[[0, 1], [2, 3]] = [1.5, 2.5]  # floats into int16
    with pytest.raises(sw.BoundsError):
        a[[0, 99], 1] = 3
    with pytest.raises(sw.ShapeError, match=r"np\.newaxis"):
        a[None, 0] = 1
    with pytest.raises(sw.ReadOnlyError):
        sw.open(a.path, mode="r").vindex[[0], [0]] = 1
    np.testing.assert_array_equal(a[...], model)
