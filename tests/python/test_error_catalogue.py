"""docs/errors.md, checked: every Python exception class, every Rust error variant (its
example message against its format string) and every catalogue id in the doc is checked
against the code, and the code against the doc, so neither can drift from the other; and
the catalogue's bad inputs that need no server or special filesystem are made here (the
others in test_error_catalogue_io.py), each raising the class the doc names with a message
matching the doc's."""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import zarr
from error_doc import CASES, ENUMS, RUST, TABLES, array, expect, expect_none, template, variants
from shardwright import _cli, _errors

# --------------------------------------------------------------------------------------
# the doc against the code
# --------------------------------------------------------------------------------------


def test_the_catalogue_and_these_tests_list_the_same_cases():
    assert len(CASES) == len(TABLES["Catalogue of bad inputs"]), "duplicate ids"
    assert len([c for c in CASES.values() if c["raises"] != "none"]) >= 25
    source = "".join(
        p.read_text(encoding="utf-8")
        for p in Path(__file__).parent.glob("test_error_catalogue*.py")
    )
    used = set(re.findall(r'expect(?:_none|_cli)?\(\s*"([a-z0-9-]+)"', source))
    used |= {k for d in (CORRUPTIONS, EDITS) for k in d}
    assert used == set(CASES), (
        f"in the doc only: {sorted(set(CASES) - used)}; tested only: {sorted(used - set(CASES))}"
    )
    for case in CASES.values():
        assert case["input"] and case["fix"], case["id"]
        assert case["raises"] == "none" or case["message"] not in ("", "—"), case["id"]


def test_every_python_exception_class_is_documented_with_its_builtin_base():
    rows = TABLES["Python exceptions"]
    documented = {row["class"] for row in rows}
    defined = {
        name
        for name, value in vars(_errors).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    assert documented == defined
    for row in rows:
        cls = getattr(sw, row["class"])
        base = getattr(builtins, row["builtin base"].split()[0].strip("`"))
        assert issubclass(cls, base) and issubclass(cls, sw.ShardwrightError), row["class"]
        assert row["when"] and row["example message"] and row["what to do"], row["class"]


@pytest.mark.parametrize("enum", sorted(ENUMS))
def test_every_rust_error_variant_is_documented_with_a_message_its_format_makes(enum):
    found = variants(enum, RUST / ENUMS[enum])
    title = "shardwright::Error" if enum == "Error" else enum
    rows = {row["variant"]: row for row in TABLES[title]}
    assert set(rows) == {f"{enum}::{v}" for v in found}
    for variant, fmt in found.items():
        row = rows[f"{enum}::{variant}"]
        assert row["Python class"] and row["when"] and row["what to do"], variant
        example = row["example message"]
        if fmt is None:
            assert example.startswith("see "), (variant, example)
        else:
            assert template(fmt).fullmatch(example), (variant, fmt, example)


def test_the_alloc_error_example_is_what_it_prints():
    text = (RUST / "buffer.rs").read_text(encoding="utf-8")
    fmt = re.search(r'#\[error\("([^"]*)"', text)
    assert fmt
    (row,) = TABLES["AllocError"]
    assert template(fmt.group(1)).fullmatch(row["example message"])


def test_the_cli_exit_statuses_are_the_documented_ones(capfd):
    """0, 1 and 2 are every command's statuses (1 and 2 are made by the catalogue's cli
    cases, in this process), 3 and 4 ``check``'s (made by tests/python/test_check.py), 130
    an interrupted command's (made by tests/python/test_cli_interrupt.py), 141 a closed
    stdout's (made here); the console script's process exits with what ``main`` returns."""
    statuses = {row["status"] for row in TABLES["The command line: exit statuses"]}
    assert statuses == {"0", "1", "2", "3", "4", "130", "141"}
    assert _cli.main(["--version"]) == 0
    assert capfd.readouterr().out.startswith("shardwright ")
    run = subprocess.run([sys.executable, "-m", "shardwright", "nope"], capture_output=True)
    assert run.returncode == 2, run.stderr
    read, write = os.pipe()
    os.close(read)  # the reader went away: the first line written fails (EPIPE)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "shardwright", "--version"], stdout=write, stderr=subprocess.PIPE
        )
    finally:
        os.close(write)
    assert run.returncode == 141 and b"panic" not in run.stderr, run.stderr


