"""The Python API: what ``w[key] = value`` / ``tx[key] = value`` accept — numpy's
assignment rules (scalars, nested lists, anything with ``__array__``, broadcasting), with
casts limited to values the dtype holds exactly (``cast_oracle``). Random cases are
checked against numpy itself."""

from __future__ import annotations

import itertools
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shardwright as sw
from cast_oracle import refused
from conftest import assert_same
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from shardwright._values import coerce, is_element
from shardwright._writer import write_region

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "int32", "uint64", "int64"]
DTYPES += ["float32", "float64", "complex64"]
PYTHON_KINDS = ["bool", "int64", "float64", "complex128"]  # what .tolist() makes Python

# --------------------------------------------------------------------------------------
# Random assignments, against numpy
# --------------------------------------------------------------------------------------


@st.composite
def keys(draw: Any, shape: tuple[int, ...]) -> Any:
    """Valid basic-indexing write keys: integers, slices of step 1, maybe an Ellipsis
    standing for full axes, maybe fewer entries than axes, maybe not a tuple."""
    entries: list[Any] = []
    for n in shape:
        if draw(st.booleans()):
            entries.append(draw(st.integers(-n, n - 1)))
        elif draw(st.booleans()):
            entries.append(slice(None))
        else:
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            entries.append(slice(start, stop))
    if draw(st.booleans()):  # an Ellipsis for a run of full axes (maybe none)
        full = [i for i, e in enumerate(entries) if e == slice(None)]
        at = draw(st.sampled_from(full)) if full else draw(st.integers(0, len(entries)))
        end = at
        while end < len(entries) and entries[end] == slice(None):
            end += 1
        entries[at:end] = [Ellipsis]
    else:
        while entries and entries[-1] == slice(None) and draw(st.booleans()):
            entries.pop()  # numpy fills the missing axes
    if len(entries) == 1 and draw(st.booleans()):
        return entries[0]
    return tuple(entries)


@st.composite
def value_shapes(draw: Any, target: tuple[int, ...]) -> tuple[int, ...]:
    """Shapes that broadcast to ``target`` (most) or may not (some)."""
    how = draw(st.sampled_from(["same", "ones", "drop", "lead", "random"]))
    if how == "random":
        return tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    shape = list(target)
    if how == "ones":
        shape = [1 if draw(st.booleans()) else n for n in shape]
    elif how == "drop":
        shape = shape[draw(st.integers(0, len(shape))) :]
    elif how == "lead":
        shape = [1] * draw(st.integers(1, 2)) + shape
    return tuple(shape)


def _elements(dtype: str, wide: bool) -> st.SearchStrategy[Any]:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return st.booleans()
    if kind == "u":
        return st.integers(0, 100)
    if kind == "c":
        return st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False)
    if kind == "f" and wide:
        return st.floats(-1e3, 1e3, width=32) | st.just(float("nan"))
    return st.integers(-300, 300) if wide else st.integers(-100, 100)


