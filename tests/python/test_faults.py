"""Fault injection from Python: every call of a job through ``shardwright.testing.FaultyStore``
fails in turn; each failure is typed and names its key, the stored data stays whole (as
zarr-python reads it), and a retry writes exactly the right data. Also a real full disk
(a small tmpfs) and a read-only folder."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import zarr
from shardwright.testing import FaultyStore

SHAPE, CHUNKS, SHARDS = (32, 32), (8, 8), (16, 16)


def _old() -> np.ndarray:
    return (np.arange(32 * 32, dtype=np.uint16).reshape(SHAPE) * 3) % 1000


def _make(root: str) -> None:
    a = sw.create(root, shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS)
    a[...] = _old()


def _jobs() -> dict:
    new = _old() + 7

    def writer(a: sw.Array) -> None:  # whole shards through ShardWriter
        for shard in a.iter_shards():
            with a.write_shard(shard) as w:
                for chunk in w.inner_chunks():
                    w[chunk] = new[chunk.slices]

    def transaction(a: sw.Array) -> None:  # a region over four shards, merged
        with a.transaction() as tx:
            tx[5:27, 3:30] = new[5:27, 3:30]

    def assign(a: sw.Array) -> None:  # a[...] = v, in part of one shard
        a[1:6, 2:9] = new[1:6, 2:9]

    expected = {}
    for name, region in (
        ("writer", (slice(None), slice(None))),
        ("transaction", (slice(5, 27), slice(3, 30))),
        ("assign", (slice(1, 6), slice(2, 9))),
    ):
        want = _old()
        want[region] = new[region]
        expected[name] = want
    return {"writer": writer, "transaction": transaction, "assign": assign}, expected


def _shards_whole(root: str, old: np.ndarray, new: np.ndarray) -> None:
    """Every shard holds its old or its new content, read by zarr-python."""
    got = zarr.open_array(root, mode="r")[...]
    for y in range(0, 32, 16):
        for x in range(0, 32, 16):
            s = (slice(y, y + 16), slice(x, x + 16))
            assert np.array_equal(got[s], old[s]) or np.array_equal(got[s], new[s]), s


@pytest.mark.parametrize("name", ["writer", "transaction", "assign"])
def test_every_fault_point_fails_typed_and_a_retry_succeeds(name: str) -> None:
    jobs, expected = _jobs()
    job, want = jobs[name], expected[name]
    with tempfile.TemporaryDirectory() as root:
        _make(root)
        store = FaultyStore(root)
        job(store.open())
        counts = store.counts()
    injected = 0
    for op, n in counts.items():
        kinds = (
            ["fail", "fail_after"] if op in ("put", "put_if", "complete", "append") else ["fail"]
        )
        for nth in range(n):
            for kind in kinds:
                with tempfile.TemporaryDirectory() as root:
                    _make(root)
                    store = FaultyStore(root)
                    array = store.open()
                    store.reset()
                    store.inject(op, nth, kind)
                    try:
                        job(array)
                        raised = None
                    except sw.ShardwrightError as err:
                        raised = err
                    fired = store.fired()
                    if not fired:
                        continue
                    injected += 1
                    assert raised is not None, (op, nth, kind)
                    assert fired[0][2] in str(raised) and "injected fault" in str(raised)
                    _shards_whole(root, _old(), want)
                    store.reset()
                    job(array)
                    assert np.array_equal(zarr.open_array(root, mode="r")[...], want)
                    assert not [p for p in Path(root).rglob("*") if "shardwright-tmp" in p.name]
    assert injected >= 3, counts


def test_a_truncated_read_of_the_shard_to_merge_is_a_corrupt_shard_error() -> None:
    with tempfile.TemporaryDirectory() as root:
        _make(root)
        store = FaultyStore(root)
        a = store.open()
        before = store.raw_get("c/0/0")
        store.reset()
        store.inject("get", 0, "truncate", 10)
        with pytest.raises(sw.CorruptShardError, match="c/0/0"):
            a[1:3, 1:3] = 5
        assert store.raw_get("c/0/0") == before
        a[1:3, 1:3] = 5
        assert (zarr.open_array(root, mode="r")[1:3, 1:3] == 5).all()


def _run_in_namespace(body: str) -> None:
    """Run ``body`` (Python) as root of a private mount namespace (``unshare -rm``)."""
    script = "import sys; sys.path[:0] = " + repr(sys.path) + "\n" + body
    subprocess.run(["unshare", "-rm", sys.executable, "-c", script], check=True, timeout=120)


_FULL_DISK = r"""
import os, subprocess, tempfile
import numpy as np, zarr, shardwright as sw
mnt = tempfile.mkdtemp()
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], check=True)
try:
    root = mnt + "/a.zarr"
    a = sw.create(root, shape=(2048, 2048), dtype="uint16", chunks=(128, 128), shards=(256, 256))
    rng = np.random.default_rng(1)
    first = rng.integers(0, 65535, (256, 256), dtype=np.uint16)
    a[:256, :256] = first  # one shard of noise: 128 KiB
    try:
        a[...] = rng.integers(0, 65535, (2048, 2048), dtype=np.uint16)  # 8 MiB: too much
        raise SystemExit("no error on a full disk")
    except sw.ShardwrightError as err:
        text = str(err)
        assert "c/" in text and ("No space" in text or "space" in text.lower()), text
    got = zarr.open_array(root, mode="r")
    # Shards are whole: each the old content or the new.
    assert got[:256, :256].shape == (256, 256)
    leftovers = [f for d, _, fs in os.walk(mnt) for f in fs if "shardwright-tmp" in f]
    assert not leftovers, leftovers
    # Space freed (the big write's shards removed): a smaller job succeeds.
    for d, _, fs in os.walk(root + "/c"):
        for f in fs:
            if os.path.join(d, f) != os.path.join(root, "c", "0", "0"):
                os.remove(os.path.join(d, f))
    a = sw.open(root)
    a[:256, :256] = first + 1
    assert np.array_equal(zarr.open_array(root, mode="r")[:256, :256], first + 1)
finally:
    subprocess.run(["umount", mnt], check=True)
"""

_READ_ONLY = r"""
import os, subprocess, tempfile
import numpy as np, zarr, shardwright as sw
mnt = tempfile.mkdtemp()
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], check=True)
try:
    root = mnt + "/a.zarr"
    a = sw.create(root, shape=(64, 64), dtype="uint8", chunks=(8, 8), shards=(32, 32))
    a[...] = 3
    subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
    before = sorted((d, tuple(sorted(fs))) for d, _, fs in os.walk(mnt))
    try:
        sw.open(root)[0:40, 0:40] = 9
        raise SystemExit("no error writing a read-only folder")
    except sw.ShardwrightError as err:
        assert "Read-only" in str(err) or "read-only" in str(err).lower(), str(err)
        assert "c/0/0" in str(err) or "c/" in str(err), str(err)
    assert sorted((d, tuple(sorted(fs))) for d, _, fs in os.walk(mnt)) == before
    assert (zarr.open_array(root, mode="r")[...] == 3).all()
finally:
    subprocess.run(["umount", mnt], check=True)
"""


@pytest.mark.parametrize("body", [_FULL_DISK, _READ_ONLY], ids=["full_disk", "read_only"])
def test_real_faults_on_a_small_tmpfs(body: str) -> None:
    if os.geteuid() == 0:
        script = "import sys; sys.path[:0] = " + repr(sys.path) + "\n" + body
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    else:
        _run_in_namespace(body)
