"""Array.append's costs and safety (issue 25 review): a small append does not list the
array (its cost stays in proportion to the slabs it touches, not to the shards stored),
and a record an unfinished shrink left does not clear the appended rows."""

from __future__ import annotations

import json

import numpy as np
import shardwright as sw
from test_adapter_stores import Counting, _stores
from test_appender import FRAME, frames, make


class Listing(Counting):
    """A Counting store that also counts the listings."""

    def list_prefix(self, prefix):
        self._count("list_prefix", prefix)
        return self._store.list_prefix(prefix)


def test_a_small_append_does_not_list_the_array(tmp_path):
    store = Listing(_stores(tmp_path)["memory"])
    a = make(store, path="a")
    a.append(frames(0, 40))  # 10 slabs of 2 shards
    for t in range(40, 44):
        store.clear()
        a.append(frames(t, t + 1))
        listings = [k for (m, k) in store.calls if m == "list_prefix"]
        assert listings == [], listings
        deletes = store.shard_calls("delete")
        assert len(deletes) <= 4, deletes  # the two slabs past the end, not the array
        gets = store.shard_calls("get")
        assert len(gets) <= 2, gets  # the shards of the slab it ends in
    np.testing.assert_array_equal(sw.open(store, path="a")[...], frames(0, 44))
    # The appender itself still lists (it removes debris wherever it lies).
    store.clear()
    with a.appender():
        pass
    assert [k for (m, k) in store.calls if m == "list_prefix"]


def test_a_small_append_still_removes_a_killed_appends_debris(tmp_path):
    a = make(tmp_path / "a.zarr")
    a.append(frames(0, 6))
    big = sw.open(a.path)
    big.resize(12, *FRAME)
    big[6:] = 7
    meta = a.path / "zarr.json"
    doc = json.loads(meta.read_text())
    doc["shape"][0] = 6
    meta.write_text(json.dumps(doc))  # as a kill between the slab's store and the grow
    a = sw.open(a.path)
    a.append(frames(6, 7))
    a.resize(12, *FRAME)
    expected = np.zeros((12, *FRAME), "uint16")
    expected[:7] = frames(0, 7)
    np.testing.assert_array_equal(sw.open(a.path)[...], expected)


def test_a_record_of_an_unfinished_shrink_does_not_clear_appended_rows(tmp_path):
    """The regression: each grow of the appender is a resize, which first cleared what
    the record names outside the stored shape — the rows just appended."""
    a = make(tmp_path / "a.zarr")
    a.append(frames(0, 10))
    # As a shrink from 128 to 10 killed during its clearing leaves it.
    (a.path / "shardwright-resize.json").write_text(json.dumps({"extent": [128, *FRAME]}))
    a.append(frames(10, 64))
    assert not (a.path / "shardwright-resize.json").exists()
    np.testing.assert_array_equal(sw.open(a.path)[...], frames(0, 64))
