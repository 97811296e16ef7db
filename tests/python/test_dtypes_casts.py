"""Issue 26, part 2: what a write of times, text and bytes takes (the one cast rule,
``shardwright._values.fit``, extended by ``_values_fixed``): numpy's ``same_kind`` casts
whose every value is stored exactly are made, the rest refused with a DTypeError naming
the value and where it is, before anything is stored; ``fill_value=`` and
``sw.create(dtype=...)`` likewise; variable-length and structured dtypes are refused with
an UnsupportedError that says so."""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import tree_digest
from dtype_cases import same
from zarr.core.dtype import VariableLengthBytes

pytestmark = pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")

M8 = np.datetime64
NAT = np.iinfo(np.int64).min

# (array dtype, value written, what is stored) — taken as numpy takes it, stored exactly
ACCEPTED = [
    ("M8[s]", np.array(["2020-01-01", "NaT"], "M8[D]"), np.array(["2020-01-01", "NaT"], "M8[s]")),
    ("M8[ms]", np.array([1, 2], "M8[s]"), np.array([1000, 2000], "M8[ms]")),
    ("M8[s]", np.array([3000, NAT], "M8[ms]"), np.array([3, NAT], "M8[s]")),
    ("M8[10s]", np.array([20, 30], "M8[s]"), np.array([2, 3], "M8[10s]")),
    ("M8[D]", np.array(["2020-02"], "M8[M]"), np.array(["2020-02-01"], "M8[D]")),
    ("M8[s]", "2020-01-01T00:00:01", np.array(["2020-01-01T00:00:01"], "M8[s]")),
    ("M8[s]", ["2020-01-01", "NaT"], np.array(["2020-01-01", "NaT"], "M8[s]")),
    ("M8[us]", datetime.datetime(2020, 1, 2, 3), np.array(["2020-01-02T03"], "M8[us]")),
    ("M8[D]", datetime.date(2020, 1, 2), np.array(["2020-01-02"], "M8[D]")),
    ("M8[s]", np.array([5], ">M8[s]"), np.array([5], "M8[s]")),
    ("m8[s]", np.array([1, 2], "m8[m]"), np.array([60, 120], "m8[s]")),
    ("m8[s]", np.array([7, -2], "int16"), np.array([7, -2], "m8[s]")),
    ("m8[ms]", [1, 2, True], np.array([1, 2, 1], "m8[ms]")),
    ("m8[ms]", 5, np.array([5], "m8[ms]")),
    ("m8[us]", datetime.timedelta(seconds=2), np.array([2_000_000], "m8[us]")),
    ("m8[M]", np.array([2], "m8[Y]"), np.array([24], "m8[M]")),
    ("U5", np.array(["ab", "é🎉"]), np.array(["ab", "é🎉"], "U5")),
    ("U5", "abcde", np.array(["abcde"], "U5")),
    ("U3", np.array([b"ab", b"xyz"]), np.array(["ab", "xyz"], "U3")),
    ("U3", np.array(["ab"], ">U3"), np.array(["ab"], "U3")),
    ("S3", np.array([b"ab", b"abc"], "S9"), np.array([b"ab", b"abc"], "S3")),
    ("S3", b"a\x00b", np.array([b"a\x00b"], "S3")),
    ("S3", [b"x", b"yz"], np.array([b"x", b"yz"], "S3")),
    ("V2", np.array([b"\x01\x02"], "V2"), np.array([b"\x01\x02"], "V2")),
    ("V3", np.array([b"ab"], "S2"), np.array([b"ab\x00"], "V3")),
    ("V3", b"\x00\xff", np.array([b"\x00\xff\x00"], "V3")),
]


@pytest.mark.parametrize(("dtype", "value", "stored"), ACCEPTED)
def test_values_numpy_casts_exactly_are_written(tmp_path, dtype, value, stored):
    shape = np.shape(stored)
    a = sw.create(tmp_path / "a.zarr", shape=shape, dtype=dtype, chunks=(1,))
    a[...] = value
    same(a[...], stored)
    with a.transaction() as tx:  # the other paths take the same rule
        tx[...] = value
    b = sw.create(tmp_path / "b.zarr", shape=shape, dtype=dtype, chunks=(1,), shards=(2,))
    with b.write_shard((0,)) as w:
        w[0 : min(2, shape[0])] = stored[:2]
    same(zarr.open_array(tmp_path / "a.zarr", mode="r")[...], stored)


