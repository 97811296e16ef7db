"""Issue 22, item 8: every write casts by one rule (``shardwright._values.fit``): data of
any numeric dtype is accepted when the array's dtype holds each value exactly, and
otherwise refused with a DTypeError naming the first value that does not fit, before
anything is stored. Under numpy's ``same_kind``, uint32 70000 was stored into uint16 as
4464 and int64 data whose values all fit was refused.

Each write path is checked both ways (the values fit: stored exactly; one does not: the
error names it and the store is byte-for-byte unchanged), and the rule itself against an
exact, value-by-value statement of it (``cast_oracle``) on random dtypes and values."""

from __future__ import annotations

import asyncio
import itertools
import math
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pytest
import shardwright as sw
import shardwright.dask as swd
from cast_oracle import fits, leaves
from conftest import assert_same, tree_digest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# --------------------------------------------------------------------------------------
# every write path, with int64 data that fits uint16 and with one value that does not
# --------------------------------------------------------------------------------------

GOOD = (np.arange(64, dtype="int64").reshape(8, 8) * 1000) % 65536
GOOD[7, 7] = 65535  # the largest uint16
BAD = GOOD.copy()
BAD[3, 5] = 70000  # uint16 would wrap it to 4464


def _array(tmp_path: Path) -> sw.Array:
    """An (8, 8) uint16 array of one shard, stored with 1s (so a write would show)."""
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    a[...] = np.ones((8, 8), "uint16")
    return a


def _writer(a: sw.Array, data: np.ndarray) -> None:
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = data[c.slices]


def _transaction(a: sw.Array, data: np.ndarray) -> None:
    with a.transaction() as tx:
        tx[...] = data


def _assignment(a: sw.Array, data: np.ndarray) -> None:
    a[...] = data


def _fancy(a: sw.Array, data: np.ndarray) -> None:
    a[np.arange(8)[::-1], :] = data[::-1]  # an integer array: zarr-python's orthogonal write


def _points(a: sw.Array, data: np.ndarray) -> None:
    a.vindex[np.nonzero(np.ones((8, 8), bool))] = data.reshape(-1)


def _blocks(a: sw.Array, data: np.ndarray) -> None:
    a.blocks[0:2, 0:2] = data


def _write_async(a: sw.Array, data: np.ndarray) -> None:
    async def main() -> None:
        async with a.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                await w.write_async(c, data[c.slices])

    asyncio.run(main())


def _map_chunks(a: sw.Array, data: np.ndarray) -> None:
    a.map_chunks(lambda c: data[c.slices])  # fn returns int64 for a uint16 array


def _map_chunks_threads(a: sw.Array, data: np.ndarray) -> None:
    a.map_chunks(lambda c: data[c.slices], threads=2)


def _dask_to_zarr(a: sw.Array, data: np.ndarray) -> None:
    swd.to_zarr(da.from_array(data, chunks=(3, 3)), a, scheduler="sync")  # int64 blocks


def _dask_map_chunks(a: sw.Array, data: np.ndarray) -> None:
    swd.map_chunks(lambda c: data[c.slices], a, scheduler="sync")


PATHS: dict[str, Callable[[sw.Array, np.ndarray], None]] = {
    "writer": _writer,
    "transaction": _transaction,
    "assignment": _assignment,
    "fancy": _fancy,
    "vindex": _points,
    "blocks": _blocks,
    "write_async": _write_async,
    "map_chunks": _map_chunks,
    "map_chunks_threads": _map_chunks_threads,
    "dask_to_zarr": _dask_to_zarr,
    "dask_map_chunks": _dask_map_chunks,
}
NO_COORDINATE = {"fancy", "vindex"}  # the value's index there is in the data only


@pytest.mark.parametrize("path", PATHS)
def test_wider_data_whose_values_fit_is_stored_exactly(tmp_path, path):
    a = _array(tmp_path)
    PATHS[path](a, GOOD)
    assert_same(a[...], GOOD.astype("uint16"))


