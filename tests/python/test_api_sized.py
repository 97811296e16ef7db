"""The Python API: ``iter_shards`` / ``iter_chunks`` / ``inner_chunks`` have ``len()``
(so progress bars get a total), and the reprs of writers and transactions say what they
hold."""

from __future__ import annotations

import asyncio
import io
import itertools
import math
import operator
import tempfile
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardwright._txn import _size

# --------------------------------------------------------------------------------------
# len() of the grid iterators
# --------------------------------------------------------------------------------------


def cells_met(shape, cell, within) -> int:
    """The cells of the grid of ``cell`` over ``shape`` that meet ``within`` (clipped to
    the array), counted per axis."""
    count = 1
    for n, c, (lo, hi) in zip(shape, cell, within):
        lo, hi = max(lo, 0), min(hi, n)
        if hi <= lo:
            return 0
        count *= (hi - 1) // c - lo // c + 1
    return count


_COUNTER = itertools.count()
_ROOT = Path(tempfile.mkdtemp(prefix="sw-sized-"))


@st.composite
def grids(draw):
    rank = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    shards = None
    if draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    shape = tuple(draw(st.integers(1, 13)) for _ in range(rank))
    within = None
    if draw(st.booleans()):
        origin = [draw(st.integers(0, n + 2)) for n in shape]
        extent = [draw(st.integers(0, n + 2)) for n in shape]
        within = sw.Domain(origin, extent)
    return shape, chunks, shards, within


