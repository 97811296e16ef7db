"""Awaitable writes: ``await w.write_async(key, data)`` and ``await tx.write_async(...)``,
``commit_async``, their order, their errors, ``async with`` waiting for them, and an event
loop that keeps running while the encoders apply backpressure."""

import asyncio
import gc
import inspect
import sys
import threading
import time
import weakref

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same, reference, temp_files, tree_digest
from shardwright._values import _LAST
from shardwright._writer import ShardWriter


def run(coro):
    return asyncio.run(coro)


def writes(ref):
    """Per shard of ``small``-like (10, 7) arrays: regions across chunks, a scalar fill and
    a cast from uint32, written after every inner chunk."""
    return {
        (0, 0): [
            (np.s_[1:7, 2:5], ref[1:7, 2:5] + 1),
            (np.s_[4:8, 4:7], 7),
            (sw.Domain((0, 0), (4, 4)), ref[:4, :4].astype("uint32")),
        ],
        (1, 0): [(np.s_[9, :], ref[9].astype("uint32")), (np.s_[8:10, 0:3], 5)],
    }


# --------------------------------------------------------------------------------------
# the same result as the assignment
# --------------------------------------------------------------------------------------


def write_both_ways(tmp_path, sync):
    a = sw.create(
        tmp_path / ("s.zarr" if sync else "a.zarr"),
        shape=(10, 7),
        dtype="uint16",
        chunks=(4, 4),
        shards=(8, 8),
    )
    ref = reference(a.shape, a.dtype, seed=11)
    stats = []

    async def main():
        for shard in a.iter_shards():
            async with a.write_shard(shard) as w:
                for c in w.inner_chunks():
                    await w.write_async(c, ref[c.slices] // 2)
                for key, data in writes(ref)[shard.index]:
                    await w.write_async(key, data)
            stats.append(w.stats)

    if sync:
        for shard in a.iter_shards():
            with a.write_shard(shard) as w:
                for c in w.inner_chunks():
                    w[c] = ref[c.slices] // 2
                for key, data in writes(ref)[shard.index]:
                    w[key] = data
            stats.append(w.stats)
    else:
        run(main())
    return a[...], stats


def test_write_async_stores_what_the_assignment_stores(tmp_path):
    sync_data, sync_stats = write_both_ways(tmp_path, sync=True)
    async_data, async_stats = write_both_ways(tmp_path, sync=False)
    assert_same(async_data, sync_data)
    assert async_stats == sync_stats
    ref = reference((10, 7), "uint16", seed=11)
    assert sync_data[9, 3:].tolist() == ref[9, 3:].tolist() and (sync_data[8:, :3] == 5).all()


def test_transaction_write_async_stores_what_the_assignment_stores(tmp_path):
    shape = dict(shape=(12, 12), dtype="int32", chunks=(2, 2), shards=(4, 4))
    a = sw.create(tmp_path / "a.zarr", **shape)
    b = sw.create(tmp_path / "b.zarr", **shape)
    ref = reference(a.shape, a.dtype, seed=2)
    writes = [
        (np.s_[1:11, 3:9], ref[1:11, 3:9]),
        (np.s_[5, :], 9),
        (np.s_[..., 0], np.arange(12, dtype="int16")),
        (sw.Domain((4, 4), (4, 4)), ref[:4, :4]),
    ]
    with a.transaction() as tx:
        for key, data in writes:
            tx[key] = data

    async def main():
        async with b.transaction() as tx:
            for key, data in writes:
                await tx.write_async(key, data)
            assert_same(tx[...], a[...])  # read-your-writes once awaited
        return tx.stats

    stats = run(main())
    assert stats["shards_written"] == tx.stats["shards_written"] == 9
    assert_same(b[...], a[...])


# --------------------------------------------------------------------------------------
# errors, raised from the await
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, data, error",
    [
        (np.s_[0:4, 0:4], np.zeros((4, 3), "uint16"), sw.ShapeError),
        (np.s_[0:4, 0:4], np.full((4, 4), 0.5, "float32"), sw.DTypeError),
        (np.s_[0:4, 0:4], 1.5, sw.DTypeError),
        (np.s_[0:4, 0:4], -1, sw.DTypeError),
        (np.s_[6:10, 0:4], np.zeros((4, 4), "uint16"), sw.BoundsError),  # past the shard
        (np.s_[0:4, 0:4:2], np.zeros((4, 2), "uint16"), sw.ShardwrightError),  # a step
    ],
)
def test_write_async_raises_what_the_assignment_raises(small, key, data, error):
    w = small.write_shard((0, 0))
    with pytest.raises(error) as sync_error:
        w[key] = data

    async def main():
        with pytest.raises(error) as async_error:
            await w.write_async(key, data)
        # the writer is still usable after the error, as after the assignment's
        await w.write_async(np.s_[0:4, 0:4], 5)
        await w.commit_async()
        return async_error

    async_error = run(main())
    assert type(async_error.value) is type(sync_error.value)
    assert str(async_error.value) == str(sync_error.value)
    assert (small[0:4, 0:4] == 5).all()


