"""sw.pyramid against TensorStore: every level equals ts.downsample of the level before,
for every method, integer and float data, partial blocks at the edges included; the
metadata is valid OME-Zarr 0.5; zarr-python and TensorStore read every level; each
source kind is read once."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

METHODS = ["mean", "min", "max", "mode", "median", "stride"]


def ts_levels(data: np.ndarray, factors, levels: int, method: str) -> list[np.ndarray]:
    """What TensorStore makes: each level ts.downsample of the one before."""
    out = [data]
    for _ in range(levels - 1):
        out.append(ts.downsample(ts.array(out[-1]), list(factors), method).read().result())
    return out


def useful_levels(shape, factors) -> int:
    """The levels until every downsampled axis is 1 (the most sw.pyramid accepts)."""
    levels, cur = 1, tuple(shape)
    while (nxt := tuple(-(-n // f) for n, f in zip(cur, factors, strict=True))) != cur:
        levels, cur = levels + 1, nxt
    return levels


def sample(shape, dtype, rng, *, few_values=False) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.4
    if few_values:  # ties for mode and median
        return rng.integers(0, 4, size=shape).astype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "int32", "float32", "float64"])
def test_levels_equal_tensorstore(tmp_path, method, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{method} {dtype}".encode()))
    data = sample((2, 21, 26, 33), dtype, rng, few_values=method in ("mode", "median"))
    factors = (1, 2, 3, 2)
    levels = sw.pyramid(
        data,
        tmp_path / "p.zarr",
        factors=factors,
        levels=4,
        method=method,
        chunks=(1, 4, 6, 8),
        shards=(1, 8, 12, 16),
        axes=["c", "z", "y", "x"],
    )
    want = ts_levels(data, factors, 4, method)
    assert [a.shape for a in levels] == [w.shape for w in want]
    for k, (array, expected) in enumerate(zip(levels, want, strict=True)):
        got = np.asarray(array)
        assert got.dtype == expected.dtype, k
        np.testing.assert_array_equal(got, expected, err_msg=f"level {k}, {method}, {dtype}")


def test_bool_and_uint64_means_round_like_tensorstore(tmp_path):
    rng = np.random.default_rng(5)
    for dtype in ("bool", "uint64", "int64"):
        data = sample((17, 30), dtype, rng)
        levels = sw.pyramid(data, tmp_path / dtype, factors=(2, 4), levels=3, chunks=(4, 8))
        for k, want in enumerate(ts_levels(data, (2, 4), 3, "mean")):
            np.testing.assert_array_equal(np.asarray(levels[k]), want)


def test_float_nan_and_infinities_follow_tensorstore(tmp_path):
    data = np.array([[1.5, np.nan, 3, 4], [np.inf, 2, -np.inf, 1], [0, -0.0, 5, 5]], "float32")
    for method in ("mean", "min", "max", "stride"):
        levels = sw.pyramid(data, tmp_path / method, factors=(2, 2), levels=2, method=method)
        want = ts_levels(data, (2, 2), 2, method)[1]
        np.testing.assert_array_equal(np.asarray(levels[1]), want, err_msg=method)


@pytest.mark.heavy  # long randomized comparison: run on the primary Python only
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    shape=st.lists(st.integers(1, 23), min_size=2, max_size=4),
    data=st.data(),
    method=st.sampled_from(METHODS),
)
def test_random_pyramids_equal_tensorstore(tmp_path_factory, shape, data, method):
    ndim = len(shape)
    factors = data.draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    chunks = data.draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim))
    per_shard = data.draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    # at most the levels that downsample something (more are refused)
    levels = min(data.draw(st.integers(1, 4)), useful_levels(shape, factors))
    seed = data.draw(st.integers(0, 2**31))
    arr = sample(tuple(shape), "int16", np.random.default_rng(seed), few_values=method == "mode")
    axes = ["t", "c", "z", "y", "x"][5 - ndim :] if ndim >= 2 else None
    if ndim == 2:
        axes = ["y", "x"]
    out = sw.pyramid(
        arr,
        tmp_path_factory.mktemp("h") / "p.zarr",
        factors=factors,
        levels=levels,
        method=method,
        chunks=chunks,
        shards=[c * p for c, p in zip(chunks, per_shard, strict=True)],
        axes=axes,
    )
    for k, want in enumerate(ts_levels(arr, factors, levels, method)):
        np.testing.assert_array_equal(np.asarray(out[k]), want, err_msg=f"level {k}")
    assert out.stats["bytes_read"] == arr.nbytes  # every element read once
    assert out.stats["gets"] == 0
    # one put per shard at most (a shard of fill values only is not stored)
    assert out.stats["puts"] <= sum(out.stats["shards_written"])


def test_metadata_is_valid_ome_zarr_and_readable_everywhere(tmp_path):
    ome = pytest.importorskip("ome_zarr_models.v05.image")
    data = np.arange(2 * 3 * 20 * 30 * 40, dtype="uint16").reshape(2, 3, 20, 30, 40)
    dest = tmp_path / "img.zarr"
    levels = sw.pyramid(
        data,
        dest,
        factors=(1, 1, 2, 2, 2),
        levels=3,
        units=["second", None, "micrometer", "micrometer", "micrometer"],
    )
    group = zarr.open_group(dest, mode="r")
    image = ome.Image.from_zarr(group)
    multiscale = image.attributes.ome.multiscales[0]
    assert [a.name for a in multiscale.axes] == ["t", "c", "z", "y", "x"]
    assert [a.unit for a in multiscale.axes] == ["second", None] + ["micrometer"] * 3
    scales = [d.coordinateTransformations[0].scale for d in multiscale.datasets]
    assert scales == [[1, 1, 1, 1, 1], [1, 1, 2, 2, 2], [1, 1, 4, 4, 4]]
    for k, level in enumerate(levels):
        z = zarr.open_array(dest / str(k), mode="r")
        assert z.metadata.dimension_names == ("t", "c", "z", "y", "x")
        t = ts.open({"driver": "zarr3", "kvstore": f"file://{dest / str(k)}"}).result()
        np.testing.assert_array_equal(z[...], np.asarray(level))
        np.testing.assert_array_equal(t.read().result(), np.asarray(level))
        assert z.metadata.chunk_grid.chunk_shape == level.shards


def test_defaults_shard_every_level_and_stop_at_the_first_level_within_one_chunk(tmp_path):
    data = np.ones((70, 300, 260), "uint8")
    levels = sw.pyramid(data, tmp_path / "p.zarr", factors=(1, 2, 2))
    # y and x (chunks 64) first fit in one chunk at level 3: 300 -> 150 -> 75 -> 38; z is
    # kept (factor 1) and need not fit
    assert [a.shape[1:] for a in levels] == [(300, 260), (150, 130), (75, 65), (38, 33)]
    # shards: 4 chunks per space axis, clipped to the chunks the level needs
    assert levels[0].chunks == (64, 64, 64) and levels[0].shards == (128, 256, 256)
    assert all(a.shards is not None for a in levels)
    assert levels[-1].chunks == (64, 38, 33)


def test_per_level_chunks_and_shards(tmp_path):
    data = np.random.default_rng(1).integers(0, 9, (64, 64), dtype="int32")
    levels = sw.pyramid(
        data,
        tmp_path / "p.zarr",
        factors=(2, 2),
        levels=3,
        chunks=[(16, 16), (8, 8), (4, 4)],
        shards=[(32, 32), (16, 16), (16, 16)],
    )
    assert [(a.chunks, a.shards) for a in levels] == [
        ((16, 16), (32, 32)),
        ((8, 8), (16, 16)),
        ((4, 4), (16, 16)),
    ]
    for k, want in enumerate(ts_levels(data, (2, 2), 3, "mean")):
        np.testing.assert_array_equal(np.asarray(levels[k]), want)


class CountingSource:
    """A sliceable source that records every region read."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.shape, self.dtype = data, data.shape, data.dtype
        self.reads: list[tuple[slice, ...]] = []

    def __getitem__(self, key):
        self.reads.append(key)
        return self.data[key]


