"""The Python API: w[c] = data: copies, layouts, byte order, casting, scalars."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same, reference, tree_digest

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


CASTS = [  # (array dtype, data dtype): numpy's same_kind or not, values decide
    ("uint16", "uint8"),
    ("uint16", "uint32"),
    ("int8", "int64"),
    ("int32", "uint16"),
    ("float32", "float64"),
    ("float64", "int32"),
    ("complex64", "float64"),
    ("complex128", "int16"),
    ("int16", "bool"),
    ("bool", "bool"),
    ("uint16", "float32"),
    ("uint16", "int32"),
    ("int32", "float64"),
    ("int8", "complex64"),
    ("float32", "complex64"),
    ("bool", "int8"),
    ("bool", "float32"),
    ("uint8", "int8"),
]

NOT_FITTING = {  # array dtype, data dtype -> a value of the data dtype the array does not hold
    ("uint16", "uint32"): 70000,
    ("int8", "int64"): -129,
    ("int32", "uint16"): None,  # every uint16 fits
    ("uint16", "float32"): 0.5,
    ("uint16", "int32"): -1,
    ("int32", "float64"): 2.0**31,
    ("int8", "complex64"): 1j,
    ("float32", "complex64"): 1 + 1j,
    ("float32", "float64"): 1e39,
    ("float64", "int32"): None,
    ("bool", "int8"): 2,
    ("bool", "float32"): 0.5,
    ("uint8", "int8"): -1,
    ("complex128", "int16"): None,
}


@pytest.mark.parametrize(("array_dtype", "data_dtype"), CASTS)
def test_casts_of_values_that_fit_are_accepted(tmp_path, array_dtype, data_dtype):
    a = sw.create(
        tmp_path / "a.zarr", shape=(4, 4), dtype=array_dtype, chunks=(2, 2), shards=(4, 4)
    )
    if np.dtype(data_dtype).kind == "b":
        data = np.arange(16).reshape(4, 4) % 3 == 1
    else:
        top = 2 if array_dtype == "bool" else 100
        data = (np.arange(16).reshape(4, 4) % top).astype(data_dtype)
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = data[c.slices]
    real = data.real if np.dtype(array_dtype).kind != "c" else data  # imaginary parts are 0
    assert_same(a[...], real.astype(array_dtype))


@pytest.mark.parametrize(
    ("array_dtype", "data_dtype"), [k for k, v in NOT_FITTING.items() if v is not None]
)
def test_values_that_do_not_fit_are_refused_naming_value_and_dtypes(
    tmp_path, array_dtype, data_dtype
):
    a = sw.create(
        tmp_path / "a.zarr", shape=(4, 4), dtype=array_dtype, chunks=(2, 2), shards=(4, 4)
    )
    before = tree_digest(tmp_path / "a.zarr")
    with a.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        data = np.zeros(c.shape, dtype=data_dtype)
        data[1, 0] = NOT_FITTING[array_dtype, data_dtype]
        with pytest.raises(sw.DTypeError) as info:
            w[c] = data
        message = str(info.value)
        assert f"does not fit {np.dtype(array_dtype)} (" in message
        assert f"(index (1, 0) of the {np.dtype(data_dtype)} data)" in message
        assert message.startswith(f"value {data[1, 0]} at array coordinate (1, 0) ")
        assert w.stats["chunks_written"] == 0
    assert tree_digest(tmp_path / "a.zarr") == before


def test_dtype_error_is_type_error(small):
    with small.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        with pytest.raises(TypeError):
            w[c] = np.full(c.shape, 0.5, dtype="float32")


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
    [("uint16", 1.5), ("int32", np.float64(2.5)), ("float32", 1j), ("bool", np.int8(2))],
)
def test_scalar_that_does_not_fit_refused(tmp_path, dtype, value):
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
# The array last assigned is kept until the next assignment (the seed-form fix)
# --------------------------------------------------------------------------------------


def test_the_array_last_assigned_is_released_by_the_next_assignment(tmp_path):
    import gc
    import weakref

    a = sw.create(tmp_path / "h.zarr", shape=(8,), dtype="uint16", chunks=(4,), shards=(8,))
    with a.write_shard((0,)) as w:
        first = np.arange(4, dtype="uint16")
        seen = weakref.ref(first)
        w[0:4] = first
        del first
        gc.collect()
        assert seen() is not None  # kept: freeing it here is what made glibc trim its heap
        w[4:8] = np.arange(4, dtype="uint16")
        gc.collect()
        assert seen() is None  # the next assignment dropped it
    assert a[...].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_views_of_big_arrays_and_big_arrays_are_not_kept(tmp_path):
    import gc
    import weakref

    a = sw.create(tmp_path / "v.zarr", shape=(8,), dtype="uint8", chunks=(4,), shards=(8,))
    volume = np.ones(32 << 20, dtype="uint8")  # 32 MiB: the caller expects it freed
    seen = weakref.ref(volume)
    with a.write_shard((0,)) as w:
        w[0:4] = volume[:4]  # a view: holding it would pin the whole volume
        del volume
        gc.collect()
        assert seen() is None
        big = np.ones(20 << 20, dtype="uint8").reshape(-1, 4)[:1, :].reshape(4)
        w[4:8] = big
    assert a[...].tolist() == [1] * 8


def test_the_console_script_exit_codes(tmp_path):
    import subprocess
    import sys

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "shardwright", *args], capture_output=True, text=True
        )

    assert run("--help").returncode == 0
    bad = run("no-such-command")
    assert bad.returncode == 2 and "unrecognized subcommand" in bad.stderr
    missing = run("info", str(tmp_path / "nothing.zarr"))
    assert missing.returncode == 1 and "shardwright: error:" in missing.stderr