def test_write_async_to_a_closed_writer_raises(small):
    async def main():
        w = small.write_shard((0, 0))
        await w.write_async(np.s_[0:2, 0:2], 1)
        await w.commit_async()
        with pytest.raises(sw.ShardwrightError, match="already closed"):
            await w.write_async(np.s_[0:2, 0:2], 2)
        with pytest.raises(sw.ShardwrightError, match="already closed"):
            await w.commit_async()

    run(main())
    assert small[0:2, 0:2].tolist() == [[1, 1], [1, 1]]


def test_transaction_write_async_errors(tmp_path):
    a = sw.create(
        tmp_path / "m.zarr", shape=(64, 64), dtype="uint16", chunks=(8, 8), shards=(16, 16)
    )
    before = tree_digest(a.path)

    async def main():
        async with a.transaction(memory_limit=1000) as tx:
            with pytest.raises(sw.BoundsError):
                await tx.write_async(sw.Domain((60, 0), (10, 1)), np.zeros((10, 1), "uint16"))
            with pytest.raises(sw.ShapeError):
                await tx.write_async(np.s_[0:4, 0], np.zeros(5, "uint16"))
            with pytest.raises(sw.TransactionTooLarge):
                for k in range(64):
                    await tx.write_async((k, (k * 7) % 64), 1)

    with pytest.raises(sw.TransactionTooLarge):  # the failed transaction refuses to commit
        run(main())
    assert tree_digest(a.path) == before


# --------------------------------------------------------------------------------------
# async with
# --------------------------------------------------------------------------------------


def test_write_async_in_async_with_write_shard(small):
    ref = reference(small.shape, small.dtype, seed=4)

    async def main():
        for shard in small.iter_shards():
            async with small.write_shard(shard) as w:
                for c in w.inner_chunks():
                    await w.write_async(c, ref[c.slices])
            assert w.closed and w.stats["puts"] == 1

    run(main())
    assert_same(small[...], ref)


def test_async_with_exit_waits_for_writes_not_awaited(small):
    """Tasks started in the block and never awaited: the exit commits after them."""
    ref = reference(small.shape, small.dtype, seed=6)

    async def main():
        async with small.write_shard((0, 0)) as w:
            tasks = [asyncio.create_task(w.write_async(c, ref[c.slices])) for c in w.inner_chunks()]
        assert all(t.done() for t in tasks)
        return w.stats

    stats = run(main())
    assert stats["chunks_written"] == 4 and stats["puts"] == 1
    assert_same(small[:8, :7], ref[:8, :7])


def test_async_with_exception_after_write_async_stores_nothing(small, tmp_path):
    root = tmp_path / "small.zarr"
    before = tree_digest(root)

    async def main():
        async with small.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                await w.write_async(c, 1)
            pending = asyncio.create_task(w.write_async(np.s_[0:2, 0:2], 2))
            raise KeyError(pending.done())

    with pytest.raises(KeyError):
        run(main())
    assert tree_digest(root) == before
    assert temp_files(root) == []