# (array dtype, value, what the message says) — numpy would truncate, wrap or refuse
REFUSED = [
    (
        "M8[s]",
        np.array(["2020-01-01T00:00:00.5"], "M8[ms]"),
        "does not fit datetime64[s] exactly (it would be stored as 2020-01-01T00:00:00)",
    ),
    ("M8[ns]", np.array([2**62], "M8[s]"), "does not fit datetime64[ns] exactly"),
    ("M8[10s]", np.array([15], "M8[s]"), "does not fit datetime64[10s] exactly"),
    ("M8[s]", np.array([1], "int64"), "it takes datetime64 data"),
    ("M8[s]", 1.5, "it takes datetime64 data"),
    ("M8[s]", np.array([1], "m8[s]"), "it takes datetime64 data"),
    ("M8", np.array([1], "M8[s]"), "datetime64 data of generic unit (NaT only)"),
    ("M8[s]", "not a date", "is not datetime64 data numpy reads"),
    ("m8[s]", np.array([NAT + 0], "int64"), "-2**63 is NaT"),
    ("m8[s]", np.array([2**63], "uint64"), "does not fit timedelta64[s]"),
    ("m8[D]", np.array([1], "m8[M]"), "the Y and M units only into Y and M"),
    ("m8[s]", np.array([1.5]), "it takes timedelta64 data"),
    ("m8[s]", np.array([1], "M8[s]"), "it takes timedelta64 data"),
    (
        "U3",
        np.array(["abcd"]),
        "value 'abcd' at array coordinate (0,) (index (0,) of the <U4 data) does not fit <U3 "
        "(at most 3 characters)",
    ),
    ("U3", "abcd", "does not fit <U3 (at most 3 characters)"),
    ("U3", np.array([b"\xff"]), "bytes are decoded as ASCII"),
    ("U3", np.array([1]), "it takes text"),
    (
        "S2",
        np.array([b"abc"]),
        "value b'abc' at array coordinate (0,) (index (0,) of the S3 data) does not fit S2 "
        "(at most 2 bytes)",
    ),
    ("S2", np.array(["ab"]), "encode text first"),
    ("S2", "ab", "encode text first"),
    ("S2", 3, "it takes bytes data"),
    ("V2", np.array([b"abc"], "V3"), "it takes raw bytes of 2 bytes"),
    ("V2", b"abc", "does not fit V2 (at most 2 bytes)"),
    ("V2", np.array(["ab"]), "it takes raw bytes"),
    ("uint8", np.array(["1"]), "only numbers (bool, integer, float, complex) are converted"),
    ("int64", np.array([1], "M8[s]"), "only numbers (bool, integer, float, complex) are converted"),
]


@pytest.mark.parametrize(("dtype", "value", "message"), REFUSED)
def test_values_that_would_change_are_refused_and_nothing_is_written(
    tmp_path, dtype, value, message
):
    a = sw.create(tmp_path / "a.zarr", shape=(2,), dtype=dtype, chunks=(1,))
    before = tree_digest(tmp_path)
    writes = [
        lambda: a.__setitem__(slice(0, 1), value),
        lambda: a.transaction().__enter__().__setitem__(slice(0, 1), value),
    ]
    for write in writes:
        with pytest.raises(sw.DTypeError) as err:
            write()
        assert message in str(err.value)
        assert str(err.value).endswith("nothing was written")
    assert tree_digest(tmp_path) == before


def test_a_refused_value_is_named_by_its_array_coordinate(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(4, 4), dtype="U2", chunks=(2, 2))
    data = np.full((2, 3), "ok", dtype="U4")
    data[1, 2] = "long"
    with pytest.raises(sw.DTypeError, match=r"value 'long' at array coordinate \(2, 3\)"):
        a[1:3, 1:4] = data


# --------------------------------------------------------------------------------------
# fill values and dtypes at creation
# --------------------------------------------------------------------------------------

FILLS = [
    ("M8[s]", None, -(2**63)),
    ("M8[s]", "NaT", -(2**63)),
    ("M8[s]", "2020-01-01", 1577836800),
    ("M8[s]", 5, 5),
    ("M8[D]", M8("2020-01-01"), 18262),
    ("M8[s]", np.datetime64("2020-01-01T00:00:00.000"), 1577836800),
    ("m8[ms]", np.timedelta64(2, "s"), 2000),
    ("m8[ms]", 7, 7),
    ("m8[ms]", datetime.timedelta(milliseconds=3), 3),
    ("U3", None, ""),
    ("U3", "é🎉", "é🎉"),
    ("S3", None, ""),
    ("S3", b"ab", "YWI="),
    ("V2", None, "AAA="),
    ("V2", b"\x01\x02", "AQI="),
    ("V2", np.void(b"\x01\x02"), "AQI="),
]


