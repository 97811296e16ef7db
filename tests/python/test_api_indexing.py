"""Reading with zarr-python's and numpy's indexing: a[key], a.oindex[key], a.vindex[key]
against zarr-python 3 (and numpy where zarr-python agrees with it, or refuses: None and
negative steps), and the reads that sparse selections make.

Each check runs twice: through the functions of shardwright._selection ("direct") and
through the Array's own ``a[key]``, ``a.oindex``, ``a.vindex`` ("wired")."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardwright._selectors import OIndex, VIndex, read_key
from zarr.core.indexing import is_pure_fancy_indexing, is_pure_orthogonal_indexing

WAYS = pytest.mark.parametrize("wired", [False, True], ids=["direct", "wired"])
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def sw_read(a, key, how: str, wired: bool):
    """shardwright's result for ``key`` read as ``how`` ("get", "o", "v")."""
    if how == "get":
        return a[key] if wired else read_key(a, key)
    if how == "o":
        return a.oindex[key] if wired else OIndex(a)[key]
    return a.vindex[key] if wired else VIndex(a)[key]


def zarr_read(z, key, how: str):
    key = wrap_negative_indices(key, z.shape)
    if how == "get":
        return z[key]
    return z.oindex[key] if how == "o" else z.vindex[key]


def wrap_negative_indices(key, shape):
    """``key`` with negative entries of integer arrays and lists made positive (the same
    elements): zarr-python 3.4 wraps them as numpy does; 3.1.6 (on CPython 3.11) refuses
    them, which is its old limit, not the answer to compare with. Arrays are copied:
    3.1.6 changes them in place."""
    items = key if isinstance(key, tuple) else (key,)
    plain = [k for k in items if k is not None]
    explicit = sum(1 for k in plain if k is not Ellipsis)
    out, axis = [], 0
    for k in items:
        if k is None:
            out.append(k)
            continue
        if k is Ellipsis:
            out.append(k)
            axis += len(shape) - explicit
            continue
        values = np.asarray(k) if isinstance(k, list | np.ndarray) else None
        if (
            values is not None
            and values.dtype.kind in "iu"
            and axis < len(shape)
            and values.size
            and (values < 0).any()
            and ((values >= -shape[axis]) & (values < shape[axis])).all()
        ):
            k = np.where(values < 0, values + shape[axis], values)
        elif isinstance(k, np.ndarray):
            # zarr-python 3.1.6 wraps negative indices in place, then raises; and it
            # computes chunk offsets in an unsigned index array's own dtype (uint8 indices
            # overflow): give it a copy, unsigned ones as intp (the same selection)
            k = k.astype(np.intp) if k.dtype.kind == "u" else k.copy()
        out.append(k)
        axis += 1
    return tuple(out) if isinstance(key, tuple) else out[0]


def make_pair(tmp, shape, dtype, chunks, shards, seed=0):
    """The same data in a shardwright array and a zarr-python array, and as numpy."""
    data = reference(shape, dtype, seed=seed)
    a = sw.create(f"{tmp}/a.zarr", shape=shape, dtype=dtype, chunks=chunks, shards=shards)
    with a.transaction() as tx:
        tx[...] = data
    z = zarr.create_array({}, shape=shape, dtype=dtype, chunks=chunks)
    z[...] = data
    return a, z, data


def assert_same_result(got, expected):
    # one element: a numpy scalar (as numpy gives) where zarr-python gives a 0-d array
    assert isinstance(got, np.ndarray) or (isinstance(got, np.generic) and got.shape == ()), type(
        got
    )
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    assert got.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------------------
# The oracle: zarr-python, and numpy where zarr-python refuses None or negative steps
# --------------------------------------------------------------------------------------

RAISES = object()


def expand(items, ndim):
    """Test-side: one entry per axis (None dropped, Ellipsis expanded); None if invalid."""
    items = tuple(k for k in items if k is not None)
    at = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(at) > 1 or len(items) - len(at) > ndim:
        return None
    if at:
        items = items[: at[0]] + (slice(None),) * (ndim - len(items) + 1) + items[at[0] + 1 :]
    return items + (slice(None),) * (ndim - len(items))


