"""Issue 26, part 2: pyramids of times, text and bytes. ``stride`` and ``mode`` for every
one, ``min`` and ``max`` for ``datetime64`` / ``timedelta64`` (NaT skipped, as
``np.nanmin`` / ``np.nanmax`` skip it; a block of NaT only gives NaT), each level
compared with a numpy reference; every other method refused with an
:class:`UnsupportedError` naming the method, the data type and the methods that work."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import pytest
import shardwright as sw
import zarr
from dtype_cases import TEXTS, TIMES, same, same_as_zarr, values

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*does not have a Zarr V3 specification", "ignore:All-NaN slice encountered"
)

NAT = np.iinfo(np.int64).min
METHODS = {"time": ["stride", "mode", "min", "max"], "text": ["stride", "mode"]}
ALL = ["mean", "min", "max", "mode", "median", "stride"]


def _key(value: Any, dtype: np.dtype) -> Any:
    """numpy's order of ``value`` (one element of ``dtype``): times with NaT last, text by
    code point, bytes byte by byte."""
    if dtype.kind in "Mm":
        count = int(np.asarray(value).view(np.int64))
        return (count == NAT, count)
    if dtype.kind == "V":
        return bytes(value.tobytes())
    return value.item()


def _block_result(block: np.ndarray, method: str) -> Any:
    """One output element of ``method`` for ``block`` (numpy's reading of the method)."""
    flat = block.reshape(-1)
    if method == "stride":
        return flat[0]
    if method in ("min", "max"):
        return (np.nanmin if method == "min" else np.nanmax)(flat)
    counts = collections.Counter(_key(v, block.dtype) for v in flat)
    best = max(counts.values())
    smallest = min(k for k, n in counts.items() if n == best)
    return next(v for v in flat if _key(v, block.dtype) == smallest)


def reference(data: np.ndarray, factors: tuple[int, ...], method: str) -> np.ndarray:
    """``data`` downsampled by ``factors`` with ``method``: blocks from index 0, a partial
    block at the high edge using the elements present."""
    shape = tuple(-(-n // f) for n, f in zip(data.shape, factors))
    out = np.empty(shape, data.dtype)
    for index in np.ndindex(*shape):
        block = data[tuple(slice(i * f, (i + 1) * f) for i, f in zip(index, factors))]
        out[index] = _block_result(block, method)
    return out


def _cases() -> list[Any]:
    cases = []
    for dtype in TIMES + TEXTS + ["U4", "S3", "V3"]:
        family = "time" if np.dtype(dtype).kind in "Mm" else "text"
        cases += [pytest.param(dtype, m, id=f"{dtype}-{m}") for m in METHODS[family]]
    return cases


def _with_ties(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Data whose blocks repeat values (so the mode has ties and majorities to find): a
    few values drawn at random, NaT among them for times."""
    pool = values(dtype, (5,), seed=seed, nat=0.3)
    rng = np.random.default_rng(seed)
    return pool[rng.integers(0, len(pool), size=shape)]


@pytest.mark.parametrize(("dtype", "method"), _cases())
def test_pyramid_levels_match_numpy(tmp_path, dtype, method):
    dtype = np.dtype(dtype)
    data = _with_ties(dtype, (13, 11), seed=7)
    if dtype.kind in "Mm":
        data[:4, :4] = np.datetime64("NaT") if dtype.kind == "M" else np.timedelta64("NaT")
    levels = sw.pyramid(
        data, tmp_path / "p.zarr", factors=(2, 3), levels=3, method=method, chunks=(4, 4)
    )
    expected = data
    for k, level in enumerate(levels):
        if k:
            expected = reference(expected, (2, 3), method)
        same(level[...], expected)
        same_as_zarr(tmp_path / "p.zarr" / str(k), expected)
        assert level.dtype == dtype
        assert level.metadata["data_type"] == levels[0].metadata["data_type"]


@pytest.mark.parametrize("dtype", ["M8[s]", "U2", "S2"])
def test_pyramid_of_a_zarr_python_array_keeps_its_fill_value(tmp_path, dtype):
    fill = {"M": "2000-01-01", "U": "zz", "S": b"zz"}[np.dtype(dtype).kind]
    z = zarr.create_array(
        tmp_path / "z.zarr", shape=(8, 8), chunks=(4, 4), dtype=dtype, fill_value=fill
    )
    z[:4, :4] = values(dtype, (4, 4), seed=8)
    levels = sw.pyramid(
        tmp_path / "z.zarr",
        tmp_path / "p.zarr",
        factors=(2, 2),
        levels=2,
        method="mode",
        chunks=(4, 4),
    )
    for level in levels:
        assert np.asarray(level.fill_value).tobytes() == np.asarray(z.fill_value, dtype).tobytes()
    same(levels[1][...], reference(z[...], (2, 2), "mode"))


def _refused() -> list[Any]:
    cases = []
    for dtype in ["M8[s]", "m8[ns]", "M8[10s]", "U3", "S3", "V2"]:
        family = "time" if np.dtype(dtype).kind in "Mm" else "text"
        cases += [
            pytest.param(dtype, m, METHODS[family], id=f"{dtype}-{m}")
            for m in ALL
            if m not in METHODS[family]
        ]
    return cases


@pytest.mark.parametrize(("dtype", "method", "works"), _refused())
def test_other_methods_are_refused_naming_what_works(tmp_path, dtype, method, works):
    data = values(dtype, (8, 8))
    with pytest.raises(sw.UnsupportedError) as err:
        sw.pyramid(data, tmp_path / "p.zarr", factors=(2, 2), levels=2, method=method)
    text = str(err.value)
    name = {
        "M": "numpy.datetime64",
        "m": "numpy.timedelta64",
        "U": "fixed_length_utf32",
        "S": "null_terminated_bytes",
        "V": "raw_bytes",
    }[np.dtype(dtype).kind]
    assert f"downsampling method '{method}' does not support data type" in text
    assert name in text
    assert text.endswith(f"the methods for it: {', '.join(works)}")
    assert not (tmp_path / "p.zarr").exists()  # refused before anything is written


def test_add_levels_to_a_datetime_image(tmp_path):
    data = _with_ties(np.dtype("M8[ms]"), (16, 16), seed=9)
    sw.pyramid(data, tmp_path / "p.zarr", factors=(2, 2), levels=2, method="max", chunks=(4, 4))
    levels = sw.add_levels(tmp_path / "p.zarr", levels=4)
    expected = data
    for k, level in enumerate(levels):
        if k:
            expected = reference(expected, (2, 2), "max")
        same(level[...], expected)


@pytest.mark.parametrize(
    ("dtype", "method"), [("M8[ms]", "min"), ("m8[s]", "mode"), ("U3", "mode")]
)
def test_an_image_of_times_or_text_is_written_level_by_level(tmp_path, dtype, method):
    data = _with_ties(np.dtype(dtype), (16, 16), seed=10)
    img = sw.create_image(
        tmp_path / "i.zarr",
        shape=(16, 16),
        dtype=dtype,
        chunks=(4, 4),
        shards=(8, 8),
        factors=(2, 2),
        method=method,
        levels=3,
    )
    img.map_chunks(lambda c: data[c.slices])
    expected = data
    for k, level in enumerate(img.close()):
        if k:
            expected = reference(expected, (2, 2), method)
        same(level[...], expected)
        same_as_zarr(tmp_path / "i.zarr" / str(k), expected)