# --------------------------------------------------------------------------------------
# the bad inputs: shapes, dtypes, bounds
# --------------------------------------------------------------------------------------


@pytest.fixture
def a(tmp_path: Path) -> sw.Array:
    return array(tmp_path)


def make(tmp_path: Path, **settings) -> Callable[[], sw.Array]:
    """``sw.create`` of ``a``'s settings updated by ``settings``, not yet called."""
    args = {"shape": (10, 7), "dtype": "uint16", "chunks": (4, 4), "shards": (8, 8)}
    args.update(settings)
    return lambda: sw.create(tmp_path / f"{uuid.uuid4().hex[:8]}.zarr", **args)


def test_shapes(a):
    with a.write_shard((0, 0)) as w:
        chunk = next(w.inner_chunks())
        with expect("shape-data"):
            w[chunk] = np.zeros((3, 5), "uint16")
        with expect("shape-rank"):
            w[sw.Domain((0,), (4,))] = 1
        with expect("dtype-cast"):
            w[chunk] = np.full((4, 4), 0.5)
    with a.transaction() as tx, expect("shape-rank-tx"):
        tx[sw.Domain((0,), (4,))] = 1
    with expect("shape-ragged-list"):
        a[0:2, 0:2] = [[1, 2], [3]]
    with expect("shape-resize-rank"):
        a.resize((4,))
    assert not Path(a.path, "c").exists()  # nothing stored
    Path(a.path, "shardwright-resize.json").write_text("{}")
    with expect("resize-record-damaged"):
        a.resize((4, 7))
    assert sw.open(a.path).shape == (10, 7)


def test_values_that_do_not_fit(a, tmp_path):
    with expect("dtype-overflow"):
        a[0, 0] = 70000
    with expect("dtype-string"):
        a[0, 0] = "abc"
    with expect("dtype-unsupported"):
        make(tmp_path, dtype=str)()
    with expect("fill-overflow"):
        make(tmp_path, dtype="uint8", fill_value=300)()
    with expect("fill-fraction"):
        make(tmp_path, fill_value=1.5)()


def test_bounds(a):
    with expect("shard-out-of-grid"):
        a.write_shard((2, 0))
    with expect("shard-negative"):
        a.write_shard((-1, 0))
    with expect("shard-rank"):
        a.write_shard((0,))
    with a.write_shard((0, 0)) as w, expect("region-outside-shard"):
        w[sw.Domain((8, 0), (2, 4))] = 1
    with a.transaction() as tx, expect("region-outside-array"):
        tx[sw.Domain((8, 0), (4, 4))] = 1
    with expect("index-out-of-bounds"):
        a[20]
    with expect("too-many-indices"):
        a[1, 2, 3]
    with expect("float-index"):
        a[1.5]
    assert not Path(a.path, "c").exists()


def test_inputs_that_raise_nothing(a):
    expect_none("slice-clipped")
    a[8:12] = 1
    assert a[8:10].tolist() == [[1] * 7] * 2 and a[7].tolist() == [0] * 7
    expect_none("chunk-twice")
    with a.write_shard((0, 0)) as w:
        chunk = next(w.inner_chunks())
        w[chunk] = 1
        w[chunk] = 2
    assert w.stats["chunks_written"] == 1 and (a[chunk.slices] == 2).all()


# --------------------------------------------------------------------------------------
# codecs and the settings of create
# --------------------------------------------------------------------------------------


def test_codecs(tmp_path):
    with expect("codec-unknown"):
        make(tmp_path, compressor="lz4")()
    with expect("codec-settings"):
        make(tmp_path, compressors=zarr.codecs.BloscCodec(cname="lz4"))()
    with expect("codec-two"):
        make(tmp_path, compressors=[zarr.codecs.ZstdCodec(), zarr.codecs.GzipCodec()])()
    with expect("codec-level"):
        make(tmp_path, compressor="zstd", compression_level=99)()


def test_create_settings(a, tmp_path):
    with expect("chunks-not-dividing"):
        make(tmp_path, chunks=(3, 3))()
    with expect("chunks-zero"):
        make(tmp_path, chunks=(0, 4))()
    with expect("chunks-rank"):
        make(tmp_path, chunks=(4,))()
    with expect("shape-negative"):
        make(tmp_path, shape=(-1, 7))()
    with expect("dimension-names"):
        make(tmp_path, shape=(4, 4), dimension_names=("y",))()
    with expect("index-location"):
        make(tmp_path, index_location="middle")()
    with expect("attributes-nan"):
        make(tmp_path, attributes={"x": float("nan")})()
    with expect("array-exists"):
        sw.create(a.path, shape=(2,), dtype="uint8", chunks=(2,))
    with expect("chunk-too-large"):
        make(tmp_path, shape=(2**40,), dtype="uint8", chunks=(2**40,), shards=None)()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zarr"]  # nothing made


