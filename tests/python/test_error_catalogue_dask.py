"""The catalogue's rows for shardwright.dask and for pickling arrays (docs/errors.md)."""

from __future__ import annotations

import pickle

import dask.array as da
import numpy as np
import shardwright as sw
import shardwright.dask as swd
import zarr
from error_doc import expect
from shardwright.testing import FaultyStore


def test_dask_bad_input(tmp_path):
    a = sw.create(tmp_path / "t.zarr", shape=(4, 4), dtype="int16", chunks=(2, 2))
    with expect("dask-not-dask"):
        swd.to_zarr(np.zeros((4, 4)), a)
    with expect("dask-shape"):
        swd.to_zarr(da.zeros((4, 5), dtype="int16", chunks=2), a)
    with expect("dask-dtype"):
        swd.to_zarr(da.full((4, 4), 0.5, chunks=2), a)
    x = da.arange(16, chunks=4)
    with expect("dask-unknown-chunks"):
        swd.to_zarr(x[x > 0], tmp_path / "u.zarr", chunks=(4,))
    with expect("dask-read-only"):
        swd.to_zarr(da.zeros((4, 4), dtype="int16", chunks=2), sw.open(a.path, mode="r"))
    assert not (tmp_path / "t.zarr" / "c").exists()  # nothing stored


def test_pickling_arrays_that_cannot_travel(tmp_path):
    with expect("pickle-memory-store"):
        pickle.dumps(
            sw.create(zarr.storage.MemoryStore(), path="m", shape=(4,), dtype="int8", chunks=(2,))
        )
    memory = sw.create("memory:///x.zarr", shape=(4,), dtype="int8", chunks=(2,), overwrite=True)
    with expect("pickle-process-local"):
        pickle.dumps(memory)
    with expect("pickle-process-local"):
        swd.to_zarr(da.ones((4,), dtype="int8", chunks=2), memory, scheduler="processes")
    sw.create(tmp_path / "f.zarr", shape=(4,), dtype="int8", chunks=(2,))
    with expect("pickle-unlocated"):
        pickle.dumps(FaultyStore(str(tmp_path)).open("f.zarr"))
