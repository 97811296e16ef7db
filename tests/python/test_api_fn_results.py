"""The Python API: what ``map_chunks`` says when ``fn`` returns something it cannot write
(``None``, a coroutine or a Future, a wrong shape or dtype) — the chunk's Domain and what
``fn`` must return — on one thread and on several."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import warnings
from typing import Any

import numpy as np
import pytest
import shardwright as sw

THREADS = pytest.mark.parametrize("threads", [1, 3])


@pytest.fixture
def a(tmp_path):
    """(8, 8) uint8, (2, 2) chunks in (4, 4) shards."""
    return sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))


def _only(chunk: str, bad: Any):
    """An fn that returns ``bad()`` for the chunk ``chunk`` (by its str) and 1 elsewhere."""

    def fn(c):
        return bad() if str(c) == chunk else np.ones(c.shape, "uint8")

    return fn


@THREADS
def test_none_is_a_shape_error_naming_the_chunk(a, threads):
    with pytest.raises(sw.ShapeError) as info:
        a.map_chunks(_only("[4:6, 2:4]", lambda: None), threads=threads)
    message = str(info.value)
    assert message.startswith("map_chunks: fn returned None for the chunk [4:6, 2:4]: ")
    assert "fn must return an array of shape (2, 2) and dtype uint8" in message
    assert "return statement" in message
    assert (a[4:8, 0:4] == 0).all()  # its shard was not stored


@THREADS
def test_a_wrong_shape_names_the_chunk_and_both_shapes(a, threads):
    with pytest.raises(sw.ShapeError) as info:
        a.map_chunks(_only("[6:8, 6:8]", lambda: np.zeros((3, 3), "uint8")), threads=threads)
    message = str(info.value)
    assert "fn returned data of shape (3, 3) and dtype uint8 for the chunk [6:8, 6:8]" in message
    assert "fn must return an array of shape (2, 2) and dtype uint8" in message
    assert "data of shape (3, 3) does not broadcast to the region's shape (2, 2)" in message
    assert isinstance(info.value, ValueError)


@THREADS
def test_a_dtype_that_does_not_cast_is_a_dtype_error(a, threads):
    with pytest.raises(sw.DTypeError) as info:
        a.map_chunks(_only("[0:2, 6:8]", lambda: np.full((2, 2), 256.0)), threads=threads)
    message = str(info.value)
    assert "fn returned data of shape (2, 2) and dtype float64 for the chunk [0:2, 6:8]" in message
    assert "fn must return an array of shape (2, 2) and dtype uint8" in message
    assert "value 256.0 at array coordinate (0, 6) (index (0, 0) of the float64 data)" in message
    assert "does not fit uint8 (integers 0..255), nor do 3 other values" in message
    assert isinstance(info.value, TypeError)


def test_values_numpy_assigns_are_fine(a):
    # Broadcasting rows, lists, scalars: as w[c] = value takes them.
    a.map_chunks(lambda c: [c.index[1]] * c.shape[1] if c.index[0] % 2 else c.index[0])
    expected = np.zeros((8, 8), "uint8")
    for c in a.iter_chunks():
        expected[c.slices] = c.index[1] if c.index[0] % 2 else c.index[0]
    assert (a[...] == expected).all()


@THREADS
def test_a_coroutine_is_refused_and_closed_without_a_warning(a, threads):
    async def compute(c):
        return np.ones(c.shape, "uint8")

    def fn(c):  # an fn that forgot to await (only one chunk: one error, even on threads)
        return compute(c) if c.index == (2, 1) else np.ones(c.shape, "uint8")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(sw.DTypeError) as info:
            a.map_chunks(fn, threads=threads)
        message = str(info.value)
        del info  # its traceback holds the coroutine
        gc.collect()
    assert "fn returned a coroutine for the chunk [4:6, 2:4]" in message
    assert "map_chunks calls fn synchronously: return the array" in message
    assert "fn must return an array of shape (2, 2) and dtype uint8" in message
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert (a[4:8, 0:4] == 0).all()


def test_an_async_def_fn_is_refused(a):
    async def fn(c):
        return np.ones(c.shape, "uint8")

    with pytest.raises(sw.DTypeError, match="fn returned a coroutine for the chunk"):
        a.map_chunks(fn)


def test_a_concurrent_future_is_refused_saying_call_result(a):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:

        def fn(c):
            return pool.submit(np.ones, c.shape, "uint8")

        with pytest.raises(sw.DTypeError) as info:
            a.map_chunks(fn)
    message = str(info.value)
    assert message.startswith("map_chunks: fn returned a Future (Future) for the chunk [0:2, 0:2]")
    assert "return the array (e.g. call .result())" in message
    assert isinstance(info.value, TypeError) and isinstance(info.value, sw.ShardwrightError)


def test_an_asyncio_future_is_refused(a):
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(sw.DTypeError, match=r"fn returned a Future \(Future\)"):
            a.map_chunks(_only("[0:2, 0:2]", loop.create_future), threads=2)
    finally:
        loop.close()


class _DaskLike:
    """An array with ``__array__`` that is awaitable too (as dask collections are)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.data

    def __await__(self):  # pragma: no cover - never awaited
        yield
        return self.data


def test_an_awaitable_array_is_written_as_an_array(a):
    a.map_chunks(lambda c: _DaskLike(np.full(c.shape, 4, "uint8")))
    assert (a[...] == 4).all()


def test_other_objects_are_dtype_errors_naming_the_chunk(a):
    said = r"fn returned a value of type object for the chunk \[0:2, 0:2\]"
    with pytest.raises(sw.DTypeError, match=said):
        a.map_chunks(lambda c: object())
