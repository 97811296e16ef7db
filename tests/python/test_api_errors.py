"""The Python API: the errors of writing and of opening, and no Rust panic ever reaching
Python."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
from conftest import assert_same

# --------------------------------------------------------------------------------------
# Errors of writing
# --------------------------------------------------------------------------------------


def test_shape_mismatch_names_both_shapes(small):
    with small.write_shard((0, 0)) as w:
        c = next(w.inner_chunks())
        with pytest.raises(sw.ShapeError) as info:
            w[c] = np.zeros((3, 5), dtype="uint16")
        assert isinstance(info.value, ValueError)
        assert "(3, 5)" in str(info.value)
        assert "(4, 4)" in str(info.value)
        with pytest.raises(sw.ShapeError) as info:
            w[c] = np.zeros(16, dtype="uint16")
        assert "(16,)" in str(info.value) and "(4, 4)" in str(info.value)


def test_shape_mismatch_on_a_clipped_chunk(small):
    with small.write_shard((1, 0)) as w:
        c = list(w.inner_chunks())[1]
        assert c.shape == (2, 3)
        with pytest.raises(sw.ShapeError) as info:
            w[c] = np.zeros((4, 4), dtype="uint16")
        assert "(4, 4)" in str(info.value) and "(2, 3)" in str(info.value)


@pytest.mark.parametrize(
    "domain",
    [
        sw.Domain((8, 0), (2, 4)),  # a chunk of the other shard
        sw.Domain((12, 0), (4, 4)),  # beyond the array
        sw.Domain((0, 8), (4, 4)),  # beyond the array's columns
        sw.Domain((6, 0), (4, 4)),  # straddles two shards
    ],
)
def test_domain_outside_the_shard_is_bounds_error(small, domain):
    with small.write_shard((0, 0)) as w:
        with pytest.raises(sw.BoundsError):
            w[domain] = np.zeros(domain.shape, dtype="uint16")
        with pytest.raises(sw.BoundsError):
            w[domain] = 1
        assert w.stats["chunks_written"] == 0


def test_domain_inside_the_shard_that_is_not_an_inner_chunk(small):
    """Any region inside the shard may be written; the rest of the shard keeps its data
    (here: the fill value). A region sticking out of the shard is a BoundsError."""
    with small.write_shard((0, 0)) as w:
        with pytest.raises(sw.BoundsError):
            w[sw.Domain((0, 0), (8, 8))] = 1  # the shard is clipped to 7 columns
        w[sw.Domain((1, 0), (4, 4))] = np.full((4, 4), 5, dtype="uint16")
        w[sw.Domain((5, 4), (2, 2))] = 6
    expected = np.zeros(small.shape, dtype="uint16")
    expected[1:5, 0:4] = 5
    expected[5:7, 4:6] = 6
    assert_same(small[...], expected)


def test_domain_of_wrong_rank(small):
    with small.write_shard((0, 0)) as w:
        with pytest.raises(sw.ShardwrightError):
            w[sw.Domain((0,), (4,))] = np.zeros(4, dtype="uint16")


@pytest.mark.parametrize(
    "index", [(2, 0), (0, 1), (5, 5), (-1, 0), (0, -1), (2**63, 0), (2**64, 0)]
)
def test_shard_index_outside_grid_is_bounds_error(small, index):
    with pytest.raises(sw.BoundsError):
        small.write_shard(index)


@pytest.mark.parametrize("index", [(0,), (0, 0, 0)])
def test_shard_index_of_wrong_rank(small, index):
    with pytest.raises((sw.BoundsError, sw.ShapeError)):
        small.write_shard(index)


@pytest.mark.parametrize(
    "domain",
    [sw.Domain((1, 0), (8, 7)), sw.Domain((0, 0), (8, 8)), sw.Domain((16, 0), (2, 7))],
)
def test_domain_that_is_not_a_shard(small, domain):
    with pytest.raises(sw.BoundsError):
        small.write_shard(domain)


@pytest.mark.parametrize("as_type", [str, Path])
def test_missing_array(tmp_path, as_type):
    for path in [tmp_path / "nothing.zarr", tmp_path]:
        with pytest.raises(FileNotFoundError) as info:
            sw.open(as_type(path))
        assert isinstance(info.value, sw.ShardwrightError)
        assert str(path) in str(info.value)


def _edit_metadata(path: Path, edit) -> None:
    meta = json.loads((path / "zarr.json").read_text())
    edit(meta)
    (path / "zarr.json").write_text(json.dumps(meta))


def test_unknown_inner_codec(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))

    def edit(meta):
        meta["codecs"][0]["configuration"]["codecs"][1] = {"name": "lz4hc", "configuration": {}}

    _edit_metadata(path, edit)
    with pytest.raises(sw.UnsupportedError, match="lz4hc") as info:
        sw.open(path)
    assert isinstance(info.value, NotImplementedError)


def test_unknown_codec_unsharded(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4))
    _edit_metadata(path, lambda m: m["codecs"].append({"name": "lz4hc"}))
    with pytest.raises(sw.UnsupportedError, match="lz4hc"):
        sw.open(path)


def test_unknown_index_codec(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))

    def edit(meta):
        meta["codecs"][0]["configuration"]["index_codecs"][1] = {"name": "adler32"}

    _edit_metadata(path, edit)
    with pytest.raises(sw.UnsupportedError, match="adler32"):
        sw.open(path)


def test_string_data_type_unsupported(tmp_path):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))

    def edit(meta):
        meta["data_type"] = "string"
        meta["fill_value"] = ""

    _edit_metadata(path, edit)
    with pytest.raises(sw.UnsupportedError, match="string"):
        sw.open(path)


def test_create_unsupported_compressor_and_dtype(tmp_path):
    with pytest.raises(sw.UnsupportedError, match="lz4hc"):
        sw.create(tmp_path / "a", shape=(4,), dtype="u1", chunks=(2,), compressor="lz4hc")
    with pytest.raises(sw.UnsupportedError, match="variable-length"):
        sw.create(tmp_path / "b", shape=(4,), dtype=str, chunks=(2,))
    with pytest.raises(sw.UnsupportedError, match="variable-length"):
        sw.create(tmp_path / "c", shape=(4,), dtype=object, chunks=(2,))


# --------------------------------------------------------------------------------------
# No Rust panic ever reaches Python
# --------------------------------------------------------------------------------------


def _is_panic(exc: BaseException) -> bool:
    return type(exc).__name__ == "PanicException" or "panic" in str(exc).lower()


def _hostile_calls(tmp_path: Path):
    """(name, call, expected): ``expected`` is the exception class the call must raise,
    or None when it must succeed."""
    a = sw.create(tmp_path / "h.zarr", shape=(10, 10), dtype="u1", chunks=(2, 2), shards=(4, 4))
    z = sw.create(tmp_path / "z.zarr", shape=(0, 4), dtype="u1", chunks=(2, 2), shards=(2, 2))
    # The largest arrays accepted hold at most 2**64 bytes (here 2**63).
    huge = sw.create(
        tmp_path / "huge.zarr", shape=(2**32, 2**31), dtype="u1", chunks=(1, 1), shards=(4, 4)
    )
    top0, top1 = 2**30 - 1, 2**29 - 1  # the last shard index of ``huge``

    def write(array, index, domain, value):
        with array.write_shard(index) as w:
            w[domain] = value
        return w.stats

    def create(name, **kwargs):
        return sw.create(tmp_path / name, **{"shape": (4,), "dtype": "u1", **kwargs})

    d = sw.Domain
    return [
        ("huge shard index", lambda: a.write_shard((2**64 - 1, 0)), sw.BoundsError),
        ("shard index past u64", lambda: a.write_shard((2**70, 0)), sw.BoundsError),
        ("shard domain past u64", lambda: a.write_shard(d((2**64, 0), (4, 4))), sw.BoundsError),
        ("huge domain", lambda: write(a, (0, 0), d((2**64 - 1, 0), (1, 1)), 1), sw.BoundsError),
        ("domain past u64", lambda: write(a, (0, 0), d((2**64, 0), (1, 1)), 1), sw.BoundsError),
        (
            "overflowing domain",
            lambda: write(a, (0, 0), d((2**63, 0), (2**63, 2)), 1),
            sw.BoundsError,
        ),
        ("huge within", lambda: list(a.iter_shards(d((2**64 - 1, 0), (1, 1)))), None),
        ("within past u64", lambda: list(a.iter_shards(d((2**70, 0), (1, 1)))), None),
        ("overflowing within", lambda: list(a.iter_chunks(d((2**63, 2**63), (2**63, 1)))), None),
        ("empty array shard", lambda: z.write_shard((0, 0)), sw.BoundsError),
        ("empty array read", lambda: z[...], None),
        ("empty array iter", lambda: list(z.iter_chunks()), None),
        ("huge array far read", lambda: huge[2**32 - 1, 2**31 - 2 :], None),
        (
            "huge array write",
            lambda: write(huge, (top0, top1), d((4 * top0, 4 * top1), (1, 1)), 1),
            None,
        ),
        ("huge array iter", lambda: list(huge.iter_shards(d((2**32 - 1, 0), (1, 1)))), None),
        ("huge array past end", lambda: huge[2**32], sw.BoundsError),
        (
            "zero-size data",
            lambda: write(a, (0, 0), d((0, 0), (2, 2)), np.zeros((0, 2), "u1")),
            sw.ShapeError,
        ),
        (
            "wrong itemsize",
            lambda: write(a, (0, 0), d((0, 0), (2, 2)), np.zeros((2, 2), "V1")),
            sw.DTypeError,
        ),
        ("zero chunks", lambda: create("c0", chunks=(0,)), sw.ShardwrightError),
        ("zero shards", lambda: create("s0", chunks=(2,), shards=(0,)), sw.ShardwrightError),
        (
            "shards not multiple",
            lambda: create("s3", chunks=(2,), shards=(3,)),
            sw.ShardwrightError,
        ),
        ("rank mismatch", lambda: create("rm", chunks=(2, 2), shards=(2,)), sw.ShardwrightError),
        ("rank 0", lambda: create("r0", shape=(), chunks=()), sw.UnsupportedError),
        ("rank 9", lambda: create("r9", shape=(1,) * 9, chunks=(1,) * 9), sw.UnsupportedError),
        (
            "bad level",
            lambda: create("lv", chunks=(2,), compressor="gzip", compression_level=99),
            sw.ShardwrightError,
        ),
    ]


@pytest.mark.parametrize("case", range(25))
def test_no_panic_reaches_python(tmp_path, case):
    calls = _hostile_calls(tmp_path)
    assert len(calls) == 25
    name, call, expected = calls[case]
    try:
        call()
    except BaseException as exc:  # PanicException derives from BaseException
        assert not _is_panic(exc), (name, exc)
        assert expected is not None, f"{name}: {type(exc).__name__}: {exc}"
        assert isinstance(exc, expected), f"{name}: {type(exc).__name__}: {exc}"
    else:
        assert expected is None, f"{name}: no {expected.__name__} raised"


def test_arrays_past_2_64_bytes_are_refused(tmp_path):
    """Regression: element counts past 2**64 wrapped and such an array had no shards."""
    with pytest.raises(sw.UnsupportedError, match="2\\^64"):
        sw.create(tmp_path / "x.zarr", shape=(2**62, 2**62), dtype="u1", chunks=(1, 1))
    assert not (tmp_path / "x.zarr").exists()


def test_within_beyond_u64_still_meets_the_right_cells(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(10, 10), dtype="u1", chunks=(2, 2), shards=(4, 4))
    within = sw.Domain((1, 0), (2**64 - 1, 3))  # stop past 2**64
    expected = [c for c in a.iter_chunks() if c.origin[1] < 3]
    assert list(a.iter_chunks(within)) == expected
    assert list(a.iter_shards(within)) == [s for s in a.iter_shards() if s.origin[1] == 0]
    assert list(a.iter_chunks(sw.Domain((9, 9), (2**80, 2**80)))) == [sw.Domain((8, 8), (2, 2))]


def test_chunk_domain_is_not_a_shard(small):
    """A Domain from iter_chunks carries an inner-chunk grid index: write_shard must not
    take that index for a shard index."""
    chunk = list(small.iter_chunks())[2]
    assert chunk.index == (1, 0)
    with pytest.raises(sw.BoundsError):
        small.write_shard(chunk)


HOSTILE_METADATA = {
    "negative shape": lambda m: m.__setitem__("shape", [-1, 8]),
    "float shape": lambda m: m.__setitem__("shape", [1.5, 8]),
    "rank mismatch": lambda m: m.__setitem__("shape", [8]),
    "zero chunk": lambda m: m["chunk_grid"]["configuration"].__setitem__("chunk_shape", [0, 8]),
    "zero inner chunk": lambda m: m["codecs"][0]["configuration"].__setitem__(
        "chunk_shape", [0, 4]
    ),
    "inner not dividing": lambda m: m["codecs"][0]["configuration"].__setitem__(
        "chunk_shape", [3, 4]
    ),
    "no codecs": lambda m: m.pop("codecs"),
    "empty codecs": lambda m: m.__setitem__("codecs", []),
    "codecs a string": lambda m: m.__setitem__("codecs", "zstd"),
    "index middle": lambda m: m["codecs"][0]["configuration"].__setitem__("index_location", "mid"),
    "uint128": lambda m: m.__setitem__("data_type", "uint128"),
    "fill string": lambda m: m.__setitem__("fill_value", "abc"),
    "fill huge": lambda m: m.__setitem__("fill_value", 2**70),
    "fill null": lambda m: m.__setitem__("fill_value", None),
    "zarr v2": lambda m: m.__setitem__("zarr_format", 2),
    "group": lambda m: m.__setitem__("node_type", "group"),
    "rectilinear": lambda m: m.__setitem__("chunk_grid", {"name": "rectilinear"}),
    "storage transformer": lambda m: m.__setitem__("storage_transformers", [{"name": "x"}]),
    "not json": None,
    "json list": [],
}


@pytest.mark.parametrize("name", list(HOSTILE_METADATA))
def test_hostile_metadata_raises_shardwright_errors(tmp_path, name):
    path = tmp_path / "a.zarr"
    sw.create(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    edit = HOSTILE_METADATA[name]
    if edit is None:
        (path / "zarr.json").write_text("{not json")
    elif isinstance(edit, list):
        (path / "zarr.json").write_text("[]")
    else:
        _edit_metadata(path, edit)
    try:
        sw.open(path)
    except sw.ShardwrightError as exc:
        assert not _is_panic(exc), exc
    except BaseException as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
    else:
        raise AssertionError(f"{name}: opened without an error")
