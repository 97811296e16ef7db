"""Issue 26, part 2: the fixed-size dtypes zarr-python writes that are not numbers —
``datetime64`` and ``timedelta64`` in every unit (and with a scale factor), ``U<n>``
(``fixed_length_utf32``), ``S<n>`` (``null_terminated_bytes``), ``V<n>``
(``raw_bytes``) — read and written exactly: what zarr-python writes (either endian) reads
back the same through shardwright, what shardwright writes is zarr-python's ``zarr.json``
and reads back the same through zarr-python (and TensorStore, which reads ``raw_bytes``
only), through every write path, ``sw.check`` and ``sw.copy``; a randomized round trip
over them against numpy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr
from dtype_cases import (
    DTYPES,
    TEXTS,
    TIMES,
    fills,
    same,
    same_as_zarr,
    values,
    zarr_read,
    zarr_shards,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.codecs import BytesCodec

pytestmark = pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")

SHAPE, CHUNKS, SHARDS = (6, 5), (2, 2), (4, 4)


def zarr_array(path: Path, dtype: Any, fill: Any, endian: str | None = None) -> zarr.Array:
    """A (6, 5) zarr-python array of shards (4, 4) and chunks (2, 2) (partial at the
    edges; unsharded where zarr-python cannot shard it: see ``zarr_shards``), its
    ``bytes`` codec of ``endian`` (zarr-python's default if None)."""
    extra = {} if endian is None else {"serializer": BytesCodec(endian=endian)}
    shards = zarr_shards(dtype, SHARDS)
    return zarr.create_array(
        path, shape=SHAPE, chunks=CHUNKS, shards=shards, dtype=dtype, fill_value=fill, **extra
    )


def fill_bytes(value: Any, dtype: np.dtype) -> bytes:
    return np.asarray(value, dtype=dtype).tobytes()


def _read_cases() -> list[Any]:
    cases = []
    for dtype in DTYPES:
        for fill in fills(dtype):
            cases.append(pytest.param(dtype, fill, None, id=f"{dtype}-{fill!r}"))
        if np.dtype(dtype).kind in "MmU":
            fill = fills(dtype)[-1]
            cases.append(pytest.param(dtype, fill, "big", id=f"{dtype}-{fill!r}-big"))
    return cases


@pytest.mark.parametrize(("dtype", "fill", "endian"), _read_cases())
def test_shardwright_reads_what_zarr_python_writes(tmp_path, dtype, fill, endian):
    z = zarr_array(tmp_path / "z.zarr", dtype, fill, endian)
    data = values(dtype, SHAPE)
    z[:4, :3] = data[:4, :3]  # shard (1, 0) and the rest of (0, 0) are the fill value
    a = sw.open(tmp_path / "z.zarr")
    want = z[...]
    assert a.dtype == np.dtype(dtype).newbyteorder("=") == want.dtype
    assert fill_bytes(a.fill_value, a.dtype) == fill_bytes(z.fill_value, a.dtype)
    same(a[...], want)
    same(a[1:5, 2:], want[1:5, 2:])
    same(a.oindex[[0, 3, 5], [1, 4]], want[np.ix_([0, 3, 5], [1, 4])])
    same(a.vindex[[0, 5, 2], [1, 2, 0]], want[[0, 5, 2], [1, 2, 0]])
    expected = np.full(SHAPE, a.fill_value, dtype=a.dtype)
    expected[:4, :3] = data[:4, :3]
    same(a[...], expected)
    assert sw.check(a).ok


def _zarr_json(path: Path) -> dict[str, Any]:
    return json.loads((path / "zarr.json").read_text())


def _write_cases() -> list[Any]:
    return [pytest.param(d, f, id=f"{d}-{f!r}") for d in DTYPES for f in fills(d)]


@pytest.mark.parametrize(("dtype", "fill"), _write_cases())
def test_zarr_python_reads_what_shardwright_writes(tmp_path, dtype, fill):
    shards = zarr_shards(dtype, SHARDS)
    a = sw.create(
        tmp_path / "sw.zarr",
        shape=SHAPE,
        dtype=dtype,
        chunks=CHUNKS,
        shards=shards,
        fill_value=fill,
    )
    zarr_array(tmp_path / "zp.zarr", dtype, fill)
    ours, theirs = _zarr_json(tmp_path / "sw.zarr"), _zarr_json(tmp_path / "zp.zarr")
    for key in ("data_type", "fill_value", "codecs", "chunk_grid", "chunk_key_encoding"):
        assert ours[key] == theirs[key], key
    data = values(dtype, SHAPE, seed=1)
    expected = data.copy()
    for n, shard in enumerate(a.iter_shards()):
        if n == 1:
            expected[shard.slices] = a.fill_value  # left to the fill value
            continue
        with a.write_shard(shard) as w:
            for chunk in w.inner_chunks():
                w[chunk] = data[chunk.slices]
    same(a[...], expected)
    got = zarr_read(tmp_path / "sw.zarr")
    if got is not None:
        z = zarr.open_array(tmp_path / "sw.zarr", mode="r")
        assert fill_bytes(z.fill_value, a.dtype) == fill_bytes(a.fill_value, a.dtype)
        same(got, expected)
    assert sw.check(a).ok


@pytest.mark.parametrize("dtype", ["V1", "V4", "V16"])
def test_tensorstore_opens_raw_bytes_shardwright_writes_as_zarr_python_s(tmp_path, dtype):
    """TensorStore 0.1.86 opens ``raw_bytes`` arrays (as its ``byte`` type, with a last
    axis of the length), shardwright's as zarr-python's; its Python API gives ``byte``
    data back as numpy ``V0`` (no bytes), so the values cannot be compared through it.
    It opens no ``numpy.datetime64``, ``numpy.timedelta64``, ``fixed_length_utf32`` or
    ``null_terminated_bytes`` array (next test): those are checked against zarr-python."""
    a = sw.create(tmp_path / "a.zarr", shape=SHAPE, dtype=dtype, chunks=CHUNKS, shards=SHARDS)
    a[...] = values(dtype, SHAPE, seed=2)
    z = zarr_array(tmp_path / "z.zarr", dtype, None)
    z[...] = values(dtype, SHAPE, seed=2)
    opened = []
    for path in ("a.zarr", "z.zarr"):
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / path)}}
        t = ts.open(spec).result()
        opened.append((t.shape, str(t.dtype), t.read().result().shape))
    assert (
        opened[0]
        == opened[1]
        == ((*SHAPE, np.dtype(dtype).itemsize), 'dtype("byte")', (*SHAPE, np.dtype(dtype).itemsize))
    )


