"""docs/errors.md's catalogue rows for rectilinear chunk grids: each bad input raises the
class the doc names with a message matching the doc's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import shardwright as sw
from error_doc import expect


def test_rectilinear_settings(tmp_path):
    def create(**kw):
        return sw.create(tmp_path / "g.zarr", shape=(10, 7), dtype="uint16", **kw)

    with expect("grid-rectilinear-not-dividing"):
        create(chunks=(2, 7), shards=[[5, 5], 7])
    with expect("grid-rectilinear-sum"):
        create(chunks=(2, 7), shards=[[4, 4], 7])
    with expect("grid-rectilinear-empty"):
        create(chunks=(2, 7), shards=[[], 7])
    with expect("grid-rectilinear-chunks-and-shards"):
        create(chunks=[[4, 6], 7], shards=(8, 8))
    assert not (tmp_path / "g.zarr").exists()


def _rectilinear_json(path: Path, chunk_shapes, name: str = "rectilinear") -> None:
    meta = json.loads((path / "zarr.json").read_text())
    config = {"kind": "inline", "chunk_shapes": chunk_shapes}
    meta["chunk_grid"] = {"name": name, "configuration": config}
    (path / "zarr.json").write_text(json.dumps(meta))


def test_rectilinear_metadata(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(10, 7), dtype="uint16", chunks=(2, 7),
                  shards=[[4, 6], 7])  # fmt: skip
    _rectilinear_json(a.path, [[4, 2], 7])
    with expect("json-grid-short"):
        sw.open(a.path)
    _rectilinear_json(a.path, [[4, 6], 7], name="regular_bounded")
    with expect("json-grid-unknown"):
        sw.open(a.path)


def test_rectilinear_arrays_refuse_what_needs_one_shard_shape(tmp_path):
    a = sw.create(tmp_path / "img" / "0", shape=(10, 7), dtype="uint16", chunks=(2, 7),
                  shards=[[4, 6], 7])  # fmt: skip
    a[...] = np.ones((10, 7), "uint16")
    with expect("rectilinear-append"):
        a.appender(axis=0)
    with expect("rectilinear-levels"):
        sw.add_levels(tmp_path / "img", levels=2)
    u = sw.create(tmp_path / "u.zarr", shape=(10, 7), dtype="uint16", chunks=[[4, 6], [3, 4]])
    with expect("rectilinear-chunks-attribute"):
        _ = u.chunks
    assert u.read_chunk_sizes == ((4, 6), (3, 4))
