"""The Python API of shardwright, line by line of its contract, and every error it names."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import pickle
import threading
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
import shardwright as sw
import zarr
import zarr.codecs
from conftest import assert_same, reference, temp_files, tree_digest, write_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

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


# --------------------------------------------------------------------------------------
# iter_shards / iter_chunks
# --------------------------------------------------------------------------------------


def test_iter_shards_c_order_clipped(small):
    it = small.iter_shards()
    assert iter(it) is it
    shards = list(it)
    assert shards == [sw.Domain((0, 0), (8, 7)), sw.Domain((8, 0), (2, 7))]
    assert [s.index for s in shards] == [(0, 0), (1, 0)]
    assert all(isinstance(s, sw.Domain) for s in shards)


def test_iter_chunks_c_order_clipped(small):
    it = small.iter_chunks()
    assert iter(it) is it
    chunks = list(it)
    expected = [
        sw.Domain((i * 4, j * 4), (min(4, 10 - i * 4), min(4, 7 - j * 4)))
        for i in range(3)
        for j in range(2)
    ]
    assert chunks == expected
    assert [c.index for c in chunks] == [(i, j) for i in range(3) for j in range(2)]


def test_iter_within_domain_and_slices(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 13), dtype="u1", chunks=(4, 4), shards=(8, 8))
    within = sw.Domain((7, 5), (2, 2))  # rows 7-8, columns 5-6
    shards = list(a.iter_shards(within=within))
    # clipped to the array, not to within
    assert shards == [sw.Domain((0, 0), (8, 8)), sw.Domain((8, 0), (8, 8))]
    assert [s.index for s in shards] == [(0, 0), (1, 0)]
    chunks = list(a.iter_chunks(within))
    assert chunks == [sw.Domain((4, 4), (4, 4)), sw.Domain((8, 4), (4, 4))]
    assert [c.index for c in chunks] == [(1, 1), (2, 1)]
    # a tuple of slices means the same
    assert list(a.iter_shards((slice(7, 9), slice(5, 7)))) == shards
    assert list(a.iter_chunks(within=(slice(7, 9), slice(5, 7)))) == chunks
    # open-ended slices
    assert list(a.iter_shards((slice(None), slice(9, None)))) == [
        sw.Domain((0, 8), (8, 5)),
        sw.Domain((8, 8), (8, 5)),
        sw.Domain((16, 8), (4, 5)),
    ]


def test_iter_within_partly_outside_the_array(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 13), dtype="u1", chunks=(4, 4), shards=(8, 8))
    shards = list(a.iter_shards(sw.Domain((18, 12), (100, 100))))
    assert shards == [sw.Domain((16, 8), (4, 5))]
    assert list(a.iter_chunks(sw.Domain((18, 12), (100, 100)))) == [sw.Domain((16, 12), (4, 1))]
    assert list(a.iter_shards(sw.Domain((50, 50), (3, 3)))) == []
    assert list(a.iter_chunks(sw.Domain((0, 0), (0, 5)))) == []


def test_iter_within_wrong_rank(small):
    with pytest.raises(sw.ShapeError):
        list(small.iter_shards(sw.Domain((0,), (3,))))
    with pytest.raises(sw.ShapeError):
        list(small.iter_chunks((slice(0, 3),)))


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


# --------------------------------------------------------------------------------------
# w[c] = data: copies, layouts, byte order, casting, scalars
# --------------------------------------------------------------------------------------


def test_assignment_copies_the_data(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    buf = np.empty((4, 4), dtype="u2")
    expected = np.empty(a.shape, dtype="u2")
    with a.write_shard((0, 0)) as w:
        for i, c in enumerate(w.inner_chunks()):
            buf[...] = i + 1
            w[c] = buf
            expected[c.slices] = i + 1
            buf[...] = 999  # the caller reuses its buffer at once
    assert_same(a[...], expected)


def test_assignment_copies_cast_and_strided_data(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="f8", chunks=(4, 4), shards=(8, 8))
    big = np.zeros((8, 12), dtype="f4")
    with a.write_shard((0, 0)) as w:
        for i, c in enumerate(w.inner_chunks()):
            big[...] = i + 0.5
            w[c] = big[::2, ::3]
            big[...] = -1
    expected = np.repeat(np.repeat(np.array([[0.5, 1.5], [2.5, 3.5]]), 4, 0), 4, 1)
    assert_same(a[...], expected)


def _layouts(block: np.ndarray) -> dict[str, np.ndarray]:
    big = np.zeros((block.shape[0] * 2, block.shape[1] * 3), dtype=block.dtype)
    big[1::2, 2::3] = block
    swapped = block.astype(block.dtype.newbyteorder())
    reversed_base = np.ascontiguousarray(block[::-1, ::-1])
    return {
        "C": np.ascontiguousarray(block),
        "Fortran": np.asfortranarray(block),
        "strided": big[1::2, 2::3],
        "negative-strides": reversed_base[::-1, ::-1],
        "transposed": np.ascontiguousarray(block.T).T,
        "non-native": swapped,
        "non-native-fortran-negative": np.asfortranarray(swapped)[::-1][::-1],
        "readonly": np.frombuffer(block.tobytes(), dtype=block.dtype).reshape(block.shape),
    }


@pytest.mark.parametrize(
    "layout",
    [
        "C",
        "Fortran",
        "strided",
        "negative-strides",
        "transposed",
        "non-native",
        "non-native-fortran-negative",
        "readonly",
    ],
)
@pytest.mark.parametrize("dtype", ["uint16", "int32", "float64", "complex64", "bool", "int8"])
def test_any_numpy_layout(tmp_path, dtype, layout):
    a = sw.create(tmp_path / "a.zarr", shape=(10, 7), dtype=dtype, chunks=(4, 4), shards=(8, 8))
    ref = reference(a.shape, a.dtype, seed=11)
    for shard in a.iter_shards():
        with a.write_shard(shard) as w:
            for c in w.inner_chunks():
                data = _layouts(ref[c.slices])[layout]
                if layout == "non-native" and data.dtype.itemsize > 1:
                    assert not data.dtype.isnative
                if layout in ("Fortran", "strided", "negative-strides", "transposed"):
                    assert not data.flags.c_contiguous or data.shape[0] == 1
                w[c] = data
    assert_same(a[...], ref)


def test_layouts_are_what_they_claim():
    block = np.arange(12, dtype=">u2").reshape(3, 4).astype("u2")
    views = _layouts(block)
    assert views["Fortran"].flags.f_contiguous and not views["Fortran"].flags.c_contiguous
    assert any(s < 0 for s in views["negative-strides"].strides)
    assert not views["non-native"].dtype.isnative
    assert not views["strided"].flags.c_contiguous and not views["strided"].flags.f_contiguous
    assert not views["readonly"].flags.writeable
    for v in views.values():
        np.testing.assert_array_equal(v, block)


CASTS_OK = [
    ("uint16", "uint8"),
    ("uint16", "uint32"),  # same_kind allows narrowing within a kind
    ("int8", "int64"),
    ("int32", "uint16"),  # safe
    ("float32", "float64"),
    ("float64", "int32"),  # safe
    ("complex64", "float64"),
    ("complex128", "int16"),
    ("int16", "bool"),
    ("bool", "bool"),
]

CASTS_REFUSED = [
    ("uint16", "float32"),
    ("uint16", "int32"),
    ("int32", "float64"),
    ("int8", "complex64"),
    ("float32", "complex64"),
    ("bool", "int8"),
    ("bool", "float32"),
    ("uint8", "int8"),
]


@pytest.mark.parametrize(("array_dtype", "data_dtype"), CASTS_OK)
def test_same_kind_casts_accepted(tmp_path, array_dtype, data_dtype):
    assert np.can_cast(data_dtype, array_dtype, "same_kind")
    a = sw.create(
        tmp_path / "a.zarr", shape=(4, 4), dtype=array_dtype, chunks=(2, 2), shards=(4, 4)
    )
    if np.dtype(data_dtype).kind == "b":
        data = np.arange(16).reshape(4, 4) % 3 == 1
    else:
        data = (np.arange(16).reshape(4, 4) % 100).astype(data_dtype)
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = data[c.slices]
    assert_same(a[...], data.astype(array_dtype))


@pytest.mark.parametrize(("array_dtype", "data_dtype"), CASTS_REFUSED)
def test_non_same_kind_casts_refused_naming_both_dtypes(tmp_path, array_dtype, data_dtype):
    assert not np.can_cast(data_dtype, array_dtype, "same_kind")
    a = sw.create(
        tmp_path / "a.zarr", shape=(4, 4), dtype=array_dtype, chunks=(2, 2), shards=(4, 4)
    )
    before = tree_digest(tmp_path / "a.zarr")
    with a.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        with pytest.raises((sw.DTypeError, sw.ShapeError)) as info:
            w[c] = np.ones(c.shape, dtype=data_dtype)
        assert isinstance(info.value, sw.ShardwrightError)
        message = str(info.value)
        assert str(np.dtype(array_dtype)) in message
        assert str(np.dtype(data_dtype)) in message
        assert w.stats["chunks_written"] == 0
    assert tree_digest(tmp_path / "a.zarr") == before


def test_dtype_error_is_type_error(small):
    with small.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        with pytest.raises(TypeError):
            w[c] = np.ones(c.shape, dtype="float32")


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        ("uint16", 7, 7),
        ("uint16", np.uint8(200), 200),
        ("int32", -5, -5),
        ("float32", 1.25, 1.25),
        ("float32", 3, 3.0),
        ("float64", np.float32(0.5), 0.5),
        ("complex64", 1 + 2j, 1 + 2j),
        ("bool", True, True),
        ("int8", np.array(-3, dtype="int8"), -3),
        ("float32", math.nan, math.nan),
    ],
)
def test_scalar_fills_the_chunk(tmp_path, dtype, value, expected):
    a = sw.create(tmp_path / "a.zarr", shape=(6, 5), dtype=dtype, chunks=(4, 4), shards=(8, 8))
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = value
    assert_same(a[...], np.full(a.shape, expected, dtype=dtype))


@pytest.mark.parametrize(
    ("dtype", "value"),
    [("uint16", 1.5), ("int32", np.float64(2.0)), ("float32", 1j), ("bool", np.int8(1))],
)
def test_scalar_of_wrong_kind_refused(tmp_path, dtype, value):
    a = sw.create(tmp_path / "b.zarr", shape=(4, 4), dtype=dtype, chunks=(2, 2), shards=(4, 4))
    with a.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        with pytest.raises(sw.DTypeError) as info:
            w[c] = value
        assert str(np.dtype(dtype)) in str(info.value)


def test_assignment_with_tuple_of_slices(small):
    with small.write_shard((0, 0)) as w:
        w[0:4, 4:7] = np.full((4, 3), 6, dtype="uint16")
        w[(slice(4, 8), slice(0, 4))] = 2
    expected = np.zeros(small.shape, dtype="uint16")
    expected[0:4, 4:7] = 6
    expected[4:8, 0:4] = 2
    assert_same(small[...], expected)


def test_rewriting_a_chunk_in_the_same_writer_keeps_the_last(small):
    with small.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        w[c] = 1
        w[c] = np.full(c.shape, 2, dtype="uint16")
        w[c] = 3
    assert (small[0:4, 0:4] == 3).all()
    assert w.stats["chunks_written"] == 1


# --------------------------------------------------------------------------------------
# Errors of writing
# --------------------------------------------------------------------------------------


def test_shape_mismatch_names_both_shapes(small):
    with small.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        with pytest.raises(sw.ShapeError) as info:
            w[c] = np.zeros((3, 5), dtype="uint16")
        assert isinstance(info.value, ValueError)
        assert "(3, 5)" in str(info.value)
        assert "(4, 4)" in str(info.value)
        with pytest.raises(sw.ShapeError) as info:
            w[c] = np.zeros(16, dtype="uint16")
        assert "(16,)" in str(info.value) and "(4, 4)" in str(info.value)


def test_shape_mismatch_on_a_clipped_chunk(small):
    with small.write_shard((1, 0)) as w:
        c = list(w.inner_chunks())[1]
        assert c.shape == (2, 3)
        with pytest.raises(sw.ShapeError) as info:
            w[c] = np.zeros((4, 4), dtype="uint16")
        assert "(4, 4)" in str(info.value) and "(2, 3)" in str(info.value)


@pytest.mark.parametrize(
    "domain",
    [
        sw.Domain((8, 0), (2, 4)),  # a chunk of the other shard
        sw.Domain((12, 0), (4, 4)),  # beyond the array
        sw.Domain((0, 8), (4, 4)),  # beyond the array's columns
        sw.Domain((6, 0), (4, 4)),  # straddles two shards
    ],
)
def test_domain_outside_the_shard_is_bounds_error(small, domain):
    with small.write_shard((0, 0)) as w:
        with pytest.raises(sw.BoundsError):
            w[domain] = np.zeros(domain.shape, dtype="uint16")
        with pytest.raises(sw.BoundsError):
            w[domain] = 1
        assert w.stats["chunks_written"] == 0


def test_domain_inside_the_shard_that_is_not_an_inner_chunk(small):
    """Any region inside the shard may be written; the rest of the shard keeps its data
    (here: the fill value). A region sticking out of the shard is a BoundsError."""
    with small.write_shard((0, 0)) as w:
        with pytest.raises(sw.BoundsError):
            w[sw.Domain((0, 0), (8, 8))] = 1  # the shard is clipped to 7 columns
        w[sw.Domain((1, 0), (4, 4))] = np.full((4, 4), 5, dtype="uint16")
        w[sw.Domain((5, 4), (2, 2))] = 6
    expected = np.zeros(small.shape, dtype="uint16")
    expected[1:5, 0:4] = 5
    expected[5:7, 4:6] = 6
    assert_same(small[...], expected)


def test_domain_of_wrong_rank(small):
    with small.write_shard((0, 0)) as w:
        with pytest.raises(sw.ShardwrightError):
            w[sw.Domain((0,), (4,))] = np.zeros(4, dtype="uint16")


@pytest.mark.parametrize(
    "index", [(2, 0), (0, 1), (5, 5), (-1, 0), (0, -1), (2**63, 0), (2**64, 0)]
)
def test_shard_index_outside_grid_is_bounds_error(small, index):
    with pytest.raises(sw.BoundsError):
        small.write_shard(index)


@pytest.mark.parametrize("index", [(0,), (0, 0, 0)])
def test_shard_index_of_wrong_rank(small, index):
    with pytest.raises((sw.BoundsError, sw.ShapeError)):
        small.write_shard(index)


@pytest.mark.parametrize(
    "domain",
    [sw.Domain((1, 0), (8, 7)), sw.Domain((0, 0), (8, 8)), sw.Domain((16, 0), (2, 7))],
)
def test_domain_that_is_not_a_shard(small, domain):
    with pytest.raises(sw.BoundsError):
        small.write_shard(domain)


@pytest.mark.parametrize("as_type", [str, Path])
def test_missing_array(tmp_path, as_type):
    for path in [tmp_path / "nothing.zarr", tmp_path]:
        with pytest.raises(FileNotFoundError) as info:
            sw.open(as_type(path))
        assert isinstance(info.value, sw.ShardwrightError)
        assert str(path) in str(info.value)


def _edit_metadata(path: Path, edit) -> None:
    meta = json.loads((path / "zarr.json").read_text())
    edit(meta)
    (path / "zarr.json").write_text(json.dumps(meta))


def test_unknown_inner_codec(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))

    def edit(meta):
        meta["codecs"][0]["configuration"]["codecs"][1] = {"name": "lz4hc", "configuration": {}}

    _edit_metadata(path, edit)
    with pytest.raises(sw.UnsupportedError, match="lz4hc") as info:
        sw.open(path)
    assert isinstance(info.value, NotImplementedError)


def test_unknown_codec_unsharded(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4))
    _edit_metadata(path, lambda m: m["codecs"].append({"name": "lz4hc"}))
    with pytest.raises(sw.UnsupportedError, match="lz4hc"):
        sw.open(path)


def test_unknown_index_codec(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))

    def edit(meta):
        meta["codecs"][0]["configuration"]["index_codecs"][1] = {"name": "adler32"}

    _edit_metadata(path, edit)
    with pytest.raises(sw.UnsupportedError, match="adler32"):
        sw.open(path)


def test_string_data_type_unsupported(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))

    def edit(meta):
        meta["data_type"] = "string"
        meta["fill_value"] = ""

    _edit_metadata(path, edit)
    with pytest.raises(sw.UnsupportedError, match="string"):
        sw.open(path)


def test_create_unsupported_compressor_and_dtype(tmp_path):
    with pytest.raises(sw.UnsupportedError, match="lz4hc"):
        sw.create(tmp_path / "a", shape=(4,), dtype="u1", chunks=(2,), compressor="lz4hc")
    with pytest.raises(sw.UnsupportedError):
        sw.create(tmp_path / "b", shape=(4,), dtype="U3", chunks=(2,))
    with pytest.raises(sw.UnsupportedError):
        sw.create(tmp_path / "c", shape=(4,), dtype=object, chunks=(2,))


# --------------------------------------------------------------------------------------
# Corrupt shards
# --------------------------------------------------------------------------------------


def _corrupt_index_array(tmp_path: Path, index_location: str):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path,
        shape=(8, 8),
        dtype="uint16",
        chunks=(4, 4),
        shards=(8, 8),
        index_location=index_location,
    )
    ref = reference(a.shape, a.dtype, seed=2)
    write_all(a, ref)
    shard = path / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    where = slice(len(data) - 6, len(data) - 2) if index_location == "end" else slice(3, 7)
    data[where] = bytes(b ^ 0xA5 for b in data[where])
    shard.write_bytes(bytes(data))
    return a, path


@pytest.mark.parametrize("index_location", ["end", "start"])
def test_corrupt_index_on_read(tmp_path, index_location):
    a, _ = _corrupt_index_array(tmp_path, index_location)
    with pytest.raises(sw.CorruptShardError):
        a[...]
    with pytest.raises(sw.CorruptShardError):
        a[0, 0]
    with pytest.raises(sw.CorruptShardError):
        sw.open(tmp_path / "a.zarr")[5:6, 5:6]


@pytest.mark.parametrize("index_location", ["end", "start"])
def test_corrupt_index_on_partial_rewrite(tmp_path, index_location):
    a, path = _corrupt_index_array(tmp_path, index_location)
    before = tree_digest(path)
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1
    assert tree_digest(path) == before
    assert temp_files(path) == []


def test_full_rewrite_replaces_a_corrupt_shard_without_reading_it(tmp_path):
    a, _ = _corrupt_index_array(tmp_path, "end")
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 5
    assert w.stats["gets"] == 0
    assert (a[...] == 5).all()


@pytest.mark.parametrize(
    "content", [b"", b"x", b"\x00" * 68, bytes(range(256)) * 3], ids=["empty", "1", "68", "768"]
)
def test_garbage_shard(tmp_path, content):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    (path / "c" / "0").mkdir(parents=True)
    (path / "c" / "0" / "0").write_bytes(content)
    with pytest.raises(sw.CorruptShardError):
        a[...]
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1
    assert (path / "c" / "0" / "0").read_bytes() == content


def _rewrite_index(path: Path, n_slots: int, entries) -> None:
    """Replace the (end) index of a shard with ``entries`` and a valid checksum."""
    data = path.read_bytes()
    size = 16 * n_slots + 4
    raw = np.array(entries, dtype="<u8").tobytes()
    crc = google_crc32c.value(raw).to_bytes(4, "little")
    path.write_bytes(data[:-size] + raw + crc)


def test_index_pointing_outside_the_shard(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    write_all(a, reference(a.shape, a.dtype))
    shard = path / "c" / "0" / "0"
    _rewrite_index(shard, 4, [[0, 10], [10, 10], [20, 10**6], [2**64 - 2, 5]])
    with pytest.raises(sw.CorruptShardError):
        a[...]
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1


def test_chunk_bytes_that_do_not_decode(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    write_all(a, reference(a.shape, a.dtype))
    shard = path / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[0:8] = b"\xff" * 8
    shard.write_bytes(bytes(data))
    with pytest.raises(sw.ShardwrightError):
        a[0:4, 0:4]


# --------------------------------------------------------------------------------------
# Reading: a[key] against numpy
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def readback(tmp_path_factory):
    path = tmp_path_factory.mktemp("read") / "r.zarr"
    a = sw.create(path, shape=(13, 9, 6), dtype="int32", chunks=(4, 3, 2), shards=(8, 6, 4))
    ref = reference(a.shape, a.dtype, seed=7)
    write_all(a, ref)
    return a, ref


INDEX_KEYS = [
    ...,
    (...,),
    (),
    0,
    -1,
    12,
    -13,
    (3, 0, 5),
    (-1, -1, -1),
    (3, slice(0, 8), slice(None)),
    (slice(None), 4),
    (..., 2),
    (1, ..., -2),
    (slice(2, 11, 3), ..., slice(None, None, 2)),
    (slice(None, None, -1),),
    (slice(-2, 1, -3), slice(7, None, -2), slice(None, None, -5)),
    (slice(-100, 100), slice(5, 5), slice(None)),
    (slice(20, 30),),
    (slice(None), slice(8, 2)),
    (slice(-3, None), slice(None, -7)),
    (np.int64(4), np.int8(-2)),
    (slice(np.int32(1), np.uint8(9), np.int16(2)),),
    (slice(12, -14, -1), 0),
    (0, 0, ...),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=[repr(k) for k in INDEX_KEYS])
def test_getitem_matches_numpy(readback, key):
    a, ref = readback
    got = a[key]
    expected = ref[key]
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == ref.dtype
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_getitem_matches_numpy_property(readback, data):
    a, ref = readback
    key = data.draw(hnp.basic_indices(ref.shape, allow_newaxis=False, allow_ellipsis=True))
    got = a[key]
    np.testing.assert_array_equal(got, ref[key])
    assert np.shape(got) == np.shape(ref[key])


@pytest.mark.parametrize("key", [13, -14, (0, 9), (0, 0, 6), (0, 0, -7), (0, 0, 0, 0)])
def test_getitem_out_of_bounds(readback, key):
    a, ref = readback
    with pytest.raises(IndexError):
        ref[key]
    with pytest.raises(sw.BoundsError):
        a[key]


@pytest.mark.parametrize("key", [None, [1, 2], np.array([1, 2]), 1.5, "a", (..., ...)])
def test_getitem_not_basic_indexing(readback, key):
    a, _ = readback
    with pytest.raises(sw.ShardwrightError):
        a[key]


def test_getitem_returns_a_new_array(readback):
    a, ref = readback
    x = a[...]
    x[...] = 0
    assert_same(a[...], ref)


def test_read_unwritten_is_fill_value(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr", shape=(5, 5), dtype="i2", chunks=(2, 2), shards=(4, 4), fill_value=-7
    )
    assert_same(a[...], np.full((5, 5), -7, dtype="i2"))
    assert_same(a[1:3, 4], np.full(2, -7, dtype="i2"))


def test_numpy_slices_of_iterated_domains(small):
    ref = reference(small.shape, small.dtype)
    write_all(small, ref)
    for c in small.iter_chunks():
        assert_same(small[c.slices], ref[c.slices])
        assert small[c.slices].shape == c.shape


# --------------------------------------------------------------------------------------
# map_chunks
# --------------------------------------------------------------------------------------


def _chunk_value(c: sw.Domain) -> np.ndarray:
    grid = np.indices(c.shape).sum(axis=0)
    return (grid + 100 * c.index[0] + 10 * c.index[1]).astype("int32")


def _expected_map(a: sw.Array) -> np.ndarray:
    out = np.zeros(a.shape, dtype="int32")
    for c in a.iter_chunks():
        out[c.slices] = _chunk_value(c)
    return out


@pytest.mark.parametrize("workers", [None, 1, 3])
def test_map_chunks_whole_array(tmp_path, workers):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 11), dtype="i4", chunks=(4, 3), shards=(8, 6))
    seen = []
    lock = threading.Lock()

    def fn(c):
        with lock:
            seen.append(c)
        return _chunk_value(c)

    stats = a.map_chunks(fn, workers=workers)
    assert sorted(seen, key=lambda d: d.index) == list(a.iter_chunks())
    assert all(c.index is not None for c in seen)
    assert stats["shards_written"] == 6
    assert stats["puts"] == 6
    assert stats["gets"] == 0
    assert stats["chunks_written"] == len(list(a.iter_chunks()))
    assert stats["bytes_written"] > 0
    assert "chunks_empty" in stats
    assert stats["seconds"] >= 0
    assert_same(a[...], _expected_map(a))


def test_map_chunks_within(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(20, 11), dtype="i4", chunks=(4, 3), shards=(8, 6))
    within = sw.Domain((9, 7), (2, 2))
    met = list(a.iter_shards(within))
    assert len(met) == 1
    stats = a.map_chunks(_chunk_value, within=within, workers=1)
    assert stats["shards_written"] == 1 and stats["puts"] == 1
    expected = np.zeros(a.shape, dtype="int32")
    for c in a.iter_chunks(met[0]):
        expected[c.slices] = _chunk_value(c)
    assert_same(a[...], expected)
    # slices work too
    stats = a.map_chunks(lambda c: -1, within=(slice(0, 1), slice(0, 1)), workers=3)
    assert stats["shards_written"] == 1
    assert (a[0:8, 0:6] == -1).all()
    assert (a[8:, :6] == 0).all()


def test_map_chunks_shards_in_parallel(tmp_path):
    """With workers=3, three shards are in flight at once (a barrier would time out if
    the shards were written one after another)."""
    a = sw.create(tmp_path / "a.zarr", shape=(12, 4), dtype="u1", chunks=(2, 2), shards=(4, 4))
    barrier = threading.Barrier(3, timeout=20)
    threads = set()

    def fn(c):
        threads.add(threading.get_ident())
        if c.origin[1] == 0 and c.origin[0] % 4 == 0:  # the first chunk of each shard
            barrier.wait()
        return 1

    stats = a.map_chunks(fn, workers=3)
    assert stats["shards_written"] == 3
    assert len(threads) == 3
    assert (a[...] == 1).all()


def test_map_chunks_progress(tmp_path, capsys):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))
    a.map_chunks(lambda c: 1, progress=True, workers=2)
    captured = capsys.readouterr()
    assert "4/4" in captured.err
    assert "shardwright" in captured.err
    assert captured.out == ""
    a.map_chunks(lambda c: 2, workers=2)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_map_chunks_fn_raises(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))

    def fn(c):
        if c.index == (2, 1):  # in shard (1, 0)
            raise ValueError("bad chunk")
        return 1

    with pytest.raises(ValueError, match="bad chunk"):
        a.map_chunks(fn, workers=1)
    assert not (path / "c" / "1" / "0").exists()
    assert temp_files(path) == []
    assert (a[4:8, 0:4] == 0).all()


def test_map_chunks_wrong_shape_from_fn(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))
    with pytest.raises(sw.ShapeError):
        a.map_chunks(lambda c: np.zeros((3, 3), dtype="u1"))
    assert (a[...] == 0).all()


# --------------------------------------------------------------------------------------
# Unsharded arrays, compressors, index locations, fill values
# --------------------------------------------------------------------------------------


def test_unsharded_array(tmp_path):
    path = tmp_path / "u.zarr"
    a = sw.create(path, shape=(5, 3), dtype="int32", chunks=(2, 2), shards=None)
    assert a.shards is None
    assert a.chunks == (2, 2)
    assert list(a.iter_shards()) == list(a.iter_chunks())
    assert [s.index for s in a.iter_shards()] == [(i, j) for i in range(3) for j in range(2)]
    ref = reference(a.shape, a.dtype, seed=4)
    stats = write_all(a, ref)
    assert [s["puts"] for s in stats] == [1] * 6
    assert all(s["gets"] == 0 for s in stats)
    assert_same(a[...], ref)
    with a.write_shard((2, 1)) as w:
        chunks = list(w.inner_chunks())
        assert chunks == [sw.Domain((4, 2), (1, 1))]
        w[chunks[0]] = 42
    assert a[4, 2] == 42
    assert (path / "c" / "2" / "1").is_file()
    np.testing.assert_array_equal(zarr.open_array(str(path))[...], a[...])


def test_unsharded_fill_value_chunk_removes_it(tmp_path):
    path = tmp_path / "u.zarr"
    a = sw.create(path, shape=(4, 4), dtype="u1", chunks=(2, 2))
    write_all(a, np.ones((4, 4), dtype="u1"))
    with a.write_shard((0, 0)) as w:
        w[next(w.inner_chunks())] = 0
    assert w.stats["chunks_empty"] == 1
    assert not (path / "c" / "0" / "0").exists()
    assert (a[0:2, 0:2] == 0).all() and (a[2:, 2:] == 1).all()


@pytest.mark.parametrize("compressor", ["zstd", "blosc", "gzip", None])
@pytest.mark.parametrize("sharded", [True, False])
def test_every_compressor(tmp_path, compressor, sharded):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path,
        shape=(17, 10),
        dtype="float32",
        chunks=(4, 5),
        shards=(8, 10) if sharded else None,
        compressor=compressor,
    )
    meta = json.loads((path / "zarr.json").read_text())
    chain = meta["codecs"][0]["configuration"]["codecs"] if sharded else meta["codecs"]
    names = [c["name"] for c in chain]
    assert names == ["bytes"] + ([compressor] if compressor else [])
    ref = reference(a.shape, a.dtype, seed=8)
    write_all(a, ref)
    assert_same(a[...], ref)
    assert_same(zarr.open_array(str(path))[...], ref)


def test_compression_actually_compresses(tmp_path):
    sizes = {}
    for compressor in ["zstd", "blosc", "gzip", None]:
        path = tmp_path / f"{compressor}.zarr"
        a = sw.create(
            path,
            shape=(64, 64),
            dtype="u2",
            chunks=(16, 16),
            shards=(64, 64),
            compressor=compressor,
        )
        write_all(a, np.zeros((64, 64), dtype="u2") + np.arange(64, dtype="u2") // 8 + 1)
        sizes[compressor] = (path / "c" / "0" / "0").stat().st_size
    raw = 64 * 64 * 2
    assert sizes[None] >= raw
    for compressor in ["zstd", "blosc", "gzip"]:
        assert sizes[compressor] < raw / 4, sizes


def _read_index(shard: bytes, n_slots: int, location: str) -> list[tuple[int, int]]:
    size = 16 * n_slots + 4
    index = shard[-size:] if location == "end" else shard[:size]
    raw, crc = index[:-4], index[-4:]
    assert google_crc32c.value(raw) == int.from_bytes(crc, "little")
    return [tuple(p) for p in np.frombuffer(raw, dtype="<u8").reshape(n_slots, 2).tolist()]


@pytest.mark.parametrize("location", ["start", "end"])
def test_index_location(tmp_path, location):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8), index_location=location
    )
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["codecs"][0]["configuration"]["index_location"] == location
    ref = reference(a.shape, a.dtype, seed=9)
    with a.write_shard((0, 0)) as w:
        chunks = list(w.inner_chunks())
        for c in chunks[:3]:
            w[c] = ref[c.slices]
        w[chunks[3]] = 0  # empty slot
    ref[4:8, 4:8] = 0
    assert_same(a[...], ref)
    assert_same(zarr.open_array(str(path))[...], ref)
    shard = (path / "c" / "0" / "0").read_bytes()
    entries = _read_index(shard, 4, location)
    index_size = 16 * 4 + 4
    data_start, data_stop = (
        (index_size, len(shard))
        if location == "start"
        else (
            0,
            len(shard) - index_size,
        )
    )
    assert entries[3] == (2**64 - 1, 2**64 - 1)
    stored = entries[:3]
    # inside the data area, in C order, not overlapping
    assert stored[0][0] == data_start
    for (o1, n1), (o2, _) in itertools.pairwise(stored):
        assert o1 + n1 <= o2
    assert stored[-1][0] + stored[-1][1] <= data_stop
    assert all(nbytes > 0 for _, nbytes in stored)


def test_index_location_invalid(tmp_path):
    with pytest.raises(ValueError):
        sw.create(
            tmp_path / "a", shape=(4,), dtype="u1", chunks=(2,), shards=(4,), index_location="mid"
        )


@pytest.mark.parametrize(
    ("dtype", "fill_value"),
    [
        ("uint16", 0),
        ("uint16", 65535),
        ("int8", -128),
        ("float32", math.nan),
        ("float64", math.nan),
        ("float32", -math.inf),
        ("float64", 2.5),
        ("complex64", 1 - 1j),
        ("bool", True),
        ("bool", False),
    ],
)
def test_fill_values(tmp_path, dtype, fill_value):
    path = tmp_path / "a.zarr"
    a = sw.create(
        path, shape=(6, 5), dtype=dtype, chunks=(2, 2), shards=(4, 4), fill_value=fill_value
    )
    expected_fill = np.array(fill_value, dtype=dtype)
    assert a.fill_value.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.fill_value, expected_fill)
    full = np.full(a.shape, fill_value, dtype=dtype)
    assert_same(a[...], full)
    # write one chunk with data, one with the fill value (not stored)
    with a.write_shard((0, 0)) as w:
        chunks = list(w.inner_chunks())
        data = reference(chunks[0].shape, a.dtype, seed=12)
        data.flat[0] = (not fill_value) if dtype == "bool" else (2 if fill_value == 1 else 1)
        w[chunks[0]] = data
        w[chunks[1]] = np.full(chunks[1].shape, fill_value, dtype=dtype)
    assert w.stats["chunks_empty"] == 1
    assert w.stats["chunks_written"] == 2
    full[chunks[0].slices] = data
    assert_same(a[...], full)
    assert_same(sw.open(path)[...], full)
    assert_same(zarr.open_array(str(path))[...], full)


def test_nan_fill_value_chunks_of_nan_are_empty(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(4,), dtype="float32", chunks=(2,), shards=(4,), fill_value=math.nan)
    assert np.isnan(a.fill_value)
    with a.write_shard((0,)) as w:
        w[sw.Domain((0,), (2,))] = math.nan
        w[sw.Domain((2,), (2,))] = np.full(2, np.nan, dtype="float32")
    assert w.stats["chunks_empty"] == 2
    assert w.stats["puts"] == 0
    assert not (path / "c" / "0").exists()
    assert np.isnan(a[...]).all()


# --------------------------------------------------------------------------------------
# Partial shard writes: merging with the stored shard
# --------------------------------------------------------------------------------------


def test_partial_write_keeps_other_chunks(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(10, 7), dtype="u2", chunks=(4, 4), shards=(8, 8))
    ref = reference(a.shape, a.dtype, seed=13)
    write_all(a, ref)
    old_size = (path / "c" / "0" / "0").stat().st_size
    with a.write_shard((0, 0)) as w:
        c = list(w.inner_chunks())[2]
        w[c] = np.full(c.shape, 7, dtype="u2")
    stats = w.stats
    assert stats["gets"] == 1
    assert stats["puts"] == 1
    assert stats["chunks_written"] == 1
    assert stats["chunks_kept"] == 3
    assert stats["bytes_read"] == old_size
    ref[c.slices] = 7
    assert_same(a[...], ref)
    assert_same(zarr.open_array(str(path))[...], ref)


def test_partial_write_of_a_new_shard_leaves_fill(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr", shape=(8, 8), dtype="i2", chunks=(4, 4), shards=(8, 8), fill_value=-1
    )
    with a.write_shard((0, 0)) as w:
        w[sw.Domain((4, 0), (4, 4))] = 3
    assert w.stats["puts"] == 1
    assert w.stats["gets"] <= 1
    expected = np.full((8, 8), -1, dtype="i2")
    expected[4:8, 0:4] = 3
    assert_same(a[...], expected)


def test_partial_write_emptying_a_chunk(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    ref = reference(a.shape, a.dtype, seed=14) | 1
    write_all(a, ref)
    with a.write_shard((0, 0)) as w:
        w[sw.Domain((0, 4), (4, 4))] = 0
    assert w.stats["chunks_kept"] == 3
    assert w.stats["chunks_empty"] == 1
    ref[0:4, 4:8] = 0
    assert_same(a[...], ref)
    entries = _read_index((path / "c" / "0" / "0").read_bytes(), 4, "end")
    assert entries[1] == (2**64 - 1, 2**64 - 1)


def test_writing_only_fill_values_deletes_the_shard(tmp_path):
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    write_all(a, reference(a.shape, a.dtype) | 1)
    assert (path / "c" / "0" / "0").exists()
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 0
    assert w.stats["chunks_empty"] == 4
    assert w.stats["puts"] == 0
    assert not (path / "c" / "0" / "0").exists()
    assert (a[...] == 0).all()


def test_empty_writer_does_no_io(small, tmp_path):
    before = tree_digest(tmp_path / "small.zarr")
    with small.write_shard((0, 0)) as w:
        pass
    assert w.stats["puts"] == 0 and w.stats["gets"] == 0 and w.stats["chunks_written"] == 0
    assert tree_digest(tmp_path / "small.zarr") == before


def test_full_overwrite_of_existing_shard_reads_nothing(small):
    write_all(small, reference(small.shape, small.dtype))
    stats = write_all(small, reference(small.shape, small.dtype, seed=1))
    assert all(s["gets"] == 0 and s["puts"] == 1 for s in stats)
    assert_same(small[...], reference(small.shape, small.dtype, seed=1))


# --------------------------------------------------------------------------------------
# Domain essentials (more in test_domain.py)
# --------------------------------------------------------------------------------------


def test_domain_contract():
    d = sw.Domain((2, 3), (4, 5))
    assert d.origin == (2, 3) and d.shape == (4, 5)
    assert d.stop == (6, 8)
    assert d.slices == (slice(2, 6), slice(3, 8))
    assert d.ndim == 2 and d.size == 20
    assert d.index is None
    assert d.intersect(sw.Domain((5, 0), (10, 4))) == sw.Domain((5, 3), (1, 1))
    assert d.intersect(sw.Domain((6, 0), (1, 1))) is None
    assert d.translate((1, -3)) == sw.Domain((3, 0), (4, 5))
    assert sw.Domain((3, 4), (2, 2)) in d
    assert sw.Domain((3, 4), (4, 2)) not in d
    assert d == sw.Domain([2, 3], [4, 5])
    assert hash(d) == hash(sw.Domain((2, 3), (4, 5)))
    assert d != sw.Domain((2, 3), (4, 6))
    assert np.arange(100).reshape(10, 10)[d.slices].shape == (4, 5)
    assert pickle.loads(pickle.dumps(d)) == d


def test_domains_from_iterators_carry_index(small):
    shard = next(small.iter_shards())
    assert shard.index == (0, 0)
    assert shard == sw.Domain((0, 0), (8, 7))
    assert {shard, sw.Domain((0, 0), (8, 7))} == {shard}
    with small.write_shard(shard) as w:
        c = next(w.inner_chunks())
        assert c.index == (0, 0)
        w[c] = 1
    assert w.shard.index == (0, 0)


# --------------------------------------------------------------------------------------
# No Rust panic ever reaches Python
# --------------------------------------------------------------------------------------


def _is_panic(exc: BaseException) -> bool:
    return type(exc).__name__ == "PanicException" or "panic" in str(exc).lower()


def _hostile_calls(tmp_path: Path):
    """(name, call, expected): ``expected`` is the exception class the call must raise,
    or None when it must succeed."""
    a = sw.create(tmp_path / "h.zarr", shape=(10, 10), dtype="u1", chunks=(2, 2), shards=(4, 4))
    z = sw.create(tmp_path / "z.zarr", shape=(0, 4), dtype="u1", chunks=(2, 2), shards=(2, 2))
    huge = sw.create(
        tmp_path / "huge.zarr", shape=(2**62, 2**62), dtype="u1", chunks=(1, 1), shards=(4, 4)
    )
    top = 2**60 - 1  # the last shard index of ``huge``

    def write(array, index, domain, value):
        with array.write_shard(index) as w:
            w[domain] = value
        return w.stats

    def create(name, **kwargs):
        return sw.create(tmp_path / name, **{"shape": (4,), "dtype": "u1", **kwargs})

    d = sw.Domain
    return [
        ("huge shard index", lambda: a.write_shard((2**64 - 1, 0)), sw.BoundsError),
        ("shard index past u64", lambda: a.write_shard((2**70, 0)), sw.BoundsError),
        ("shard domain past u64", lambda: a.write_shard(d((2**64, 0), (4, 4))), sw.BoundsError),
        ("huge domain", lambda: write(a, (0, 0), d((2**64 - 1, 0), (1, 1)), 1), sw.BoundsError),
        ("domain past u64", lambda: write(a, (0, 0), d((2**64, 0), (1, 1)), 1), sw.BoundsError),
        (
            "overflowing domain",
            lambda: write(a, (0, 0), d((2**63, 0), (2**63, 2)), 1),
            sw.BoundsError,
        ),
        ("huge within", lambda: list(a.iter_shards(d((2**64 - 1, 0), (1, 1)))), None),
        ("within past u64", lambda: list(a.iter_shards(d((2**70, 0), (1, 1)))), None),
        ("overflowing within", lambda: list(a.iter_chunks(d((2**63, 2**63), (2**63, 1)))), None),
        ("empty array shard", lambda: z.write_shard((0, 0)), sw.BoundsError),
        ("empty array read", lambda: z[...], None),
        ("empty array iter", lambda: list(z.iter_chunks()), None),
        ("huge array far read", lambda: huge[2**62 - 1, 2**62 - 2 :], None),
        (
            "huge array write",
            lambda: write(huge, (top, top), d((4 * top, 4 * top), (1, 1)), 1),
            None,
        ),
        ("huge array iter", lambda: list(huge.iter_shards(d((2**62 - 1, 0), (1, 1)))), None),
        ("huge array past end", lambda: huge[2**62], sw.BoundsError),
        (
            "zero-size data",
            lambda: write(a, (0, 0), d((0, 0), (2, 2)), np.zeros((0, 2), "u1")),
            sw.ShapeError,
        ),
        (
            "wrong itemsize",
            lambda: write(a, (0, 0), d((0, 0), (2, 2)), np.zeros((2, 2), "V1")),
            sw.DTypeError,
        ),
        ("zero chunks", lambda: create("c0", chunks=(0,)), sw.ShardwrightError),
        ("zero shards", lambda: create("s0", chunks=(2,), shards=(0,)), sw.ShardwrightError),
        (
            "shards not multiple",
            lambda: create("s3", chunks=(2,), shards=(3,)),
            sw.ShardwrightError,
        ),
        ("rank mismatch", lambda: create("rm", chunks=(2, 2), shards=(2,)), sw.ShardwrightError),
        ("rank 0", lambda: create("r0", shape=(), chunks=()), sw.UnsupportedError),
        ("rank 9", lambda: create("r9", shape=(1,) * 9, chunks=(1,) * 9), sw.UnsupportedError),
        (
            "bad level",
            lambda: create("lv", chunks=(2,), compressor="gzip", compression_level=99),
            sw.ShardwrightError,
        ),
    ]


@pytest.mark.parametrize("case", range(25))
def test_no_panic_reaches_python(tmp_path, case):
    calls = _hostile_calls(tmp_path)
    assert len(calls) == 25
    name, call, expected = calls[case]
    try:
        call()
    except BaseException as exc:  # PanicException derives from BaseException
        assert not _is_panic(exc), (name, exc)
        assert expected is not None, f"{name}: {type(exc).__name__}: {exc}"
        assert isinstance(exc, expected), f"{name}: {type(exc).__name__}: {exc}"
    else:
        assert expected is None, f"{name}: no {expected.__name__} raised"


def test_within_beyond_u64_still_meets_the_right_cells(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(10, 10), dtype="u1", chunks=(2, 2), shards=(4, 4))
    within = sw.Domain((1, 0), (2**64 - 1, 3))  # stop past 2**64
    expected = [c for c in a.iter_chunks() if c.origin[1] < 3]
    assert list(a.iter_chunks(within)) == expected
    assert list(a.iter_shards(within)) == [s for s in a.iter_shards() if s.origin[1] == 0]
    assert list(a.iter_chunks(sw.Domain((9, 9), (2**80, 2**80)))) == [sw.Domain((8, 8), (2, 2))]


def test_chunk_domain_is_not_a_shard(small):
    """A Domain from iter_chunks carries an inner-chunk grid index: write_shard must not
    take that index for a shard index."""
    chunk = list(small.iter_chunks())[2]
    assert chunk.index == (1, 0)
    with pytest.raises(sw.BoundsError):
        small.write_shard(chunk)


HOSTILE_METADATA = {
    "negative shape": lambda m: m.__setitem__("shape", [-1, 8]),
    "float shape": lambda m: m.__setitem__("shape", [1.5, 8]),
    "rank mismatch": lambda m: m.__setitem__("shape", [8]),
    "zero chunk": lambda m: m["chunk_grid"]["configuration"].__setitem__("chunk_shape", [0, 8]),
    "zero inner chunk": lambda m: m["codecs"][0]["configuration"].__setitem__(
        "chunk_shape", [0, 4]
    ),
    "inner not dividing": lambda m: m["codecs"][0]["configuration"].__setitem__(
        "chunk_shape", [3, 4]
    ),
    "no codecs": lambda m: m.pop("codecs"),
    "empty codecs": lambda m: m.__setitem__("codecs", []),
    "codecs a string": lambda m: m.__setitem__("codecs", "zstd"),
    "index middle": lambda m: m["codecs"][0]["configuration"].__setitem__("index_location", "mid"),
    "uint128": lambda m: m.__setitem__("data_type", "uint128"),
    "fill string": lambda m: m.__setitem__("fill_value", "abc"),
    "fill huge": lambda m: m.__setitem__("fill_value", 2**70),
    "fill null": lambda m: m.__setitem__("fill_value", None),
    "zarr v2": lambda m: m.__setitem__("zarr_format", 2),
    "group": lambda m: m.__setitem__("node_type", "group"),
    "rectilinear": lambda m: m.__setitem__("chunk_grid", {"name": "rectilinear"}),
    "storage transformer": lambda m: m.__setitem__("storage_transformers", [{"name": "x"}]),
    "not json": None,
    "json list": [],
}


@pytest.mark.parametrize("name", list(HOSTILE_METADATA))
def test_hostile_metadata_raises_shardwright_errors(tmp_path, name):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    edit = HOSTILE_METADATA[name]
    if edit is None:
        (path / "zarr.json").write_text("{not json")
    elif isinstance(edit, list):
        (path / "zarr.json").write_text("[]")
    else:
        _edit_metadata(path, edit)
    try:
        sw.open(path)
    except sw.ShardwrightError as exc:
        assert not _is_panic(exc), exc
    except BaseException as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
    else:
        raise AssertionError(f"{name}: opened without an error")
