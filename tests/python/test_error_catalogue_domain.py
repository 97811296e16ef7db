"""docs/errors.md's catalogue row for the seed's spelling: a domain that knows no array
cannot open its writer (``shard.write_context()``)."""

from __future__ import annotations

import pickle

import pytest
import shardwright as sw
from error_doc import expect


def test_domains_that_know_no_array(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="int32", chunks=(4, 4),
                  shards=(8, 8))  # fmt: skip
    (shard,) = a.iter_shards()
    assert shard == sw.Domain((0, 0), (8, 8))  # the array is not part of equality
    assert hash(shard) == hash(sw.Domain((0, 0), (8, 8)))
    with expect("domain-write-context"):
        sw.Domain((0, 0), (8, 8)).write_context()
    with pytest.raises(sw.UnsupportedError, match="does not know its array"):
        pickle.loads(pickle.dumps(shard)).write_context()
    (chunk, *_) = a.iter_chunks()
    with pytest.raises(sw.UnsupportedError, match="does not know its array"):
        chunk.write_context()
    assert pickle.loads(pickle.dumps(shard)).index == (0, 0)
