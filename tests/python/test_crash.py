"""Crash safety: a writer killed with SIGKILL at any instant leaves every shard either as
it was or as one of the writer's commits made it — never torn.

A child process writes the shards of a small array in an endless loop, two threads with
two shards each, alternating whole-shard writes and partial merges of random unaligned
regions. Every commit of shard ``s`` writes a recognisable generation: its elements are
``generation << 12 | noise`` with noise drawn from a seed known to the test, so the test
replays each shard's sequence of writes on a numpy model. The child is killed after a
random delay (0-300 ms after it is ready); then every shard, read by zarr-python, must
equal the model after some number of that shard's writes (the ones committed). The next
child continues each shard's sequence from there.

What a kill may leave: the hidden temporary files of the filesystem store
(``.NAME.RANDOM.shardwright-tmp`` beside the shard) of the uploads in flight, never a file
under a chunk key; zarr-python does not take them for data. They do not accumulate: the
next child's first upload into a folder removes the stale ones there (their writer's
``flock`` is free), so after any kill at most the last child's are left (one per writer
thread), and a final sweep leaves none. Before that clean-up, 30 kills left 15 files.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw

SHAPE = (90, 96)  # the lower shards are clipped (rows 48..90)
CHUNKS = (16, 16)
SHARDS = (48, 48)
DTYPE = "uint32"
KILLS = 30
TEMP_NAME = re.compile(r"\.\d+\.[0-9a-f]{16}\.shardwright-tmp")

# Shared by the child and the test: the j-th write of shard (i, k).
PLAN = r"""
import numpy as np

SHAPE, SHARDS = (90, 96), (48, 48)

def shard_box(s):
    lo = [i * n for i, n in zip(s, SHARDS)]
    hi = [min(l + n, m) for l, n, m in zip(lo, SHARDS, SHAPE)]
    return lo, hi

def plan(s, j):
    '''(kind, [(key, data)]) of write j of shard s; kind is "whole" or "partial".'''
    rng = np.random.default_rng([s[0], s[1], j, 4242])
    gen = j + 1
    lo, hi = shard_box(s)
    if rng.random() < 0.4:
        shape = tuple(h - l for l, h in zip(lo, hi))
        data = (gen << 12) | rng.integers(0, 4096, size=shape, dtype=np.uint32)
        return "whole", [(tuple(slice(l, h) for l, h in zip(lo, hi)), data)]
    writes = []
    for _ in range(int(rng.integers(1, 3))):
        key = []
        for l, h in zip(lo, hi):
            a = int(rng.integers(l, h))
            b = int(rng.integers(a + 1, h + 1))
            key.append(slice(a, b))
        shape = tuple(k.stop - k.start for k in key)
        data = (gen << 12) | rng.integers(0, 4096, size=shape, dtype=np.uint32)
        writes.append((tuple(key), data))
    return "partial", writes
"""

CHILD = r"""
import json, sys, threading
import numpy as np
import shardwright as sw

exec(sys.argv[3])
a = sw.open(sys.argv[1])
start = {tuple(json.loads(k)): v for k, v in json.loads(sys.argv[2]).items()}
groups = [[(0, 0), (1, 1)], [(0, 1), (1, 0)]]

def loop(shards):
    j = 0
    while True:
        for s in shards:
            kind, writes = plan(s, start[s] + j)
            with a.write_shard(s) as w:
                if kind == "whole":
                    (key, data), = writes
                    for c in w.inner_chunks():
                        w[c] = data[tuple(slice(x.start - k.start, x.stop - k.start)
                                          for x, k in zip(c.slices, key))]
                else:
                    for key, data in writes:
                        w[key] = data
        j += 1

threads = [threading.Thread(target=loop, args=(g,), daemon=True) for g in groups]
print("ready", flush=True)
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_sigkill_never_tears_a_shard(tmp_path):
    ns: dict = {}
    exec(PLAN, ns)
    plan, shard_box = ns["plan"], ns["shard_box"]

    root = tmp_path / "a.zarr"
    array = sw.create(root, shape=SHAPE, dtype=DTYPE, chunks=CHUNKS, shards=SHARDS)
    model = np.zeros(SHAPE, dtype=DTYPE)
    shards = [s.index for s in array.iter_shards()]
    start = dict.fromkeys(shards, 0)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rnd = random.Random(1234)
    began = time.monotonic()
    commits, leftovers_seen, max_leftovers = 0, set(), 0

    import zarr

    for kill in range(KILLS):
        proc = subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(root),
                json.dumps({json.dumps(list(s)): start[s] for s in shards}),
                PLAN,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(rnd.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-2000:]
        proc.stdout.close()
        proc.stderr.close()

        # Every shard reads without error and equals the model after some prefix of its
        # writes; nothing else is consistent with a torn or half-merged shard.
        z = zarr.open_array(str(root), mode="r")
        for s in shards:
            lo, hi = shard_box(s)
            box = tuple(slice(a, b) for a, b in zip(lo, hi))
            actual = np.asarray(z[box])
            current = model[box].copy()
            n = 0
            while not np.array_equal(actual, current):
                kind, writes = plan(s, start[s] + n)
                for key, data in writes:
                    local = tuple(
                        slice(k.start - b.start, k.stop - b.start) for k, b in zip(key, box)
                    )
                    current[local] = data
                n += 1
                assert n < 5000, (
                    f"kill {kill} ({kind} write): shard {s} matches no state of its writes "
                    f"{start[s]}..{start[s] + n} (generations seen: "
                    f"{sorted(set((actual >> 12).ravel().tolist()))[:20]})"
                )
            model[box] = current
            start[s] += n
            commits += n
        np.testing.assert_array_equal(sw.open(root)[...], model)

        # Leftovers: only hidden temp files beside the shards, never a chunk key.
        leftovers = sb.temp_leftovers(root)
        for p in leftovers:
            assert TEMP_NAME.fullmatch(p.name), p
            assert p.parent.relative_to(root).parts[0] == "c"
        leftovers_seen.update(leftovers)
        max_leftovers = max(max_leftovers, len(leftovers))
        # The last child's uploads in flight (one per thread), and perhaps those of the one
        # before if this child was killed before its first upload into their folder.
        assert len(leftovers) <= 4, leftovers
        files = [p for p in root.rglob("*") if p.is_file() and p.name != "zarr.json"]
        keys = {str(p.relative_to(root)) for p in files} - {
            str(p.relative_to(root)) for p in leftovers
        }
        assert keys <= {sb.shard_key(s) for s in shards}, keys
        # zarr-python counts the inner chunks of the shards it finds: the temp files
        # are not taken for shards.
        assert z.nchunks_initialized == len(keys) * 9

    elapsed = time.monotonic() - began
    # zarr-python and TensorStore read the final state, temp files and all.
    np.testing.assert_array_equal(sb.read_zarr(root), model)
    np.testing.assert_array_equal(sb.read_ts(root), model)
    # A resumed writer sweeps the folders it writes to: one more commit per folder.
    final = sw.open(root)
    for s in ((0, 0), (1, 0)):
        corner = tuple(slice(lo, lo + 1) for lo in shard_box(s)[0])
        final[corner] = model[corner]
    remaining = sb.temp_leftovers(root)
    print(
        f"\n[crash] {KILLS} kills in {elapsed:.1f} s, {commits} commits verified, "
        f"{len(leftovers_seen)} temp files left over in all ({len(remaining)} at the end, "
        f"at most {max_leftovers} at once)"
    )
    assert commits > 0
    assert remaining == [], remaining
