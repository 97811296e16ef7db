"""Rectilinear chunk and shard grids (zarr-python 3.4's ``"name": "rectilinear"``: each
dimension a bare extent or a list of extents, inline or run-length encoded): read exactly
what zarr-python wrote, iterate the true uneven shards and chunks, write each shard once,
check, copy, resize, and have zarr-python read back what shardwright wrote."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

zarr = pytest.importorskip("zarr")
if not hasattr(zarr.core.metadata.v3, "RectilinearChunkGridMetadata"):
    pytest.skip("this zarr-python writes no rectilinear grids (3.4 does)", allow_module_level=True)

SHAPE = (10, 12, 7)
SHARDS = [[4, 6], [6, 6], 4]  # a list per dimension, or a bare extent (regular)
CHUNKS = (2, 3, 2)


@pytest.fixture(autouse=True)
def _rectilinear_on():
    with zarr.config.set({"array.rectilinear_chunks": True}):
        yield


def data(shape=SHAPE, dtype="uint16") -> np.ndarray:
    return (np.arange(np.prod(shape), dtype="uint64").reshape(shape) % 60_000 + 1).astype(dtype)


def zarr_write(path: Path, values: np.ndarray, **kw) -> zarr.Array:
    z = zarr.create_array(str(path), shape=values.shape, dtype=values.dtype, **kw)
    z[...] = values
    return z


def edges(sizes) -> list[tuple[int, int]]:
    """(start, stop) of each cell from a dimension's clipped sizes."""
    out, at = [], 0
    for n in sizes:
        out.append((at, at + n))
        at += n
    return out


# --------------------------------------------------------------------------------------
# zarr-python wrote it: shardwright reads, iterates and checks
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("location", ["start", "end"])
def test_reads_sharded_rectilinear_written_by_zarr_python(tmp_path, location):
    values = data()
    z = zarr_write(
        tmp_path / "a.zarr",
        values,
        chunks=CHUNKS,
        shards={"shape": SHARDS, "index_location": location},
    )
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["chunk_grid"]["name"] == "rectilinear"
    a = sw.open(tmp_path / "a.zarr")
    assert_same(a[...], values)
    assert_same(a[3:9, 5:11, 1:6], values[3:9, 5:11, 1:6])
    assert_same(a.oindex[[0, 4, 9], :, [6]], values[np.ix_([0, 4, 9], range(12), [6])])
    assert a.write_chunk_sizes == z.write_chunk_sizes
    assert a.read_chunk_sizes == z.read_chunk_sizes
    assert a.chunks == CHUNKS
    with pytest.raises(NotImplementedError, match="write_chunk_sizes"):
        _ = a.shards
    # the shards as zarr-python has them: uneven, each with its grid index
    shards = list(a.iter_shards())
    expected = [
        (tuple(b[0] for b in box), tuple(b[1] - b[0] for b in box))
        for box in itertools.product(*(edges(s) for s in z.write_chunk_sizes))
    ]
    assert [(s.origin, s.shape) for s in shards] == expected
    assert len(a.iter_shards()) == a.nshards == 2 * 2 * 2
    assert len(a.iter_chunks()) == a.nchunks == 5 * 4 * 4
    report = sw.check(a)
    assert report.ok and report.shards_stored == 8, report
    assert sw.check(a, quick=True).ok


def test_reads_unsharded_rectilinear_written_by_zarr_python(tmp_path):
    values = data((10, 12))
    z = zarr_write(tmp_path / "u.zarr", values, chunks=[[4, 6], [5, 7]])
    a = sw.open(tmp_path / "u.zarr")
    assert_same(a[...], values)
    assert_same(a[3:5, 4:6], values[3:5, 4:6])
    assert a.write_chunk_sizes == a.read_chunk_sizes == z.write_chunk_sizes == ((4, 6), (5, 7))
    assert a.shards is None
    with pytest.raises(NotImplementedError, match="read_chunk_sizes"):
        _ = a.chunks
    assert [(c.origin, c.shape) for c in a.iter_chunks()] == [
        ((0, 0), (4, 5)),
        ((0, 5), (4, 7)),
        ((4, 0), (6, 5)),
        ((4, 5), (6, 7)),
    ]
    assert "<variable>" in repr(a) and "<variable>" in str(a.info)
    assert sw.check(a).ok


def test_reads_run_length_encoded_and_overhanging_edges(tmp_path):
    """Edges written run-length encoded, and listed past the array's extent after a
    shrink (zarr-python keeps them): read exactly."""
    values = data((20, 9))
    z = zarr_write(tmp_path / "r.zarr", values, chunks=(2, 3), shards=[[4, 4, 4, 8], [9]])
    meta = json.loads((tmp_path / "r.zarr" / "zarr.json").read_text())
    assert meta["chunk_grid"]["configuration"]["chunk_shapes"][0] == [[4, 3], 8]
    z.resize((13, 9))
    a = sw.open(tmp_path / "r.zarr")
    assert a.shape == (13, 9)
    assert_same(a[...], z[...])
    assert a.write_chunk_sizes == ((4, 4, 4, 1), (9,)) == z.write_chunk_sizes