@pytest.mark.parametrize("path", PATHS)
def test_a_value_that_does_not_fit_is_named_and_nothing_is_stored(tmp_path, path):
    a = _array(tmp_path)
    before = tree_digest(tmp_path / "a.zarr")
    with pytest.raises(sw.DTypeError) as info:
        PATHS[path](a, BAD)
    message = str(info.value)
    assert "value 70000 " in message and "does not fit uint16 (0..65535)" in message
    if path not in NO_COORDINATE:
        assert "at array coordinate (3, 5)" in message, message
    assert tree_digest(tmp_path / "a.zarr") == before
    assert (a[...] == 1).all()


def test_the_issue_example_uint32_70000_is_refused_not_wrapped(tmp_path):
    a = _array(tmp_path)
    with a.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        data = np.zeros(c.shape, "uint32")
        data[3, 1] = 70000
        with pytest.raises(sw.DTypeError) as info:
            w[c] = data
        assert str(info.value) == (
            "value 70000 at array coordinate (3, 1) (index (3, 1) of the uint32 data) does "
            "not fit uint16 (0..65535); nothing was written"
        )
        w[c] = data.clip(0, 65535)  # the writer is still usable
    assert int(a[3, 1]) == 65535 and int(a[0, 0]) == 0


def test_a_transaction_stays_usable_after_a_refused_value(tmp_path):
    a = _array(tmp_path)
    with a.transaction() as tx:
        with pytest.raises(sw.DTypeError, match=r"value 2\.5 at array coordinate \(0, 1\)"):
            tx[0, :] = np.array([1.0, 2.5, 3.0, 4, 5, 6, 7, 8])
        tx[1, :] = np.arange(8, dtype="float64")  # integral floats fit
    assert a[0].tolist() == [1] * 8 and a[1].tolist() == list(range(8))


@pytest.mark.parametrize(
    ("dtype", "value", "stored"),
    [
        ("uint16", 5, 5),
        ("int16", 3.0, 3),
        ("uint8", np.int64(255), 255),
        ("float32", 16777216, 16777216.0),
        ("float32", 0.1, np.float32(0.1)),  # floats into a narrower float are rounded
        ("float64", 2**70, 2.0**70),  # a Python int beyond 64 bits that float64 holds
        ("bool", 1.0, True),
        ("float32", 1 + 0j, 1.0),
    ],
)
def test_scalars_that_fit_are_written(tmp_path, dtype, value, stored):
    a = sw.create(tmp_path / "s.zarr", shape=(3,), dtype=dtype, chunks=(3,))
    a[...] = value
    assert_same(a[...], np.full(3, stored, dtype))


@pytest.mark.parametrize(
    ("dtype", "value", "said"),
    [
        ("uint16", 70000, "value 70000 does not fit uint16 (0..65535)"),
        ("uint8", -1, "value -1 does not fit uint8 (0..255)"),
        ("int16", 3.5, "value 3.5 does not fit int16 (integers -32768..32767)"),
        ("int32", math.nan, "value nan does not fit int32"),
        ("uint16", np.uint32(70000), "value 70000 (a uint32 scalar) does not fit uint16"),
        ("uint64", 2**64, "value 18446744073709551616 does not fit uint64"),
        ("float32", 16777217, "value 16777217 does not fit float32 exactly"),
        ("float32", 1e39, "value 1e+39 does not fit float32 (its largest finite value is"),
        ("bool", 2, "value 2 does not fit bool (0 or 1)"),
        ("float64", 1j, "value 1j does not fit float64 (a real dtype: the imaginary part"),
        ("uint16", [1, 70000], "value 70000 at array coordinate (1,) (index (1,) of the list)"),
        ("int8", [0.5, 1], "value 0.5 at array coordinate (0,) (index (0,) of the list)"),
    ],
)
def test_scalars_and_lists_that_do_not_fit_are_refused(tmp_path, dtype, value, said):
    a = sw.create(tmp_path / "s.zarr", shape=(2,), dtype=dtype, chunks=(2,))
    before = tree_digest(tmp_path / "s.zarr")
    with pytest.raises(sw.DTypeError) as info:
        a[...] = value
    assert said in str(info.value) and str(info.value).endswith("; nothing was written")
    assert tree_digest(tmp_path / "s.zarr") == before