def is_int(k):
    return isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_)


def numpy_oindex(data, items):
    """Orthogonal indexing in plain numpy (np.ix_), ints dropped, None a new axis."""
    per_axis = expand(items, data.ndim)
    lists = []
    for k, n in zip(per_axis, data.shape):
        if is_int(k):
            lists.append([k % n])
        elif isinstance(k, slice):
            lists.append(list(range(*k.indices(n))))
        else:
            k = np.asarray(k)
            lists.append(np.flatnonzero(k) if k.dtype == bool else k)
    result = data[np.ix_(*lists)]
    shape, axis = [], 0
    explicit = sum(1 for k in items if k is not None and k is not Ellipsis)
    for k in items:
        if k is None:
            shape.append(1)
            continue
        take = max(data.ndim - explicit, 0) if k is Ellipsis else 1
        for _ in range(take):
            if not is_int(per_axis[axis]):
                shape.append(result.shape[axis])
            axis += 1
    shape += [result.shape[i] for i in range(axis, data.ndim) if not is_int(per_axis[i])]
    return result.reshape(shape)


def spell_out_ellipsis(items, ndim):
    """``items`` with a single Ellipsis replaced by the slices it stands for."""
    at = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(at) != 1 or len(items) - 1 > ndim:
        return items
    return items[: at[0]] + (slice(None),) * (ndim - len(items) + 1) + items[at[0] + 1 :]


def positive_twin(items, shape):
    """``items`` (no None) with each negative-step slice replaced by the one selecting
    the same elements in increasing order; the set of axes whose slice was reversed."""
    per_axis = expand(items, len(shape))
    if per_axis is None or not any(isinstance(k, slice) and (k.step or 1) < 0 for k in items):
        return items
    out, axis = [], 0
    explicit = sum(1 for k in items if k is not Ellipsis)
    for k in items:
        if k is Ellipsis:
            out.append(k)
            axis += len(shape) - explicit
            continue
        if isinstance(k, slice) and (k.step or 1) < 0:
            r = range(*k.indices(shape[axis]))
            k = slice(r[-1], r[0] + 1, -r.step) if len(r) else slice(0, 0)
        out.append(k)
        axis += 1
    return tuple(out)


def expected_for(z, data, key, how):
    """zarr-python's result for ``key`` (RAISES if it raises); for keys with None or a
    negative step, which zarr-python refuses, numpy's (or orthogonal numpy's)."""
    items = key if isinstance(key, tuple) else (key,)
    stripped = tuple(k for k in items if k is not None)
    has_none = len(stripped) < len(items)
    has_negative = any(isinstance(k, slice) and (k.step or 1) < 0 for k in stripped)
    if how == "o":  # zarr-python's oindex compares arrays to Ellipsis (a bug): spell it out
        stripped = spell_out_ellipsis(stripped, data.ndim)
    if not has_none and not has_negative:
        zkey = stripped if isinstance(key, tuple) else key
        try:
            return zarr_read(z, zkey, how)
        except Exception:
            return RAISES
    twin = positive_twin(stripped, data.shape)
    zkey = twin if isinstance(key, tuple) or has_none else twin[0]
    try:
        zres = zarr_read(z, zkey, how)
    except Exception:
        return RAISES
    popped = zkey[0] if isinstance(zkey, tuple) and len(zkey) == 1 else zkey
    if how == "v" or (how == "get" and is_pure_fancy_indexing(popped, data.ndim)):
        if np.shape(zres) != np.shape(data[stripped]):  # zarr's (1,) for 0-d coordinates
            where = [i for i, k in enumerate(items) if k is not None]
            parted = any(items[i] is None for i in range(where[0], where[-1] + 1))
            n_none = len(items) - len(where)
            before = 0 if parted else where[0]
            return np.asarray(zres).reshape(
                (1,) * before + np.shape(zres) + (1,) * (n_none - before)
            )
        return data[key]
    if how == "get" and not is_pure_orthogonal_indexing(popped, data.ndim):
        return data[key]  # basic indexing: numpy's, None and negative steps included
    return numpy_oindex(data, items)


