"""Writing through an Icechunk session's store (Icechunk 2.x, CPython >= 3.12): the shards a
session writes appear together when it commits and not before (atomic across shards), and
two sessions writing different regions of one shard end merged or with Icechunk's
conflict, never with one write silently lost."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import assert_same, reference, write_all

if sys.version_info < (3, 12):  # Icechunk 2 is not built for 3.11 (requirements-py311.txt)
    pytest.skip("Icechunk 2.x needs CPython >= 3.12", allow_module_level=True)

import icechunk

SHAPE, CHUNKS, SHARDS = (32, 48), (8, 8), (16, 16)  # 2 x 3 shards


@pytest.fixture
def repo(tmp_path) -> icechunk.Repository:
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def _read_main(repo: icechunk.Repository) -> np.ndarray:
    store = repo.readonly_session("main").store
    return zarr.open_array(store, path="a", mode="r")[...]


def test_shards_appear_together_when_the_session_commits(repo):
    session = repo.writable_session("main")
    a = sw.create(session.store, path="a", shape=SHAPE, dtype="int32", chunks=CHUNKS, shards=SHARDS)
    session.commit("create the array")

    session = repo.writable_session("main")
    a = sw.open(session.store, path="a")
    data = reference(SHAPE, "int32")
    write_all(a, data)
    assert_same(a[...], data)  # the session reads its own writes
    assert (_read_main(repo) == 0).all()  # nothing on main before the commit
    session.commit("all six shards")
    assert_same(_read_main(repo), data)
    assert_same(sw.open(repo.readonly_session("main").store, path="a")[...], data)


def test_an_uncommitted_session_leaves_main_as_it_was(repo):
    session = repo.writable_session("main")
    sw.create(
        session.store, path="a", shape=SHAPE, dtype="uint8", chunks=CHUNKS, shards=SHARDS
    ).map_chunks(lambda c: 1)
    session.commit("ones")
    abandoned = repo.writable_session("main")
    b = sw.open(abandoned.store, path="a")
    b.map_chunks(lambda c: 2)
    assert (b[...] == 2).all()  # written into the session
    del abandoned, b
    assert (_read_main(repo) == 1).all()


def test_two_sessions_on_one_shard_merge_or_conflict_never_lose(repo):
    session = repo.writable_session("main")
    sw.create(session.store, path="a", shape=SHAPE, dtype="int16", chunks=CHUNKS, shards=SHARDS)
    session.commit("empty array")
    first, second = repo.writable_session("main"), repo.writable_session("main")
    with sw.open(first.store, path="a").write_shard((0, 0)) as w:
        w[1:5, 2:7] = 11  # both regions inside shard (0, 0)
    with sw.open(second.store, path="a").write_shard((0, 0)) as w:
        w[9:14, 3:12] = 22
    first.commit("region one")
    expected = np.zeros(SHAPE, "int16")
    expected[1:5, 2:7] = 11
    try:
        second.commit("region two")
    except icechunk.ConflictError:
        # Icechunk refuses the second commit: the first write stays, nothing is lost.
        assert_same(_read_main(repo), expected)
        # The writer of region two redoes it on a fresh session: both end up stored.
        third = repo.writable_session("main")
        with sw.open(third.store, path="a").write_shard((0, 0)) as w:
            w[9:14, 3:12] = 22
        third.commit("region two, again")
    expected[9:14, 3:12] = 22
    assert_same(_read_main(repo), expected)