# --------------------------------------------------------------------------------------
# corrupt shards
# --------------------------------------------------------------------------------------

CORRUPTIONS: dict[str, tuple[Callable[[bytes], bytes], Callable[[sw.Array], object]]] = {
    "corrupt-truncated": (lambda b: b[: len(b) // 2], lambda a: a[...]),
    "corrupt-index": (lambda b: b[:-8] + bytes(8), lambda a: a.__setitem__((0, 0), 1)),
    "corrupt-too-short": (lambda b: b"xx", lambda a: a[...]),
    "corrupt-chunk": (lambda b: b"\xff" * 20 + b[20:], lambda a: a[...]),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_shards(a, case):
    damage, use = CORRUPTIONS[case]
    a[...] = np.arange(70, dtype="uint16").reshape(10, 7)
    shard = Path(a.path, "c", "0", "0")
    shard.write_bytes(damage(shard.read_bytes()))
    damaged = shard.read_bytes()
    with expect(case):
        use(a)
    assert shard.read_bytes() == damaged  # a failed merge stored nothing


# --------------------------------------------------------------------------------------
# zarr.json edited by hand
# --------------------------------------------------------------------------------------

_SHARDING = {
    "name": "sharding_indexed",
    "configuration": {
        "chunk_shape": [3, 3],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "crc32c"},
        ],
    },
}
EDITS: dict[str, Callable[[dict], object]] = {
    "json-not-json": lambda m: "{not json",
    "json-zarr-format": lambda m: {**m, "zarr_format": 2},
    "json-shape-rank": lambda m: {**m, "shape": [10]},
    "json-negative-shape": lambda m: {**m, "shape": [-1, 7]},
    "json-data-type": lambda m: {**m, "data_type": "uint17"},
    "json-chunks-not-dividing": lambda m: {**m, "codecs": [_SHARDING]},
    "json-codec": lambda m: {
        **m,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "lz4"}],
    },
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_zarr_json_edited_into_nonsense(a, case):
    metadata = Path(a.path, "zarr.json")
    edited = EDITS[case](json.loads(metadata.read_text()))
    metadata.write_text(edited if isinstance(edited, str) else json.dumps(edited))
    with expect(case):
        sw.open(a.path)


# --------------------------------------------------------------------------------------
# writers and transactions used wrongly, memory
# --------------------------------------------------------------------------------------


def test_closed_writers_and_transactions(a, tmp_path):
    with a.write_shard((0, 0)) as w:
        chunk = next(w.inner_chunks())
    with expect("writer-after-commit"):
        w[chunk] = 1
    with a.transaction() as tx:
        tx[0, 0] = 1
    with expect("tx-after-commit"):
        tx[0, 0] = 2
    tx = a.transaction()
    tx.abort()
    with expect("tx-after-abort"):
        tx[0, 0] = 1
    with expect("tx-memory-limit"):
        a.transaction(memory_limit=100)[...] = 5
    assert a[0, 0] == 1
    huge = sw.create(
        tmp_path / "h.zarr", shape=(2**50,), dtype="uint8", chunks=(2**20,), shards=(2**30,)
    )
    with expect("read-too-large"):
        huge[:]


def test_mismatched_async_use(a):
    bad = np.zeros((3, 3), "uint16")

    async def unseen() -> None:
        async with a.write_shard((0, 0)) as w:
            w.write_async(sw.Domain((0, 0), (4, 4)), bad)  # never awaited
            await asyncio.sleep(0.05)

    async def awaited() -> None:
        async with a.write_shard((0, 0)) as w:
            with expect("async-awaited-failure"):
                await w.write_async(sw.Domain((0, 0), (4, 4)), bad)
            await w.write_async(sw.Domain((0, 0), (4, 4)), 5)

    with pytest.warns(RuntimeWarning, match="never awaited"), expect("async-unseen-failure"):
        asyncio.run(unseen())
    assert a[0, 0] == 0
    asyncio.run(awaited())
    assert a[0, 0] == 5