def test_write_async_in_async_with_transaction(tmp_path):
    a = sw.create(tmp_path / "t.zarr", shape=(8, 12), dtype="int16", chunks=(2, 2), shards=(4, 4))
    ref = reference(a.shape, a.dtype, seed=8)

    async def main():
        async with a.transaction() as tx:
            await tx.write_async(np.s_[3:5, 3:5], np.array([[1, 2], [3, 4]]))
            await tx.write_async(np.s_[4, :], 9)
            assert tx[3:5, 3:5].tolist() == [[1, 2], [9, 9]]
            async with tx.write_shard((0, 2)) as w:  # a shard writer staging into tx
                for c in w.inner_chunks():
                    await w.write_async(c, ref[c.slices])
        return tx.stats

    stats = run(main())
    assert stats["shards_written"] == 6  # all: four by the square, (1, 2) by row 4, (0, 2)
    assert a[3:5, 3:5].tolist() == [[1, 2], [9, 9]]
    assert_same(a[0:4, 8:12], ref[0:4, 8:12])
    assert (a[4] == 9).all()


def test_transaction_exception_after_write_async_stores_nothing(tmp_path):
    a = sw.create(tmp_path / "t.zarr", shape=(8, 8), dtype="int16", chunks=(2, 2), shards=(4, 4))
    before = tree_digest(a.path)

    async def main():
        async with a.transaction() as tx:
            await tx.write_async(np.s_[...], 3)
            raise KeyError("inside")

    with pytest.raises(KeyError):
        run(main())
    assert tree_digest(a.path) == before


# --------------------------------------------------------------------------------------
# commit_async
# --------------------------------------------------------------------------------------


def test_commit_async_returns_the_stats_and_waits_for_pending_writes(small):
    ref = reference(small.shape, small.dtype, seed=9)

    async def main():
        w = small.write_shard((0, 0))
        tasks = [asyncio.create_task(w.write_async(c, ref[c.slices])) for c in w.inner_chunks()]
        stats = await w.commit_async()
        # The writes themselves are in the commit (chunks_written == 4 below); the tasks
        # wrapping them may still wait for the loop to mark them done, so await them
        # rather than asking done() (which raced on a loaded machine).
        assert await asyncio.gather(*tasks) == [None] * len(tasks)
        return w, stats

    w, stats = run(main())
    assert w.closed
    assert stats == w.stats
    assert stats["puts"] == 1 and stats["chunks_written"] == 4
    assert_same(small[:8, :7], ref[:8, :7])


def test_transaction_commit_async(tmp_path):
    a = sw.create(tmp_path / "t.zarr", shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))

    async def main():
        tx = a.transaction()
        pending = asyncio.create_task(tx.write_async(np.s_[2:6, 2:6], 5))
        stats = await tx.commit_async()
        assert pending.done()
        return stats

    assert run(main())["shards_written"] == 4
    assert int(a[2:6, 2:6].min()) == 5 and int(a.read(sw.Domain((0, 0), (8, 8))).sum()) == 5 * 16


# --------------------------------------------------------------------------------------
# order: one call at a time, in the order the calls start
# --------------------------------------------------------------------------------------


def test_two_awaited_writes_to_one_region_apply_in_order(small):
    async def main():
        async with small.write_shard((0, 0)) as w:
            await w.write_async(np.s_[0:4, 0:4], np.full((4, 4), 1, "uint16"))
            await w.write_async(np.s_[0:4, 0:4], np.full((4, 4), 2, "uint16"))
            await w.write_async(np.s_[1:3, 1:3], 3)

    run(main())
    assert small[0:4, 0:4].tolist() == [[2, 2, 2, 2], [2, 3, 3, 2], [2, 3, 3, 2], [2, 2, 2, 2]]


