"""The Python API: write_shard as a context manager and its guarantees, commit / abort
without a block, writing to a closed writer, async with."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same, reference, temp_files, tree_digest, write_all

# --------------------------------------------------------------------------------------
# write_shard as a context manager: the guarantees
# --------------------------------------------------------------------------------------


def test_write_shard_roundtrip_with_domains(small):
    ref = reference(small.shape, small.dtype)
    write_all(small, ref)
    assert_same(small[...], ref)


def test_write_shard_by_grid_index(small):
    ref = reference(small.shape, small.dtype)
    for index in [(0, 0), (1, 0)]:
        with small.write_shard(index) as w:
            assert w.shard.index == index
            for c in w.inner_chunks():
                w[c] = ref[c.slices]
    assert_same(small[...], ref)


def test_write_shard_by_plain_domain(small):
    """A Domain built by hand (index None) that is a shard is accepted."""
    with small.write_shard(sw.Domain((8, 0), (2, 7))) as w:
        assert w.shard.index == (1, 0)
        for c in w.inner_chunks():
            w[c] = 9
    assert (small[8:] == 9).all()
    assert (small[:8] == 0).all()


def test_inner_chunks_clipped_to_array(small):
    with small.write_shard((1, 0)) as w:
        chunks = list(w.inner_chunks())
        for c in chunks:
            w[c] = 1
    assert chunks == [sw.Domain((8, 0), (2, 4)), sw.Domain((8, 4), (2, 3))]
    assert [c.index for c in chunks] == [(2, 0), (2, 1)]


def test_nothing_stored_before_exit_then_one_put(small, tmp_path):
    root = tmp_path / "small.zarr"
    before = tree_digest(root)
    with small.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = np.full(c.shape, 3, dtype="uint16")
            assert tree_digest(root) == before
        assert w.stats["puts"] == 0
        assert w.stats["chunks_written"] == 4
        assert tree_digest(root) == before
    after = tree_digest(root)
    assert set(after) - set(before) == {"c/0/0"}
    stats = w.stats
    assert stats["puts"] == 1
    assert stats["gets"] == 0
    assert stats["bytes_written"] == (root / "c" / "0" / "0").stat().st_size
    assert (small[:8] == 3).all()


def test_exception_inside_block_stores_nothing(small, tmp_path):
    root = tmp_path / "small.zarr"
    write_all(small, reference(small.shape, small.dtype))
    before = tree_digest(root)
    with pytest.raises(RuntimeError, match="stop"):
        with small.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                w[c] = 7
            raise RuntimeError("stop")
    assert w.closed
    assert tree_digest(root) == before
    assert temp_files(root) == []
    assert_same(small[...], reference(small.shape, small.dtype))


def test_stats_contents(small, tmp_path):
    with small.write_shard((0, 0)) as w:
        chunks = list(w.inner_chunks())
        w[chunks[0]] = np.arange(16, dtype="uint16").reshape(4, 4)
        w[chunks[1]] = 0  # the fill value: not stored
        w[chunks[2]] = np.zeros((4, 4), dtype="uint16")  # the fill value as an array
        w[chunks[3]] = 5
        pending = w.stats
    assert {"puts", "gets", "bytes_written", "chunks_written", "chunks_empty"} <= set(pending)
    assert pending["chunks_written"] == 4
    assert pending["puts"] == 0
    stats = w.stats
    assert {"puts", "gets", "bytes_written", "chunks_written", "chunks_empty"} <= set(stats)
    assert stats["puts"] == 1
    assert stats["gets"] == 0
    assert stats["chunks_written"] == 4
    assert stats["chunks_empty"] == 2
    assert stats["bytes_written"] == (tmp_path / "small.zarr" / "c" / "0" / "0").stat().st_size
    assert all(isinstance(v, int) for v in stats.values())
    # stats is a copy: changing it changes nothing
    stats["puts"] = 99
    assert w.stats["puts"] == 1


def test_commit_returns_stats(small):
    w = small.write_shard((0, 0))
    for c in w.inner_chunks():
        w[c] = 1
    stats = w.commit()
    assert stats["puts"] == 1 and stats["chunks_written"] == 4
    assert stats == w.stats


# --------------------------------------------------------------------------------------
# commit / abort without a block; writing to a closed writer
# --------------------------------------------------------------------------------------


def test_commit_without_block(small, tmp_path):
    root = tmp_path / "small.zarr"
    before = tree_digest(root)
    w = small.write_shard((1, 0))
    assert not w.closed
    for c in w.inner_chunks():
        w[c] = 4
    assert tree_digest(root) == before
    w.commit()
    assert w.closed
    assert (small[8:] == 4).all()
    assert w.stats["puts"] == 1


def test_abort_without_block(small, tmp_path):
    root = tmp_path / "small.zarr"
    before = tree_digest(root)
    w = small.write_shard((1, 0))
    for c in w.inner_chunks():
        w[c] = 4
    w.abort()
    assert w.closed
    assert tree_digest(root) == before
    assert temp_files(root) == []
    assert (small[...] == 0).all()


@pytest.mark.parametrize("close", ["commit", "abort"])
def test_closed_writer_refuses_everything(small, close):
    w = small.write_shard((0, 0))
    chunk = next(w.inner_chunks())
    w[chunk] = 1
    getattr(w, close)()
    with pytest.raises(sw.ShardwrightError, match="closed"):
        w[chunk] = 2
    with pytest.raises(sw.ShardwrightError, match="closed"):
        w[chunk] = np.ones((4, 4), dtype="uint16")
    with pytest.raises(sw.ShardwrightError, match="closed"):
        w.commit()
    with pytest.raises(sw.ShardwrightError, match="closed"):
        w.abort()
    with pytest.raises(sw.ShardwrightError, match="closed"):
        list(w.inner_chunks())


def test_writing_after_with_block_is_an_error(small):
    with small.write_shard((0, 0)) as w:
        chunk = next(w.inner_chunks())
        w[chunk] = 1
    with pytest.raises(sw.ShardwrightError):
        w[chunk] = 2
    assert (small[:4, :4] == 1).all()


# --------------------------------------------------------------------------------------
# async with
# --------------------------------------------------------------------------------------


def test_async_with(small):
    ref = reference(small.shape, small.dtype, seed=3)

    async def main():
        writers = []
        for shard in small.iter_shards():
            w = small.write_shard(shard)
            async with w as entered:
                assert entered is w
                for c in w.inner_chunks():
                    w[c] = ref[c.slices]
            # the exit awaited the commit
            assert w.closed
            assert w.stats["puts"] == 1
            writers.append(w)
        return writers

    writers = asyncio.run(main())
    assert len(writers) == 2
    assert_same(small[...], ref)


def test_async_with_exception_stores_nothing(small, tmp_path):
    root = tmp_path / "small.zarr"
    before = tree_digest(root)

    async def main():
        async with small.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                w[c] = 1
            await asyncio.sleep(0)
            raise KeyError("inside")

    with pytest.raises(KeyError):
        asyncio.run(main())
    assert tree_digest(root) == before
    assert temp_files(root) == []


def test_async_writers_concurrently(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(16, 16), dtype="i4", chunks=(4, 4), shards=(8, 8))
    ref = reference(a.shape, a.dtype, seed=5)

    async def one(shard):
        async with a.write_shard(shard) as w:
            for c in w.inner_chunks():
                w[c] = ref[c.slices]
                await asyncio.sleep(0)
        return w.stats

    async def main():
        return await asyncio.gather(*(one(s) for s in a.iter_shards()))

    stats = asyncio.run(main())
    assert [s["puts"] for s in stats] == [1, 1, 1, 1]
    assert_same(a[...], ref)
