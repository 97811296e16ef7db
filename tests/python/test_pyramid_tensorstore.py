"""sw.pyramid against TensorStore on many small random arrays: ranks 1 to 4 (rank 1 with
an axis of extent 1 in front, as OME-Zarr images have 2 axes at least), odd shapes
that leave partial blocks at the high edges, factors of 1 to 3, chunk shapes that cut each
level into blocks of their own (so edge blocks of one element, or of one row, are
downsampled apart from the rest), every method, float32 with NaN, ±0.0 and infinities, and
integers. Every level must equal ``ts.downsample`` of the level before: the same values at
the same places, NaN where TensorStore has NaN, zeros of the same sign (issue 22, item 9:
NaN in edge blocks, and the order in which edge blocks are gathered for the median and
the mode)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import shardwright as sw
import shardwright.dask as swd
import tensorstore as ts

METHODS = ["mean", "min", "max", "mode", "median", "stride"]
FLOAT_POOL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.nan, np.inf, -np.inf], "float32")
_counter = itertools.count()


def ts_levels(data: np.ndarray, factors, levels: int, method: str) -> list[np.ndarray]:
    """What TensorStore makes: each level ts.downsample of the one before."""
    out = [data]
    for _ in range(levels - 1):
        out.append(ts.downsample(ts.array(out[-1]), list(factors), method).read().result())
    return out


def assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal element for element: NaN where the other has NaN, zeros of the same sign."""
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if got.dtype.kind == "f":
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), f"{what}: NaN at other places\n{got}\n{want}"
        assert np.array_equal(got[~nan], want[~nan]), f"{what}\n{got}\n{want}"
        signs = np.signbit(got[~nan]) == np.signbit(want[~nan])
        assert signs.all(), f"{what}: zeros of other signs\n{got}\n{want}"
    else:
        assert np.array_equal(got, want), f"{what}\n{got}\n{want}"


def random_config(rng: np.random.Generator):
    ndim = int(rng.integers(1, 5))
    shape = tuple(int(n) for n in rng.integers(1, {1: 12, 2: 8, 3: 6, 4: 5}[ndim], ndim))
    factors = tuple(int(f) for f in rng.integers(1, 4, ndim))
    chunks = tuple(int(c) for c in rng.integers(1, 5, ndim))
    dtype = str(rng.choice(["float32", "float32", "int16", "uint8"]))
    method = str(rng.choice(METHODS))
    n = int(np.prod(shape))
    if dtype == "float32":
        data = rng.choice(FLOAT_POOL, n)
        if rng.random() < 0.3:  # some distinct values among them
            mask = rng.random(n) < 0.5
            data[mask] = rng.standard_normal(int(mask.sum())).astype("float32")
    elif rng.random() < 0.6:  # few distinct values: ties for the mode and the median
        data = rng.integers(0, 4, n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
    if ndim == 1:  # an OME-Zarr image has 2 axes at least: one of extent 1 in front
        shape, factors, chunks = (1, *shape), (int(rng.integers(1, 3)), *factors), (1, *chunks)
    return shape, factors, chunks, method, data.reshape(shape)


def levels_for(shape, factors) -> int:
    """Levels while they shrink, at most 3."""
    levels, cur = 1, shape
    while levels < 3:
        nxt = tuple(-(-n // f) for n, f in zip(cur, factors, strict=True))
        if nxt == cur:
            break
        levels, cur = levels + 1, nxt
    return levels


CONFIGS = 960
BATCHES = 16


@pytest.mark.parametrize("batch", range(BATCHES))
def test_random_small_pyramids_equal_tensorstore(batch):
    rng = np.random.default_rng(20260522 + batch)
    for case in range(CONFIGS // BATCHES):
        shape, factors, chunks, method, data = random_config(rng)
        if all(f == 1 for f in factors):
            factors = (*factors[:-1], 2)
        levels = levels_for(shape, factors)
        what = f"batch {batch} case {case}: {data.dtype} {method} {shape} {factors=} {chunks=}"
        # every 8th through shardwright.dask: its shard tasks downsample block by block too
        dask = case % 8 == 0
        build = swd.pyramid if dask else sw.pyramid
        options = {"scheduler": "synchronous"} if dask else {}
        out = build(
            data,
            f"memory:///ts-diff/{next(_counter)}.zarr",
            factors=factors,
            levels=levels,
            method=method,
            chunks=chunks,
            shards=chunks,
            compressor=None,
            **options,
        )
        want = ts_levels(data, factors, levels, method)
        assert len(out) == len(want), what
        for k, expected in enumerate(want):
            assert_same(np.asarray(out[k]), expected, f"{what}, level {k}")


@pytest.mark.parametrize(
    ("values", "shape", "method", "expected"),
    [
        # one NaN alone in its block: skipped, as by TensorStore's min and max from ±inf
        ([0, 0, 0, 0, 0, 0, 0, 0, np.nan], (3, 3), "min", [[0, 0], [0, np.inf]]),
        ([0, 0, 0, 0, 0, 0, 0, 0, np.nan], (3, 3), "max", [[0, 0], [0, -np.inf]]),
        # the (2, 2, 1) edge blocks, gathered in C order as TensorStore does
        ([0, 0, -1, 0, 0, np.nan, 0, 0, -1, 0, 0, -3], (2, 2, 3), "mode", [[[0, -3]]]),
        ([0, 0, -1, 0, 0, -1, 0, 0, np.nan, 0, 0, 2], (2, 2, 3), "median", [[[0, np.nan]]]),
    ],
)
@pytest.mark.parametrize("builder", ["pyramid", "dask"])
def test_edge_blocks_of_their_own_follow_tensorstore(
    tmp_path, values, shape, method, expected, builder
):
    data = np.array(values, "float32").reshape(shape)
    expected = np.array(expected, "float32")
    assert_same(ts_levels(data, [2] * len(shape), 2, method)[1], expected, "TensorStore")
    chunks = [2] * len(shape)
    build = sw.pyramid if builder == "pyramid" else swd.pyramid
    options = {"scheduler": "synchronous"} if builder == "dask" else {}
    out = build(
        data,
        tmp_path / "p.zarr",
        factors=[2] * len(shape),
        levels=2,
        method=method,
        chunks=chunks,
        shards=chunks,
        **options,
    )
    assert_same(np.asarray(out[1]), expected, f"{builder} {method}")