def test_one_pass_every_element_read_once(tmp_path):
    data = np.random.default_rng(2).integers(0, 1000, (2, 40, 64, 64), dtype="uint16")
    source = CountingSource(data)
    levels = sw.pyramid(
        source, tmp_path / "p.zarr", factors=(1, 2, 2, 2), levels=4, chunks=(1, 8, 16, 16)
    )
    seen = np.zeros(data.shape, "uint8")
    probe, *reads = source.reads  # first a one-element read: is the source readable?
    assert data[probe].size == 1
    for key in reads:
        seen[key] += 1
    assert (seen == 1).all()  # each element exactly once, for all four levels
    assert levels.stats["bytes_read"] == data.nbytes
    per_level = [sum(1 for _ in a.iter_shards()) for a in levels]
    assert levels.stats["shards_written"] == per_level
    assert levels.stats["puts"] == sum(per_level)  # one put per shard


class ChunkedSource(CountingSource):
    """A counting source that says it reads whole chunks (as zarr-python's and h5py's
    ``.chunks`` do)."""

    def __init__(self, data: np.ndarray, chunks: tuple[int, ...]) -> None:
        super().__init__(data)
        self.chunks = chunks


@pytest.mark.parametrize("kind", ["object", "path-v2", "path-v3-sharded", "zarr-array"])
def test_source_chunks_larger_than_the_blocks_are_read_once(tmp_path, kind):
    """A v2 volume chunked (32, 64, 64) pyramided into (8, 16, 16) chunks: each source chunk
    is read once, not once per block it meets (4 · 4 · 4 = 64 times here)."""
    data = np.random.default_rng(5).integers(0, 4000, (64, 96, 128), dtype="uint16")
    grain = (32, 64, 64)
    if kind == "object":
        source = ChunkedSource(data, grain)
    elif kind == "path-v2":
        z = zarr.create_array(
            tmp_path / "s.zarr", shape=data.shape, dtype="uint16", chunks=grain, zarr_format=2
        )
        z[...] = data
        source = tmp_path / "s.zarr"
    elif kind == "path-v3-sharded":
        z = zarr.create_array(
            tmp_path / "s.zarr",
            shape=data.shape,
            dtype="uint16",
            chunks=grain,
            shards=(64, 128, 128),
        )
        z[...] = data
        source = tmp_path / "s.zarr"
    else:
        source = zarr.create_array({}, shape=data.shape, dtype="uint16", chunks=grain)
        source[...] = data
    levels = sw.pyramid(
        source,
        tmp_path / "p.zarr",
        factors=(2, 2, 2),
        levels=3,
        chunks=(8, 16, 16),
        shards=(16, 32, 32),
    )
    for k, want in enumerate(ts_levels(data, (2, 2, 2), 3, "mean")):
        np.testing.assert_array_equal(np.asarray(levels[k]), want)
    assert levels.stats["bytes_read"] == data.nbytes  # each chunk once
    if kind == "object":
        _probe, *reads = source.reads
        cells = {tuple((k.start, k.stop) for k in key) for key in reads}
        assert len(cells) == len(reads) == 2 * 2 * 2  # every read a whole chunk, once
        assert all(k.start % g == 0 for key in reads for k, g in zip(key, grain, strict=True))