@st.composite
def values(draw: Any, target: tuple[int, ...]) -> Any:
    kind = draw(st.sampled_from(["python", "numpy_scalar", "array", "list", "tuple", "mixed"]))
    if kind == "python":
        return draw(
            st.booleans()
            | st.integers(-300, 300)
            | st.floats(-1e3, 1e3)
            | st.complex_numbers(max_magnitude=10, allow_nan=False)
        )
    if kind == "numpy_scalar":
        return np.dtype(draw(st.sampled_from(DTYPES))).type(draw(st.integers(0, 120)))
    shape = draw(value_shapes(target))
    if kind == "array":
        dtype = draw(st.sampled_from(DTYPES))
        array = draw(hnp.arrays(dtype, shape, elements=_elements(dtype, wide=False)))
        if array.ndim and draw(st.booleans()):
            array = array[..., ::-1]  # not contiguous
        return array
    dtype = draw(st.sampled_from(PYTHON_KINDS))
    array = draw(hnp.arrays(dtype, shape, elements=_elements(dtype, wide=True)))
    listed = array.tolist()
    if kind == "mixed" and isinstance(listed, list) and array.size:
        # A numpy scalar among the Python numbers: numpy decides the dtype of the list.
        inner = listed
        while isinstance(inner[0], list):
            inner = inner[0]
        inner[0] = np.dtype(draw(st.sampled_from(DTYPES))).type(1)
    if kind == "tuple":
        return _tuples(listed)
    return listed


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@st.composite
def cases(draw: Any) -> tuple[Any, ...]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    key = draw(keys(shape))
    target = np.zeros(shape)[key].shape
    value = draw(values(target))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    via = draw(st.sampled_from(["writer", "transaction"]))
    if via == "writer":  # one shard holding the whole array
        shards = tuple(-(-n // c) * c for n, c in zip(shape, chunks))
    else:
        shards = tuple(c * draw(st.integers(1, 2)) for c in chunks)
    return shape, dtype, chunks, shards, key, value, via


_COUNTER = itertools.count()
_ROOT = Path(tempfile.mkdtemp(prefix="sw-values-"))


@given(cases())
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_assignment_follows_numpy(case):
    shape, dtype, chunks, shards, key, value, via = case
    expected = np.zeros(shape, dtype)
    numpy_error = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected[key] = value
    except (TypeError, ValueError, OverflowError) as err:
        numpy_error = err
    a = sw.create(
        _ROOT / f"{next(_COUNTER)}.zarr", shape=shape, dtype=dtype, chunks=chunks, shards=shards
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # overflowing float casts
            if via == "writer":
                with a.write_shard((0,) * len(shape)) as w:
                    w[key] = value
            else:
                with a.transaction() as tx:
                    tx[key] = value
    except sw.ShardwrightError as err:
        event(f"refused ({type(err).__name__}, numpy {'refused' if numpy_error else 'wrote'})")
        if numpy_error is None and isinstance(err, sw.ShapeError):
            # numpy's one quirk: a sequence for one element of a bool array is stored as
            # its truth (bool([False]) is True); refused here, as for every other dtype.
            element = is_element(key, np.zeros(shape)[key].shape)
            assert dtype.kind == "b" and element and np.ndim(value) > 0, err
        elif numpy_error is None:
            # Otherwise stricter than numpy only in the values it refuses.
            assert isinstance(err, sw.DTypeError), (err, value)
            assert refused(value, dtype), (err, value)
        assert (a[...] == 0).all()  # nothing stored
        return
    assert not refused(value, dtype), f"shardwright wrote {value!r}, which does not fit"
    if numpy_error is not None and any(isinstance(v, complex) for v in _leaves(value)):
        # numpy refuses a Python complex for a real array, and (numpy 2.4) a list of them
        # for an integer one ([0j] into uint8: int() of a complex); the real part is
        # written here when every imaginary part is 0 (arrays of complex: numpy drops
        # it too).
        expected[key] = np.asarray(value).real
        numpy_error = None
    assert numpy_error is None, f"numpy raised {numpy_error!r}; shardwright wrote {value!r}"
    event(f"written ({type(value).__name__})")
    assert_same(a[...], expected)


# --------------------------------------------------------------------------------------
# Lists
# --------------------------------------------------------------------------------------


@pytest.fixture
def a8(tmp_path):
    return sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="uint8", chunks=(4, 4), shards=(8, 8))


def test_lists_of_python_ints_write_into_unsigned_arrays(a8):
    # Python ints are taken as int64 data; every value fits uint8, so the list is written.
    with a8.transaction() as tx:
        tx[0, :] = [0, 1, 2, 3, 4, 5, 6, 255]
        tx[1:3, 0:2] = [[1, 2], [3, 4]]
        tx[3, 0:3] = (7, 8, 9)
        tx[4, 0:2] = [True, False]
    assert a8[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 255]
    assert a8[1:3, 0:2].tolist() == [[1, 2], [3, 4]]
    assert a8[3, 0:3].tolist() == [7, 8, 9] and a8[4, 0:2].tolist() == [1, 0]


@pytest.mark.parametrize("value", [[300], [1, -1], [[2**70]], [2**64]])
def test_python_ints_that_do_not_fit_are_refused_not_wrapped(a8, value):
    with a8.write_shard((0, 0)) as w:
        with pytest.raises(sw.DTypeError, match=r"does not fit uint8 \(0\.\.255\)"):
            w[0:1, 0 : len(value)] = value
        assert w.stats["chunks_written"] == 0


@pytest.mark.parametrize(
    ("dtype", "value"),
    [("uint8", [1.5]), ("int32", [1, 2.5]), ("float32", [1j]), ("bool", [1, 2])],
)
def test_lists_whose_values_do_not_fit_are_refused_naming_the_dtype(tmp_path, dtype, value):
    a = sw.create(tmp_path / "k.zarr", shape=(4,), dtype=dtype, chunks=(2,))
    with a.transaction() as tx, pytest.raises(sw.DTypeError, match=dtype):
        tx[0 : len(value)] = value


def test_lists_of_numpy_scalars_cast_from_their_dtype(tmp_path):
    a = sw.create(tmp_path / "f.zarr", shape=(4,), dtype="float32", chunks=(2,))
    with a.transaction() as tx:
        tx[0:2] = [np.float64(0.5), np.float32(1.5)]
        with pytest.raises(sw.DTypeError, match="imaginary part"):
            tx[2:4] = [np.complex128(1j), 2]
    assert a[...].tolist() == [0.5, 1.5, 0, 0]


def test_ragged_or_too_deep_lists_are_shape_errors(a8):
    with a8.write_shard((0, 0)) as w:
        with pytest.raises(sw.ShapeError, match="not rectangular"):
            w[0:2, 0:2] = [[1, 2], [3]]
        with pytest.raises(sw.ShapeError, match=r"\(1, 2\)"):
            w[0, 0:2] = [[1, 2]]  # numpy refuses lists deeper than the region
        with pytest.raises(sw.ShapeError, match="one element"):
            w[0, 0] = [1]  # numpy takes a scalar only for an element
        w[0, 0, ...] = np.array([[5]], dtype="uint8")  # but an array of ones, as numpy does
    assert int(a8[0, 0]) == 5


# --------------------------------------------------------------------------------------
# Broadcasting
# --------------------------------------------------------------------------------------


def test_a_row_broadcasts_to_the_region_in_all_three_writers(tmp_path):
    a = sw.create(tmp_path / "b.zarr", shape=(8, 8), dtype="int16", chunks=(4, 4))
    row = np.arange(8, dtype="int16")
    with a.write_shard((0, 0)) as w:
        w[0:4, 0:4] = row[:4]
    with a.transaction() as tx:
        tx[4:8, :] = row[::-1]
        tx[0:4, 4:8] = np.array([[1], [2], [3], [4]], dtype="int16")
    expected = np.zeros((8, 8), "int16")
    expected[0:4, 0:4] = row[:4]
    expected[4:8, :] = row[::-1]
    expected[0:4, 4:8] = [[1], [2], [3], [4]]
    assert_same(a[...], expected)
    a.map_chunks(lambda c: np.arange(c.shape[1], dtype="int16"))  # one row per chunk
    assert_same(a[...], np.tile(np.tile(np.arange(4, dtype="int16"), 2), (8, 1)))


@pytest.mark.parametrize(
    ("shape", "region"),
    [((3,), (2, 2)), ((2, 2), (2, 3)), ((16,), (4, 4)), ((2, 1, 4), (4,)), ((0,), (4,))],
)
def test_shapes_that_do_not_broadcast_name_both(a8, shape, region):
    key = tuple(slice(0, n) for n in region) + (0,) * (2 - len(region))
    with a8.write_shard((0, 0)) as w, pytest.raises(sw.ShapeError) as info:
        w[key] = np.zeros(shape, dtype="uint8")
    assert str(info.value) == (
        f"data of shape {shape} does not broadcast to the region's shape {region}"
    )


class _Recorder:
    """An engine writer standing in for the real one, keeping what it was handed."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.arrays, self.values = engine, [], []

    def write(self, origin: Any, shape: Any, data: np.ndarray) -> None:
        self.arrays.append(data)
        self.engine.write(origin, shape, data)

    def write_value(self, origin: Any, shape: Any, value: bytes) -> None:
        self.values.append(value)
        self.engine.write_value(origin, shape, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


def test_a_broadcast_value_is_handed_over_as_a_view_not_expanded(a8):
    row = np.arange(8, dtype="uint8")
    with a8.write_shard((0, 0)) as w:
        w._core = recorder = _Recorder(w._core)
        w[0:4, 0:8] = row
        w[4:6, 0:8] = row[None, :]
    assert len(recorder.arrays) == 2
    for handed in recorder.arrays:
        assert np.shares_memory(handed, row) and 0 in handed.strides
    assert recorder.arrays[0].shape == (4, 8) and recorder.arrays[1].shape == (2, 8)
    assert (a8[0:6] == row).all()


def test_the_region_shape_is_given_to_a_broadcast_without_a_copy():
    # w[2:4, 5, 0:8] on a 3-d array: numpy's shape (2, 8), the region's (2, 1, 8).
    row = np.arange(8, dtype="uint8")
    recorder = _Recorder(None)
    recorder.engine = type("Engine", (), {"write": lambda *args: None})()
    region = sw.Domain((2, 5, 0), (2, 1, 8))
    write_region(recorder, region, coerce(row, np.dtype("uint8"), (2, 8)))
    (handed,) = recorder.arrays
    assert handed.shape == (2, 1, 8) and np.shares_memory(handed, row)
    assert handed.strides[0] == 0


def test_one_element_values_are_written_as_scalars(a8):
    with a8.transaction() as tx:
        tx._core = recorder = _Recorder(tx._core)
        tx[0:8, 0:8] = np.array([[7]], dtype="uint8")
        tx[1, :] = [9]
        tx[2:2, :] = [3]  # an empty region: (1,) broadcasts to (0, 8)
    assert recorder.arrays == [] and recorder.values == [b"\x07", b"\x09", b"\x03"]
    assert int(a8[0, 0]) == 7 and (a8[1] == 9).all()


def test_coerce_drops_leading_unit_axes_of_arrays_as_numpy_does():
    out = coerce(np.ones((1, 1, 3), "uint8"), np.dtype("uint8"), (3,))
    assert out.shape == (3,)
    with pytest.raises(sw.ShapeError):
        coerce(np.ones((2, 3), "uint8"), np.dtype("uint8"), (3,))


# --------------------------------------------------------------------------------------
# Objects with __array__
# --------------------------------------------------------------------------------------


class _Lazy:
    """Anything numpy converts through ``__array__`` (a dask array, a TensorStore view)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.calls = data, 0

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self.calls += 1
        return self.data if dtype is None else self.data.astype(dtype)


def test_objects_with_array_write_cast_and_broadcast(a8):
    block, row, one = (
        _Lazy(np.full((4, 4), 3, "uint8")),
        _Lazy(np.arange(8, dtype="uint16")),
        _Lazy(np.array(5, "uint8")),
    )
    with a8.write_shard((0, 0)) as w:
        w[0:4, 0:4] = block
        w[4:8, :] = row  # uint16 values that fit uint8, broadcast to 4 rows
        with pytest.raises(sw.DTypeError, match="float64"):
            w[4:8, :] = _Lazy(np.full(8, 0.5))
    assert block.calls == 1 and row.calls == 1
    assert (a8[4:8] == np.arange(8)).all()
    with a8.transaction() as tx:
        tx[4:8, :] = _Lazy(np.arange(8, 16, dtype="uint8"))
        tx[0, 0] = one  # 0-d: a scalar
    assert (a8[1:4, 0:4] == 3).all() and (a8[4:8] == np.arange(8, 16)).all()
    assert int(a8[0, 0]) == 5
