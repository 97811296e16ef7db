"""Costs that grow with what is stored, not with the grid (issue 23): ``check``,
``resize`` and ``info`` list the array's folder once where the store lists (a local
folder, an object store, a zarr-python store with ``supports_listing``), and ask for each
grid cell only where it cannot. Each case is bounded: a regression to one request per
cell fails on its time limit rather than hanging."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from typing import Any

import numpy as np
import shardwright as sw
from zarr.storage import MemoryStore, WrapperStore

LIMIT = 5.0  # seconds; asking for every one of 15.6 million cells takes minutes


class TooSlow(Exception):
    pass


def bounded_progress() -> Any:
    started = time.monotonic()

    def progress(p: dict[str, Any]) -> None:
        if time.monotonic() - started > LIMIT:
            raise TooSlow(f"{p['shards_done']} of {p['shards_total']} after {LIMIT} s")

    return progress


class Counting(WrapperStore):
    """Counts ``getsize`` / ``exists`` (one per grid cell when probing) and listings;
    ``listing=False`` hides the wrapped store's listing."""

    def __init__(self, store: Any, listing: bool = True) -> None:
        super().__init__(store)
        self.listing = listing
        self.probes = 0
        self.lists = 0

    @property
    def supports_listing(self) -> bool:
        return self.listing

    async def getsize(self, key):
        self.probes += 1
        return await self._store.getsize(key)

    async def exists(self, key):
        self.probes += 1
        return await self._store.exists(key)

    def list_prefix(self, prefix):
        self.lists += 1
        return self._store.list_prefix(prefix)


def test_a_quick_check_of_an_empty_billion_element_array_lists_its_folder(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(10**9,), dtype="uint8", chunks=(64,), shards=(64,))
    a[640:704] = 1
    started = time.monotonic()
    report = sw.check(tmp_path / "a.zarr", quick=True, progress=bounded_progress())
    assert time.monotonic() - started < LIMIT
    assert report.ok and report.shards_stored == 1 and report.shards_total == 15_625_000


def test_shrinking_a_huge_grid_deletes_its_one_stored_shard_outside(tmp_path):
    code = textwrap.dedent(
        f"""
        import time, numpy as np, shardwright as sw
        a = sw.create({str(tmp_path / "a.zarr")!r}, shape=(65536, 65536), dtype="uint8",
                      chunks=(16, 16), shards=(16, 16))
        a[64000:64016, 64000:64016] = 5
        a[992:1008, 0:16] = 7
        started = time.monotonic()
        a.resize(1000, 1000)
        print(time.monotonic() - started)
        """
    )
    # a process of its own, killed at the limit: a resize cannot be stopped from inside
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=4 * LIMIT
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < LIMIT
    assert not (tmp_path / "a.zarr/c/4000/4000").exists()
    a = sw.open(tmp_path / "a.zarr")
    a.resize(2000, 2000)
    want = np.zeros((16, 16), "uint8")
    want[:8] = 7
    np.testing.assert_array_equal(a[992:1008, 0:16], want)


def test_a_zarr_store_is_listed_not_probed_cell_by_cell():
    store = Counting(MemoryStore())
    a = sw.create(store, path="a", shape=(10**6,), dtype="uint8", chunks=(64,), shards=(64,))
    a[64:128] = 3
    store.probes = 0
    report = sw.check(a, quick=True, progress=bounded_progress())
    assert report.ok and report.shards_stored == 1
    # one listing; a few probes (the stored shard's size), not one per cell (15 626)
    assert store.lists == 1 and store.probes <= 3
    a.resize(100)
    assert a[:].tolist() == [0] * 64 + [3] * 36


def test_a_store_that_cannot_list_is_probed_cell_by_cell():
    store = Counting(MemoryStore(), listing=False)
    a = sw.create(store, path="a", shape=(1024,), dtype="uint8", chunks=(64,), shards=(64,))
    a[64:128] = 3
    a[960:1024] = 4
    store.probes = 0
    report = sw.check(a, quick=True)
    assert report.ok and report.shards_stored == 2
    assert store.lists == 0 and store.probes >= 16
    a.resize(100)
    a.resize(1024)
    want = np.zeros(1024, "uint8")
    want[64:100] = 3
    np.testing.assert_array_equal(a[:], want)


def test_info_of_an_empty_huge_array_is_quick(tmp_path):
    sw.create(tmp_path / "a.zarr", shape=(10**9,), dtype="uint8", chunks=(64,), shards=(64,))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "shardwright", "info", str(tmp_path / "a.zarr")],
        capture_output=True,
        text=True,
        timeout=4 * LIMIT,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < LIMIT
    assert "stored:        0 of 15625000 shards" in done.stdout