@given(grids())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_len_is_the_number_of_cells_met(grid):
    shape, chunks, shards, within = grid
    a = sw.create(
        _ROOT / f"{next(_COUNTER)}.zarr", shape=shape, dtype="u1", chunks=chunks, shards=shards
    )
    box = [(0, n) for n in shape] if within is None else list(zip(within.origin, within.stop))
    for cells, cell in (
        (a.iter_shards(within), shards or chunks),
        (a.iter_chunks(within), chunks),
    ):
        expected = cells_met(shape, cell, box)
        assert len(cells) == expected
        taken = list(cells)
        assert len(taken) == expected and len(cells) == 0
    for shard in itertools.islice(a.iter_shards(within), 3):
        chunks_in = a.write_shard(shard).inner_chunks()
        total = len(chunks_in)
        assert total == math.prod(-(-s // c) for s, c in zip(shard.shape, chunks))
        assert total == len(list(chunks_in))


def test_len_counts_down_as_cells_are_taken(small):
    cells = small.iter_chunks()
    assert len(cells) == 6 and repr(cells) == "<shardwright.Cells: 6 chunks to come>"
    first = next(cells)
    assert first == sw.Domain((0, 0), (4, 4)) and first.index == (0, 0)
    assert len(cells) == 5
    assert [c.index for c in cells] == [(0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert len(cells) == 0 and list(cells) == []
    with pytest.raises(StopIteration):
        next(cells)


def test_iterators_are_single_use_and_calls_are_fresh(small):
    shards = small.iter_shards()
    assert iter(shards) is shards
    expected = [sw.Domain((0, 0), (8, 7)), sw.Domain((8, 0), (2, 7))]
    assert list(shards) == list(small.iter_shards()) == expected
    assert list(shards) == []  # spent, as a generator is


def test_within_is_checked_at_the_call(small):
    with pytest.raises(sw.ShapeError):
        small.iter_shards(sw.Domain((0,), (3,)))
    with pytest.raises(sw.ShapeError):
        small.iter_chunks((slice(0, 3),))


def test_inner_chunks_has_len_and_a_closed_writer_refuses(small):
    w = small.write_shard((1, 0))
    chunks = w.inner_chunks()
    assert len(chunks) == 2  # [8:10, 0:4] and [8:10, 4:7]
    assert [str(c) for c in chunks] == ["[8:10, 0:4]", "[8:10, 4:7]"]
    w.abort()
    with pytest.raises(sw.ShardwrightError, match="closed"):
        w.inner_chunks()


def test_tqdm_gets_the_total(small):
    try:
        from tqdm import tqdm
    except ImportError:  # the 3.11 environment has none (its plain bar is tested there)
        assert len(small.iter_chunks()) == 6  # what tqdm takes its total from
        assert operator.length_hint(small.iter_chunks()) == 6
        return
    bar = tqdm(small.iter_chunks(), file=io.StringIO())
    assert bar.total == 6
    assert len(list(bar)) == 6
    bar.close()


# --------------------------------------------------------------------------------------
# repr of writers and transactions
# --------------------------------------------------------------------------------------


@pytest.fixture
def t(tmp_path):
    """(8, 8) uint8, (2, 2) chunks in (4, 4) shards: 2 x 2 shards."""
    return sw.create(tmp_path / "t.zarr", shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))


def test_transaction_repr_counts_the_shards_touched_and_the_bytes(t):
    tx = t.transaction()
    assert repr(tx) == "<shardwright.Transaction open: 0 shards touched, 0 B staged>"
    tx[0:2, 0:2] = 1
    tx[1, 1] = 2  # the same shard again
    assert repr(tx).startswith("<shardwright.Transaction open: 1 shards touched, ")
    tx[3:5, 3:5] = np.ones((2, 2), "uint8")  # four shards, one of them touched already
    staged = tx.staged_memory
    assert staged > 0
    assert repr(tx) == f"<shardwright.Transaction open: 4 shards touched, {_size(staged)} staged>"
    tx.commit()
    assert repr(tx) == "<shardwright.Transaction committed: 4 shards written>"


def test_a_failed_or_empty_write_touches_nothing(t):
    with t.transaction() as tx:
        with pytest.raises(sw.ShapeError):
            tx[0:4, 0:4] = np.zeros((3,), "uint8")
        with pytest.raises(sw.DTypeError):
            tx[4:8, 4:8] = 1.5
        tx[0:0, :] = 1
        assert "open: 0 shards touched" in repr(tx)


def test_transaction_repr_counts_staging_writers_and_async_writes(t):
    with t.transaction() as tx:
        with tx.write_shard((1, 1)) as w:
            w[4:6, 4:6] = 3
        with tx.write_shard((1, 0)) as v:
            assert "open: 1 shards touched" in repr(tx)  # not before its commit
            v[4, 0] = 1
        with tx.write_shard((0, 1)):
            pass  # wrote nothing, but the transaction commits the shard all the same
        assert "open: 3 shards touched" in repr(tx)

        async def write_one():
            await tx.write_async(np.s_[0, 0], 1)

        asyncio.run(write_one())
        assert "open: 4 shards touched" in repr(tx)
    assert repr(tx) == "<shardwright.Transaction committed: 4 shards written>"


def test_transaction_repr_after_abort(t):
    tx = t.transaction()
    tx[0, 0] = 1
    tx.abort()
    assert repr(tx) == "<shardwright.Transaction aborted>"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (3 << 19, "1.5 MiB"),
        (5 << 30, "5.0 GiB"),
        (3 << 40, "3.0 TiB"),
        (1 << 60, "1048576.0 TiB"),
    ],
)
def test_sizes_read_as_people_write_them(n, text):
    assert _size(n) == text


def test_shard_writer_repr_says_its_shard_and_state(t):
    w = t.write_shard((1, 0))
    assert repr(w) == "<shardwright.ShardWriter [4:8, 0:4] open: 0 chunks written>"
    w[4:6, 0:2] = 1
    assert repr(w) == "<shardwright.ShardWriter [4:8, 0:4] open: 1 chunks written>"
    w.commit()
    assert repr(w) == "<shardwright.ShardWriter [4:8, 0:4] committed: 1 chunks written>"
    v = t.write_shard((0, 0))
    v.abort()
    assert repr(v) == "<shardwright.ShardWriter [0:4, 0:4] closed>"