def check(a, z, data, key, how, wired):
    expected = expected_for(z, data, key, how)
    if expected is RAISES:
        with pytest.raises((IndexError, ValueError, TypeError)):
            sw_read(a, key, how, wired)
    else:
        assert_same_result(sw_read(a, key, how, wired), expected)


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

DTYPES = ["uint8", "int16", "float32", "bool"]


@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks) if draw(st.booleans()) else None
    return shape, draw(st.sampled_from(DTYPES)), chunks, shards, draw(st.integers(0, 999))


def ints(n, oob=True):
    inside = st.integers(-n, n - 1)
    return st.one_of(inside, inside, inside, st.integers(-n - 2, n + 1)) if oob else inside


def int_lists(n, min_size=0):
    return st.lists(ints(n), min_size=min_size, max_size=5)


@st.composite
def int_arrays(draw, n, min_size=0):
    values = draw(int_lists(n, min_size))
    if values and min(values) >= 0 and draw(st.booleans()):
        return np.array(values, dtype=draw(st.sampled_from(["uint8", "uint64"])))
    return np.array(values, dtype=draw(st.sampled_from(["int64", "int32", "int8"])))


@st.composite
def masks(draw, n):
    length = n if draw(st.integers(0, 9)) else draw(st.integers(0, n + 1))
    values = draw(st.lists(st.booleans(), min_size=length, max_size=length))
    return values if draw(st.booleans()) else np.array(values, dtype=bool)


def slices(n):
    return st.slices(n)


def axis_item(n, kinds, oob=True):
    options = {
        "int": st.one_of(ints(n, oob), ints(n, oob).map(np.int64)),
        "slice": slices(n),
        "list": int_lists(n, 1),
        "array": int_arrays(n),
        "mask": masks(n),
    }
    return st.one_of(*(options[k] for k in kinds))


@st.composite
def keys(draw, shape, kinds, *, ellipsis=True, newaxis=True, fewer=True, bare=True, oob=True):
    """A key of per-axis items of ``kinds``, maybe with an Ellipsis and Nones; a bare
    item (no tuple) sometimes when ``bare``."""
    ndim = len(shape)
    count = draw(st.integers(0, ndim)) if fewer else ndim
    at = draw(st.integers(0, count)) if ellipsis and draw(st.booleans()) else count
    axes = [*range(at), *range(ndim - count + at, ndim)]  # the axes the items index
    items = [draw(axis_item(shape[axis], kinds, oob)) for axis in axes]
    if at < count or (ellipsis and count < ndim and draw(st.booleans())):
        items.insert(at, Ellipsis)
    if newaxis:
        for _ in range(draw(st.integers(0, 2))):
            items.insert(draw(st.integers(0, len(items))), None)
    if bare and len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def pointwise_keys(draw, shape):
    """One int, list or array per axis, of broadcastable shapes; or a full mask."""
    if draw(st.integers(0, 4)) == 0:
        return reference(shape, "bool", seed=draw(st.integers(0, 99)))
    length = draw(st.integers(0, 4))
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "list", "array", "array2d", "one"]))
        if kind == "int":
            items.append(draw(ints(n)))
        elif kind == "list":
            items.append(draw(st.lists(ints(n), min_size=length, max_size=length)))
        elif kind == "array":
            items.append(np.array(draw(st.lists(ints(n), min_size=length, max_size=length))))
        elif kind == "array2d":
            values = draw(st.lists(ints(n), min_size=2 * length, max_size=2 * length))
            items.append(np.array(values, dtype=np.int64).reshape(2, length))
        else:
            items.append(np.array([draw(ints(n))]))
    if draw(st.booleans()):
        for _ in range(draw(st.integers(1, 2))):
            items.insert(draw(st.integers(0, len(items))), None)
    return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


# --------------------------------------------------------------------------------------
# Property tests against zarr-python
# --------------------------------------------------------------------------------------


