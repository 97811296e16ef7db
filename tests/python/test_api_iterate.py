"""The Python API: iter_shards / iter_chunks and the Domains they yield."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import shardwright as sw

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