def test_resume_refuses_another_method_or_axes(tmp_path):
    data = np.random.default_rng(6).integers(0, 100, (2, 16, 16), dtype="uint16")
    dest = tmp_path / "p.zarr"
    sw.pyramid(
        data, dest, factors=(1, 2, 2), levels=2, chunks=(1, 4, 4), shards=(1, 8, 8), method="mean"
    )
    attrs = json.loads((dest / "1" / "zarr.json").read_text())["attributes"]
    assert attrs["shardwright"] == {"level": 1, "factors": [1, 2, 2], "method": "mean"}
    with pytest.raises(sw.ShardwrightError, match=r"cannot resume into .*\"method\":\"max\""):
        sw.pyramid(
            data,
            dest,
            factors=(1, 2, 2),
            levels=2,
            chunks=(1, 4, 4),
            shards=(1, 8, 8),
            method="max",
            resume=True,
        )
    with pytest.raises(sw.ShardwrightError, match=r"cannot resume into .*its axes are"):
        sw.pyramid(
            data,
            dest,
            factors=(1, 2, 2),
            levels=2,
            chunks=(1, 4, 4),
            shards=(1, 8, 8),
            method="mean",
            axes=("t", "y", "x"),
            resume=True,
        )
    again = sw.pyramid(
        data, dest, factors=(1, 2, 2), levels=2, chunks=(1, 4, 4), shards=(1, 8, 8), resume=True
    )
    assert sum(again.stats["shards_written"]) == 0