def test_calls_are_queued_in_call_order_not_in_await_order(small):
    async def main():
        async with small.write_shard((0, 0)) as w:
            first = w.write_async(np.s_[0:4, 0:4], 1)
            second = w.write_async(np.s_[0:4, 0:4], 2)
            await second
            await first

    run(main())
    assert (small[0:4, 0:4] == 2).all()


def test_a_task_started_before_a_direct_await_writes_first(small):
    async def main():
        async with small.write_shard((0, 0)) as w:
            task = asyncio.create_task(w.write_async(np.s_[0:4, 0:4], 1))
            await w.write_async(np.s_[0:4, 0:4], 2)  # called after: applied after
            await task

    run(main())
    assert (small[0:4, 0:4] == 2).all()


def test_write_async_returns_a_coroutine_usable_with_asyncio_run(small):
    w = small.write_shard((0, 0))
    coro = w.write_async(np.s_[0:2, 0:2], 4)  # no running loop: queued all the same
    assert asyncio.iscoroutine(coro)
    assert asyncio.run(coro) is None
    assert asyncio.run(w.commit_async())["puts"] == 1
    assert (small[0:2, 0:2] == 4).all()
    if sys.version_info >= (3, 12):
        assert inspect.iscoroutinefunction(w.write_async)
        assert inspect.iscoroutinefunction(w.commit_async)


def test_a_call_never_awaited_still_writes_and_python_says_so(small):
    async def main():
        w = small.write_shard((0, 0))
        w.write_async(np.s_[0:2, 0:2], 6)
        await w.commit_async()

    with pytest.warns(RuntimeWarning, match="ShardWriter.write_async' was never awaited"):
        run(main())
        gc.collect()
    assert (small[0:2, 0:2] == 6).all()


class _Recording(ShardWriter):
    """Records when each assignment starts and ends (and on which thread), slowly."""

    def __setitem__(self, key, data):
        log = self.__dict__.setdefault("log", [])
        log.append(("start", int(np.asarray(data).flat[0]), threading.get_ident()))
        time.sleep(0.002)
        super().__setitem__(key, data)
        log.append(("end", int(np.asarray(data).flat[0]), threading.get_ident()))


def test_writes_started_together_run_one_at_a_time_in_order(small):
    values = list(range(1, 21))

    async def main():
        w = small.write_shard((0, 0))
        w.__class__ = _Recording
        await asyncio.gather(*(w.write_async(np.s_[0:8, 0:7], v) for v in values))
        assert w.log[-1][:2] == ("end", values[-1])
        await w.commit_async()
        return w.log

    log = run(main())
    assert [(e[0], e[1]) for e in log] == [(k, v) for v in values for k in ("start", "end")]
    assert all(e[2] != threading.get_ident() for e in log)  # never on the loop's thread
    assert (small[0:8, 0:7] == values[-1]).all()


def test_a_write_cancelled_before_its_turn_writes_nothing(small):
    class Blocking(ShardWriter):
        def __setitem__(self, key, data):
            if np.asarray(data).flat[0] == 1:
                release.wait(10)
            super().__setitem__(key, data)

    release = threading.Event()

    async def main():
        w = small.write_shard((0, 0))
        w.__class__ = Blocking
        first = asyncio.create_task(w.write_async(np.s_[0:4, 0:4], 1))
        second = asyncio.create_task(w.write_async(np.s_[0:4, 0:4], 2))
        third = asyncio.create_task(w.write_async(np.s_[4:8, 0:4], 3))
        await asyncio.sleep(0.05)  # all three queued, the first one running
        second.cancel()
        await asyncio.sleep(0.01)  # the loop passes the cancellation on to the queue
        release.set()
        await first
        with pytest.raises(asyncio.CancelledError):
            await second
        await third
        await w.commit_async()

    run(main())
    assert (small[0:4, 0:4] == 1).all()
    assert (small[4:8, 0:4] == 3).all()


