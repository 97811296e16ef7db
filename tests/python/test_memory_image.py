"""Memory of sw.create_image (issue 24): a 1 GiB uint16 TCZYX level 0 written chunk by
chunk with three levels above it (2x2 in y and x) grows the writing process's peak RSS by
far less than its 400 MiB bound; the levels are checked after the measurement."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

MiB = 1024 * 1024
LIMIT = 400 * MiB

CHILD = r"""
import json, sys, time
import numpy as np
import shardwright as sw

folder = sys.argv[1]
shape, chunks, shards = (2, 2, 128, 1024, 1024), (1, 1, 32, 128, 128), (1, 1, 64, 512, 512)

def calculation(c):
    t, ch, z, y, x = np.ogrid[c.slices]
    return ((3 * x + 5 * y + 7 * z) // 4 + 4000 * ch + 2000 * t + (x * y) % 31).astype("uint16")

def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = peak_rss()
started = time.perf_counter()
with sw.create_image(folder + "/img.ome.zarr", shape=shape, dtype="uint16", chunks=chunks,
                     shards=shards, factors=(1, 1, 1, 2, 2), levels=4, axes="tczyx") as img:
    for shard in img.iter_shards():
        with img.write_shard(shard) as w:
            for c in w.inner_chunks():
                w[c] = calculation(c)
after = peak_rss()
seconds = time.perf_counter() - started

# level 1 against the 2x2 mean of level 0, rounded half to even (after the measurement)
level1 = img.levels[1][0, 1, 100:104]
level0 = img.levels[0][0, 1, 100:104].astype("float64")
mean = level0.reshape(4, 512, 2, 512, 2).mean(axis=(2, 4))
print(json.dumps({"before": before, "after": after, "seconds": seconds,
                  "shards": img.stats["shards_written"],
                  "level1_ok": bool(np.array_equal(level1, np.round(mean).astype("uint16")))}))
"""


@pytest.mark.heavy
def test_a_1gib_image_with_three_levels_in_bounded_memory(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    growth = result["after"] - result["before"]
    print(
        f"\npeak RSS growth of a 1 GiB image with 3 levels above: {growth / MiB:.1f} MiB "
        f"(limit {LIMIT / MiB:.0f} MiB); {result['seconds']:.1f} s"
    )
    assert result["shards"] == [32, 8, 8, 8]
    assert result["level1_ok"]
    assert growth < LIMIT
