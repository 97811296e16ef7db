"""Array.appender (issue 25): frames appended as they are acquired, each shard stored
once, the shape grown only over whole stored slabs; a killed run loses its open slab
only, and a new appender removes what it left past the shape."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_adapter_stores import Counting, _stores

FRAME = (3, 10)
CHUNKS, SHARDS = (2, 3, 5), (4, 3, 5)  # a slab: 4 frames, 2 shards


def frames(start: int, stop: int, dtype: str = "uint16") -> np.ndarray:
    t, y, x = np.ogrid[start:stop, 0 : FRAME[0], 0 : FRAME[1]]
    return (1 + t * 100 + y * 10 + x).astype(dtype)


def make(where, **kw) -> sw.Array:
    return sw.create(
        where,
        shape=(0, *FRAME),
        dtype=kw.pop("dtype", "uint16"),
        chunks=CHUNKS,
        shards=SHARDS,
        **kw,
    )


def test_frames_fill_slabs_and_the_shape_grows_only_over_stored_slabs(tmp_path):
    a = make(tmp_path / "a.zarr")
    with a.appender(axis=0) as ap:
        for t in range(10):
            ap.append(frames(t, t + 1)[0])
            if t % 4 == 3:
                ap.flush()
                assert sw.open(a.path).shape == (t + 1, *FRAME)
            assert ap.length == t + 1 and ap.shape == (t + 1, *FRAME)
        assert sw.open(a.path).shape == (8, *FRAME)  # the partial slab is not shown
    assert a.shape == sw.open(a.path).shape == (10, *FRAME)
    np.testing.assert_array_equal(sw.open(a.path)[...], frames(0, 10))
    np.testing.assert_array_equal(zarr.open_array(str(a.path), mode="r")[...], frames(0, 10))
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(a.path)}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), frames(0, 10))


@pytest.fixture(params=["memory", "fsspec-local", "obstore-memory"])
def counting(request, tmp_path) -> Counting:
    return Counting(_stores(tmp_path)[request.param])


def test_one_set_per_shard_and_no_shard_read_on_any_store(counting):
    a = make(counting, path="a")
    counting.clear()
    with a.appender() as ap:
        for start in range(0, 11, 3):  # blocks of 3 frames, crossing slab boundaries
            ap.append(frames(start, min(start + 3, 11)))
    sets = counting.shard_calls("set")
    assert sets == sorted(f"a/c/{i}/0/{j}" for i in range(3) for j in range(2))
    assert counting.shard_calls("get") == []
    np.testing.assert_array_equal(sw.open(counting, path="a")[...], frames(0, 11))
    np.testing.assert_array_equal(zarr.open_array(counting, path="a", mode="r")[...], frames(0, 11))


def test_an_object_store_array_appends(s3_bucket):
    bucket, options = s3_bucket
    a = make(f"s3://{bucket}/acq.zarr", storage_options=options)
    with a.appender() as ap:
        ap.append(frames(0, 6))
    np.testing.assert_array_equal(
        sw.open(f"s3://{bucket}/acq.zarr", storage_options=options)[...], frames(0, 6)
    )


KILLED = r"""
import os, sys
import numpy as np
import shardwright as sw
sys.path.insert(0, sys.argv[2])
from test_appender import frames
a = sw.open(sys.argv[1])
ap = a.appender(0)
start = a.shape[0]
for t in range(start, start + int(sys.argv[3])):
    ap.append(frames(t, t + 1)[0])