@pytest.mark.parametrize("dtype", ["M8[s]", "m8[ns]", "U3"])
def test_tensorstore_refuses_the_other_types(tmp_path, dtype):
    sw.create(tmp_path / "a.zarr", shape=(4,), dtype=dtype, chunks=(2,))
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a.zarr")}}
    with pytest.raises(ValueError, match="data type is not one of the supported"):
        ts.open(spec).result()


@pytest.mark.parametrize("dtype", ["M8[ms]", "m8[10s]", "U3"])
def test_partial_writes_into_big_endian_zarr_python_arrays(tmp_path, dtype):
    """A shard zarr-python stored big-endian, merged with one new inner chunk: the kept
    chunks are copied as stored, the new one encoded big-endian, zarr-python reads both."""
    z = zarr_array(tmp_path / "z.zarr", dtype, None, endian="big")
    data = values(dtype, SHAPE, seed=3)
    z[...] = data
    new = values(dtype, (2, 2), seed=4)
    a = sw.open(tmp_path / "z.zarr")
    with a.write_shard((0, 0)) as w:
        w[sw.Domain((2, 2), (2, 2))] = new
    data[2:4, 2:4] = new
    same(zarr.open_array(tmp_path / "z.zarr", mode="r")[...], data)
    same(a[...], data)
    codecs = _zarr_json(tmp_path / "z.zarr")["codecs"][0]["configuration"]["codecs"]
    assert codecs[0] == {"name": "bytes", "configuration": {"endian": "big"}}


# --------------------------------------------------------------------------------------
# every write path, sw.check, sw.copy
# --------------------------------------------------------------------------------------

FAMILIES = ["M8[ms]", "m8[s]", "M8[10s]", "U3", "S3", "V2"]