def test_an_exit_cancelled_before_its_turn_aborts(small, tmp_path):
    """The block's exit waits behind a running write; cancelled there, it aborts in its
    turn instead of committing: nothing is stored, and the writer is closed."""
    root = tmp_path / "small.zarr"
    before = tree_digest(root)
    release = threading.Event()

    class Blocking(ShardWriter):
        def __setitem__(self, key, data):
            release.wait(10)
            super().__setitem__(key, data)

    w = small.write_shard((0, 0))
    w.__class__ = Blocking
    writes = []

    async def body():
        async with w:
            writes.append(asyncio.create_task(w.write_async(np.s_[0:4, 0:4], 1)))

    async def main():
        task = asyncio.create_task(body())
        await asyncio.sleep(0.05)  # the exit is queued behind the blocked write
        task.cancel()
        await asyncio.sleep(0.01)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await writes[0]  # the write ran
        for _ in range(500):  # then the abort, in the exit's turn
            if w.closed:
                break
            await asyncio.sleep(0.01)

    run(main())
    assert w.closed
    assert tree_digest(root) == before
    assert temp_files(root) == []


# --------------------------------------------------------------------------------------
# the hold of the last assigned array (see _values.hold)
# --------------------------------------------------------------------------------------


def test_the_loop_thread_holds_the_last_array_and_the_workers_hold_nothing(small):
    async def main():
        async with small.write_shard((0, 0)) as w:
            first = np.full((4, 4), 1, "uint16")
            second = np.full((4, 4), 2, "uint16")
            await w.write_async(np.s_[0:4, 0:4], first)
            assert _LAST.value is first  # held on the caller's (the loop's) thread
            ref_first = weakref.ref(first)
            del first
            await w.write_async(np.s_[4:8, 0:4], second)
            assert _LAST.value is second
            gc.collect()
            assert ref_first() is None  # no worker thread kept it
            ref_second = weakref.ref(second)
            del second
            gc.collect()
            assert ref_second() is not None  # kept until the next write, as with w[c] =
            # each executor thread keeps nothing
            held = await asyncio.gather(
                *(asyncio.to_thread(lambda: getattr(_LAST, "value", None)) for _ in range(8))
            )
            assert held == [None] * 8
        _LAST.value = None

    run(main())


# --------------------------------------------------------------------------------------
# the event loop keeps running while the encoders apply backpressure
# --------------------------------------------------------------------------------------


def test_the_loop_keeps_running_while_writes_wait_for_the_encoders(tmp_path):
    """Big chunks at zstd level 19 with max_in_flight=1: each write waits for the encoder.
    A 5 ms ticker keeps ticking while the writes run, also while single writes are
    pending. (Generous bounds only: tick counts, and no gap of a second. With the
    assignment instead, no tick falls between the first write and the last.)"""
    a = sw.create(
        tmp_path / "z.zarr",
        shape=(256, 256, 16),
        dtype="uint16",
        chunks=(128, 128, 16),
        shards=(256, 256, 16),
        compressor="zstd",
        compression_level=19,
    )
    data = np.random.default_rng(0).integers(0, 65536, size=(128, 128, 16), dtype="uint16")
    ticks = []

    async def ticker(stop):
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    async def main():
        stop = asyncio.Event()
        tick_task = asyncio.create_task(ticker(stop))
        await asyncio.sleep(0.02)
        during = []  # ticks while each write was pending
        async with a.write_shard((0, 0, 0), max_in_flight=1) as w:
            started = time.perf_counter()
            for _ in range(2):
                for c in w.inner_chunks():
                    before = len(ticks)
                    await w.write_async(c, data)
                    during.append(len(ticks) - before)
            ended = time.perf_counter()
        stop.set()
        await tick_task
        return during, started, ended

    during, started, ended = run(main())
    window = [t for t in ticks if started <= t <= ended]
    gaps = np.diff([started, *window, ended])
    assert len(during) == 8
    assert len(window) >= 10, (len(window), during)
    assert gaps.max() < 1.0, gaps.max()
    assert max(during) >= 2, during  # the loop ran while a single write waited
    assert_same(a[0:128, 0:128, :], data)
    assert_same(a[128:, 128:, :], data)
