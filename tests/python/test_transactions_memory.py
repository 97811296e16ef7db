"""Transactions: the memory limit and early commits.

The 1 GiB stream runs in a child process so its peak RSS can be measured
(``resource.getrusage``); the figure is printed (``pytest -s``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw
from conftest import tree_digest
from transaction_helpers import assert_stored

# --------------------------------------------------------------------------------------
# Memory limit and early commit

FIGURES = re.compile(r"(\d+)")


def test_memory_limit_raises_at_the_crossing_write(tmp_path):
    array = sw.create(
        tmp_path / "m.zarr", shape=(64, 64), dtype="uint16", chunks=(8, 8), shards=(16, 16)
    )
    before = tree_digest(array.path)
    # one element in each of a series of inner chunks: each stages one partial chunk
    probe = array.transaction()
    probe[1, 1] = 5
    per_chunk = probe.staged_memory
    probe.abort()
    assert per_chunk > 0
    limit = 3 * per_chunk + per_chunk // 2
    with pytest.raises(sw.TransactionTooLarge) as info:
        with array.transaction(memory_limit=limit) as tx:
            for k in range(8):
                staged = tx.staged_memory
                try:
                    tx[8 * k + 1, 1] = 5
                except sw.TransactionTooLarge:
                    assert k == 3 and staged <= limit
                    raise
                assert tx.staged_memory <= limit
    err = info.value
    assert isinstance(err, MemoryError) and isinstance(err, sw.ShardwrightError)
    figures = [int(x) for x in FIGURES.findall(str(err))]
    assert limit in figures, str(err)
    assert any(f > limit for f in figures), str(err)
    assert 4 * per_chunk in figures, str(err)
    assert tree_digest(array.path) == before


def test_memory_limit_failed_transaction_commits_nothing(tmp_path):
    """Catching the error inside the block does not help: the transaction is failed,
    further writes raise, and leaving the block raises without storing anything."""
    array = sw.create(
        tmp_path / "m.zarr", shape=(64, 64), dtype="uint16", chunks=(8, 8), shards=(16, 16)
    )
    before = tree_digest(array.path)
    with pytest.raises(sw.TransactionTooLarge):
        with array.transaction(memory_limit=1000) as tx:
            tx[0:16, 0:16] = np.arange(256, dtype="uint16").reshape(16, 16)  # fits
            with pytest.raises(sw.TransactionTooLarge):
                for k in range(64):
                    tx[k, (k * 7) % 64] = 1
            with pytest.raises(sw.TransactionTooLarge):
                tx[0, 0] = 1
    assert tree_digest(array.path) == before


def test_early_commit_stores_complete_shards_at_once(tmp_path):
    array = sw.create(
        tmp_path / "e.zarr", shape=(32, 40), dtype="int32", chunks=(4, 4), shards=(16, 16)
    )
    model = np.zeros((32, 40), "int32")
    with array.transaction(early_commit=True) as tx:
        tx[0:8, 0:16] = 1  # half of shard (0, 0)
        assert not (array.path / "c/0/0").exists()
        tx[8:16, 0:20] = 2  # completes shard (0, 0); meets (0, 1)
        assert (array.path / "c/0/0").exists()  # committed inside the block
        tx[0:16, 32:40] = 3  # the clipped shard (0, 2), complete
        assert (array.path / "c/0/2").exists()
        tx[3:5, 3:5] = 4  # shard (0, 0) again, in part: merged at the end
        model[0:8, 0:16] = 1
        model[8:16, 0:20] = 2
        model[0:16, 32:40] = 3
        model[3:5, 3:5] = 4
        np.testing.assert_array_equal(tx[...], model)
        assert not (array.path / "c/0/1").exists()
    stats = tx.stats
    assert stats["shards_committed_early"] == 2
    assert stats["shards_written"] == 4  # (0,0) early and again, (0,2) early, (0,1)
    assert_stored(array, model)


def test_early_commits_stay_when_the_transaction_fails(tmp_path):
    array = sw.create(
        tmp_path / "e.zarr", shape=(32, 32), dtype="int32", chunks=(4, 4), shards=(16, 16)
    )
    with pytest.raises(ValueError):
        with array.transaction(early_commit=True) as tx:
            tx[0:16, 0:16] = 1  # complete: committed early
            tx[16:20, 0:4] = 2  # staged only
            raise ValueError
    model = np.zeros((32, 32), "int32")
    model[0:16, 0:16] = 1
    assert sorted(str(p.relative_to(array.path)) for p in array.path.rglob("c/*/*")) == ["c/0/0"]
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)


STREAM = r"""
import json, resource, sys, time
import numpy as np
import shardwright as sw