# --------------------------------------------------------------------------------------
# sources of sw.pyramid, sw.copy and shardwright.dask whose blocks are wider than they say
# --------------------------------------------------------------------------------------


class WideSource:
    """A sliceable source whose ``.dtype`` says uint16 but whose slices are int64 (as a
    lazy reader may give them)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.shape, self.dtype = data, data.shape, np.dtype("uint16")

    def __getitem__(self, key: Any) -> np.ndarray:
        return self.data[key].astype("int64")


def _no_chunk_data(root: Path) -> bool:
    return all(name.endswith("zarr.json") for name in tree_digest(root))


@pytest.mark.parametrize("build", ["pyramid", "copy"])
def test_a_source_whose_blocks_are_wider_than_its_dtype(tmp_path, build):
    def run(data: np.ndarray, dest: Path) -> sw.Array:
        if build == "pyramid":
            return sw.pyramid(WideSource(data), dest, factors=(2, 2), levels=2)[0]
        return sw.copy(WideSource(data), dest, chunks=(4, 4))

    a = run(GOOD, tmp_path / "good.zarr")
    assert_same(a[...], GOOD.astype("uint16"))
    with pytest.raises(sw.DTypeError) as info:
        run(BAD, tmp_path / "bad.zarr")
    message = str(info.value)
    assert message.startswith("value 70000 at array coordinate (3, 5) (index (")
    assert "of the int64 block the source gave for [0:" in message
    assert "does not fit uint16 (0..65535); the source's .dtype says uint16" in message
    assert _no_chunk_data(tmp_path / "bad.zarr")


def _mislabelled(data: np.ndarray) -> da.Array:
    """A dask array that says uint16 and computes int64 blocks."""
    return da.from_array(data, chunks=(4, 4)).map_blocks(
        lambda b: b.astype("int64"), dtype="uint16"
    )


def test_dask_blocks_are_checked_by_value_whatever_the_dask_dtype_says(tmp_path):
    levels = swd.pyramid(_mislabelled(GOOD), tmp_path / "p.zarr", factors=(2, 2), levels=2)
    assert_same(levels[0][...], GOOD.astype("uint16"))
    with pytest.raises(sw.DTypeError, match=r"value 70000 at array coordinate \(3, 5\)"):
        swd.pyramid(
            _mislabelled(BAD), tmp_path / "q.zarr", factors=(2, 2), levels=2, scheduler="sync"
        )
    assert _no_chunk_data(tmp_path / "q.zarr")
    a = _array(tmp_path)
    before = tree_digest(tmp_path / "a.zarr")
    with pytest.raises(sw.DTypeError, match=r"a dask block for \[0:4, 4:8\] \(shard \(0, 0\)"):
        swd.to_zarr(_mislabelled(BAD), a, scheduler="sync")
    assert tree_digest(tmp_path / "a.zarr") == before


def test_a_dask_array_of_text_is_refused_before_any_block_is_computed(tmp_path):
    computed = []

    def block(b: np.ndarray) -> np.ndarray:
        computed.append(b.shape)
        return b

    text = da.from_array(np.full((8, 8), "x"), chunks=4)
    text = text.map_blocks(block, dtype=text.dtype, meta=np.array((), dtype=text.dtype))
    with pytest.raises(sw.DTypeError, match="only numbers"):
        swd.to_zarr(text, _array(tmp_path))
    assert computed == []


# --------------------------------------------------------------------------------------
# the rule against its value-by-value statement, on random dtypes and values
# --------------------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
DTYPES += ["float16", "float32", "float64", "complex64", "complex128"]
EDGES: list[Any] = [0, 1, -1, 0.5, -2.5, 2.0, 127, 128, -128, -129, 255, 256, 32767, 32768]
EDGES += [-32768, -32769, 65504, 65505, 65519, 65520, 65535, 65536, 2048, 2049]
EDGES += [2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32, 2**24 + 1, 2**53]
EDGES += [2**53 + 1, 2**63 - 1, 2**63, -(2**63), 2**64 - 1, 2.0**63, 2.0**64, -(2.0**63)]
EDGES += [3.4028234e38, 3.4028236e38, 3.5e38, 1e39, 1e300, 1e-50, -0.0]
EDGES += [math.nan, math.inf, -math.inf, 1j, 1 + 0j, 2.5 + 0j, complex(1e39, 0)]


def _held(value: Any, dtype: np.dtype) -> list[Any]:
    """``value`` as a ``dtype`` scalar when ``dtype`` holds it exactly (else nothing)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = np.asarray([value]).astype(dtype)[0]
    except (OverflowError, TypeError, ValueError):
        return []
    back = made.item()
    same = back == value or (isinstance(back, float | complex) and back != back)
    return [made] if same and (dtype.kind == "c" or not isinstance(value, complex)) else []


