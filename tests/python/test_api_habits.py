"""zarr-python habits that used to go silently wrong (issue 13, items 1-3): numpy
conversion of an Array, a shard writer dropped without a commit, settings that would make
a broken or altered array."""

from __future__ import annotations

import gc
import json
import warnings

import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import assert_same, reference, write_all


@pytest.fixture
def filled(tmp_path) -> tuple[sw.Array, np.ndarray]:
    a = sw.create(tmp_path / "a.zarr", shape=(6, 10), dtype="int32", chunks=(2, 5), shards=(4, 10))
    data = reference(a.shape, a.dtype)
    write_all(a, data)
    return a, data


def test_numpy_reads_the_whole_array(filled):
    # Used to give a 0-d object array wrapping the Array, and np.sum(a) the Array itself.
    a, data = filled
    assert_same(np.asarray(a), data)
    assert np.sum(a) == data.sum()
    assert np.asarray(a, dtype="float64").dtype == np.float64
    assert_same(np.array(a)[1:3], data[1:3])
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(a, copy=False)


def test_a_writer_dropped_with_data_and_no_commit_warns_naming_the_shard(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8,), dtype="u1", chunks=(2,), shards=(4,))
    w = a.write_shard((1,))
    w[4:6] = 7
    with pytest.warns(ResourceWarning, match=r"shard \[4:8\]"):
        del w
        gc.collect()
    assert (a[...] == 0).all()


def test_closed_or_empty_writers_do_not_warn(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8,), dtype="u1", chunks=(2,), shards=(4,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with a.write_shard((0,)) as w:
            w[0:4] = 1
        del w
        w = a.write_shard((1,))  # nothing written
        del w
        w = a.write_shard((1,))
        w[4:8] = 2
        w.abort()
        del w
        w = a.write_shard((1,))
        w[4:8] = 3
        w.commit()
        del w
        with a.transaction() as tx:
            tx[0:8] = 4
        gc.collect()
    assert (a[...] == 4).all()


@pytest.mark.parametrize("names", [["y"], ["z", "y", "x"], "yx"])
def test_dimension_names_must_name_every_dimension(tmp_path, names):
    # zarr-python and TensorStore refuse to open an array whose names do not match.
    with pytest.raises(sw.ShapeError, match="dimension_names"):
        sw.create(
            tmp_path / "a.zarr", shape=(4, 4), dtype="u1", chunks=(2, 2), dimension_names=names
        )
    assert not (tmp_path / "a.zarr").exists()


def test_dimension_names_of_the_right_length_are_stored_and_read_by_zarr(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr", shape=(4, 4), dtype="u1", chunks=(2, 2), dimension_names=["y", "x"]
    )
    assert a.metadata["dimension_names"] == ["y", "x"]
    assert zarr.open_array(tmp_path / "a.zarr", mode="r").metadata.dimension_names == ("y", "x")


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("uint16", 1.5),
        ("uint8", 300),
        ("uint8", -1),
        ("int8", 128),
        ("bool", 2),
        ("int32", 0.1),
        ("uint16", float("nan")),
        ("int64", "3"),
    ],
)
def test_a_fill_value_the_dtype_cannot_hold_is_refused(tmp_path, dtype, value):
    # Used to store 1.5 for uint16 as 1, silently.
    with pytest.raises(sw.DTypeError, match="fill value"):
        sw.create(tmp_path / "a.zarr", shape=(4,), dtype=dtype, chunks=(2,), fill_value=value)
    assert not (tmp_path / "a.zarr").exists()


@pytest.mark.parametrize(
    ("dtype", "value", "stored"),
    [
        ("uint16", 3.0, 3),
        ("uint8", 255, 255),
        ("int8", -128, -128),
        ("bool", 1, True),
        ("bool", False, False),
        ("float32", 1.5, 1.5),
        ("int64", np.int64(2**62), 2**62),
    ],
)
def test_fill_values_the_dtype_holds_are_kept_exactly(tmp_path, dtype, value, stored):
    a = sw.create(tmp_path / "a.zarr", shape=(4,), dtype=dtype, chunks=(2,), fill_value=value)
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["fill_value"] == stored
    assert a[...].tolist() == [stored] * 4
