"""The seed's own spelling (zarr-python #3604's proposal): the shards ``iter_shards()``
yields remember their array, so ``with shard.write_context() as shard_write:`` is
``a.write_shard(shard)``, sync and async, on regular and rectilinear grids and on an
image's level 0."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import shardwright as sw
import zarr


def calculation(chunk: sw.Domain) -> np.ndarray:
    rows, cols = np.indices(chunk.shape)
    return (rows + chunk.origin[0]) * 100 + cols + chunk.origin[1]


def expected(shape: tuple[int, int]) -> np.ndarray:
    rows, cols = np.indices(shape)
    return rows * 100 + cols


def test_the_seed_loop_as_written(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 30), dtype="int32", chunks=(4, 5),
                  shards=(8, 10))  # fmt: skip
    stats = []
    for shard in a.iter_shards():
        with shard.write_context() as shard_write:
            for chunk in shard_write.inner_chunks():
                shard_write[chunk] = calculation(chunk)
        stats.append(shard_write.stats)
    assert len(stats) == 9
    assert all(s["puts"] == 1 and s["gets"] == 0 for s in stats)
    np.testing.assert_array_equal(zarr.open_array(a.path, mode="r")[...], expected((20, 30)))


def test_async_twin(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(12, 10), dtype="int32", chunks=(4, 5),
                  shards=(8, 10))  # fmt: skip

    async def main() -> list[int]:
        puts = []
        for shard in a.iter_shards():
            async with shard.write_context() as shard_write:
                for chunk in shard_write.inner_chunks():
                    shard_write[chunk] = calculation(chunk)
            puts.append(shard_write.stats["puts"])
        return puts

    assert asyncio.run(main()) == [1, 1]
    np.testing.assert_array_equal(a[...], expected((12, 10)))


def test_options_pass_through_and_an_exception_stores_nothing(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="int32", chunks=(4, 4),
                  shards=(8, 8))  # fmt: skip
    (shard,) = a.iter_shards()
    with pytest.raises(ValueError, match="max_in_flight must be at least 1"):
        shard.write_context(max_in_flight=0)
    with pytest.raises(RuntimeError, match="boom"), shard.write_context(max_in_flight=1) as w:
        w[0:4, 0:4] = 1
        raise RuntimeError("boom")
    assert not (a.path / "c" / "0" / "0").exists()
    assert int(a[0, 0]) == 0


def test_rectilinear_shards(tmp_path):
    a = sw.create(tmp_path / "r.zarr", shape=(10, 7), dtype="int32", chunks=(2, 7),
                  shards=[[4, 6], 7])  # fmt: skip
    shapes = []
    for shard in a.iter_shards():
        shapes.append(shard.shape)
        with shard.write_context() as shard_write:
            for chunk in shard_write.inner_chunks():
                shard_write[chunk] = calculation(chunk)
    assert shapes == [(4, 7), (6, 7)]
    np.testing.assert_array_equal(a[...], expected((10, 7)))


def test_image_level_zero_feeds_the_levels(tmp_path):
    with sw.create_image(tmp_path / "img.ome.zarr", shape=(32, 32), dtype="int32",
                         chunks=(8, 8), shards=(16, 16), factors=(2, 2),
                         levels=2, method="stride") as img:  # fmt: skip
        for shard in img.iter_shards():
            with shard.write_context() as shard_write:
                for chunk in shard_write.inner_chunks():
                    shard_write[chunk] = calculation(chunk)
    assert img.stats["shards_written"] == [4, 1]
    np.testing.assert_array_equal(img.levels[0][...], expected((32, 32)))
    np.testing.assert_array_equal(img.levels[1][...], expected((32, 32))[::2, ::2])


def test_read_only_array(tmp_path):
    sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="int32", chunks=(4, 4), shards=(8, 8))
    r = sw.open(tmp_path / "a.zarr", mode="r")
    (shard,) = r.iter_shards()
    with pytest.raises(sw.ReadOnlyError):
        shard.write_context()