os._exit(0)  # killed: no close
"""


def run_killed(path, frames_n: int) -> None:
    here = str(__import__("pathlib").Path(__file__).parent)
    subprocess.run([sys.executable, "-c", KILLED, str(path), here, str(frames_n)], check=True)


def test_a_killed_run_loses_its_open_slab_and_a_new_appender_continues(tmp_path):
    a = make(tmp_path / "a.zarr")
    run_killed(a.path, 10)  # frames 8 and 9 (the open slab) lost, and slab 1 if unstored
    b = sw.open(a.path)
    assert b.shape in ((4, *FRAME), (8, *FRAME))
    np.testing.assert_array_equal(b[...], frames(0, b.shape[0]))
    with b.appender() as ap:
        assert ap.length == b.shape[0]
        ap.append(frames(b.shape[0], 13))
    np.testing.assert_array_equal(sw.open(a.path)[...], frames(0, 13))


KILLED_AFTER_STORE = r"""
import os, sys
import numpy as np
import shardwright as sw
sys.path.insert(0, sys.argv[2])
from test_appender import frames
a = sw.open(sys.argv[1])
# A slab stored but never shown, as a kill between its puts and the shape's put leaves:
big = sw.open(sys.argv[1])
big.resize(a.shape[0] + 8, *a.shape[1:])
big[a.shape[0]:] = 7
import json, pathlib
meta = pathlib.Path(sys.argv[1]) / "zarr.json"
doc = json.loads(meta.read_text()); doc["shape"][0] = a.shape[0]; meta.write_text(json.dumps(doc))
os._exit(0)
"""


@pytest.mark.parametrize("length", [8, 6])
def test_debris_past_the_shape_is_removed_when_an_appender_opens(tmp_path, length):
    a = make(tmp_path / "a.zarr")
    with a.appender() as ap:
        ap.append(frames(0, length))
    here = str(__import__("pathlib").Path(__file__).parent)
    subprocess.run([sys.executable, "-c", KILLED_AFTER_STORE, str(a.path), here], check=True)
    assert (a.path / "c" / "3").exists() or (a.path / "c" / "2").exists()  # debris
    with sw.open(a.path).appender() as ap:
        ap.append(frames(length, length + 1))
    b = sw.open(a.path)
    assert b.shape == (length + 1, *FRAME)
    b.resize(16, *FRAME)
    expected = np.zeros((16, *FRAME), "uint16")
    expected[: length + 1] = frames(0, length + 1)
    np.testing.assert_array_equal(b[...], expected)  # no 7 anywhere: the debris is gone


def test_wrong_shape_and_dtype_keep_the_appender_usable(tmp_path):
    a = make(tmp_path / "a.zarr", dtype="uint8")
    with a.appender() as ap:
        ap.append(frames(0, 1, "uint8")[0])
        with pytest.raises(sw.ShapeError, match=r"must have shape \[3, 10\]"):
            ap.append(np.zeros((3, 9), "uint8"))
        with pytest.raises(sw.ShapeError):
            ap.append(np.zeros((2, 3, 9), "uint8"))
        with pytest.raises(sw.DTypeError, match="does not fit uint8"):
            ap.append(np.full(FRAME, 300))
        ap.append(frames(1, 3, "uint8"))
    np.testing.assert_array_equal(sw.open(a.path)[...], frames(0, 3, "uint8"))


def test_a_closed_appender_refuses_frames(tmp_path):
    a = make(tmp_path / "a.zarr")
    ap = a.appender()
    ap.close()
    ap.close()  # a second close does nothing
    with pytest.raises(sw.ShardwrightError, match="the appender is closed"):
        ap.append(frames(0, 1)[0])


def test_two_threads_appending_are_serialized_call_by_call(tmp_path):
    a = make(tmp_path / "a.zarr")

    def run(start):
        for i in range(20):
            block = np.full((3, *FRAME), start + i, "uint16")
            ap.append(block)

    with a.appender() as ap:
        threads = [threading.Thread(target=run, args=(s,)) for s in (1000, 2000)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    got = sw.open(a.path)[...]
    assert got.shape == (120, *FRAME)
    blocks = got[::3, 0, 0]
    assert sorted(blocks) == sorted([1000 + i for i in range(20)] + [2000 + i for i in range(20)])
    for first in range(0, 120, 3):  # each call's frames stay together
        assert (got[first : first + 3] == got[first, 0, 0]).all()
    for owner in (1000, 2000):  # and each thread's calls keep their order
        mine = [v for v in blocks if owner <= v < owner + 20]
        assert mine == sorted(mine)


class Ordered(Counting):
    """A Counting store that also keeps the order of the sets."""

    def __init__(self, store):
        super().__init__(store)
        self.sets: list[str] = []

    async def set(self, key, value):
        self.sets.append(key)
        return await super().set(key, value)


def test_array_append_stores_before_it_grows(tmp_path):
    """The regression: Array.append resized first, then wrote, so a reader (or a crash)
    in between saw fill values in the new rows. Now every new shard is stored before
    zarr.json shows it."""
    store = Ordered(_stores(tmp_path)["memory"])
    a = make(store, path="a")
    a.append(frames(0, 6))
    assert a.shape == (6, *FRAME)
    order = store.sets  # (the creation's zarr.json goes through set_if_not_exists)
    shards = [i for i, k in enumerate(order) if "/c/" in k]
    grows = [i for i, k in enumerate(order) if k.endswith("zarr.json")]
    assert shards and grows
    assert max(shards) < max(grows), order
    assert order.index("a/c/0/0/0") < grows[0], order  # the first slab before any grow
    np.testing.assert_array_equal(sw.open(store, path="a")[...], frames(0, 6))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.integers(0, 7), max_size=8),
    st.integers(0, 1),
    st.booleans(),
)
def test_append_sequences_equal_numpy_concatenate(tmp_path_factory, sizes, axis, reopen):
    folder = tmp_path_factory.mktemp("h")
    shape = [4, 6]
    shape[axis] = 0
    a = sw.create(
        folder / "a.zarr", shape=tuple(shape), dtype="int32", chunks=(2, 3), shards=(4, 6)
    )
    parts = []
    ap = a.appender(axis)
    for i, k in enumerate(sizes):
        block_shape = [4, 6]
        block_shape[axis] = k
        block = np.arange(np.prod(block_shape), dtype="int32").reshape(block_shape) + 1000 * i
        parts.append(block)
        ap.append(block)
        if reopen and i % 2 == 1:
            ap.close()
            ap = sw.open(a.path).appender(axis)
    ap.close()
    expected = np.concatenate(parts, axis=axis) if parts else np.zeros(shape, "int32")
    got = sw.open(a.path)[...]
    np.testing.assert_array_equal(got, expected)
