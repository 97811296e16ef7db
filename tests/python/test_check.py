"""``sw.check`` and ``shardwright check``: an fsck for arrays written by shardwright,
zarr-python or TensorStore.

Every stored shard's index (length, CRC-32C, byte ranges) is verified and every inner chunk
decoded (``quick``: the index only); damage is reported with the shard's key and the
chunk's coordinates; ``repair`` rewrites a damaged shard with the chunks that still decode
(zarr-python then reads them exactly as written, the rest as the fill value). The CLI exits
0 clean, 1 could not run, 3 damage found, 4 all damage repaired. That a repair never
overwrites a shard changed since it was checked is tested in Rust (a store that lets a
"live writer" in between: crates/shardwright/src/check/tests.rs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw

SHAPE = (16, 20)
CHUNKS = (4, 5)
SHARDS = (8, 10)
N_SLOTS = 4
FILL = 7
KEY = "c/0/1"  # the shard damaged; its slot 1 is chunk (0, 3)
CHUNK = (0, 3)


def data() -> np.ndarray:
    return (np.arange(np.prod(SHAPE), dtype="uint16").reshape(SHAPE) % 5000) + 100


def make(tmp_path: Path, producer: str, location: str) -> tuple[sw.Array, np.ndarray]:
    d = data()
    a = sb.make_array(producer, tmp_path / "a.zarr", d, CHUNKS, SHARDS, location, fill_value=FILL)
    return a, d


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Callable[[Path, str, str], tuple[sw.Array, np.ndarray]]:
    """``make``, with each producer's array written once per module and copied."""
    root = tmp_path_factory.mktemp("pristine")
    cache: dict[tuple[str, str], Path] = {}

    def copy(tmp_path: Path, producer: str, location: str) -> tuple[sw.Array, np.ndarray]:
        if (producer, location) not in cache:
            cache[producer, location] = make(root / f"{producer}-{location}", producer, location)[
                0
            ].path
        shutil.copytree(cache[producer, location], tmp_path / "a.zarr")
        return sw.open(tmp_path / "a.zarr"), data()

    return copy


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shardwright", "check", *args], capture_output=True, text=True
    )


def index_at(shard: bytes, location: str) -> tuple[int, int]:
    size = sb.index_nbytes(N_SLOTS)
    return (0, size) if location == "start" else (len(shard) - size, len(shard))


def flip(shard: bytes, at: int) -> bytes:
    b = bytearray(shard)
    b[at] ^= 0x40
    return bytes(b)


