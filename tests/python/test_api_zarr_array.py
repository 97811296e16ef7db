"""zarr-python's Array API on shardwright arrays (issue 13, items 4-6 and 8): attributes,
info and sizes, resize and append, create's zarr-python arguments and create_array,
``a[key] = value`` as a one-shot transaction, open on groups, read-only and Zarr v2.
Each checked against zarr-python reading (or making) the same array."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shardwright as sw
import zarr
import zarr.codecs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_adapter_stores import Counting
from zarr.storage import MemoryStore


def make(tmp_path, name="a.zarr", **kw):
    settings_ = {"shape": (10, 12), "dtype": "uint16", "chunks": (2, 3), "shards": (4, 6)}
    settings_.update(kw)
    return sw.create(tmp_path / name, **settings_)


def shard_files(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("c/**/*") if p.is_file())


# ---- 4: properties and methods -------------------------------------------------------


def test_attrs_are_read_written_and_persisted_where_zarr_python_sees_them(tmp_path):
    a = make(tmp_path, attributes={"units": "nm"})
    assert a.attrs["units"] == "nm" and dict(a.attrs) == {"units": "nm"}
    a.attrs["scale"] = np.float32(0.5)  # numpy scalars become numbers
    a.attrs.update({"axes": ["y", "x"], "n": np.int64(3)})
    del a.attrs["units"]
    want = {"scale": 0.5, "axes": ["y", "x"], "n": 3}
    assert a.attrs.asdict() == want
    assert sw.open(a.path).attrs.asdict() == want
    assert zarr.open_array(a.path, mode="r").attrs.asdict() == want
    a.attrs.put({"only": True})
    assert json.loads((a.path / "zarr.json").read_text())["attributes"] == {"only": True}
    a.attrs.clear()
    assert len(a.attrs) == 0
    with pytest.raises(TypeError, match=r"JSON-serializable.*object"):
        a.attrs["bad"] = object()
    with pytest.raises(TypeError, match="names must be strings"):
        a.attrs.update({1: 2})
    assert a.attrs.asdict() == {}  # a refused change writes nothing


def test_attribute_changes_keep_the_rest_of_zarr_json_and_the_data(tmp_path):
    a = make(tmp_path)
    a[...] = 7
    before = json.loads((a.path / "zarr.json").read_text())
    a.attrs["k"] = "v"
    after = json.loads((a.path / "zarr.json").read_text())
    assert {k: v for k, v in after.items() if k != "attributes"} == {
        k: v for k, v in before.items() if k != "attributes"
    }
    assert (a[...] == 7).all()


def test_sizes_names_and_info_match_zarr_python(tmp_path):
    store = MemoryStore()
    a = sw.create(
        store,
        path="group/raw",
        shape=(10, 12),
        dtype="uint16",
        chunks=(2, 3),
        shards=(4, 6),
        dimension_names=["y", "x"],
    )
    z = zarr.open_array(store, path="group/raw", mode="r")
    assert (a.nchunks, a.nbytes, a.name) == (z.nchunks, z.nbytes, z.name)
    assert a.nshards == 3 * 2 and len(a) == 10
    assert a.dimension_names == ("y", "x") == tuple(z.metadata.dimension_names)
    assert a.compressors == tuple(c.to_dict() for c in z.compressors)
    text = repr(a.info)
    for row in (
        "Shape              : (10, 12)",
        "Shard shape        : (4, 6)",
        "Chunk shape        : (2, 3)",
    ):
        assert row in text
    assert "No. bytes          : 240" in text
    assert make(tmp_path, name="n.zarr").dimension_names is None
    assert make(tmp_path, name="u.zarr", shards=None).nshards == 5 * 4


@pytest.mark.parametrize(
    "codec",
    [
        zarr.codecs.ZstdCodec(level=3),
        zarr.codecs.BloscCodec(cname="zstd", clevel=4, shuffle="shuffle"),
        zarr.codecs.GzipCodec(level=6),
        None,
    ],
)
def test_create_takes_zarr_python_codecs_and_writes_what_zarr_python_writes(tmp_path, codec):
    a = make(tmp_path, compressors=codec)
    zarr.create_array(
        tmp_path / "z.zarr",
        shape=(10, 12),
        dtype="uint16",
        chunks=(2, 3),
        shards=(4, 6),
        compressors=codec,
    )
    inner = lambda m: m["codecs"][0]["configuration"]["codecs"]  # noqa: E731
    ours = inner(a.metadata)
    theirs = inner(json.loads((tmp_path / "z.zarr" / "zarr.json").read_text()))
    assert [c["name"] for c in ours] == [c["name"] for c in theirs]
    if codec is not None:
        assert ours[1]["configuration"] == theirs[1]["configuration"]
    data = np.arange(120, dtype="uint16").reshape(10, 12)
    a[...] = data
    np.testing.assert_array_equal(zarr.open_array(a.path, mode="r")[...], data)


def test_create_refuses_codec_settings_it_would_not_write(tmp_path):
    with pytest.raises(sw.UnsupportedError, match="blosc with cname='lz4'"):
        make(tmp_path, compressors=zarr.codecs.BloscCodec(cname="lz4"))
    with pytest.raises(sw.UnsupportedError, match="one compressor at most"):
        make(tmp_path, compressors=[zarr.codecs.ZstdCodec(), zarr.codecs.GzipCodec()])
    with pytest.raises(sw.UnsupportedError, match="'lz4'"):
        make(tmp_path, compressors={"name": "lz4"})
    with pytest.raises(ValueError, match="not both"):
        make(tmp_path, compressor="zstd", compressors="gzip")
    with pytest.raises(TypeError, match="compressors must be"):
        make(tmp_path, compressors=3)
    assert not (tmp_path / "a.zarr").exists()


def test_create_array_mirrors_zarr_create_array(tmp_path):
    data = np.arange(48, dtype="float32").reshape(6, 8)
    a = sw.create_array(
        tmp_path,
        name="raw",
        data=data,
        chunks=(3, 4),
        attributes={"a": 1},
        dimension_names=["y", "x"],
    )
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "raw", mode="r")[...], data)
    assert a.attrs["a"] == 1 and a.dimension_names == ("y", "x")
    auto = sw.create_array(
        tmp_path / "big.zarr", shape=(4096, 4096), dtype="uint16", shards=(2048, 4096)
    )
    assert np.prod(auto.chunks) * 2 <= 1 << 20
    assert all(s % c == 0 for s, c in zip(auto.shards, auto.chunks, strict=True))
    for bad, match in [
        ({"zarr_format": 2}, "Zarr v3 only"),
        ({"filters": [zarr.codecs.TransposeCodec(order=(1, 0))]}, "filters"),
        ({"order": "F"}, "C order"),
    ]:
        with pytest.raises(sw.UnsupportedError, match=match):
            sw.create_array(tmp_path / "x.zarr", shape=(4, 4), dtype="uint8", **bad)
    with pytest.raises(sw.ShapeError, match="contradicts"):
        sw.create_array(tmp_path / "y.zarr", shape=(5,), data=np.zeros(4))


def test_resize_grows_by_metadata_and_shrinking_clears_what_falls_outside(tmp_path):
    a = make(tmp_path)
    data = np.arange(1, 121, dtype="uint16").reshape(10, 12)
    a[...] = data
    files = shard_files(a.path)
    a.resize(20, 12)  # grow: no shard touched
    assert shard_files(a.path) == files and a.shape == (20, 12)
    want = np.zeros((20, 12), "uint16")
    want[:10] = data
    np.testing.assert_array_equal(a[...], want)
    np.testing.assert_array_equal(zarr.open_array(a.path, mode="r")[...], want)
    a.resize((5, 7))  # shrink: shards wholly outside deleted, edge shards cleared past 5, 7
    assert shard_files(a.path) == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    a.resize((10, 12))
    want = np.zeros((10, 12), "uint16")
    want[:5, :7] = data[:5, :7]
    np.testing.assert_array_equal(a[...], want)  # the fill value, not the old data
    np.testing.assert_array_equal(zarr.open_array(a.path, mode="r")[...], want)
    with pytest.raises(sw.ShapeError, match=r"has 1 dimensions; the array .* has 2"):
        a.resize((3,))
    with pytest.raises(sw.ShapeError, match="negative"):
        a.resize((-1, 3))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 14), st.integers(0, 13), st.integers(1, 250)),
        min_size=1,
        max_size=5,
    )
)
def test_random_resizes_and_writes_equal_a_numpy_model(tmp_path_factory, steps):
    """Each step: write a value everywhere, then resize; the model pads with the fill value
    and crops, as a resize must (zarr-python reads the same)."""
    a = sw.create(
        tmp_path_factory.mktemp("r") / "a.zarr",
        shape=(9, 10),
        dtype="uint8",
        chunks=(2, 3),
        shards=(4, 6),
        fill_value=255,
    )
    model = np.full((9, 10), 255, "uint8")
    for rows, cols, value in steps:
        if model.size:
            a[...] = value
            model[...] = value
        a.resize(rows, cols)
        grown = np.full((rows, cols), 255, "uint8")
        keep = tuple(slice(0, min(n, m)) for n, m in zip((rows, cols), model.shape, strict=True))
        grown[keep] = model[keep]
        model = grown
        np.testing.assert_array_equal(a[...], model)
    np.testing.assert_array_equal(zarr.open_array(a.path, mode="r")[...], model)


def test_append_grows_and_writes_along_an_axis(tmp_path):
    a = sw.create(tmp_path / "t.zarr", shape=(0, 4), dtype="int16", chunks=(2, 4), shards=(4, 4))
    frames = [np.full((3, 4), k, "int16") for k in range(3)]
    for k, frame in enumerate(frames):
        assert a.append(frame) == (3 * (k + 1), 4)
    np.testing.assert_array_equal(a[...], np.concatenate(frames))
    assert a.append(np.ones((9, 2), "int16"), axis=1) == (9, 6)
    np.testing.assert_array_equal(zarr.open_array(a.path, mode="r")[:, 4:], 1)
    with pytest.raises(sw.ShapeError, match="other axes must be"):
        a.append(np.ones((2, 5), "int16"))
    with pytest.raises(sw.BoundsError, match="axis 2"):
        a.append(np.ones((2, 6), "int16"), axis=2)
    with pytest.raises(sw.ShapeError, match="dimensions"):
        a.append(np.ones(6, "int16"))
    assert a.shape == (9, 6)  # refused appends change nothing


# ---- 6: a[key] = value ------------------------------------------------------------------


def test_assignment_is_a_one_shot_transaction_storing_each_shard_once():
    store = Counting(MemoryStore())
    a = sw.create(store, path="a", shape=(10, 12), dtype="uint16", chunks=(2, 3), shards=(4, 6))
    a[0:8, 0:6] = 5  # two whole shards: two puts, no gets
    assert store.shard_calls("set") == ["a/c/0/0", "a/c/1/0"] and store.shard_calls("get") == []
    store.clear()
    a[1, 1:3] = [7, 8]  # part of one shard: merged with what is stored (one get, one set)
    assert store.shard_calls("set") == ["a/c/0/0"] and store.shard_calls("get") == ["a/c/0/0"]
    want = np.zeros((10, 12), "uint16")
    want[0:8, 0:6] = 5
    want[1, 1:3] = [7, 8]
    np.testing.assert_array_equal(a[...], want)
    store.clear()
    with pytest.raises(sw.ShapeError):
        a[0:8, :] = np.ones((3, 3), "uint16")  # the wrong shape: nothing stored
    with pytest.raises(sw.DTypeError):
        a[...] = 1.5  # a fraction does not fit uint16: nothing stored
    assert store.shard_calls("set") == []
    np.testing.assert_array_equal(a[...], want)


# ---- 8: open ------------------------------------------------------------------------------


def test_open_names_the_arrays_of_a_group_and_opens_one_by_path(tmp_path):
    levels = sw.pyramid(
        np.zeros((2, 16, 16), "uint8"), tmp_path / "img.zarr", factors=(1, 2, 2), levels=3
    )
    with pytest.raises(sw.NotAnArrayError, match=r"Zarr group.*'0', '1', '2'.*path='0'"):
        sw.open(tmp_path / "img.zarr")
    assert sw.open(tmp_path / "img.zarr", path="1").shape == levels[1].shape
    zarr.open_group(tmp_path / "empty.zarr", mode="w")
    with pytest.raises(sw.NotAnArrayError, match="holds no arrays"):
        sw.open(tmp_path / "empty.zarr")
    with pytest.raises(sw.ArrayNotFoundError):
        sw.open(tmp_path / "nothing.zarr")
    with pytest.raises(sw.ShardwrightError, match="is a Zarr group, not an array"):
        sw.open(zarr.open_group(tmp_path / "img.zarr").store)


def test_a_zarr_v2_array_says_how_to_convert_it(tmp_path):
    zarr.create_array(tmp_path / "v2.zarr", shape=(4,), dtype="uint8", chunks=(2,), zarr_format=2)
    with pytest.raises(
        sw.NotAnArrayError, match=r"Zarr v2 is not supported for writing.*shardwright copy"
    ):
        sw.open(tmp_path / "v2.zarr")
    copied = sw.copy(tmp_path / "v2.zarr", tmp_path / "v3.zarr")  # what the message says works
    assert copied.shape == (4,)


def test_read_only_refuses_every_write_and_still_reads(tmp_path):
    a = make(tmp_path)
    a[...] = 3
    r = sw.open(a.path, mode="r")
    assert r.read_only and not a.read_only
    attempts = {
        "assignment": lambda: r.__setitem__(0, 1),
        "write_shard": lambda: r.write_shard((0, 0)),
        "transaction": lambda: r.transaction(),
        "map_chunks": lambda: r.map_chunks(lambda c: 0),
        "resize": lambda: r.resize(3, 3),
        "append": lambda: r.append(np.zeros((1, 12), "uint16")),
        "changing attributes": lambda: r.attrs.update(x=1),
    }
    for what, attempt in attempts.items():
        with pytest.raises(sw.ReadOnlyError, match=f"{what}: .*mode='r'"):
            attempt()
    assert (r[...] == 3).all() and r.attrs.asdict() == {} and r.shape == (10, 12)
    with pytest.raises(ValueError, match="mode must be 'r'"):
        sw.open(a.path, mode="w")


def test_zarr_python_spellings_equal_zarr_python(tmp_path):
    data = np.arange(7 * 10, dtype="int32").reshape(7, 10)
    a = sw.create(tmp_path / "a.zarr", shape=(7, 10), dtype="int32", chunks=(2, 3), shards=(4, 6))
    a.set_basic_selection(..., data)
    z = zarr.create_array({}, shape=(7, 10), dtype="int32", chunks=(2, 3), shards=(4, 6))
    z[...] = data
    mask = (data % 3) == 0
    pairs = [
        (a.get_basic_selection(np.s_[1:6:2, -3:]), z.get_basic_selection(np.s_[1:6:2, -3:])),
        (
            a.get_orthogonal_selection(([0, 6], [9, 1])),
            z.get_orthogonal_selection(([0, 6], [9, 1])),
        ),
        (
            a.get_coordinate_selection(([0, 6], [9, 1])),
            z.get_coordinate_selection(([0, 6], [9, 1])),
        ),
        (a.get_mask_selection(mask), z.get_mask_selection(mask)),
    ]
    # blocks are shards, as zarr-python's (3.1 and 3.4) on a sharded array
    for key in [(0, 0), (1, 1), (-1, -1), (slice(0, 2), 1), np.s_[:, 1:], 1, (-2, slice(1, 5))]:
        pairs.append((a.blocks[key], z.blocks[key]))
        pairs.append((a.get_block_selection(key), z.get_block_selection(key)))
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours, theirs)
        assert ours.shape == theirs.shape
    assert a.cdata_shape == z.cdata_shape and a.order == "C" and a.filters == ()
    assert a.serializer == z.serializer.to_dict() and a.basename == "a.zarr"
    with pytest.raises(sw.BoundsError, match="out of bounds for axis 0 with 2 blocks"):
        a.blocks[2]
    with pytest.raises(sw.ShapeError, match="step 1"):
        a.blocks[::2]
    assert a.update_attributes({"k": 1}) is a and sw.open(a.path).attrs["k"] == 1