# --------------------------------------------------------------------------------------
# shardwright writes it: zarr-python reads
# --------------------------------------------------------------------------------------


def test_create_writes_the_metadata_zarr_python_writes(tmp_path):
    a = sw.create(tmp_path / "s.zarr", shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    z = zarr.create_array(
        str(tmp_path / "z.zarr"), shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS
    )
    mine = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())
    theirs = json.loads((tmp_path / "z.zarr" / "zarr.json").read_text())
    assert mine == theirs
    assert a.write_chunk_sizes == z.write_chunk_sizes
    u = sw.create(tmp_path / "u.zarr", shape=(10, 12), dtype="int8", chunks=[[4, 6], [5, 7]])
    zu = zarr.create_array(str(tmp_path / "zu.zarr"), shape=(10, 12), dtype="int8",
                           chunks=[[4, 6], [5, 7]])  # fmt: skip
    assert json.loads((u.path / "zarr.json").read_text()) == json.loads(
        json.dumps(zu.metadata.to_dict())
    )


def test_seed_loop_writes_each_shard_once_and_zarr_python_reads_it(tmp_path):
    values = data()
    a = sw.create(tmp_path / "s.zarr", shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    stats = []
    for shard in a.iter_shards():
        with a.write_shard(shard) as w:
            for c in w.inner_chunks():
                assert c in shard
                w[c] = values[c.slices]
        stats.append(w.stats)
    assert [(s["puts"], s["gets"]) for s in stats] == [(1, 0)] * 8
    # the shard's inner chunks: 2 x 2 x 2 in the first shard (4 x 6 x 4), 3 x 2 x 2 next
    assert [s["chunks_written"] for s in stats][:2] == [8, 8]
    assert [s["chunks_written"] for s in stats][4] == 12
    assert_same(zarr.open_array(str(tmp_path / "s.zarr"), mode="r")[...], values)
    assert_same(a[...], values)


def test_unsharded_rectilinear_written_by_shardwright(tmp_path):
    values = data((10, 12), "float32")
    a = sw.create(tmp_path / "u.zarr", shape=(10, 12), dtype="float32", chunks=[[4, 6], [5, 7]])
    a.map_chunks(lambda c: values[c.slices])
    assert_same(zarr.open_array(str(tmp_path / "u.zarr"), mode="r")[...], values)
    a[1:9, 2] = -1.0  # across chunks of different shapes: merged with what is stored
    values[1:9, 2] = -1.0
    assert_same(zarr.open_array(str(tmp_path / "u.zarr"), mode="r")[...], values)


def test_partial_writes_transactions_and_assignment(tmp_path):
    values = data()
    a = sw.create(tmp_path / "s.zarr", shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    a[...] = values
    expected = values.copy()
    # a region across the uneven shards, not chunk-aligned: merged
    a[3:7, 5:8, 1:3] = 7
    expected[3:7, 5:8, 1:3] = 7
    with a.transaction() as tx:
        tx[0:10, 11, :] = 9
        tx[5, :, 6] = 11
    expected[0:10, 11, :] = 9
    expected[5, :, 6] = 11
    with a.write_shard(list(a.iter_shards())[6]) as w:  # shard (1, 1, 0): 6 x 6 x 4
        w[w.shard] = 5
    expected[4:10, 6:12, 0:4] = 5
    assert_same(a[...], expected)
    assert_same(zarr.open_array(str(a.path), mode="r")[...], expected)
    assert sw.check(a).ok


def test_blocks_follow_the_uneven_shards(tmp_path):
    values = data()
    a = sw.create(tmp_path / "s.zarr", shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    a[...] = values
    z = zarr.open_array(str(a.path), mode="r")
    for key in [(1, 0, 1), (slice(0, 2), 1), 0]:
        assert_same(a.blocks[key], z.blocks[key])


def test_resize_grows_a_cell_as_zarr_python_does(tmp_path):
    values = data((10, 12))
    a = sw.create(tmp_path / "s.zarr", shape=(10, 12), dtype="uint16", chunks=(2, 3),
                  shards=[[4, 6], 12])  # fmt: skip
    a[...] = values
    a.resize(15, 12)  # past the listed 10: one more shard of whole inner chunks (6)
    assert a.write_chunk_sizes == ((4, 6, 5), (12,))
    a[12:15, :] = 3
    z = zarr.open_array(str(a.path), mode="r")
    assert z.shape == (15, 12)
    expected = np.zeros((15, 12), "uint16")
    expected[:10] = values
    expected[12:] = 3
    assert_same(z[...], expected)
    a.resize(6, 12)  # a shrink keeps the listed edges
    assert_same(a[...], values[:6])
    a.resize(15, 12)
    expected[6:] = 0
    assert_same(zarr.open_array(str(a.path), mode="r")[...], expected)


def test_copy_of_a_rectilinear_array(tmp_path):
    values = data()
    zarr_write(tmp_path / "src.zarr", values, chunks=CHUNKS, shards=SHARDS)
    out = sw.copy(str(tmp_path / "src.zarr"), tmp_path / "dst.zarr", chunks=(5, 4, 7),
                  shards=(10, 12, 7))  # fmt: skip
    assert_same(out[...], values)
    assert_same(zarr.open_array(str(out.path), mode="r")[...], values)


# --------------------------------------------------------------------------------------
# mistakes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunks", "shards", "match"),
    [
        ((2, 3, 2), [[5, 5], [6, 6], 4], "multiple of 2"),  # 5 is not whole inner chunks
        ((2, 3, 2), [[4, 4], [6, 6], 4], "add up to"),  # 8, short of 10
        ((2, 3, 2), [[4, 8], [6, 6], 4], "add up to"),  # 12, past 10 on create
        ((2, 3, 2), [[], [6, 6], 4], "lists no extent"),
        ([[4, 6], 3, 2], (4, 6, 4), "give the shards as lists"),
        ((2, 3, 2), [[4, 6], [6, 6]], "rank"),
    ],
)
def test_bad_grids_are_shape_errors(tmp_path, chunks, shards, match):
    with pytest.raises(sw.ShapeError, match=match):
        sw.create(tmp_path / "bad.zarr", shape=SHAPE, dtype="uint8", chunks=chunks, shards=shards)
    assert not (tmp_path / "bad.zarr").exists()


def test_rectilinear_metadata_that_does_not_cover_the_shape_is_refused(tmp_path):
    zarr_write(tmp_path / "a.zarr", data((10, 12)), chunks=(2, 3), shards=[[4, 6], 12])
    meta_path = tmp_path / "a.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["chunk_grid"]["configuration"]["chunk_shapes"][0] = [4, 2]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(sw.ShapeError, match="short of the array's extent 10"):
        sw.open(tmp_path / "a.zarr")


def test_appending_and_levels_over_rectilinear_are_refused(tmp_path):
    a = sw.create(tmp_path / "img" / "0", shape=(10, 12), dtype="uint8", chunks=(2, 3),
                  shards=[[4, 6], 12])  # fmt: skip
    with pytest.raises(sw.UnsupportedError, match="rectilinear"):
        a.appender(axis=0)
    with pytest.raises(sw.UnsupportedError, match="rectilinear"):
        sw.add_levels(tmp_path / "img", levels=2)


# --------------------------------------------------------------------------------------
# randomized: writes into shardwright against numpy, read back by zarr-python
# --------------------------------------------------------------------------------------


@st.composite
def grids(draw):
    rank = draw(st.integers(1, 3))
    chunk = [draw(st.integers(1, 3)) for _ in range(rank)]
    shape, shards = [], []
    for c in chunk:
        n = draw(st.integers(1, 4))  # shards along this dimension
        if draw(st.booleans()):
            listed = [c * draw(st.integers(1, 3)) for _ in range(n)]
            shards.append(listed)
            shape.append(sum(listed))
        else:
            step = c * draw(st.integers(1, 3))
            shards.append(step)
            shape.append(draw(st.integers(1, step * n)))
    return tuple(shape), chunk, shards


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(grid=grids(), data=st.data())
def test_random_region_writes_match_numpy_and_zarr_python(tmp_path, grid, data):
    shape, chunks, shards = grid
    path = tmp_path / "h.zarr"
    shutil.rmtree(path, ignore_errors=True)
    a = sw.create(path, shape=shape, dtype="int32", chunks=chunks, shards=shards, fill_value=-1)
    expected = np.full(shape, -1, "int32")
    for step in range(data.draw(st.integers(1, 4))):
        lo = [data.draw(st.integers(0, n - 1)) for n in shape]
        hi = [data.draw(st.integers(lo_ + 1, n)) for lo_, n in zip(lo, shape)]
        key = tuple(slice(a_, b_) for a_, b_ in zip(lo, hi))
        block = np.arange(np.prod([b_ - a_ for a_, b_ in zip(lo, hi)]), dtype="int32")
        block = block.reshape([b_ - a_ for a_, b_ in zip(lo, hi)]) + 100 * step
        a[key] = block
        expected[key] = block
    assert_same(a[...], expected)
    assert_same(zarr.open_array(str(path), mode="r")[...], expected)


def test_irregular_dask_chunks_become_the_shards(tmp_path):
    """A dask array chunked unevenly (as an acquisition appended in uneven blocks is)
    written with ``shards=darr.chunks``: one shard per dask block, each stored once."""
    da = pytest.importorskip("dask.array")
    swd = pytest.importorskip("shardwright.dask")
    values = data((10, 12))
    darr = da.from_array(values, chunks=((4, 2, 4), (6, 6)))
    stats = swd.to_zarr(darr, tmp_path / "d.zarr", chunks=(2, 3), shards=darr.chunks,
                        scheduler="sync")  # fmt: skip
    assert (stats["shards_written"], stats["puts"]) == (6, 6)
    a = sw.open(tmp_path / "d.zarr")
    assert a.write_chunk_sizes == darr.chunks
    assert_same(zarr.open_array(str(a.path), mode="r")[...], values)