@pytest.mark.parametrize("dtype", FAMILIES)
def test_every_write_path(tmp_path, dtype):
    dtype = np.dtype(dtype)
    a = sw.create(tmp_path / "a.zarr", shape=SHAPE, dtype=dtype, chunks=CHUNKS, shards=SHARDS)
    model = np.full(SHAPE, a.fill_value, dtype=dtype)
    data = values(dtype, SHAPE, seed=5)

    a[1:3, :] = data[1:3]  # assignment
    model[1:3] = data[1:3]
    with a.transaction() as tx:  # a transaction across shards
        tx[3:6, 1:5] = data[3:6, 1:5]
    model[3:6, 1:5] = data[3:6, 1:5]
    a.vindex[[0, 5], [0, 0]] = data[[1, 2], [3, 4]]  # points
    model[[0, 5], [0, 0]] = data[[1, 2], [3, 4]]
    a.oindex[[0], [2, 4]] = data[:1, :2]  # orthogonal
    model[np.ix_([0], [2, 4])] = data[:1, :2]
    a[0, 1] = data[5, 0]  # one element, a numpy scalar
    model[0, 1] = data[5, 0]
    same(a[...], model)

    b = sw.create(tmp_path / "b.zarr", shape=SHAPE, dtype=dtype, chunks=CHUNKS, shards=SHARDS)
    b.map_chunks(lambda c: data[c.slices])
    same(b[...], data)

    c = sw.create(tmp_path / "c.zarr", shape=(0, 5), dtype=dtype, chunks=CHUNKS, shards=SHARDS)
    c.append(data[:2])
    with c.appender() as ap:
        ap.append(data[2])
        ap.append(data[3:])
    same(sw.open(c.path)[...], data)
    for array in (a, b, c):
        assert sw.check(array).ok
        same_as_zarr(array.path, array[...])


@pytest.mark.parametrize("dtype", [*FAMILIES, "M8", "m8[us]"])
def test_copy_keeps_data_type_and_fill_value(tmp_path, dtype):
    fill = fills(dtype)[-1]
    z = zarr_array(tmp_path / "z.zarr", dtype, fill)
    data = values(dtype, SHAPE, seed=6)
    z[:5] = data[:5]
    for n, source in enumerate([tmp_path / "z.zarr", z, sw.open(tmp_path / "z.zarr"), z[...]]):
        dest = tmp_path / f"copy{n}.zarr"
        copied = sw.copy(source, dest, chunks=(3, 3), shards=(6, 3))
        same(copied[...], z[...])
        ours = _zarr_json(dest)
        assert ours["data_type"] == _zarr_json(tmp_path / "z.zarr")["data_type"]
        if n < 3:  # an array source's fill value is kept; a numpy array has none
            assert fill_bytes(copied.fill_value, copied.dtype) == fill_bytes(
                z.fill_value, copied.dtype
            )
        same_as_zarr(dest, z[...])
        assert sw.check(copied).ok


# --------------------------------------------------------------------------------------
# randomized: writes of random regions against numpy, read back by zarr-python too
# --------------------------------------------------------------------------------------


@st.composite
def _regions(draw: Any, shape: tuple[int, ...]) -> tuple[slice, ...]:
    out = []
    for n in shape:
        start = draw(st.integers(0, n - 1))
        out.append(slice(start, draw(st.integers(start + 1, n))))
    return tuple(out)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    dtype=st.sampled_from(TIMES + TEXTS + ["U7", "S9", "V3"]),
    shape=st.tuples(st.integers(1, 9), st.integers(1, 7)),
    chunk=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    per_shard=st.tuples(st.integers(1, 3), st.integers(1, 2)),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_random_writes_match_numpy(tmp_path_factory, dtype, shape, chunk, per_shard, seed, data):
    path = tmp_path_factory.mktemp("r") / "a.zarr"
    dtype = np.dtype(dtype)
    fill = data.draw(st.sampled_from(fills(dtype)))
    shards = tuple(c * k for c, k in zip(chunk, per_shard))
    a = sw.create(path, shape=shape, dtype=dtype, chunks=chunk, shards=shards, fill_value=fill)
    model = np.full(shape, a.fill_value, dtype=dtype)
    for k in range(data.draw(st.integers(1, 4))):
        region = data.draw(_regions(shape))
        block = values(dtype, model[region].shape, seed=seed + k)
        a[region] = block
        model[region] = block
    same(a[...], model)
    same_as_zarr(path, model)


@pytest.mark.parametrize("dtype", ["M8[ms]", "m8[10s]", "U4", "S4", "V3"])
def test_create_array_takes_them_as_zarr_python_does(tmp_path, dtype):
    data = values(dtype, (7, 3), seed=11)
    a = sw.create_array(tmp_path, name="a", data=data, chunks=(2, 3), shards=(4, 3))
    z = zarr.create_array(
        tmp_path / "z",
        shape=data.shape,
        dtype=dtype,
        chunks=(2, 3),
        shards=zarr_shards(dtype, (4, 3)),
    )
    for key in ("data_type", "fill_value"):
        assert a.metadata[key] == _zarr_json(tmp_path / "z")[key], key
    assert a.dtype == z.dtype and fill_bytes(a.fill_value, a.dtype) == fill_bytes(
        z.fill_value, a.dtype
    )
    same(a[...], data)
    same_as_zarr(tmp_path / "a", data)