def _run(data, kinds_for, hows, wired, numpy_too=False):
    shape, dtype, chunks, shards, seed = data.draw(layouts())
    with tempfile.TemporaryDirectory() as tmp:
        a, z, ref = make_pair(tmp, shape, dtype, chunks, shards, seed)
        for _ in range(4):
            key = data.draw(kinds_for(shape))
            for how in hows:
                check(a, z, ref, key, how, wired)
            if numpy_too:  # basic indexing: numpy's result too
                try:
                    expected = ref[key]
                except IndexError:
                    with pytest.raises(IndexError):
                        sw_read(a, key, "get", wired)
                else:
                    assert_same_result(sw_read(a, key, "get", wired), expected)


@WAYS
@SETTINGS
@given(data=st.data())
def test_basic_keys_match_zarr_and_numpy(wired, data):
    _run(data, lambda s: keys(s, ["int", "slice"], oob=False), ["get", "o"], wired, numpy_too=True)


@WAYS
@SETTINGS
@given(data=st.data())
def test_orthogonal_keys_match_zarr(wired, data):
    kinds = ["int", "slice", "list", "array", "mask"]
    _run(data, lambda s: keys(s, kinds), ["get", "o", "v"], wired)


@WAYS
@SETTINGS
@given(data=st.data())
def test_one_array_with_slices_matches_zarr(wired, data):
    @st.composite
    def one_array(draw, shape):
        key = list(draw(keys(shape, ["int", "slice"], ellipsis=False, fewer=False, bare=False)))
        at = draw(st.sampled_from([i for i, k in enumerate(key) if k is not None]))
        n = shape[sum(1 for k in key[:at] if k is not None)]
        key[at] = draw(axis_item(n, ["list", "array", "mask"]))
        return tuple(key)

    _run(data, one_array, ["get", "o"], wired)


@WAYS
@SETTINGS
@given(data=st.data())
def test_pointwise_keys_match_zarr(wired, data):
    _run(data, pointwise_keys, ["get", "v", "o"], wired)


JUNK = [1.5, "a", True, np.True_, [1.0], [], [[0, 1]], [True, 0], np.float32(1), object()]


@WAYS
@SETTINGS
@given(data=st.data())
def test_unsupported_keys_raise_as_zarr(wired, data):
    @st.composite
    def junk(draw, shape):
        kinds = ["int", "slice", "list"]
        key = list(draw(keys(shape, kinds, newaxis=False, fewer=False, bare=False)))
        key.insert(draw(st.integers(0, len(key))), draw(st.sampled_from(JUNK)))
        return tuple(key)

    _run(data, junk, ["get", "o", "v"], wired)


# --------------------------------------------------------------------------------------
# Hand-picked cases
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("indexing")
    return make_pair(tmp, (7, 10, 6), "int16", chunks=(2, 3, 4), shards=(4, 6, 4), seed=3)


HAND_PICKED = [
    ((0, 0, 0), "get"),
    ((-1, slice(None, None, 3), 5), "get"),
    (([0, 6, 2], slice(1, 9, 2), 1), "get"),
    (([0, 6], [9, 0], [5, 5]), "get"),
    ((np.array([[0, 1], [2, 3]]), 1, np.array([0, 5])), "get"),
    (([True, False] * 3 + [True], [0, 9], [1, 2]), "get"),
    ((np.array([True, False] * 3 + [True]), 4), "get"),
    ((slice(None), [3, 3, 0]), "get"),
    ((1, [3, 3, 0]), "get"),
    (([1, 2], [3, 0], slice(None)), "o"),
    ((..., [5, 0]), "o"),
    ((np.array([1, 2], dtype=np.uint8), 2, [False, True] * 3), "o"),
    ((2, 3, 4), "o"),
    (([0, 6], [9, 0], [5, 5]), "v"),
    ((np.array([[0], [6]]), np.array([1, 2, 3]), 0), "v"),
    ((0, 0, 0), "v"),
]


@WAYS
@pytest.mark.parametrize(("key", "how"), HAND_PICKED, ids=[repr(k) for k in HAND_PICKED])
def test_hand_picked_keys_match_zarr(pair, key, how, wired):
    a, z, _ = pair
    assert_same_result(sw_read(a, key, how, wired), zarr_read(z, key, how))


