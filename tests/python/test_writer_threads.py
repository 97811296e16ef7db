"""Two threads on one writer or transaction (issue 22, item 12): while a commit runs in
one thread (held in a store call that blocks), every call from another thread answers at
once: state reads with the state the commit began with; writes, a second commit and an
abort with a ShardwrightError saying it is committing. Once the store call is released,
the shard is stored once, with the data written before the commit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import shardwright as sw
from shardwright.testing import FaultyStore

COMMITTING = "is committing in another thread"
# The store calls that store a shard: a put, a conditional put (a merge), or the
# completion of a streamed upload (a local folder streams a shard written whole).
STORING = ("put", "put_if", "complete")


@pytest.fixture
def store(tmp_path) -> FaultyStore:
    """A local folder with an (8, 12) uint16 array: (4, 4) inner chunks, (8, 8) shards."""
    root = tmp_path / "a.zarr"
    sw.create(root, shape=(8, 12), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    return FaultyStore(root)


def call(fn: Callable[[], Any], seconds: float = 5.0) -> Any:
    """``fn()`` on a thread of its own (so that a call that blocks fails the test instead
    of hanging it): its result, or its exception raised here. It must answer within
    ``seconds``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as err:
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the call still runs after {seconds} s: it blocks"
    assert time.monotonic() - start < seconds
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def refused(fn: Callable[[], Any]) -> None:
    """``fn()`` answers at once with the typed committing error."""
    with pytest.raises(sw.ShardwrightError, match=COMMITTING) as info:
        call(fn)
    assert type(info.value) is sw.ShardwrightError


