"""Arrays on zarr-python stores the engine cannot open natively, through the adapter:
MemoryStore, FsspecStore (local and memory filesystems), ObjectStore over obstore's
MemoryStore, each behind a counting WrapperStore that sees every call. Same invariants
as the native backends: one ``set`` per committed shard, no ``get`` of a shard that was
written whole, nothing stored before the block ends."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import assert_same, reference, write_all
from obstore.store import MemoryStore as ObstoreMemory
from zarr.storage import FsspecStore, MemoryStore, ObjectStore, WrapperStore

SHAPE, CHUNKS, SHARDS = (38, 20), (4, 6), (8, 12)  # 5 x 2 = 10 shards, the last ones clipped


class Counting(WrapperStore):
    """A WrapperStore counting (method, key) of the engine's get, set and delete calls
    (``exists``, ``getsize`` and ``set_if_not_exists`` pass through uncounted)."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def _count(self, method: str, key: str) -> None:
        with self._lock:
            self.calls[(method, key)] += 1

    async def get(self, key, prototype, byte_range=None):
        self._count("get", key)
        return await self._store.get(key, prototype, byte_range)

    async def set(self, key, value):
        self._count("set", key)
        return await self._store.set(key, value)

    async def delete(self, key):
        self._count("delete", key)
        return await self._store.delete(key)

    def shard_calls(self, method: str) -> list[str]:
        return sorted(
            k for (m, k), n in self.calls.items() if m == method and "/c/" in k for _ in range(n)
        )

    def clear(self) -> None:
        self.calls.clear()


def _stores(tmp_path) -> dict[str, Any]:
    return {
        "memory": MemoryStore(),
        "fsspec-local": FsspecStore.from_url(
            f"file://{tmp_path}/fs", storage_options={"auto_mkdir": True}
        ),
        "fsspec-memory": FsspecStore.from_url(f"memory://{tmp_path.name}"),
        "obstore-memory": ObjectStore(ObstoreMemory()),
    }


@pytest.fixture(params=["memory", "fsspec-local", "fsspec-memory", "obstore-memory"])
def store(request, tmp_path) -> Counting:
    return Counting(_stores(tmp_path)[request.param])


def test_whole_shards_are_one_set_each_and_read_back_by_zarr(store):
    a = sw.create(store, path="g/a", shape=SHAPE, dtype="int32", chunks=CHUNKS, shards=SHARDS)
    assert a.url.endswith("/g/a")
    data = reference(SHAPE, "int32")
    store.clear()
    write_all(a, data)
    keys = sorted(f"g/a/c/{i}/{j}" for i in range(5) for j in range(2))
    assert store.shard_calls("set") == keys  # one set per shard
    assert store.shard_calls("get") == []
    assert_same(zarr.open_array(store, path="g/a", mode="r")[...], data)
    assert_same(sw.open(store, path="g/a")[...], data)


