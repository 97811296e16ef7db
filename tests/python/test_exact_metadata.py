"""Attribute edits and resizes rewrite only the member they change (issue 22, item 6):
integers beyond 64 bits keep every digit (they became floats: ``2**64 + 1`` read back as
``1.8446744073709552e+19``), and every other member of ``zarr.json`` keeps its text."""

from __future__ import annotations

import json

import numpy as np
import shardwright as sw
import zarr

EXACT = {
    "big": 2**64 + 1,
    "neg": -(2**70),
    "f": 0.1,
    "nested": {"deep": [2**65, 1.5, "s", None, True], "k": {"n": -(2**63) - 1}},
}


def value_span(text: str, key: str) -> tuple[int, int]:
    """Where the value of the top-level member ``key`` of a ``zarr.json`` is."""
    at = text.index(f'"{key}"')
    start = text.index(":", at) + 1
    while text[start].isspace():
        start += 1
    return start, json.JSONDecoder().raw_decode(text, start)[1]


def outside(text: str, key: str) -> tuple[str, str]:
    """The text of a ``zarr.json`` before and after its member ``key``'s value."""
    start, end = value_span(text, key)
    return text[:start], text[end:]


def test_attributes_beyond_64_bits_keep_every_digit_through_edits_and_resizes(tmp_path):
    a = sw.create(
        tmp_path / "a.zarr", shape=(8,), dtype="uint8", chunks=(2,), shards=(4,), attributes=EXACT
    )
    a[...] = 3
    assert a.attrs.asdict() == EXACT
    a.attrs["x"] = 2**100
    want = {**EXACT, "x": 2**100}
    for seen in (a, sw.open(a.path)):
        assert seen.attrs.asdict() == want
        assert seen.metadata["attributes"] == want
    a.resize(3)
    a.resize(6)
    assert sw.open(a.path).attrs.asdict() == want
    assert zarr.open_array(a.path, mode="r").attrs.asdict() == want
    stored = json.loads((a.path / "zarr.json").read_text())["attributes"]
    assert stored == want and isinstance(stored["big"], int)
    assert list(stored) == list(want)  # the key order too
    np.testing.assert_array_equal(a[...], [3, 3, 3, 0, 0, 0])


def test_edits_of_a_zarr_python_array_keep_the_rest_of_its_zarr_json_as_written(tmp_path):
    path = tmp_path / "z.zarr"
    zarr.create_array(
        path, shape=(8, 6), dtype="int16", chunks=(2, 3), shards=(4, 6), attributes=EXACT
    )
    before = (path / "zarr.json").read_text()
    a = sw.open(path)
    assert a.attrs.asdict() == EXACT
    a.attrs["z"] = 1
    del a.attrs["f"]
    after = (path / "zarr.json").read_text()
    assert outside(after, "attributes") == outside(before, "attributes")
    want = {k: v for k, v in EXACT.items() if k != "f"} | {"z": 1}
    assert json.loads(after)["attributes"] == want
    for kept in ('"big": 18446744073709551617', '"neg": -1180591620717411303424'):
        assert kept in after  # as zarr-python wrote it
    a.resize(5, 6)
    head, tail = outside(after, "shape")
    assert (path / "zarr.json").read_text() == f"{head}[5,6]{tail}"
    assert zarr.open_array(path, mode="r").attrs.asdict() == want
