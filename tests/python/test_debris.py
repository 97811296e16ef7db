"""Crash debris: a long job killed with SIGKILL again and again, and resumed each time,
does not accumulate the hidden temporary files of the filesystem store.

A child process writes every missing shard of an array (two threads, whole shards of
known values) and is killed after a random delay, mid-commit; the next child reopens
the array and writes the shards still missing, as a resumed job would. A kill leaves the
temporary file of each upload in flight (``.NAME.RANDOM.shardwright-tmp``, locked while
its writer lived); the first upload of the next child into a folder removes the stale
ones there (their locks are free). After a last child that runs to the end, no
temporary file is left and zarr-python reads exactly the values written.

Before the clean-up existed, the same job left every kill's temporaries behind: 30 kills
left 21 files at the end (the ``[debris]`` line); now at most 2 are there at once (the
last kill's) and none at the end.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw

CHUNKS = (16, 16)
SHARDS = (32, 32)
DTYPE = "uint32"

CHILD = r"""
import os, sys, threading
from pathlib import Path
import numpy as np
import shardwright as sw

root = Path(sys.argv[1])
a = sw.open(root)
width = a.shape[1]
todo = [s for s in a.iter_shards()
        if not (root / "c" / "/".join(map(str, s.index))).exists()]

def values(d):
    r, c = d.slices
    rows = np.arange(r.start, r.stop, dtype=np.uint32)
    cols = np.arange(c.start, c.stop, dtype=np.uint32)
    return np.add.outer(rows * np.uint32(width), cols)

def fail(args):
    print(args.exc_type.__name__, args.exc_value, file=sys.stderr, flush=True)
    os._exit(1)

threading.excepthook = fail

def loop(shards):
    for s in shards:
        with a.write_shard(s) as w:
            for c in w.inner_chunks():
                w[c] = values(c)

threads = [threading.Thread(target=loop, args=(todo[k::2],)) for k in range(2)]
print("ready", len(todo), flush=True)
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done", flush=True)
"""


def _expected(shape: tuple[int, int]) -> np.ndarray:
    rows = np.arange(shape[0], dtype=np.uint32)
    cols = np.arange(shape[1], dtype=np.uint32)
    return np.add.outer(rows * np.uint32(shape[1]), cols)


def _run_job(tmp_path, shape: tuple[int, int], kills: int, delay: tuple[float, float]):
    root = tmp_path / "job.zarr"
    sw.create(root, shape=shape, dtype=DTYPE, chunks=CHUNKS, shards=SHARDS)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rnd = random.Random(2024)
    seen: set = set()
    after_kill: list[int] = []
    began = time.monotonic()

    def child() -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = proc.stdout.readline().split()
        assert line and line[0] == "ready", proc.stderr.read()
        return proc

    for kill in range(kills):
        proc = child()
        time.sleep(rnd.uniform(*delay))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode == 0:  # a late resume stored its last shards before the kill
            break
        assert proc.returncode == -signal.SIGKILL, f"kill {kill}: {proc.returncode}"
        leftovers = sb.temp_leftovers(root)
        seen.update(leftovers)
        after_kill.append(len(leftovers))

    # The resumed job runs to its end.
    proc = child()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "done" in out, err[-2000:]
    remaining = sb.temp_leftovers(root)
    elapsed = time.monotonic() - began
    print(
        f"\n[debris] {kills} kills in {elapsed:.1f} s: {len(seen)} temporary files left by "
        f"kills in all, at most {max(after_kill, default=0)} at once; {len(remaining)} at the end"
    )
    assert remaining == [], remaining
    # Every temporary file a kill left was the debris of one upload in flight (two
    # threads): none accumulated from kill to kill.
    assert max(after_kill, default=0) <= 2 + 2, after_kill
    keys = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert keys == {"zarr.json"} | {sb.shard_key(s) for s in sw.open(root).iter_shards()}
    np.testing.assert_array_equal(sb.read_zarr(root), _expected(shape))


def test_a_killed_and_resumed_job_leaves_no_temporary_files(tmp_path):
    _run_job(tmp_path, shape=(1024, 512), kills=5, delay=(0.01, 0.06))


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_thirty_kills_and_resumes_leave_no_temporary_files(tmp_path):
    _run_job(tmp_path, shape=(4096, 1024), kills=30, delay=(0.0, 0.15))
