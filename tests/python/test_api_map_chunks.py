"""The Python API: map_chunks."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same, temp_files

# --------------------------------------------------------------------------------------
# map_chunks
# --------------------------------------------------------------------------------------


def _chunk_value(c: sw.Domain) -> np.ndarray:
    grid = np.indices(c.shape).sum(axis=0)
    return (grid + 100 * c.index[0] + 10 * c.index[1]).astype("int32")


def _expected_map(a: sw.Array) -> np.ndarray:
    out = np.zeros(a.shape, dtype="int32")
    for c in a.iter_chunks():
        out[c.slices] = _chunk_value(c)
    return out


@pytest.mark.parametrize("workers", [None, 1, 3])
def test_map_chunks_whole_array(tmp_path, workers):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 11), dtype="i4", chunks=(4, 3), shards=(8, 6))
    seen = []
    lock = threading.Lock()

    def fn(c):
        with lock:
            seen.append(c)
        return _chunk_value(c)

    stats = a.map_chunks(fn, workers=workers)
    assert sorted(seen, key=lambda d: d.index) == list(a.iter_chunks())
    assert all(c.index is not None for c in seen)
    assert stats["shards_written"] == 6
    assert stats["puts"] == 6
    assert stats["gets"] == 0
    assert stats["chunks_written"] == len(list(a.iter_chunks()))
    assert stats["bytes_written"] > 0
    assert "chunks_empty" in stats
    assert stats["seconds"] >= 0
    assert_same(a[...], _expected_map(a))


def test_map_chunks_within(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 11), dtype="i4", chunks=(4, 3), shards=(8, 6))
    within = sw.Domain((9, 7), (2, 2))
    met = list(a.iter_shards(within))
    assert len(met) == 1
    stats = a.map_chunks(_chunk_value, within=within, workers=1)
    assert stats["shards_written"] == 1 and stats["puts"] == 1
    expected = np.zeros(a.shape, dtype="int32")
    for c in a.iter_chunks(met[0]):
        expected[c.slices] = _chunk_value(c)
    assert_same(a[...], expected)
    # slices work too
    stats = a.map_chunks(lambda c: -1, within=(slice(0, 1), slice(0, 1)), workers=3)
    assert stats["shards_written"] == 1
    assert (a[0:8, 0:6] == -1).all()
    assert (a[8:, :6] == 0).all()


def test_map_chunks_calls_fn_on_the_calling_thread_only(tmp_path):
    """fn runs chunk after chunk on the caller's thread (so it need not be thread-safe and
    never contends for the GIL); shards are committed in the background meanwhile."""
    a = sw.create(tmp_path / "a.zarr", shape=(12, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))
    threads = set()
    order = []

    def fn(c):
        threads.add(threading.get_ident())
        order.append(c.origin)
        return c.origin[0] + 1

    stats = a.map_chunks(fn, workers=3)
    assert stats["shards_written"] == 3 and stats["puts"] == 3
    assert threads == {threading.get_ident()}
    assert order == sorted(order)  # shard by shard, C order inside each
    rows = np.arange(12, dtype="u1") // 2 * 2 + 1  # each chunk holds its first row + 1
    assert (a[...] == rows[:, None]).all()


def test_map_chunks_error_keeps_complete_shards_only(tmp_path):
    """An error in fn for the third shard: the two complete shards (committing in the
    background) are stored, the third is not; no commit thread outlives the call."""
    a = sw.create(tmp_path / "a.zarr", shape=(12, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))

    def fn(c):
        if c.origin == (8, 2):
            raise KeyError("boom")
        return 7

    with pytest.raises(KeyError, match="boom"):
        a.map_chunks(fn, workers=2)
    assert (a[:8] == 7).all()
    assert (a[8:] == 0).all()
    assert not (tmp_path / "a.zarr" / "c" / "2").exists()
    assert commit_threads() == []


def commit_threads():
    """The engine's background commit threads alive now (Linux: named in /proc)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return [n for n in names if n.startswith("shardwright-com")]


def test_map_chunks_progress(tmp_path, capsys):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))
    a.map_chunks(lambda c: 1, progress=True, workers=2)
    captured = capsys.readouterr()
    assert "4/4" in captured.err
    assert "shardwright" in captured.err
    assert captured.out == ""
    a.map_chunks(lambda c: 2, workers=2)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_map_chunks_fn_raises(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))

    def fn(c):
        if c.index == (2, 1):  # in shard (1, 0)
            raise ValueError("bad chunk")
        return 1

    with pytest.raises(ValueError, match="bad chunk"):
        a.map_chunks(fn, workers=1)
    assert not (path / "c" / "1" / "0").exists()
    assert temp_files(path) == []
    assert (a[4:8, 0:4] == 0).all()


def test_map_chunks_wrong_shape_from_fn(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))
    with pytest.raises(sw.ShapeError):
        a.map_chunks(lambda c: np.zeros((3, 3), dtype="u1"))
    assert (a[...] == 0).all()


def test_map_chunks_progress_is_one_line_per_update_off_a_terminal(tmp_path, capsys, monkeypatch):
    # Used to print "shardwright: 1/8 shardsshardwright: 2/8 shards..." on one line.
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)  # the plain bar, tqdm installed or not
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(2, 8))
    a.map_chunks(lambda c: 1, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == "shardwright: 4/4 shards (100%)"
    assert all(line.startswith("shardwright: ") and line.count("/") == 1 for line in lines)


def test_map_chunks_progress_callable_gets_events(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 8))
    events = []
    a.map_chunks(lambda c: 1, progress=events.append)
    assert [(e["done"], e["total"]) for e in events] == [(1, 2), (2, 2)]
    assert all(e["bytes"] > 0 and isinstance(e["shard"], sw.Domain) for e in events)


def test_map_chunks_progress_uses_tqdm_when_installed(tmp_path, monkeypatch):
    import sys
    import types

    made = []

    class FakeTqdm:
        def __init__(self, total, unit, desc, file):
            made.append(self)
            self.total, self.n, self.closed = total, 0, False

        def update(self, n):
            self.n += n

        def close(self):
            self.closed = True

    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))
    a.map_chunks(lambda c: 1, progress=True)
    assert [(t.total, t.n, t.closed) for t in made] == [(4, 4, True)]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_progress_callback_raising_again_while_commits_finish_keeps_the_first_error(
    tmp_path, workers
):
    # Review of issue 23: the callback raising again while the commits in flight
    # finished skipped the remaining waits and replaced the first error.
    a = sw.create(tmp_path / "m.zarr", shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(2, 8))
    calls = []

    def progress(event):
        calls.append(event)
        raise ValueError(f"progress failed ({len(calls)})")

    with pytest.raises(BaseException) as raised:
        a.map_chunks(lambda c: np.ones(c.shape, "uint8"), progress=progress, workers=workers)
    errors = (
        list(raised.value.exceptions)
        if isinstance(raised.value, BaseExceptionGroup)
        else [raised.value]
    )
    assert "progress failed (1)" in str(errors[0])
    assert all(isinstance(e, ValueError) for e in errors)
    # every commit that started finished: the stored shards are whole and readable
    stored = a[...]
    assert set(np.unique(stored)) <= {0, 1}