def wait_blocked(store: FaultyStore, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while store.blocked() == 0:
        assert time.monotonic() < deadline, "the commit never reached the store"
        time.sleep(0.005)


def stored(store: FaultyStore) -> int:
    """The calls that stored a shard (a blocked one counts from its start)."""
    counts = store.counts()
    return sum(counts.get(op, 0) for op in STORING)


class Background:
    """``fn()`` run on a thread from now on."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._outcome["result"] = fn()
        except BaseException as err:
            self._outcome["error"] = err

    def running(self) -> bool:
        return self._thread.is_alive()

    def result(self, seconds: float = 30.0) -> Any:
        """Its result once it ended (within ``seconds``), or its exception raised here."""
        self._thread.join(seconds)
        assert not self._thread.is_alive(), f"still running after {seconds} s"
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome.get("result")


@contextmanager
def committing(store: FaultyStore, op: str, commit: Callable[[], Any]) -> Iterator[dict]:
    """Run ``commit()`` on a thread, blocked in its first ``op`` store call for the body
    of the block; then release it and wait for it. Yields the commit's outcome (filled
    in when the block ends)."""
    store.inject(op, store.counts().get(op, 0), "block")
    outcome: dict[str, Any] = {}
    commit_ = None
    try:
        commit_ = Background(commit)
        wait_blocked(store)
        assert store.raw_get("c/0/0") is None  # not stored yet
        yield outcome
    finally:
        store.release()
        if commit_ is not None:
            outcome["stats"] = commit_.result()


def fill(w: sw.ShardWriter) -> None:
    for c in w.inner_chunks():
        w[c] = np.full(c.shape, 10 * c.index[0] + c.index[1] + 1, "uint16")


EXPECTED = np.add.outer([1, 1, 1, 1, 11, 11, 11, 11], [0, 0, 0, 0, 1, 1, 1, 1]).astype("uint16")


def test_a_shard_writer_answers_every_call_from_another_thread_during_its_commit(store):
    a = store.open()
    w = a.write_shard((0, 0))
    fill(w)
    written = w.stats
    assert written["chunks_written"] == 4
    with committing(store, "complete", w.commit) as outcome:
        # state reads: at once, the state the commit began with
        assert call(lambda: w.closed) is False
        assert call(lambda: w.stats) == written
        assert call(lambda: w.shard) == sw.Domain((0, 0), (8, 8))
        assert call(lambda: repr(w)) == (
            "<shardwright.ShardWriter [0:8, 0:8] committing: 4 chunks written>"
        )
        chunks = call(w.inner_chunks)
        assert len(chunks) == 4 and [c.index for c in chunks][-1] == (1, 1)
        assert call(lambda: w._core.chunks_written) == 4
        assert call(lambda: w._core.staged_memory) > 0
        assert call(lambda: w._core.committing) is True
        # writes, a second commit, an abort: the typed error, and no change
        refused(lambda: w.__setitem__((slice(0, 4), slice(0, 4)), 99))
        refused(lambda: w.__setitem__(sw.Domain((0, 0), (4, 4)), np.zeros((4, 4), "uint16")))
        refused(lambda: w._core.write_value([0, 0], [1, 1], b"\x05\x00"))
        refused(lambda: asyncio.run(w.write_async(np.s_[0:4, 0:4], 1)))
        refused(w.commit)
        refused(w.abort)
        refused(w._core.commit_background)
        assert call(lambda: w.closed) is False
    assert outcome["stats"]["chunks_written"] == 4
    assert w.closed and not w._core.committing
    assert w.stats == outcome["stats"]
    assert repr(w) == "<shardwright.ShardWriter [0:8, 0:8] committed: 4 chunks written>"
    assert stored(store) == 1
    np.testing.assert_array_equal(a[0:8, 0:8], EXPECTED)
    with pytest.raises(sw.ShardwrightError, match="already closed"):
        w[0, 0] = 1


def test_a_transaction_answers_every_call_from_another_thread_during_its_commit(store):
    a = store.open()
    tx = a.transaction()
    tx[2:6, 1:7] = 5  # within shard (0, 0), in part: merged at commit (a get, a put_if)
    staged = tx.staged_memory
    assert staged > 0
    with committing(store, "put_if", tx.commit) as outcome:
        assert call(lambda: tx.closed) is False
        assert call(lambda: tx.staged_memory) == staged
        assert call(lambda: tx.stats) == {"staged_memory": staged}
        assert call(lambda: repr(tx)).startswith("<shardwright.Transaction committing: ")
        assert call(lambda: tx._core.committing) is True
        refused(lambda: tx.__setitem__((0, 0), 1))
        refused(lambda: tx._core.write_value([0, 0], [1, 1], b"\x01\x00"))
        refused(lambda: tx[0:2, 0:2])
        refused(lambda: tx.write_shard((0, 1)))
        refused(tx.commit)
        refused(tx.abort)
        assert call(lambda: tx.closed) is False
    assert outcome["stats"]["shards_written"] == 1
    assert tx.closed and tx.stats == outcome["stats"]
    assert repr(tx) == "<shardwright.Transaction committed: 1 shards written>"
    assert stored(store) == 1
    expected = np.zeros((8, 12), "uint16")
    expected[2:6, 1:7] = 5
    np.testing.assert_array_equal(a[...], expected)


def test_a_staging_writer_of_a_committing_transaction_is_refused(store):
    """A shard writer of a transaction stages into it at its commit: refused (and kept
    open) while the transaction commits."""
    a = store.open()
    tx = a.transaction()
    w = tx.write_shard((0, 1))
    w[0:8, 8:12] = 3
    tx[0, 0] = 4
    with committing(store, "put_if", tx.commit):
        refused(w.commit)
        assert call(lambda: w.closed) is False
    assert stored(store) == 1
    assert a[0, 0] == 4 and a[0, 8] == 0  # the staging writer's data was not absorbed


def test_abort_from_another_thread_during_a_commit_is_refused_and_the_commit_stores(store):
    """An abort cannot undo a commit that began: it raises, and the shard is stored."""
    a = store.open()
    w = a.write_shard((0, 0))
    fill(w)
    with committing(store, "complete", w.commit):
        with pytest.raises(sw.ShardwrightError, match="commit or abort until that commit returns"):
            call(w.abort)
    assert stored(store) == 1
    np.testing.assert_array_equal(a[0:8, 0:8], EXPECTED)


def test_state_reads_on_the_event_loop_while_commit_async_runs_on_a_worker(store):
    """``commit_async`` (and ``async with``) commit on a worker thread: the event loop's
    own thread reads the writer meanwhile (the fresh-clone CI failure on 3.13)."""
    a = store.open()
    store.inject("complete", 0, "block")

    async def main() -> dict[str, int]:
        w = a.write_shard((0, 0))
        for c in w.inner_chunks():
            await w.write_async(c, np.full(c.shape, 10 * c.index[0] + c.index[1] + 1, "uint16"))
        pending = asyncio.ensure_future(w.commit_async())
        try:
            deadline = time.monotonic() + 10
            while store.blocked() == 0:
                assert time.monotonic() < deadline, "the commit never reached the store"
                await asyncio.sleep(0.005)
            reads = (w.closed, w.stats["chunks_written"], repr(w), len(w.inner_chunks()))
            with pytest.raises(sw.ShardwrightError, match=COMMITTING):
                w[0:4, 0:4] = 1
        finally:
            store.release()  # else the loop's executor would wait for the commit forever
        stats = await pending
        assert reads == (
            False,
            4,
            "<shardwright.ShardWriter [0:8, 0:8] committing: 4 chunks written>",
            4,
        )
        assert w.closed and w.stats == stats
        return stats

    stats = asyncio.run(main())
    assert stats["chunks_written"] == 4 and stored(store) == 1
    np.testing.assert_array_equal(a[0:8, 0:8], EXPECTED)


def test_a_commit_waits_for_a_write_in_progress_in_another_thread(store):
    """A write in progress when another thread commits (here a transaction's write that
    commits its completed shard early, blocked in the store's put): the commit waits for
    it, state reads answer meanwhile and new writes are refused; then both finish, and
    the commit stores the rest."""
    a = store.open()
    tx = a.transaction(early_commit=True)
    tx[0, 8] = 6  # shard (0, 1), in part: stored by the commit
    store.inject("put", 0, "block")
    writing = Background(lambda: tx.__setitem__((slice(0, 8), slice(0, 8)), EXPECTED))
    try:
        wait_blocked(store)
        commit = Background(tx.commit)
        time.sleep(0.1)
        if not commit.running():
            commit.result()  # it should wait: raise what ended it
        assert call(lambda: tx._core.committing) is True
        assert call(lambda: tx.closed) is False
        assert call(lambda: tx.staged_memory) >= 0
        refused(lambda: tx.__setitem__((1, 8), 1))
        assert commit.running() and writing.running()  # the commit waits for the write
        assert store.raw_get("c/0/0") is None and store.raw_get("c/0/1") is None
    finally:
        store.release()
    writing.result()
    stats = commit.result()
    assert (stats["shards_written"], stats["shards_committed_early"]) == (2, 1)
    assert stored(store) == 2 and tx.closed
    np.testing.assert_array_equal(a[0:8, 0:8], EXPECTED)
    assert (a[0, 8], a[1, 8]) == (6, 0)