def _elements(dtype: np.dtype) -> st.SearchStrategy[Any]:
    edges = [m for v in EDGES for m in _held(v, dtype)]
    return hnp.from_dtype(dtype) | st.sampled_from(edges)


_ROOT = Path(tempfile.mkdtemp(prefix="sw-casts-"))
_COUNTER = itertools.count()


def _expected(values: Any, dtype: np.dtype) -> np.ndarray:
    """What numpy's ``astype`` makes of ``values`` (complex: of their real parts)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = np.asarray(values)
        if array.dtype.kind == "c" and dtype.kind != "c":
            array = array.real
        return array.astype(dtype)


@given(st.data(), st.sampled_from(DTYPES), st.sampled_from(DTYPES))
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_accepted_iff_every_value_fits_and_then_stored_as_numpy_casts(data, source, target):
    source, target = np.dtype(source), np.dtype(target)
    values = data.draw(hnp.arrays(source, st.integers(1, 6), elements=_elements(source)))
    if data.draw(st.booleans()):
        values = values[::-1]  # not contiguous
    a = sw.create(_ROOT / f"{next(_COUNTER)}.zarr", shape=values.shape, dtype=target, chunks=(4,))
    accepted = all(fits(v, target) for v in leaves(values))
    event(f"{'accepted' if accepted else 'refused'}: {source.kind} -> {target.kind}")
    try:
        a[...] = values
    except sw.DTypeError as err:
        assert not accepted, (values, err)
        assert (a[...] == 0).all()
        return
    assert accepted, f"{values!r} written into {target}"
    assert_same(a[...], _expected(values, target))


PYTHON_VALUES = (
    st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.integers(-300, 70000)
    | st.floats()
    | st.complex_numbers(max_magnitude=1e40)
    | st.sampled_from(EDGES)
)


@given(PYTHON_VALUES, st.sampled_from(DTYPES), st.booleans())
@settings(max_examples=400, deadline=None)
def test_python_numbers_alone_or_in_lists_follow_the_rule(value, target, listed):
    target = np.dtype(target)
    a = sw.create(_ROOT / f"{next(_COUNTER)}.zarr", shape=(2,), dtype=target, chunks=(2,))
    given_value = [value, value] if listed else value
    accepted = all(fits(v, target) for v in leaves(given_value))
    try:
        a[...] = given_value
    except sw.DTypeError as err:
        assert not accepted, (value, err)
        return
    assert accepted, f"{value!r} written into {target}"
    exact = value
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        # beyond int64 and uint64 numpy holds it as object, and it is written as a float
        # (fits() said the float holds it exactly); 2**63..2**64-1 is a uint64, exact
        exact = float(value)
    assert_same(a[...], _expected([exact, exact], target))
