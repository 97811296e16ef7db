"""``Domain``'s message form (``str``: ``[0:8, 24:40]``) and its grid arithmetic:
``d * f`` / ``d.scale(f)`` (the box on a grid f times finer), ``d // f`` (the coarser box
covering d)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import shardwright as sw
from hypothesis import given, settings
from hypothesis import strategies as st

# --------------------------------------------------------------------------------------
# str
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        (sw.Domain((0, 24), (8, 16)), "[0:8, 24:40]"),
        (sw.Domain((5,), (0,)), "[5:5]"),
        (sw.Domain((), ()), "[]"),
        (sw.Domain((1, 2, 3), (1, 1, 1)), "[1:2, 2:3, 3:4]"),
    ],
)
def test_str_is_the_slice_form_and_repr_stays(domain, text):
    assert str(domain) == text and f"{domain}" == text
    assert repr(domain) == f"Domain(origin={domain.origin}, shape={domain.shape})"


def test_messages_name_domains_in_the_slice_form(small):
    with small.write_shard((0, 0)) as w, pytest.raises(sw.BoundsError) as info:
        w[sw.Domain((6, 0), (4, 4))] = 1
    assert str(info.value) == (
        "[6:10, 0:4] is not inside the shard [0:8, 0:7]; use a.transaction() for regions "
        "across shards"
    )
    with small.transaction() as tx, pytest.raises(sw.BoundsError) as info:
        tx[sw.Domain((9, 0), (2, 2))] = 1
    assert str(info.value) == "[9:11, 0:2] is not inside the array of shape (10, 7)"
    with pytest.raises(sw.BoundsError, match=r"^\[4:6, 4:6\] moved by \(-5, 0\)"):
        sw.Domain((4, 4), (2, 2)).translate((-5, 0))


# --------------------------------------------------------------------------------------
# * and //
# --------------------------------------------------------------------------------------


@st.composite
def domains_and_factors(draw):
    rank = draw(st.integers(1, 4))
    origin = [draw(st.integers(0, 50)) for _ in range(rank)]
    shape = [draw(st.integers(0, 20)) for _ in range(rank)]
    factors = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    return sw.Domain(origin, shape), factors


@given(domains_and_factors())
@settings(max_examples=300, deadline=None)
def test_scaling_against_element_sets(case):
    d, f = case
    fine = d * f
    assert fine == d.scale(f) == f * d and fine.index is None
    # every element of the fine box lies in a coarse cell of d, and every cell of d is whole
    assert fine.origin == tuple(o * k for o, k in zip(d.origin, f))
    assert fine.shape == tuple(s * k for s, k in zip(d.shape, f))
    assert fine // f == d
    coarse = d // f
    for lo, hi, clo, chi, k, s in zip(d.origin, d.stop, coarse.origin, coarse.stop, f, d.shape):
        if s == 0:
            assert chi == clo == lo // k
            continue
        assert clo * k <= lo < (clo + 1) * k  # the first coarse cell holds d's first element
        assert (chi - 1) * k < hi <= chi * k  # the last one holds d's last element
    if d.size:
        assert d in coarse * f


def test_the_source_region_of_a_destination_chunk(tmp_path):
    src = sw.create(tmp_path / "s.zarr", shape=(9, 7), dtype="u1", chunks=(3, 3))
    whole = sw.Domain((0, 0), src.shape)
    dst_chunks = [sw.Domain((0, 0), (2, 2)), sw.Domain((4, 2), (1, 2))]
    assert [str((c * (2, 2)).intersect(whole)) for c in dst_chunks] == [
        "[0:4, 0:4]",
        "[8:9, 4:7]",
    ]
    # and back: the destination region a source region feeds
    assert str(sw.Domain((3, 3), (3, 3)) // (2, 2)) == "[1:3, 1:3]"


def test_grid_domains_scale_too_and_keep_their_own_index(small):
    chunk = next(small.iter_chunks())
    assert chunk.index == (0, 0) and (chunk * (2, 2)).index is None
    assert pickle.loads(pickle.dumps(chunk * (1, 1))) == chunk


@pytest.mark.parametrize(
    ("factors", "said"),
    [
        ((2,), r"\[0:4, 0:4\] \* \(2,\): 1 factors for a domain of rank 2"),
        ((2, 2, 2), r"3 factors for a domain of rank 2"),
        ((2, 0), r"\(2, 0\): the factors must be one positive int per dimension \(2 here\)"),
        ((-1, 2), r"\(-1, 2\): the factors must be one positive"),
        ((2.0, 2), r"\(2\.0, 2\): the factors must be one positive"),
        ((True, 2), r"\(True, 2\)"),
        (2, r"\* 2: the factors must be one positive int per dimension"),
        ("22", r"\* '22'"),
        (None, r"\* None"),
    ],
)
def test_bad_factors_are_shape_errors_saying_what_was_given(factors, said):
    d = sw.Domain((0, 0), (4, 4))
    with pytest.raises(sw.ShapeError, match=said):
        d * factors
    with pytest.raises(sw.ShapeError, match=said.replace(r"\*", "//")):
        d // factors
    with pytest.raises(sw.ShapeError):
        d.scale(factors)


def test_factors_may_be_a_list_or_numpy_integers():
    d = sw.Domain((1, 1), (3, 3))
    assert d * [2, 3] == d * np.array([2, 3]) == d * (np.int64(2), 3) == sw.Domain((2, 3), (6, 9))
    assert d // [2, 2] == sw.Domain((0, 0), (2, 2))
