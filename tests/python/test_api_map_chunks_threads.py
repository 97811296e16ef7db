"""The Python API: map_chunks(threads=N), fn on several threads, a shard per thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same, temp_files


def _value(c: sw.Domain) -> np.ndarray:
    grid = np.indices(c.shape).sum(axis=0)
    return (grid + 100 * c.index[0] + 10 * c.index[1]).astype("int32")


def _make(tmp_path, name="a.zarr"):
    return sw.create(tmp_path / name, shape=(20, 11), dtype="i4", chunks=(4, 3), shards=(8, 6))


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_write_every_chunk_once_and_each_shard_with_one_put(tmp_path, threads):
    a = _make(tmp_path)
    seen, callers = [], set()
    lock = threading.Lock()
    barrier = threading.Barrier(2, timeout=10)

    def fn(c):
        with lock:
            seen.append(c)
            callers.add(threading.get_ident())
        if c.index == (0, 0) or c.index == (0, 2):  # first chunks of two shards
            barrier.wait()  # proves two shards are filled at once, on two threads
        return _value(c)

    stats = a.map_chunks(fn, threads=threads)
    assert sorted(seen, key=lambda d: d.index) == list(a.iter_chunks())
    assert len(callers) >= 2 and threading.get_ident() not in callers
    assert stats["shards_written"] == 6 and stats["puts"] == 6 and stats["gets"] == 0
    assert stats["chunks_written"] == len(seen)
    expected = np.zeros(a.shape, dtype="int32")
    for c in a.iter_chunks():
        expected[c.slices] = _value(c)
    assert_same(a[...], expected)


def test_each_shard_is_filled_in_c_order_by_one_thread(tmp_path):
    a = _make(tmp_path)
    by_shard: dict[tuple[int, ...], list] = {}
    lock = threading.Lock()
    shard_of = {c: s.index for s in a.iter_shards() for c in a.iter_chunks(s)}

    def fn(c):
        with lock:
            by_shard.setdefault(shard_of[c], []).append((threading.get_ident(), c.origin))
        return 1

    a.map_chunks(fn, threads=3)
    for calls in by_shard.values():
        assert len({t for t, _ in calls}) == 1
        origins = [o for _, o in calls]
        assert origins == sorted(origins)


def test_an_error_stops_the_others_and_stores_no_partial_shard(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(32, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))

    def fn(c):
        if c.index == (6, 1):  # the last chunk of shard (3, 0)
            raise KeyError("boom")
        return 7

    with pytest.raises(KeyError, match="boom") as info:
        a.map_chunks(fn, threads=2)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "shard" in notes and "was not stored" in notes and "of 8 shards were stored" in notes
    assert not (path / "c" / "3" / "0").exists()
    stored = [s for s in a.iter_shards() if (path / "c" / str(s.index[0]) / "0").exists()]
    for s in stored:  # whatever was stored is whole
        assert (a[s.slices] == 7).all()
    assert len(stored) < 8
    assert temp_files(path) == []


def test_errors_in_two_threads_come_as_a_group_naming_each_shard(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))
    barrier = threading.Barrier(2, timeout=10)

    def fn(c):
        barrier.wait()  # both threads reach their first chunk, then both fail
        raise ValueError(f"bad {c.index}")

    with pytest.raises(ExceptionGroup) as info:
        a.map_chunks(fn, threads=2)
    assert len(info.value.exceptions) == 2
    for err in info.value.exceptions:
        assert isinstance(err, ValueError)
        assert any("was not stored" in n for n in err.__notes__)
    assert (a[...] == 0).all()


def test_keyboard_interrupt_in_a_thread_is_raised_as_itself(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))

    def fn(c):
        if c.index == (2, 0):
            raise KeyboardInterrupt
        return 1

    with pytest.raises(KeyboardInterrupt):
        a.map_chunks(fn, threads=2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_int(tmp_path, bad):
    a = _make(tmp_path)
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        a.map_chunks(lambda c: 1, threads=bad)
    assert (a[...] == 0).all()


def test_progress_counts_every_shard_from_threads(tmp_path):
    a = _make(tmp_path)
    events = []
    a.map_chunks(lambda c: 1, threads=3, progress=events.append)
    assert sorted(e["done"] for e in events) == list(range(1, 7))
    assert all(e["total"] == 6 and e["bytes"] > 0 for e in events)


def test_threads_within_a_region(tmp_path):
    a = _make(tmp_path)
    stats = a.map_chunks(lambda c: -1, within=(slice(0, 9), slice(0, 1)), threads=2)
    assert stats["shards_written"] == 2
    assert (a[0:16, 0:6] == -1).all() and (a[16:] == 0).all() and (a[:, 6:] == 0).all()
