"""Regression tests for defects found in review (each named by what went wrong)."""

import os

import numpy as np
import pytest
import shardwright as sw


def test_an_empty_region_at_the_far_edge_is_a_no_op(tmp_path):
    # Used to panic, then hang at commit.
    a = sw.create(tmp_path / "a.zarr", shape=(8, 6), dtype="uint16", chunks=(2, 4), shards=(4, 4))
    with a.write_shard((1, 1)) as w:
        w[8:8, 4:6] = np.zeros((0, 2), "uint16")
        w[4:6, 6:6] = 7
        w[4:8, 4:6] = 3
    assert w.stats["chunks_written"] == 2
    assert (a[4:8, 4:6] == 3).all()
    with a.write_shard((0, 0)) as w:
        w[0:0, 0:4] = 1
    assert w.stats["puts"] + w.stats["gets"] + w.stats["deletes"] == 0


def test_a_failed_early_commit_fails_the_transaction(tmp_path):
    # Used to drop the shard's data and then report success.
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    os.makedirs(tmp_path / "a.zarr" / "c" / "0" / "0")  # the put of shard (0, 0) fails
    tx = a.transaction(early_commit=True)
    with pytest.raises(sw.ShardwrightError):
        tx[0:4, 0:4] = 1
    with pytest.raises(sw.ShardwrightError):
        tx[4:8, 4:8] = 2
    with pytest.raises(sw.ShardwrightError):
        tx.commit()


def test_overwrite_with_bad_settings_keeps_the_old_array(tmp_path):
    # Used to delete the old array before checking the new settings.
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(4,), dtype="int16", chunks=(2,), shards=(4,))
    a.map_chunks(lambda c: 5)
    with pytest.raises(sw.ShapeError, match="divide"):
        sw.create(path, shape=(4,), dtype="int16", chunks=(3,), shards=(4,), overwrite=True)
    assert sw.open(path)[...].tolist() == [5, 5, 5, 5]


def test_a_refused_create_leaves_no_folder(tmp_path):
    with pytest.raises(sw.ShapeError):
        sw.create(tmp_path / "b.zarr", shape=(4, 4), dtype="uint8", chunks=(2,))
    assert not (tmp_path / "b.zarr").exists()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"shape": (-1,), "chunks": (1,)}, sw.ShapeError),
        ({"shape": (2**64,), "chunks": (1,)}, sw.ShapeError),
        ({"shape": (4,), "chunks": (0,)}, sw.ShapeError),
        ({"shape": (4, 4), "chunks": (2,)}, sw.ShapeError),
        ({"shape": (4,), "chunks": (2,), "fill_value": 300}, sw.DTypeError),
    ],
)
def test_bad_create_settings_get_typed_errors(tmp_path, kwargs, error):
    # Used to raise OverflowError or a bare ShardwrightError.
    with pytest.raises(error):
        sw.create(tmp_path / "c.zarr", dtype="uint8", **kwargs)