@pytest.mark.parametrize(("dtype", "fill", "stored"), FILLS)
def test_fill_values_are_written_as_zarr_python_writes_them(tmp_path, dtype, fill, stored):
    a = sw.create(tmp_path / "a.zarr", shape=(2,), dtype=dtype, chunks=(1,), fill_value=fill)
    assert a.metadata["fill_value"] == stored
    z = zarr.open_array(tmp_path / "a.zarr", mode="r")
    assert _bytes(z.fill_value, a.dtype) == _bytes(a.fill_value, a.dtype)
    zp = zarr.create_array(
        tmp_path / "z.zarr", shape=(2,), chunks=(1,), dtype=dtype, fill_value=fill
    )
    assert zp.metadata.to_dict()["fill_value"] == stored
    assert _bytes(zp.fill_value, a.dtype) == _bytes(a.fill_value, a.dtype)


def _bytes(value: Any, dtype: np.dtype) -> bytes:
    return np.asarray(value, dtype=dtype).tobytes()


@pytest.mark.parametrize(
    ("dtype", "fill", "message"),
    [
        ("M8[s]", "2020-01-01T00:00:00.5", "does not fit datetime64[s] exactly"),
        ("M8[s]", 1.5, "it takes datetime64 data"),
        ("U2", "abc", "at most 2 characters"),
        ("U2", 0, "it takes text"),
        ("S2", "ab", "encode text first"),
        ("V2", b"abc", "at most 2 bytes"),
        ("m8[s]", -(2**63), "-2**63 is NaT"),
    ],
)
def test_fill_values_that_would_change_are_refused(tmp_path, dtype, fill, message):
    with pytest.raises(sw.DTypeError, match="fill value") as err:
        sw.create(tmp_path / "a.zarr", shape=(2,), dtype=dtype, chunks=(1,), fill_value=fill)
    assert message in str(err.value)
    assert not (tmp_path / "a.zarr").exists()


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        (str, "data type str is variable-length"),
        ("str", "data type str is variable-length"),
        (object, "data type object is variable-length"),
        (np.dtypes.StringDType(), "is variable-length (numpy's StringDType)"),
        ("U", "has no length"),
        ("S", "has no length"),
        ([("a", "i4"), ("b", "f8")], "is structured"),
        (np.dtype(("i4", (2,))), "is structured"),
    ],
)
def test_variable_length_and_structured_dtypes_are_refused(tmp_path, dtype, message):
    for create in (sw.create, sw.create_array):
        kwargs = {"chunks": (1,)}
        with pytest.raises(sw.UnsupportedError) as err:
            create(tmp_path / "a.zarr", shape=(2,), dtype=dtype, **kwargs)
        assert message in str(err.value)
        assert "fixed" in str(err.value) or "structured" in message
    assert not (tmp_path / "a.zarr").exists()


@pytest.mark.parametrize("dtype", [str, VariableLengthBytes()])
def test_zarr_python_variable_length_arrays_are_refused_with_a_suggestion(tmp_path, dtype):
    zarr.create_array(tmp_path / "z.zarr", shape=(2,), chunks=(1,), dtype=dtype)
    with pytest.raises(sw.UnsupportedError) as err:
        sw.open(tmp_path / "z.zarr")
    text = str(err.value)
    assert "is variable-length (zarr-python's str or bytes)" in text
    assert "fixed_length_utf32 (numpy 'U<n>')" in text


def test_dtype_and_fill_value_read_back(tmp_path):
    cases: list[tuple[Any, Any]] = [
        ("M8[10s]", np.datetime64(30, "s")),
        ("m8[us]", np.timedelta64("NaT", "us")),
        ("U2", np.str_("é")),
        ("S2", np.bytes_(b"a")),
        ("V2", np.void(b"\x00\x01")),
    ]
    for n, (dtype, fill) in enumerate(cases):
        a = sw.create(tmp_path / f"{n}.zarr", shape=(2,), dtype=dtype, chunks=(1,), fill_value=fill)
        for seen in (a, sw.open(a.path)):
            assert seen.dtype == np.dtype(dtype)
            assert type(seen.fill_value) is type(fill)
            assert _bytes(seen.fill_value, seen.dtype) == _bytes(fill, seen.dtype)
