"""The fixed-size dtypes zarr-python writes that are not numbers (issue 26, part 2), for
the tests of test_dtypes*.py: every ``datetime64`` / ``timedelta64`` unit (and a scale
factor), ``U<n>``, ``S<n>``, ``V<n>``; random data of each (NaT included), and exact
comparison (times by their int64, NaT included; bytes by their bytes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import zarr

UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
TIMES = [f"{k}8[{u}]" for k in "Mm" for u in UNITS] + ["M8[10s]", "m8[25ms]", "M8", "m8"]
TEXTS = ["U1", "U5", "S1", "S5", "V1", "V4"]
DTYPES = TIMES + TEXTS
ALPHABET = ["a", "b", "z", "é", "ß", "🎉", "\x00", " "]


def values(dtype: Any, shape: tuple[int, ...], seed: int = 0, nat: float = 0.1) -> np.ndarray:
    """Random data of ``dtype``: times of moderate counts (a fraction ``nat`` NaT; a
    generic unit holds NaT only), strings of every length up to ``n`` (non-ASCII and NUL
    inside, never trailing: numpy drops trailing NULs), bytes of any value."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    if dtype.kind in "Mm":
        if np.datetime_data(dtype)[0] == "generic":
            return np.full(shape, np.iinfo(np.int64).min).view(dtype)
        ints = rng.integers(-(2**40), 2**40, size=shape)
        ints[rng.random(shape) < nat] = np.iinfo(np.int64).min
        return ints.view(dtype)
    if dtype.kind == "V":
        return (
            rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
            .view(dtype)
            .reshape(shape)
        )
    n = dtype.itemsize // 4 if dtype.kind == "U" else dtype.itemsize
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for i in range(count):
        length = int(rng.integers(0, n + 1))
        chars = [ALPHABET[j] for j in rng.integers(0, len(ALPHABET), size=length)]
        if chars and chars[-1] == "\x00":
            chars[-1] = "x"
        text = "".join(chars)
        if dtype.kind == "S":
            raw = bytes(int(b) for b in rng.integers(1, 256, size=length))
            flat[i] = raw
        else:
            flat[i] = text
    return out


def same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Exact equality: dtype, shape, and every element's bytes (NaT == NaT)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype.kind in "Mm":
        np.testing.assert_array_equal(actual.view("i8"), expected.view("i8"))
    elif expected.dtype.kind == "V":
        assert actual.tobytes() == expected.tobytes()
    else:
        np.testing.assert_array_equal(actual, expected)


def fills(dtype: Any) -> list[Any]:
    """Fill values zarr-python takes for ``dtype``: its default (None) and others."""
    dtype = np.dtype(dtype)
    if dtype.kind in "Mm":
        if np.datetime_data(dtype)[0] == "generic":
            return [None, "NaT"]
        scalar = np.datetime64 if dtype.kind == "M" else np.timedelta64
        return [None, "NaT", scalar(7, np.datetime_data(dtype))]
    n = dtype.itemsize
    if dtype.kind == "U":
        return [None, "", "é" * (n // 4)]
    if dtype.kind == "S":
        return [None, b"", b"x" * n]
    return [None, np.void(bytes(range(1, n + 1)))]


# zarr-python 3.1 (the CPython 3.11 environment) has two bugs these types meet: its
# sharding codec fails on raw_bytes (it caches the array spec, whose np.void fill value is
# unhashable: "unhashable type: 'writeable void-scalar'"), and it cannot open a datetime64
# array of generic unit (it refuses the fill value -2**63 it writes itself: "Invalid
# fill_value"). zarr-python 3.4 has neither. There, raw_bytes arrays it writes are
# unsharded, and it reads no sharded raw_bytes or generic datetime64 array.
ZARR_31 = zarr.__version__.startswith("3.1.")


def zarr_shards(dtype: Any, shards: Any) -> Any:
    """The shards of an array zarr-python is to write or read: none for raw_bytes on
    zarr-python 3.1."""
    return None if ZARR_31 and np.dtype(dtype).kind == "V" else shards


def zarr_read(path: Any) -> np.ndarray | None:
    """The whole array at ``path`` as zarr-python reads it, or ``None`` where zarr-python
    3.1 cannot (a sharded raw_bytes array, a generic datetime64 array)."""
    meta = json.loads((Path(path) / "zarr.json").read_text())
    data_type = meta["data_type"]
    name = data_type if isinstance(data_type, str) else data_type["name"]
    sharded = meta["codecs"][0]["name"] == "sharding_indexed"
    generic = name == "numpy.datetime64" and data_type["configuration"]["unit"] == "generic"
    if ZARR_31 and ((name == "raw_bytes" and sharded) or generic):
        return None
    return zarr.open_array(path, mode="r")[...]


def same_as_zarr(path: Any, expected: np.ndarray) -> None:
    """zarr-python reads ``expected`` at ``path`` (where it can: see :func:`zarr_read`)."""
    got = zarr_read(path)
    if got is not None:
        same(got, expected)