def test_partial_writes_merge_and_transactions_read_their_writes(store):
    a = sw.create(store, path="a", shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    data = reference(SHAPE, "uint16", seed=3)
    write_all(a, data)
    store.clear()
    with a.write_shard((1, 1)) as w:
        w[9:13, 13:20] = 7  # inside shard (1, 1): rows 8..16, columns 12..24
    data[9:13, 13:20] = 7
    assert store.shard_calls("get") == ["a/c/1/1"] and store.shard_calls("set") == ["a/c/1/1"]
    with a.transaction() as tx:
        tx[3:30, 5:9] = 9
        assert (tx[3:30, 5:9] == 9).all()
        assert store.shard_calls("set") == ["a/c/1/1"]  # nothing stored before the end
    data[3:30, 5:9] = 9
    assert_same(zarr.open_array(store, path="a", mode="r")[...], data)


def test_an_exception_in_a_block_stores_nothing(store):
    a = sw.create(store, path="a", shape=SHAPE, dtype="uint8", chunks=CHUNKS, shards=SHARDS)
    store.clear()
    with pytest.raises(RuntimeError), a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 1
        raise RuntimeError("no")
    assert store.shard_calls("set") == [] and store.shard_calls("get") == []
    assert (a[...] == 0).all()


def test_writers_of_one_shard_in_threads_lose_nothing(store):
    """The adapter's conditional writes are atomic within the process (a lock per key)."""
    a = sw.create(store, path="a", shape=(8, 64), dtype="int16", chunks=(4, 4), shards=(8, 64))

    def work(t: int) -> None:
        b = sw.open(store, path="a")
        for i in range(8):
            with b.write_shard((0, 0)) as w:
                w[i, t * 16 + 1 : t * 16 + 15] = t * 10 + i + 1

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = np.zeros((8, 64), "int16")
    for t in range(4):
        for i in range(8):
            expected[i, t * 16 + 1 : t * 16 + 15] = t * 10 + i + 1
    assert_same(a[...], expected)


def test_create_refuses_an_existing_array_and_overwrites_only_under_its_path(store):
    sw.create(store, path="x/a", shape=(4,), dtype="u1", chunks=(2,)).map_chunks(lambda c: 1)
    sw.create(store, path="x/b", shape=(4,), dtype="u1", chunks=(2,)).map_chunks(lambda c: 2)
    with pytest.raises(sw.ShardwrightError, match="already exists"):
        sw.create(store, path="x/a", shape=(4,), dtype="u1", chunks=(2,))
    a = sw.create(store, path="x/a", shape=(4,), dtype="u1", chunks=(2,), overwrite=True)
    assert a[...].tolist() == [0] * 4
    assert sw.open(store, path="x/b")[...].tolist() == [2] * 4
    with pytest.raises(sw.UnsupportedError, match="root"):
        sw.create(store, shape=(4,), dtype="u1", chunks=(2,), overwrite=True)
    with pytest.raises(sw.ArrayNotFoundError, match="x/none"):
        sw.open(store, path="x/none")


def test_a_zarr_array_on_a_memory_store_opens_through_the_adapter():
    z = zarr.create_array(
        MemoryStore(), name="q", shape=(6,), chunks=(2,), shards=(4,), dtype="i4", fill_value=0
    )
    a = sw.open(z)
    a.map_chunks(lambda c: c.index[0] + 1)
    assert_same(z[...], np.array([1, 1, 2, 2, 3, 3], "i4"))


def test_a_read_only_store_reads_and_refuses_writes_storing_nothing():
    writable = MemoryStore()
    sw.create(writable, path="a", shape=(4,), dtype="u1", chunks=(2,)).map_chunks(lambda c: 3)
    a = sw.open(writable.with_read_only(True), path="a")
    assert a[...].tolist() == [3] * 4
    with pytest.raises(sw.ShardwrightError, match="read-only"), a.write_shard((0,)) as w:
        w[0:2] = 4
    assert sw.open(writable, path="a")[...].tolist() == [3] * 4


def test_one_store_through_two_objects_loses_nothing():
    """A WrapperStore and the store it wraps (as two `session.store` objects of Icechunk
    are): the adapter's locks and versions go by key, not by store object, so racing
    merges through both conflict and retry instead of overwriting each other."""
    import time

    class Slow(WrapperStore):
        async def get(self, key, prototype, byte_range=None):
            value = await self._store.get(key, prototype, byte_range)
            if "/c/" in key:
                time.sleep(0.05)  # widen the window between the merge's read and its put
            return value

    inner = MemoryStore()
    a = sw.create(inner, path="a", shape=(4, 16), dtype="int8", chunks=(4, 4), shards=(4, 16))
    a.map_chunks(lambda c: 9)
    through = {"slow": sw.open(Slow(inner), path="a"), "direct": sw.open(inner, path="a")}

    def write(name: str, column: int, value: int) -> None:
        with through[name].write_shard((0, 0)) as w:
            w[:, column : column + 2] = value

    threads = [
        threading.Thread(target=write, args=("slow", 1, 1)),
        threading.Thread(target=write, args=("direct", 9, 2)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = np.full((4, 16), 9, "int8")
    expected[:, 1:3], expected[:, 9:11] = 1, 2
    assert_same(a[...], expected)
