"""The Python API, part 1: the exception tree, create and open, the array's properties,
and zarr.json exactly as zarr-python writes it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import zarr
import zarr.codecs
from conftest import assert_same, write_all

# --------------------------------------------------------------------------------------
# The exception tree
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "bases"),
    [
        (sw.ShapeError, (sw.ShardwrightError, ValueError)),
        (sw.BoundsError, (sw.ShardwrightError, IndexError)),
        (sw.UnsupportedError, (sw.ShardwrightError, NotImplementedError)),
        (sw.DTypeError, (sw.ShardwrightError, TypeError)),
        (sw.CorruptShardError, (sw.ShardwrightError,)),
        (sw.ConflictError, (sw.ShardwrightError,)),
        (sw.ArrayNotFoundError, (sw.ShardwrightError, FileNotFoundError)),
        (sw.ShardwrightError, (Exception,)),
    ],
)
def test_exception_tree(cls, bases):
    for base in bases:
        assert issubclass(cls, base), (cls, base)
    err = cls("message")
    assert isinstance(err, sw.ShardwrightError)
    assert str(err) == "message"


# --------------------------------------------------------------------------------------
# create, open and the array's properties
# --------------------------------------------------------------------------------------


def test_create_properties(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr",
        shape=(100, 60, 7),
        dtype="float32",
        chunks=(10, 10, 7),
        shards=(50, 30, 7),
        fill_value=-1.5,
        compressor="zstd",
        index_location="end",
    )
    assert a.shape == (100, 60, 7)
    assert a.dtype == np.dtype("float32")
    assert isinstance(a.dtype, np.dtype)
    assert a.ndim == 3
    assert a.fill_value == np.float32(-1.5)
    assert a.fill_value.dtype == np.dtype("float32")
    assert a.chunks == (10, 10, 7)
    assert a.shards == (50, 30, 7)
    assert (tmp_path / "a.zarr" / "zarr.json").is_file()


def test_create_defaults(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(9,), dtype="int16", chunks=(3,))
    assert a.shards is None
    assert a.fill_value == 0
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["bytes", "zstd"]


@pytest.mark.parametrize("as_type", [str, Path])
def test_open_path_str_and_pathlike(tmp_path, as_type):
    sw.create(tmp_path / "a.zarr", shape=(6, 4), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    a = sw.open(as_type(tmp_path / "a.zarr"))
    assert (a.shape, a.dtype, a.chunks, a.shards) == ((6, 4), np.dtype("uint8"), (2, 2), (4, 4))


def test_open_zarr_array(tmp_path):
    z = zarr.create_array(
        store=str(tmp_path / "z.zarr"), shape=(6, 4), dtype="int32", chunks=(2, 2), shards=(4, 4)
    )
    a = sw.open(z)
    assert (a.shape, a.dtype, a.chunks, a.shards) == ((6, 4), np.dtype("int32"), (2, 2), (4, 4))
    write_all(a, np.arange(24, dtype="int32").reshape(6, 4))
    np.testing.assert_array_equal(z[...], np.arange(24).reshape(6, 4))


def test_open_sees_data_written_by_another_handle(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(4,), dtype="int8", chunks=(2,), shards=(4,))
    b = sw.open(tmp_path / "a.zarr")
    write_all(a, np.array([1, 2, 3, 4], dtype="int8"))
    assert_same(b[...], np.array([1, 2, 3, 4], dtype="int8"))


def test_create_refuses_existing_array_unless_overwrite(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(4,), dtype="int8", chunks=(2,), shards=(4,))
    write_all(a, np.ones(4, dtype="int8"))
    with pytest.raises(sw.ShardwrightError):
        sw.create(path, shape=(4,), dtype="int8", chunks=(2,), shards=(4,))
    b = sw.create(path, shape=(4,), dtype="int8", chunks=(2,), shards=(4,), overwrite=True)
    assert_same(b[...], np.zeros(4, dtype="int8"))


# --------------------------------------------------------------------------------------
# zarr.json: exactly what zarr-python writes for the same settings
# --------------------------------------------------------------------------------------

ZARR_COMPRESSORS = {
    "zstd": None,  # zarr-python's default
    "blosc": [zarr.codecs.BloscCodec()],
    "gzip": [zarr.codecs.GzipCodec()],
    None: [],
}


@pytest.mark.parametrize("shards", [(8, 8), None], ids=["sharded", "unsharded"])
@pytest.mark.parametrize("compressor", list(ZARR_COMPRESSORS), ids=str)
@pytest.mark.parametrize("dtype", ["uint16", "float32", "int8", "bool"])
def test_zarr_json_same_as_zarr_python(tmp_path, dtype, compressor, shards):
    sw.create(
        tmp_path / "sw.zarr",
        shape=(20, 13),
        dtype=dtype,
        chunks=(4, 4),
        shards=shards,
        compressor=compressor,
    )
    kwargs = {}
    if ZARR_COMPRESSORS[compressor] is not None:
        kwargs["compressors"] = ZARR_COMPRESSORS[compressor]
    zarr.create_array(
        store=str(tmp_path / "zp.zarr"),
        shape=(20, 13),
        dtype=dtype,
        chunks=(4, 4),
        shards=shards,
        **kwargs,
    )
    ours = json.loads((tmp_path / "sw.zarr" / "zarr.json").read_text())
    theirs = json.loads((tmp_path / "zp.zarr" / "zarr.json").read_text())
    assert ours == theirs


@pytest.mark.parametrize(
    ("dtype", "fill_value"),
    [("float32", math.nan), ("float64", -math.inf), ("int8", -3), ("bool", True)],
)
def test_zarr_json_same_as_zarr_python_fill_value(tmp_path, dtype, fill_value):
    sw.create(
        tmp_path / "sw.zarr",
        shape=(5,),
        dtype=dtype,
        chunks=(2,),
        shards=(4,),
        fill_value=fill_value,
    )
    zarr.create_array(
        store=str(tmp_path / "zp.zarr"),
        shape=(5,),
        dtype=dtype,
        chunks=(2,),
        shards=(4,),
        fill_value=fill_value,
    )
    ours = json.loads((tmp_path / "sw.zarr" / "zarr.json").read_text())
    theirs = json.loads((tmp_path / "zp.zarr" / "zarr.json").read_text())
    assert ours == theirs


def test_zarr_json_same_as_zarr_python_index_at_start(tmp_path):
    sw.create(
        tmp_path / "sw.zarr",
        shape=(20, 13),
        dtype="uint16",
        chunks=(4, 4),
        shards=(8, 8),
        index_location="start",
    )
    zarr.create_array(
        store=str(tmp_path / "zp.zarr"),
        shape=(20, 13),
        dtype="uint16",
        chunks=(4, 4),
        shards={"shape": (8, 8), "index_location": "start"},
    )
    ours = json.loads((tmp_path / "sw.zarr" / "zarr.json").read_text())
    theirs = json.loads((tmp_path / "zp.zarr" / "zarr.json").read_text())
    assert ours == theirs