def test_full_mask_reads_pointwise(pair):
    a, z, data = pair
    mask = data % 3 == 0
    for wired in (False, True):
        for how in ("get", "v"):
            assert_same_result(sw_read(a, mask, how, wired), data[mask])
            assert_same_result(sw_read(a, mask, how, wired), zarr_read(z, mask, how))


NUMPY_ONLY = [  # zarr-python refuses these (None, negative steps): numpy's result
    None,
    (None, 1),
    (..., None),
    (2, None, slice(None, None, -1)),
    (slice(None, None, -2), None, slice(8, 1, -3), -1),
    (None, [4, 0], slice(None)),
    ([4, 0], None, slice(None, None, -1)),
    (None, [0, 1], [2, 3], [4, 5]),
    ([0, 1], [2, 3], [4, 5], None),
]


@WAYS
@pytest.mark.parametrize("key", NUMPY_ONLY, ids=[repr(k) for k in NUMPY_ONLY])
def test_newaxis_and_negative_steps_as_numpy(pair, key, wired):
    a, _, data = pair
    assert_same_result(sw_read(a, key, "get", wired), data[key])


@WAYS
def test_newaxis_in_oindex_and_vindex(pair, wired):
    a, z, data = pair
    got = sw_read(a, (None, [1, 0], slice(None, None, -4), None, 2), "o", wired)
    assert_same_result(got, zarr_read(z, ([1, 0], slice(None), 2), "o")[None, :, ::-4, None])
    # pointwise: the broadcast axes where numpy puts them
    key = ([1, 0], None, [2, 2], [3, 4])
    assert_same_result(sw_read(a, key, "v", wired), data[key])
    key = (None, [1, 0], [2, 2], [3, 4], None)
    assert_same_result(sw_read(a, key, "v", wired), data[key])


@WAYS
def test_domain_reads_its_box(pair, wired):
    a, _, data = pair
    d = sw.Domain((1, 3, 0), (4, 6, 2))
    assert_same_result(sw_read(a, d, "get", wired), data[d.slices])
    with pytest.raises(sw.BoundsError, match=r"\[5:9, 0:1, 0:1\].*axis 0"):
        sw_read(a, sw.Domain((5, 0, 0), (4, 1, 1)), "get", wired)
    with pytest.raises(sw.ShapeError, match="rank 2"):
        sw_read(a, sw.Domain((0, 0), (1, 1)), "get", wired)


@WAYS
def test_single_elements_are_numpy_scalars_from_getitem_and_0d_from_oindex(pair, wired):
    a, _, data = pair
    for key, how in [((1, 2, 3), "get"), ((1, 2, 3), "o"), ((-1, -1, -1), "get")]:
        got = sw_read(a, key, how, wired)
        # a[k] as numpy gives it (zarr-python: a 0-d array); a.oindex[k] as zarr-python
        assert isinstance(got, np.generic if how == "get" else np.ndarray), type(got)
        assert got.shape == () and got == data[key] and got.dtype == data.dtype


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


@WAYS
@pytest.mark.parametrize(
    ("key", "how", "axis", "index", "size"),
    [
        ((7, 0, 0), "get", 0, 7, 7),
        ((0, [1, 10]), "get", 1, 10, 10),
        (([0], [0], [-7]), "get", 2, -7, 6),
        ((0, 0, np.array([6], dtype=np.uint64)), "o", 2, 6, 6),
        (([0, 8], 0, 0), "v", 0, 8, 7),
    ],
)
def test_out_of_bounds_names_axis_index_and_size(pair, key, how, axis, index, size, wired):
    a, z, _ = pair
    with pytest.raises(IndexError):
        zarr_read(z, key, how)
    with pytest.raises(sw.BoundsError) as info:
        sw_read(a, key, how, wired)
    assert f"index {index} is out of bounds for axis {axis} with size {size}" in str(info.value)