root, early, limit = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
SHAPE, SHARDS, CHUNKS, SLAB = (512, 1024, 1024), (32, 256, 256), (16, 128, 128), 8
a = sw.create(root, shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
# 4 bits of noise per element (compressible ~3x), plus 16 per slab: cheap and checkable
noise = np.random.default_rng(0).integers(0, 16, size=(SLAB,) + SHAPE[1:], dtype=np.uint16)
slab = np.zeros_like(noise)  # touched now: not part of the growth measured

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

base = peak()
out = {"base_rss": base, "rows": 0, "staged_max": 0}
began = time.perf_counter()
try:
    with a.transaction(memory_limit=limit, early_commit=early) as tx:
        for z0 in range(0, SHAPE[0], SLAB):
            np.add(noise, np.uint16(z0 // SLAB * 16), out=slab)
            out["staged_before"] = tx.staged_memory
            tx[z0 : z0 + SLAB, :, :] = slab
            out["rows"] = z0 + SLAB
            out["staged_max"] = max(out["staged_max"], tx.staged_memory)
    out["stats"] = tx.stats
except sw.TransactionTooLarge as err:
    out["error"] = str(err)
    out["error_types"] = [isinstance(err, MemoryError), isinstance(err, sw.ShardwrightError)]
out["seconds"] = time.perf_counter() - began
out["peak_rss"] = peak()
print(json.dumps(out))
"""

GIB = 1 << 30
LIMIT = 64 << 20


def run_stream(tmp_path: Path, early: bool) -> tuple[Path, dict]:
    script = tmp_path / "stream.py"
    script.write_text(STREAM)
    root = tmp_path / f"stream-{int(early)}.zarr"
    proc = subprocess.run(
        [sys.executable, str(script), str(root), str(int(early)), str(LIMIT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_early_commit_streams_1gib_under_64mib_limit(tmp_path):
    root, out = run_stream(tmp_path, early=True)
    assert "error" not in out, out
    assert out["rows"] == 512
    stats = out["stats"]
    n_shards = (512 // 32) * (1024 // 256) ** 2
    assert stats["shards_committed_early"] == n_shards == stats["shards_written"]
    assert stats["puts"] == n_shards and stats["gets"] == 0
    assert out["staged_max"] <= LIMIT
    growth = out["peak_rss"] - out["base_rss"]
    print(
        f"\n[early_commit] 1 GiB streamed in {out['seconds']:.1f} s; peak RSS growth "
        f"{growth / 2**20:.0f} MiB (peak {out['peak_rss'] / 2**20:.0f} MiB), staged at most "
        f"{out['staged_max'] / 2**20:.1f} MiB, {stats['bytes_written'] / 2**20:.0f} MiB stored"
    )
    assert growth < GIB // 4, f"peak RSS grew by {growth / 2**20:.0f} MiB"
    # spot checks with zarr-python: whole planes at slab and chunk boundaries
    noise = np.random.default_rng(0).integers(0, 16, size=(8, 1024, 1024), dtype=np.uint16)
    import zarr

    z = zarr.open_array(str(root), mode="r")
    for plane in (0, 7, 8, 15, 16, 31, 32, 255, 500, 511):
        np.testing.assert_array_equal(z[plane], noise[plane % 8] + np.uint16(plane // 8 * 16))
    np.testing.assert_array_equal(
        z[100:140, 250:260, 1000:1024],
        noise[np.arange(100, 140) % 8][:, 250:260, 1000:1024]
        + (np.arange(100, 140) // 8 * 16).astype(np.uint16)[:, None, None],
    )


def test_same_stream_without_early_commit_is_too_large(tmp_path):
    root, out = run_stream(tmp_path, early=False)
    assert "error" in out, out
    assert out["error_types"] == [True, True]
    assert str(LIMIT) in out["error"]
    assert out["staged_before"] <= LIMIT  # the write that crossed the limit raised
    assert out["rows"] < 512
    print(f"\n[early_commit] without early commit: TransactionTooLarge after {out['rows']} rows")
    # nothing stored: the array's folder holds its metadata only
    assert sorted(p.name for p in root.rglob("*")) == ["zarr.json"]
