"""shardwright.dask on the synchronous, threaded and distributed schedulers: exact output
for aligned, misaligned and irregular chunkings (read back by zarr-python too), one task
and one put per shard, map_chunks, the pyramid against sw.pyramid bit for bit, resume,
pickling arrays, and the errors bad input gets."""

from __future__ import annotations

import dataclasses
import json
import pickle

import dask
import dask.array as da
import numpy as np
import pytest
import shardwright as sw
import shardwright.dask as swd
import zarr
from conftest import assert_same, reference
from distributed.utils import key_split
from shardwright.testing import FaultyStore

SHAPE = (45, 38, 21)
CHUNKS = (4, 6, 7)
SHARDS = (16, 12, 14)

# Dask chunkings against the shards above: aligned with the shards, aligned with the
# inner chunks only (so several blocks make a shard and split none of its chunks),
# misaligned with both (blocks cut inner chunks: what makes da.to_zarr lose data),
# irregular, and one block larger than every shard.
CHUNKINGS = {
    "shards": SHARDS,
    "inner_chunks": (8, 6, 7),
    "misaligned": (5, 7, 9),
    "irregular": ((3, 17, 1, 24), (38,), (2, 2, 10, 7)),
    "one_block": SHAPE,
}


def shard_count(shape, shards) -> int:
    return int(np.prod([-(-n // s) for n, s in zip(shape, shards)]))


@pytest.mark.parametrize("chunking", sorted(CHUNKINGS))
def test_to_zarr_is_exact_for_every_chunking(tmp_path, scheduler, chunking):
    data = reference(SHAPE, "int32", seed=len(chunking))
    darr = da.from_array(data, chunks=CHUNKINGS[chunking])
    path = tmp_path / "x.zarr"
    stats = swd.to_zarr(darr, path, chunks=CHUNKS, shards=SHARDS, scheduler=scheduler)
    shards = shard_count(SHAPE, SHARDS)
    assert (stats["shards_written"], stats["puts"], stats["gets"]) == (shards, shards, 0)
    assert stats["chunks_decoded"] == 0 and stats["conflicts"] == 0
    assert_same(sw.open(path)[...], data)
    assert_same(zarr.open_array(str(path), mode="r")[...], data)


def test_to_zarr_into_an_existing_array_any_way_it_is_named(tmp_path):
    data = reference((30, 20), "uint16", seed=3)
    darr = da.from_array(data, chunks=(7, 9)) + 1
    path = tmp_path / "e.zarr"
    z = zarr.create_array(str(path), shape=(30, 20), dtype="uint16", chunks=(5, 5), shards=(10, 10))
    for value, target in enumerate((str(path), path, z, sw.open(path)), start=1):
        swd.to_zarr(darr * 0 + value, target, scheduler="sync")
        assert_same(sw.open(path)[...], np.full(data.shape, value, "uint16"))
    swd.to_zarr(darr, z, scheduler="threads")
    assert_same(z[...], data + 1)


def test_the_graph_is_one_task_per_shard_plus_the_sources(tmp_path):
    darr = da.ones(SHAPE, dtype="uint8", chunks=(5, 7, 9))  # 9 * 6 * 3 blocks
    task = swd.to_zarr(darr, tmp_path / "g.zarr", chunks=CHUNKS, shards=SHARDS, compute=False)
    graph = dict(task.__dask_graph__())
    names = [k[0] if isinstance(k, tuple) else k for k in graph]
    ours = [k for k in graph if isinstance(k, tuple) and k[0].startswith("shardwright-shard-")]
    shards = shard_count(SHAPE, SHARDS)
    inner = int(np.prod([-(-n // c) for n, c in zip(SHAPE, CHUNKS)]))
    assert len(ours) == shards < inner  # per shard, not per inner chunk
    assert sorted(k[1:] for k in ours) == sorted(
        s.index for s in sw.open(tmp_path / "g.zarr").iter_shards()
    )
    source = len(dict(darr.__dask_graph__()))
    assert len(graph) == source + shards + 1  # the source's, the shards', the total
    assert sum(n.startswith("shardwright-total-") for n in names) == 1
    assert task.compute(scheduler="sync")["puts"] == shards


@pytest.mark.parametrize("chunking", ["misaligned", "irregular"])
@pytest.mark.parametrize("how", ["sync", "threads"])
def test_no_two_tasks_write_one_shard_one_put_each_no_get(tmp_path, chunking, how):
    """Through an instrumented store (in this process: sync and threads): as many stores
    of a whole object as shards, every shard there, and nothing read."""
    sw.create(tmp_path / "i.zarr", shape=SHAPE, dtype="int16", chunks=CHUNKS, shards=SHARDS)
    store = FaultyStore(str(tmp_path))
    target = store.open("i.zarr")
    store.reset()
    data = reference(SHAPE, "int16", seed=5)
    swd.to_zarr(da.from_array(data, chunks=CHUNKINGS[chunking]), target, scheduler=how)
    counts = store.counts()
    stores = sum(counts.get(op, 0) for op in ("put", "put_if", "complete"))
    assert stores == shard_count(SHAPE, SHARDS), counts
    assert sum(counts.get(op, 0) for op in ("get", "get_range")) == 0, counts
    stored = [p for p in (tmp_path / "i.zarr/c").rglob("*") if p.is_file()]
    assert len(stored) == stores
    assert_same(sw.open(tmp_path / "i.zarr")[...], data)


def test_map_chunks_fills_every_shard_once(tmp_path, scheduler):
    a = sw.create(tmp_path / "m.zarr", shape=(23, 17), dtype="int64", chunks=(4, 4), shards=(8, 8))
    stats = swd.map_chunks(lambda c: c.origin[0] * 100 + c.origin[1], a, scheduler=scheduler)
    assert (stats["shards_written"], stats["puts"]) == (9, 9)
    want = np.zeros((23, 17), "int64")
    for c in a.iter_chunks():
        want[c.slices] = c.origin[0] * 100 + c.origin[1]
    assert_same(a[...], want)
    before = a[...]
    stats = swd.map_chunks(
        lambda c: -1,
        str(tmp_path / "m.zarr"),
        within=(slice(0, 1), slice(9, 10)),
        scheduler=scheduler,
    )
    assert stats["shards_written"] == 1
    want = before.copy()
    want[0:8, 8:16] = -1
    assert_same(a[...], want)


PYRAMIDS = {
    # uint16 mean, 3-d, factors 2, default chunks and shards
    "mean": dict(
        shape=(40, 70, 90),
        dtype="uint16",
        chunks=(11, 23, 17),
        factors=(2, 2, 2),
        settings=dict(chunks=(8, 16, 16), shards=(16, 32, 32)),
    ),
    # factor 3 against inner chunks of 4 (blocks of 12 cross shards), float median
    "median": dict(
        shape=(2, 50, 61),
        dtype="float32",
        chunks=(1, 13, 31),
        factors=(1, 3, 3),
        settings=dict(
            method="median",
            chunks=[(1, 4, 4), (1, 5, 3)],
            shards=[(1, 8, 8), (1, 5, 9)],
            levels=2,
            axes=("c", "y", "x"),
        ),
    ),
    "mode": dict(
        shape=(33, 47),
        dtype="int8",
        chunks=(33, 5),
        factors=(2, 2),
        settings=dict(method="mode", chunks=(4, 4), shards=(8, 8)),
    ),
}


@pytest.mark.parametrize("case", sorted(PYRAMIDS))
def test_pyramid_equals_sw_pyramid_bit_for_bit(tmp_path, scheduler, case):
    spec = PYRAMIDS[case]
    data = reference(spec["shape"], spec["dtype"], seed=7)
    darr = da.from_array(data, chunks=spec["chunks"])
    got = swd.pyramid(
        darr, tmp_path / "d.zarr", factors=spec["factors"], scheduler=scheduler, **spec["settings"]
    )
    want = sw.pyramid(data, tmp_path / "w.zarr", factors=spec["factors"], **spec["settings"])
    assert len(got) == len(want) > 1
    shards = [len(a.iter_shards()) for a in want]
    assert got.stats["shards_written"] == shards == want.stats["shards_written"]
    assert got.stats["puts"] == sum(shards)
    assert got.stats["gets"] == 0
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.metadata == b.metadata, k
        assert_same(a[...], b[...])
    assert json.loads((tmp_path / "d.zarr/zarr.json").read_text()) == json.loads(
        (tmp_path / "w.zarr/zarr.json").read_text().replace("w.zarr", "d.zarr")
    )


def test_pyramid_from_a_path_and_resume_writes_only_the_missing_shards(tmp_path):
    data = reference((64, 64), "uint8", seed=2)
    source = sw.create(
        tmp_path / "src.zarr", shape=(64, 64), dtype="uint8", chunks=(8, 8), shards=(16, 16)
    )
    source[...] = data
    dest = tmp_path / "p.zarr"
    levels = swd.pyramid(
        str(tmp_path / "src.zarr"),
        dest,
        factors=(2, 2),
        chunks=(8, 8),
        shards=(16, 16),
        scheduler="sync",
    )
    want = [a[...] for a in levels]
    # a job that stopped: some shards of two levels, and the group metadata, missing
    for gone in ("0/c/1/2", "0/c/3/3", "1/c/0/1", "zarr.json"):
        (dest / gone).unlink()
    with pytest.raises(sw.ShardwrightError, match="exists already"):
        swd.pyramid(data, dest, factors=(2, 2), chunks=(8, 8), shards=(16, 16))
    task = swd.pyramid(
        data, dest, factors=(2, 2), chunks=(8, 8), shards=(16, 16), resume=True, compute=False
    )
    keys = [
        k
        for k in dict(task.__dask_graph__())
        if isinstance(k, tuple) and k[0].startswith("shardwright-level")
    ]
    assert sorted(k[1:] for k in keys) == [(0, 1, 2), (0, 3, 3), (1, 0, 1)]  # level, index
    assert {key_split(k) for k in keys} == {"shardwright-level"}  # Dask's group name
    stats = task.compute(scheduler="threads")
    levels_below = len(want) - 2  # 64 -> 32 -> ... -> 1: the levels past level 1
    assert stats["shards_written"] == [2, 1] + [0] * levels_below
    assert stats["shards_skipped"] == [14, 3] + [1] * levels_below
    assert (dest / "zarr.json").exists()
    for k, w in enumerate(want):
        assert_same(sw.open(dest / str(k))[...], w)


def test_arrays_pickle_as_where_they_are(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(6,), dtype="int8", chunks=(2,), shards=(4,))
    a[:] = 5
    b = pickle.loads(pickle.dumps(sw.open(tmp_path / "a.zarr", mode="r")))
    assert b.read_only and b.path == a.path and b[:].tolist() == [5] * 6
    levels = sw.pyramid(
        np.ones((8, 8), "uint8"), tmp_path / "p.zarr", factors=(2, 2), chunks=(4, 4)
    )
    assert pickle.loads(pickle.dumps(levels[1])).path == tmp_path / "p.zarr" / "1"


def test_an_array_without_a_location_refuses_to_pickle(tmp_path):
    faulty = FaultyStore(str(tmp_path))
    sw.create(tmp_path / "f.zarr", shape=(4,), dtype="int8", chunks=(2,))
    array = faulty.open("f.zarr")
    with pytest.raises(TypeError, match="cannot be pickled: it was not opened from a path"):
        pickle.dumps(array)


def test_bad_input_is_refused_before_any_task(tmp_path):
    darr = da.zeros((10, 10), dtype="float64", chunks=5)
    a = sw.create(tmp_path / "t.zarr", shape=(10, 10), dtype="int16", chunks=(5, 5))
    with pytest.raises(TypeError, match="expected a dask array, got ndarray"):
        swd.to_zarr(np.zeros((10, 10)), a)
    with pytest.raises(sw.ShapeError, match=r"shape \(10, 11\) differs from the target's"):
        swd.to_zarr(da.zeros((10, 11), chunks=5), a)
    text = da.from_array(np.full((10, 10), "x"), chunks=5)  # not numbers: refused up front
    with pytest.raises(sw.DTypeError, match="dtype <U1 into the array's dtype int16: only num"):
        swd.to_zarr(text, a)
    with pytest.raises(TypeError, match="make a new array; the target is an open"):
        swd.to_zarr(darr, a, chunks=(5, 5))
    with pytest.raises(sw.ShapeError, match=r"shape=\(3, 3\) differs from the dask array's"):
        swd.to_zarr(darr, tmp_path / "n.zarr", shape=(3, 3), chunks=(5, 5))
    unknown = da.zeros((10,), chunks=5)
    unknown = unknown[unknown > -1]
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        swd.to_zarr(unknown, tmp_path / "u.zarr", chunks=(5,))
    with pytest.raises(sw.ArrayNotFoundError):
        swd.to_zarr(darr, tmp_path / "missing.zarr")
    with pytest.raises(TypeError, match="fn must be callable"):
        swd.map_chunks(3, a)
    with dask.config.set(scheduler="sync"):
        assert swd.to_zarr(darr.astype("int16"), a)["shards_written"] == 4


def test_read_only_targets_are_refused_before_any_task(tmp_path):
    sw.create(tmp_path / "r.zarr", shape=(4, 4), dtype="int8", chunks=(2, 2))
    read_only = sw.open(tmp_path / "r.zarr", mode="r")
    with pytest.raises(sw.ReadOnlyError, match=r"swd.to_zarr: the array .* is read-only"):
        swd.to_zarr(da.zeros((4, 4), dtype="int8", chunks=2), read_only, compute=False)
    with pytest.raises(sw.ReadOnlyError, match=r"swd.map_chunks: the array .* is read-only"):
        swd.map_chunks(lambda c: 1, read_only, compute=False)


def _in_memory(kind: str) -> tuple[sw.Array, str]:
    """An array in this process's memory, and the name its refusal gives it."""
    if kind == "memory-url":
        url = "memory:///dask/local.zarr"
        return sw.create(url, shape=(4,), dtype="int8", chunks=(2,), overwrite=True), url
    if kind == "zarr-memory":
        store = zarr.storage.MemoryStore()
    elif kind == "fsspec-memory":
        store = zarr.storage.FsspecStore.from_url("memory://dask-local/root")
    elif kind == "fsspec-memory-logged":
        store = zarr.storage.LoggingStore(
            zarr.storage.FsspecStore.from_url("memory://dask-logged/root"), log_level="ERROR"
        )
    else:
        import obstore

        store = zarr.storage.ObjectStore(obstore.store.MemoryStore())
    return sw.create(store, path="m", shape=(4,), dtype="int8", chunks=(2,), overwrite=True), "/m"


IN_MEMORY = ["memory-url", "zarr-memory", "fsspec-memory", "fsspec-memory-logged", "obstore"]


@pytest.mark.parametrize("kind", IN_MEMORY)
def test_arrays_in_this_process_memory_refuse_to_pickle(kind):
    """A worker process would find nothing there (memory:///, fsspec's and obstore's
    memory stores: a worker that died unpickling it hung the computation, issue 22) or
    write into a copy (a zarr MemoryStore: the writes lost without an error)."""
    a, name = _in_memory(kind)
    why = "a copy of the store" if kind == "zarr-memory" else "a worker process does not share"
    with pytest.raises(TypeError, match=f"{name}.*cannot be pickled: .*{why}"):
        pickle.dumps(a)
    with pytest.raises(TypeError, match=f"{name}.*cannot be pickled"):
        swd.to_zarr(da.ones((4,), dtype="int8", chunks=3), a, scheduler="processes")
    with pytest.raises(TypeError, match=f"{name}.*cannot be pickled"):
        swd.map_chunks(lambda c: 1, a, scheduler="processes")
    swd.to_zarr(da.ones((4,), dtype="int8", chunks=3), a, scheduler="threads")  # no pickle
    assert a[:].tolist() == [1, 1, 1, 1]


def test_unpickling_an_array_reads_nothing_until_it_is_used(tmp_path):
    """A task's target is opened inside the task, where an error is the task's: not
    while it is unpickled (in distributed's comm layer, which then loses the worker)."""
    a = sw.create(tmp_path / "u.zarr", shape=(4,), dtype="int8", chunks=(2,))
    shipped = pickle.dumps(a)
    (tmp_path / "u.zarr" / "zarr.json").unlink()
    b = pickle.loads(shipped)  # no I/O: nothing to find missing yet
    assert "not opened yet" in repr(b)
    with pytest.raises(sw.ArrayNotFoundError, match="no Zarr v3 array at"):
        b.write_shard((0,))


def test_a_process_opens_a_shipped_target_once_and_again_when_it_changed(tmp_path):
    """The tasks of one graph in one worker process share one opened array (threads
    opening it at once wait for the first); a new zarr.json is opened afresh."""
    from concurrent.futures import ThreadPoolExecutor

    from shardwright._reopen import travelling

    a = sw.create(tmp_path / "c.zarr", shape=(4,), dtype="int8", chunks=(2,))
    shipped = pickle.dumps(travelling(a, "graph-1"))
    with ThreadPoolExecutor(8) as pool:
        cores = list(pool.map(lambda _: pickle.loads(shipped)._core, range(16)))
    assert all(c is cores[0] for c in cores)
    a.resize(6)
    grown = pickle.loads(pickle.dumps(travelling(a, "graph-1")))
    assert grown.shape == (6,) and grown._core is not cores[0]
    other_graph = pickle.loads(pickle.dumps(travelling(a, "graph-2")))
    assert other_graph._core is not grown._core


def test_pyramid_from_a_relative_path_and_a_url_with_storage_options(tmp_path, monkeypatch):
    """The tasks reopen the destination by absolute path, wherever a worker runs; a URL
    source takes the storage_options as sw.pyramid does (review findings)."""
    from shardwright import _dask_graph

    monkeypatch.chdir(tmp_path)
    data = reference((32, 32), "uint16", seed=6)
    src = sw.create(
        "memory:///dask/src.zarr", shape=(32, 32), dtype="uint16", chunks=(8, 8), overwrite=True
    )
    src[...] = data
    task = swd.pyramid(
        "memory:///dask/src.zarr",
        "rel.zarr",
        factors=(2, 2),
        chunks=(8, 8),
        storage_options={"unused": None},
        compute=False,
    )
    graph = dict(task.__dask_graph__())
    level1 = next(
        t for t in graph.values() if getattr(t, "func", None) is _dask_graph.downsample_shard
    )
    shipped = pickle.dumps(level1.args[0])  # the PyramidTasks a worker gets
    level0 = [t for t in graph.values() if getattr(t, "func", None) is _dask_graph.copy_from_source]
    for t in level0:  # the destination as a worker gets it (the source is in memory here)
        job = t.args[0]
        into = pickle.loads(pickle.dumps(job.array))
        _dask_graph.copy_from_source(dataclasses.replace(job, array=into))
    monkeypatch.chdir(tmp_path.parent)  # a worker started in another folder
    stats = _dask_graph.downsample_shard(
        pickle.loads(shipped), level1.args[1], list(level1.args[2])
    )
    assert stats["puts"] == 1
    assert_same(sw.open(tmp_path / "rel.zarr/0")[...], data)