@WAYS
@pytest.mark.parametrize(
    ("key", "how", "words"),
    [
        (1.5, "get", "supported are integers, slices"),
        ((0, "x"), "get", "field names"),
        ((..., [0, 1]), "get", "a.oindex"),
        (([0, 1], [0, 1], slice(None)), "get", "a.vindex"),
        ((np.ones(6, dtype=bool),), "v", "mask must have the array's shape"),
        ((0, [True, False]), "o", "length 2"),
        ((np.ones((7, 10), dtype=bool),), "o", "1-d"),
        (([0, 1], slice(None), 0), "v", "one integer array or int per axis"),
    ],
)
def test_unsupported_keys_say_what_is_supported(pair, key, how, words, wired):
    a, z, _ = pair
    with pytest.raises((IndexError, ValueError, TypeError)):
        zarr_read(z, key, how)
    with pytest.raises(sw.ShapeError, match=words.replace(".", r"\.")):
        sw_read(a, key, how, wired)


@WAYS
def test_messages_cap_a_big_key(pair, wired):
    a, _, _ = pair
    big = (np.arange(10**5, dtype=float), list(range(10**5)))
    for key in [big, (list(range(10**5)), 1.5), (0, np.full(10**5, 9.5))]:
        with pytest.raises(sw.ShapeError) as info:
            sw_read(a, key, "get", wired)
        message = str(info.value)
        assert "\n" not in message and len(message) < 400, message
    with pytest.raises(sw.BoundsError) as info:
        sw_read(a, (np.arange(10**5), 0, 0), "get", wired)
    assert "index 7 is out of bounds for axis 0 with size 7" in str(info.value)


# --------------------------------------------------------------------------------------
# Memory: sparse selections read chunk-sized boxes
# --------------------------------------------------------------------------------------


class Counting:
    """An array as read_key needs it, recording the regions read."""

    def __init__(self, array):
        self.array = array
        self.shape, self.dtype, self.chunks = array.shape, array.dtype, array.chunks
        self.regions: list[sw.Domain] = []

    def read(self, region):
        self.regions.append(region)
        return self.array.read(region)


def _counted(a, wired):
    """A Counting view of ``a``; when ``wired``, ``a`` itself reads through it."""
    counting = Counting(a)
    if wired:
        original = a.read
        a.read = lambda region: (counting.regions.append(region), original(region))[1]
    return counting


@WAYS
def test_sparse_selection_reads_two_chunks(tmp_path, wired):
    a = sw.create(
        tmp_path / "big.zarr", shape=(10**7,), dtype="int16", chunks=(1000,), shards=(10**5,)
    )
    with a.write_shard((10,)) as w:
        w[10**6 : 10**6 + 1] = np.array([7], dtype="int16")
    counting = _counted(a, wired)
    target = a if wired else counting
    for how in ("get", "o", "v"):
        counting.regions.clear()
        got = sw_read(target, [0, 10**6], how, wired)
        assert got.tolist() == [0, 7]
        assert len(counting.regions) == 2
        assert all(r.size <= 1000 for r in counting.regions)
    counting.regions.clear()
    got = sw_read(target, slice(None, None, 10**6), "get", wired)
    assert got.shape == (10,) and len(counting.regions) == 10
    assert sum(r.size for r in counting.regions) == 10


@WAYS
def test_sparse_selection_reads_chunk_boxes_in_2d(tmp_path, wired):
    a = sw.create(tmp_path / "2d.zarr", shape=(1000, 1000), dtype="uint8", chunks=(10, 10))
    counting = _counted(a, wired)
    target = a if wired else counting
    rows, cols = [3, 999, 5], [998, 0, 990]
    got = sw_read(target, (np.array(rows), cols), "o", wired)
    assert got.shape == (3, 3)
    # rows 3 and 5 share a chunk, so do cols 998 and 990: 2 x 2 boxes
    assert len(counting.regions) == 4
    assert all(max(r.shape) <= 10 for r in counting.regions)
    counting.regions.clear()
    got = sw_read(target, (rows, cols), "v", wired)
    # (3, 998) and (5, 990) lie in one chunk, (999, 0) in another
    assert got.shape == (3,) and len(counting.regions) == 2
    assert all(max(r.shape) <= 10 for r in counting.regions)
    counting.regions.clear()
    got = sw_read(target, (slice(0, 1000, 500), [0, 1, 2, 998]), "get", wired)
    assert got.shape == (2, 4) and len(counting.regions) == 4
    assert sum(r.size for r in counting.regions) == 8