def damage(shard: bytes, location: str, how: str) -> bytes:
    lo, _ = index_at(shard, location)
    if how == "truncate":
        return shard[: len(shard) // 2]
    if how == "index_byte":
        return flip(shard, lo + 3)
    if how == "chunk_byte":
        offset, _ = sb.read_index(shard, N_SLOTS, location)[1]
        return flip(shard, offset)  # the zstd frame's magic number
    if how == "past_end":
        entries = sb.read_index(shard, N_SLOTS, location)
        entries[1] = (len(shard) - 10, 100)
        return sb.replace_index(shard, entries, location)
    if how == "garbage":
        return bytes(np.random.default_rng(0).integers(0, 256, 500, dtype="uint8"))
    assert how == "empty"
    return b""


DAMAGES = ["truncate", "index_byte", "chunk_byte", "past_end", "garbage", "empty"]


def test_clean_arrays_of_every_producer_and_index_location(tmp_path, producer, location):
    array, _ = make(tmp_path, producer, location)
    for quick in (False, True):
        report = sw.check(array.path, quick=quick)
        assert report.ok and report.complete, report
        assert (report.shards_total, report.shards_stored, report.chunks_checked) == (4, 4, 16)
        assert report.chunks_decoded == (0 if quick else 16)
    if location == "end":  # the command line once per producer
        assert cli(str(array.path)).returncode == 0


def test_an_index_without_checksum_and_an_unsharded_array_are_clean(tmp_path):
    import zarr

    d = data()
    shards = zarr.codecs.ShardingCodec(chunk_shape=CHUNKS, index_codecs=[zarr.codecs.BytesCodec()])
    z = zarr.create_array(
        str(tmp_path / "n.zarr"),
        shape=SHAPE,
        dtype="uint16",
        chunks=SHARDS,
        serializer=shards,
        compressors=None,
        fill_value=FILL,
    )
    z[...] = d
    assert "crc32c" not in (tmp_path / "n.zarr" / "zarr.json").read_text()
    assert sw.check(tmp_path / "n.zarr").ok
    # no checksum: a range past the end is still found
    path = tmp_path / "n.zarr" / KEY
    shard = path.read_bytes()
    pairs = shard[-16 * N_SLOTS :]
    entries = [tuple(np.frombuffer(pairs[16 * i : 16 * i + 16], "<u8")) for i in range(N_SLOTS)]
    entries[1] = (len(shard) - 10, 100)
    path.write_bytes(shard[: -16 * N_SLOTS] + np.array(entries, "<u8").tobytes())
    report = sw.check(tmp_path / "n.zarr")
    assert [(d.key, d.problems[0].chunk) for d in report.damaged] == [(KEY, CHUNK)]

    z = zarr.create_array(
        str(tmp_path / "u.zarr"), shape=SHAPE, dtype="uint16", chunks=CHUNKS, fill_value=FILL
    )
    z[...] = d
    report = sw.check(tmp_path / "u.zarr")
    assert report.ok and not report.sharded and report.chunks_decoded == 16
    chunk = tmp_path / "u.zarr" / "c" / "2" / "1"
    chunk.write_bytes(flip(chunk.read_bytes(), 0))
    report = sw.check(tmp_path / "u.zarr", repair=True)
    assert [(d.key, d.problems[0].chunk, d.repair) for d in report.damaged] == [
        ("c/2/1", (2, 1), "removed")
    ]
    expected = d.copy()
    expected[8:12, 5:10] = FILL
    np.testing.assert_array_equal(sb.read_zarr(tmp_path / "u.zarr"), expected)


@pytest.mark.parametrize("how", DAMAGES)
def test_each_damage_is_reported_with_its_key_and_chunk(tmp_path, written, producer, location, how):
    array, _ = written(tmp_path, producer, location)
    path = array.path / KEY
    shard = path.read_bytes()
    path.write_bytes(damage(shard, location, how))
    report = sw.check(array.path)
    assert not report.ok
    assert [d.key for d in report.damaged] == [KEY]
    damaged = report.damaged[0]
    assert damaged.shard == (0, 1)
    first = damaged.problems[0]
    if how in ("chunk_byte", "past_end"):
        assert first.chunk == CHUNK, damaged
        assert str(first).startswith("chunk 0,3: ")
        if how == "past_end":
            assert first.message == (
                f"byte range {len(shard) - 10}..{len(shard) + 90} past the end of the "
                f"{len(shard)}-byte shard"
            )
    elif how == "empty":
        assert first.message.startswith("the shard is empty (0 bytes)"), first
        assert damaged.index_unreadable
    elif how in ("index_byte", "garbage") or location == "end":
        assert first.message == "index checksum mismatch (crc32c)", first
    else:  # truncated with the index at the start: the chunks past the cut are out of range
        assert first.chunk is not None and "past the end" in first.message, first
    # quick: index damage found, a chunk's not
    quick = sw.check(array.path, quick=True)
    assert quick.chunks_decoded == 0
    assert quick.ok == (how == "chunk_byte"), quick


def test_the_command_line_reports_and_exits_non_zero(tmp_path):
    array, _ = make(tmp_path, "zarr", "end")
    path = array.path / KEY
    path.write_bytes(damage(path.read_bytes(), "end", "chunk_byte"))
    out = cli(str(array.path), "--quiet")
    assert out.returncode == 3, out.stderr
    assert f"damaged shard {KEY} (" in out.stdout
    assert "  chunk 0,3: " in out.stdout
    assert "check: 4 of 4 shards stored" in out.stdout and "1 damaged" in out.stdout
    quick = cli(str(array.path), "--quick", "--quiet")
    assert quick.returncode == 0, quick.stdout  # the index is fine
    report = json.loads(cli(str(array.path), "--json").stdout)
    assert report["ok"] is False
    assert report["damaged"][0]["key"] == KEY
    assert report["damaged"][0]["problems"][0]["chunk"] == list(CHUNK)
    assert cli(str(tmp_path / "nothing.zarr")).returncode == 1
    fixed = cli(str(array.path), "--repair", "--quiet")
    assert fixed.returncode == 4, fixed.stdout + fixed.stderr
    assert "repaired: 3 chunk(s) kept, 1 lost (now the fill value): 0,3" in fixed.stdout
    assert cli(str(array.path)).returncode == 0


@pytest.mark.parametrize("how", ["chunk_byte", "truncate", "index_byte", "empty"])
def test_repair_keeps_every_good_chunk_for_zarr_python(tmp_path, written, producer, location, how):
    array, original = written(tmp_path, producer, location)
    path = array.path / KEY
    path.write_bytes(damage(path.read_bytes(), location, how))
    other = array.path / "c/1/1"
    other.write_bytes(flip(other.read_bytes(), index_at(other.read_bytes(), location)[1] - 1))
    report = sw.check(array.path, repair=True)
    assert [d.key for d in report.damaged] == [KEY, "c/1/1"]
    assert len(report.repaired) == 2, report
    # a flipped checksum byte: zstd chunks verify themselves, none is lost
    assert report.damaged[1].repair == "rewritten" and report.damaged[1].lost == ()
    lost = {c for _, c in report.lost_chunks}
    if how == "chunk_byte":
        assert lost == {CHUNK}
    if how == "empty":
        assert lost == {(0, 2), (0, 3), (1, 2), (1, 3)}
        assert report.damaged[0].repair == "removed" and not path.exists()
    expected = original.copy()
    for cy, cx in lost:
        expected[cy * 4 : cy * 4 + 4, cx * 5 : cx * 5 + 5] = FILL
    np.testing.assert_array_equal(sb.read_zarr(array.path), expected)
    again = sw.check(array.path)
    assert again.ok, again


def test_targets_progress_and_read_only(tmp_path):
    import zarr

    array, _ = make(tmp_path, "shardwright", "end")
    events = []
    report = sw.check(array, progress=events.append)
    assert report.ok and events and events[-1]["shards_done"] == 4
    assert sw.check(zarr.open_array(str(array.path), mode="r")).ok
    assert sw.check(str(array.path)).ok
    with pytest.raises(sw.ReadOnlyError):
        sw.check(sw.open(array.path, mode="r"), repair=True)
    with pytest.raises(sw.ArrayNotFoundError):
        sw.check(tmp_path / "nothing.zarr")
    path = array.path / KEY
    path.write_bytes(b"")
    report = sw.check(array.path, progress=True)
    assert repr(report) == (
        "CheckReport(ok=False, 4 of 4 shards stored, 12 chunks decoded, damaged=['c/0/1'])"
    )
    assert "damaged shard c/0/1 (0 bytes):" in str(report)

    def stop(event):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sw.check(array.path, progress=stop)
    assert path.read_bytes() == b""


def test_an_object_store_array(s3_bucket, s3_client):
    bucket, options = s3_bucket
    url = f"s3://{bucket}/a.zarr"
    a = sw.create(
        url,
        shape=SHAPE,
        dtype="uint16",
        chunks=CHUNKS,
        shards=SHARDS,
        fill_value=FILL,
        storage_options=options,
    )
    a[...] = data()
    key = f"a.zarr/{KEY}"
    shard = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
    s3_client.put_object(Bucket=bucket, Key=key, Body=damage(shard, "end", "chunk_byte"))
    report = sw.check(url, storage_options=options, repair=True)
    assert [(d.key, d.problems[0].chunk, d.repair) for d in report.damaged] == [
        (key, CHUNK, "rewritten")
    ]
    assert sw.check(url, storage_options=options).ok
    expected = data()
    expected[0:4, 15:20] = FILL
    np.testing.assert_array_equal(sw.open(url, storage_options=options)[...], expected)


def test_crash_debris_is_listed_and_removed_by_a_repair(tmp_path):
    """A temporary file a killed writer left is debris (not damage): listed, exit 0,
    removed by ``repair``; zarr-python reads the array the same before and after."""
    import zarr

    array, d = make(tmp_path, "shardwright", "end")
    stale = array.path / "c" / "0" / ".1.00000000deadbeef.shardwright-tmp"
    stale.write_bytes(b"half a shard")
    report = sw.check(array.path)
    assert report.ok and report.debris == (
        ("c/0/.1.00000000deadbeef.shardwright-tmp", "stale temporary file of a dead writer"),
    )
    out = cli(str(array.path), "--quiet")
    assert out.returncode == 0, out.stderr
    assert "debris c/0/.1.00000000deadbeef.shardwright-tmp: stale temporary file" in out.stdout
    assert "left (--repair removes it)" in out.stdout
    assert stale.exists()
    assert len(sw.check(array.path, repair=True).debris) == 1
    assert not stale.exists() and sw.check(array.path).debris == ()
    np.testing.assert_array_equal(zarr.open_array(str(array.path), mode="r")[...], d)