@pytest.mark.parametrize("kind", ["path-v3", "path-v2", "zarr-array", "sw-array", "tensorstore"])
def test_sources(tmp_path, kind):
    data = np.random.default_rng(3).integers(0, 5000, (30, 50), dtype="uint16")
    if kind == "path-v3":
        z = zarr.create_array(tmp_path / "s.zarr", shape=data.shape, dtype="uint16", chunks=(8, 8))
        z[...] = data
        source = str(tmp_path / "s.zarr")
    elif kind == "path-v2":
        z = zarr.create_array(
            tmp_path / "s.zarr", shape=data.shape, dtype="uint16", chunks=(8, 8), zarr_format=2
        )
        z[...] = data
        source = tmp_path / "s.zarr"
    elif kind == "zarr-array":
        source = zarr.create_array({}, shape=data.shape, dtype="uint16", chunks=(8, 8))
        source[...] = data
    elif kind == "sw-array":
        source = sw.create(tmp_path / "s.zarr", shape=data.shape, dtype="uint16", chunks=(8, 8))
        with source.transaction() as tx:
            tx[...] = data
    else:
        source = ts.array(data)
    levels = sw.pyramid(source, tmp_path / "p.zarr", factors=(2, 2), levels=3, chunks=(4, 4))
    for k, want in enumerate(ts_levels(data, (2, 2), 3, "mean")):
        np.testing.assert_array_equal(np.asarray(levels[k]), want)
    assert levels.stats["bytes_read"] == data.nbytes


def test_group_zarr_json_lists_every_level(tmp_path):
    levels = sw.pyramid(np.zeros((8, 8), "f4"), tmp_path / "p.zarr", factors=(2, 2), name="cells")
    meta = json.loads((tmp_path / "p.zarr" / "zarr.json").read_text())
    multiscale = meta["attributes"]["ome"]["multiscales"][0]
    assert meta["attributes"]["ome"]["version"] == "0.5"
    assert multiscale["name"] == "cells"
    assert [d["path"] for d in multiscale["datasets"]] == [str(k) for k in range(len(levels))]


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_pyramid_from_and_to_s3_one_put_per_shard(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = np.random.default_rng(8).integers(0, 9000, (2, 40, 48), dtype="uint16")
    src = sw.create(
        f"s3://{bucket}/src.zarr",
        shape=data.shape,
        dtype="uint16",
        chunks=(1, 8, 8),
        shards=(1, 16, 16),
        storage_options=options,
    )
    with src.transaction() as tx:
        tx[...] = data
    proxy.clear()
    levels = sw.pyramid(
        f"s3://{bucket}/src.zarr",
        f"s3://{bucket}/p.zarr",
        factors=(1, 2, 2),
        levels=3,
        chunks=[(1, 8, 8), (1, 4, 4), (1, 4, 4)],
        shards=[(1, 16, 16), (1, 8, 8), (1, 8, 8)],
        axes=["c", "y", "x"],
        storage_options=options,
    )
    shard_puts = [r for r in proxy.matching("PUT", "/p.zarr/") if "/c/" in r.path]
    assert len(shard_puts) == sum(levels.stats["shards_written"])  # one put per shard
    assert len({r.path for r in shard_puts}) == len(shard_puts)
    assert not [r for r in proxy.matching("GET", "/p.zarr/") if "/c/" in r.path]
    assert levels.stats["bytes_read"] == data.nbytes  # the source read once
    for k, want in enumerate(ts_levels(data, (1, 2, 2), 3, "mean")):
        np.testing.assert_array_equal(np.asarray(levels[k]), want)
        assert levels[k].url == f"s3://{bucket}/p.zarr/{k}"


def test_pyramid_in_memory_url(tmp_path):
    data = np.arange(30 * 30, dtype="float32").reshape(30, 30)
    levels = sw.pyramid(data, "memory:///pyr/p.zarr", factors=(2, 2), levels=2, chunks=(8, 8))
    np.testing.assert_array_equal(np.asarray(levels[1]), ts_levels(data, (2, 2), 2, "mean")[1])
    assert sw.open("memory:///pyr/p.zarr/1").shape == (15, 15)
