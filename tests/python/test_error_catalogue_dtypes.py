"""docs/errors.md's catalogue rows of the data types that are not numbers (issue 26, part
2): each bad input raises the class the doc names, with its message."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shardwright as sw
from error_doc import expect

pytestmark = pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")


def test_dtypes_and_values(tmp_path):
    def create(name, dtype, **settings):
        return sw.create(tmp_path / name, shape=(4,), dtype=dtype, chunks=(2,), **settings)

    with expect("dtype-structured"):
        create("s.zarr", [("a", "i4"), ("b", "f8")])
    u = create("u.zarr", "U3")
    with expect("dtype-text-too-long"):
        u[0] = "abcd"
    t = create("t.zarr", "M8[s]")
    with expect("dtype-time-inexact"):
        t[0] = np.datetime64("2020-01-01T00:00:00.5")
    with expect("dtype-numbers-into-times"):
        t[...] = np.arange(4)
    b = create("b.zarr", "S2")
    with expect("dtype-text-into-bytes"):
        b[...] = np.array(["ab", "cd", "ef", "gh"])
    with expect("fill-text-too-long"):
        create("f.zarr", "U2", fill_value="abc")


def test_metadata(tmp_path):
    a = sw.create(tmp_path / "raw.zarr", shape=(2,), dtype="V2", chunks=(1,))
    meta = json.loads((a.path / "zarr.json").read_text())
    meta["data_type"]["configuration"] = {}
    (a.path / "zarr.json").write_text(json.dumps(meta))
    with expect("json-length-bytes"):
        sw.open(a.path)


def test_pyramid_method(tmp_path):
    with expect("pyramid-dtype-method"):
        sw.pyramid(np.zeros((8, 8), "M8[s]"), tmp_path / "p.zarr", factors=(2, 2), method="mean")
