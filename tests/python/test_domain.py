"""``Domain`` against numpy, and the grid iterators of arrays, as properties (hypothesis)."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def shapes(draw, min_side=1, max_side=7):
    rank = draw(st.integers(1, 4))
    return tuple(draw(st.integers(min_side, max_side)) for _ in range(rank))


@st.composite
def box_in(draw, shape, allow_empty=True):
    """A Domain (origin, shape) that may stick out of ``shape`` or lie beyond it."""
    lo = 0 if allow_empty else 1
    origin = tuple(draw(st.integers(0, n + 2)) for n in shape)
    extent = tuple(draw(st.integers(lo, n + 2)) for n in shape)
    return sw.Domain(origin, extent)


@st.composite
def shape_and_boxes(draw, n=2, allow_empty=True):
    shape = draw(shapes())
    return shape, [draw(box_in(shape, allow_empty)) for _ in range(n)]


def mask(d: sw.Domain, shape: tuple[int, ...]) -> np.ndarray:
    """The elements of an array of ``shape`` whose coordinates lie in ``d``, built from
    coordinates (not from slicing)."""
    coords = np.indices(shape)
    inside = np.ones(shape, dtype=bool)
    for axis, (o, s) in enumerate(zip(d.origin, d.shape)):
        inside &= (coords[axis] >= o) & (coords[axis] < o + s)
    return inside


@SETTINGS
@given(shape_and_boxes(n=1))
def test_slices_select_exactly_the_box(case):
    shape, (d,) = case
    data = np.arange(int(np.prod(shape))).reshape(shape)
    clipped = tuple(max(0, min(o + s, n) - min(o, n)) for o, s, n in zip(d.origin, d.shape, shape))
    selected = data[d.slices]
    assert selected.shape == clipped
    assert sorted(selected.ravel().tolist()) == sorted(data[mask(d, shape)].tolist())
    if all(o + s <= n for o, s, n in zip(d.origin, d.shape, shape)):
        # a box inside the array: exactly its shape, element (i, j, ...) at origin + (i, j, ...)
        assert selected.shape == d.shape
        for index in np.ndindex(*d.shape):
            coord = tuple(o + i for o, i in zip(d.origin, index))
            assert selected[index] == data[coord]


@SETTINGS
@given(shape_and_boxes(n=1))
def test_properties(case):
    _, (d,) = case
    assert d.ndim == len(d.origin) == len(d.shape)
    assert d.stop == tuple(o + s for o, s in zip(d.origin, d.shape))
    assert d.slices == tuple(slice(o, o + s) for o, s in zip(d.origin, d.shape))
    assert d.size == int(np.prod(d.shape))
    assert d.index is None
    assert isinstance(d.origin, tuple) and isinstance(d.shape, tuple)


@SETTINGS
@given(shape_and_boxes(n=2))
def test_intersect_agrees_with_masks(case):
    shape, (a, b) = case
    # a bigger canvas so that nothing is clipped away
    canvas = tuple(n * 3 + 6 for n in shape)
    both = mask(a, canvas) & mask(b, canvas)
    got = a.intersect(b)
    assert got == b.intersect(a)
    if not both.any():
        assert got is None
    else:
        assert got is not None
        assert np.array_equal(mask(got, canvas), both)
        assert got in a and got in b
        assert got.index is None


@SETTINGS
@given(shape_and_boxes(n=1, allow_empty=False))
def test_intersect_with_itself(case):
    _, (d,) = case
    assert d.intersect(d) == d


@SETTINGS
@given(shape_and_boxes(n=2, allow_empty=False))
def test_containment_agrees_with_masks(case):
    shape, (a, b) = case
    canvas = tuple(n * 3 + 6 for n in shape)
    ma, mb = mask(a, canvas), mask(b, canvas)
    assert (b in a) == bool(np.all(ma[mb]))
    assert (a in b) == bool(np.all(mb[ma]))
    assert a in a
    if b in a and a in b:
        assert a == b


@SETTINGS
@given(shape_and_boxes(n=1), st.data())
def test_translate(case, data):
    _, (d,) = case
    offset = tuple(data.draw(st.integers(-10, 10)) for _ in range(d.ndim))
    if all(o + k >= 0 for o, k in zip(d.origin, offset)):
        moved = d.translate(offset)
        assert moved.origin == tuple(o + k for o, k in zip(d.origin, offset))
        assert moved.shape == d.shape
        assert moved.translate(tuple(-k for k in offset)) == d
        canvas = tuple(o + s + 12 for o, s in zip(moved.origin, moved.shape))
        shifted = np.zeros(canvas, dtype=bool)
        src = mask(d, canvas)
        coords = np.argwhere(src)
        for c in coords:
            shifted[tuple(c + np.array(offset))] = True
        assert np.array_equal(mask(moved, canvas), shifted)
    else:
        with pytest.raises(sw.BoundsError):
            d.translate(offset)


@SETTINGS
@given(shape_and_boxes(n=2))
def test_equality_and_hash(case):
    _, (a, b) = case
    same = sw.Domain(list(a.origin), list(a.shape))
    assert a == same and hash(a) == hash(same)
    assert (a == b) == (a.origin == b.origin and a.shape == b.shape)
    if a == b:
        assert hash(a) == hash(b)
    assert len({a, same}) == 1
    assert a != (a.origin, a.shape)


@SETTINGS
@given(shape_and_boxes(n=1))
def test_pickle_roundtrip(case):
    _, (d,) = case
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(d, protocol=protocol))
        assert back == d
        assert back.index is None
        assert back.origin == d.origin and back.shape == d.shape


def test_equality_hash_and_pickle_ignore_or_keep_index(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(10, 7), dtype="u1", chunks=(4, 4), shards=(8, 8))
    for grid_domain in list(a.iter_shards()) + list(a.iter_chunks()):
        plain = sw.Domain(grid_domain.origin, grid_domain.shape)
        assert grid_domain.index is not None
        assert plain.index is None
        assert grid_domain == plain
        assert hash(grid_domain) == hash(plain)
        assert {grid_domain: 1}[plain] == 1
        back = pickle.loads(pickle.dumps(grid_domain))
        assert back == grid_domain
        assert back.index == grid_domain.index


def test_domain_argument_errors():
    with pytest.raises(sw.ShapeError):
        sw.Domain((0, 0), (1,))
    with pytest.raises(sw.BoundsError):
        sw.Domain((-1,), (2,))
    with pytest.raises(sw.BoundsError):
        sw.Domain((0,), (-2,))
    with pytest.raises(sw.ShapeError):
        sw.Domain((0.5,), (2,))
    with pytest.raises(sw.ShapeError):
        sw.Domain((0,), (1,)).intersect(sw.Domain((0, 0), (1, 1)))
    with pytest.raises(sw.ShapeError):
        sw.Domain((0,), (1,)).translate((1, 1))
    assert sw.Domain((0,), (1,)) not in sw.Domain((0, 0), (1, 1))
    assert (0, 0) not in sw.Domain((0, 0), (1, 1))


def test_numpy_integers_accepted():
    d = sw.Domain(np.array([1, 2]), (np.int64(3), np.uint8(4)))
    assert d == sw.Domain((1, 2), (3, 4))
    assert all(type(v) is int for v in d.origin + d.shape)


# --------------------------------------------------------------------------------------
# Iterators of arrays: every element exactly once; ``within`` yields exactly the cells
# meeting it
# --------------------------------------------------------------------------------------


@st.composite
def layouts(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 12)) for _ in range(rank))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    sharded = draw(st.booleans())
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks) if sharded else None
    return shape, chunks, shards


def _make(folder: str, shape, chunks, shards) -> sw.Array:
    return sw.create(Path(folder) / "a.zarr", shape=shape, dtype="u1", chunks=chunks, shards=shards)


def _cover_count(domains, shape) -> np.ndarray:
    count = np.zeros(shape, dtype=int)
    for d in domains:
        count[d.slices] += 1
    return count


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_iterators_cover_every_element_once(layout):
    shape, chunks, shards = layout
    with tempfile.TemporaryDirectory() as folder:
        a = _make(folder, shape, chunks, shards)
        outer = shards or chunks
        for domains, cell in [(list(a.iter_shards()), outer), (list(a.iter_chunks()), chunks)]:
            assert np.all(_cover_count(domains, shape) == 1)
            assert sum(d.size for d in domains) == int(np.prod(shape))
            # C order of grid indices, each domain clipped to the array and on the grid
            indices = [d.index for d in domains]
            assert indices == sorted(indices)
            grid = tuple(-(-n // c) for n, c in zip(shape, cell))
            assert len(domains) == int(np.prod(grid))
            for d in domains:
                assert d.origin == tuple(i * c for i, c in zip(d.index, cell))
                assert d.shape == tuple(min(c, n - o) for c, n, o in zip(cell, shape, d.origin))
                assert all(s > 0 for s in d.shape)
        # inner chunks of each shard tile it exactly, clipped to the array
        for shard in a.iter_shards():
            inner = list(a.iter_chunks(shard))
            assert all(c in shard for c in inner)
            assert sum(c.size for c in inner) == shard.size
            with a.write_shard(shard) as w:
                from_writer = list(w.inner_chunks())
            assert from_writer == inner
            assert [c.index for c in from_writer] == [c.index for c in inner]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts(), st.data())
def test_within_yields_exactly_the_cells_meeting_it(layout, data):
    shape, chunks, shards = layout
    assume(all(n > 0 for n in shape))
    within = data.draw(box_in(shape))
    as_slices = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as folder:
        a = _make(folder, shape, chunks, shards)
        key = within.slices if as_slices else within
        if as_slices:
            # slices are clipped to the array like numpy does
            within = sw.Domain.from_slices(within.slices, shape)
        canvas = tuple(max(n, o + s) + 1 for n, o, s in zip(shape, within.origin, within.shape))
        region = mask(within, canvas)
        for every, met in [
            (list(a.iter_shards()), list(a.iter_shards(key))),
            (list(a.iter_chunks()), list(a.iter_chunks(within=key))),
        ]:
            expected = [d for d in every if mask(d, canvas)[region].any()]
            assert met == expected
            assert [d.index for d in met] == [d.index for d in expected]
            # clipped to the array, not to within
            for d in met:
                assert d in sw.Domain((0,) * len(shape), shape)


@settings(max_examples=60, deadline=None)
@given(layouts())
def test_inner_chunks_written_cover_shard_in_numpy(layout):
    """Writing each inner chunk with ``data[c.slices]`` reproduces the whole array."""
    shape, chunks, shards = layout
    with tempfile.TemporaryDirectory() as folder:
        a = _make(folder, shape, chunks, shards)
        ref = np.arange(int(np.prod(shape)), dtype="u1").reshape(shape) | 1
        for shard in a.iter_shards():
            with a.write_shard(shard) as w:
                for c in w.inner_chunks():
                    w[c] = ref[c.slices]
        np.testing.assert_array_equal(a[...], ref)
