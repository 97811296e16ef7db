"""Memory: writing one big shard chunk by chunk stays far below the raw shard size.

One (256, 1024, 1024) uint16 shard is 512 MiB raw, in 8192 inner chunks of 32**3. It is
written from Python chunk by chunk in a child process, which measures its own peak RSS
(``ru_maxrss``, its peak first reset to the current RSS) before the first chunk and after
the commit: the growth must stay under a
quarter of the raw shard (128 MiB). The data is compressible (a smooth ramp plus a little
noise), as real data would be, so the encoded shard is much smaller than the raw one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

MiB = 1024 * 1024
RAW_SHARD = 256 * 1024 * 1024 * 2
LIMIT = RAW_SHARD // 4

CHILD = r"""
import json, resource, sys, tempfile, time
import numpy as np
import shardwright as sw

folder = sys.argv[1]
a = sw.create(folder + "/big.zarr", shape=(256, 1024, 1024), dtype="uint16",
              chunks=(32, 32, 32), shards=(256, 1024, 1024), compressor="zstd")
rng = np.random.default_rng(0)
i, j, k = np.meshgrid(np.arange(32), np.arange(32), np.arange(32), indexing="ij")
base = (i * 7 + j * 3 + k).astype(np.uint16) + (rng.random((32, 32, 32)) < 0.02).astype(np.uint16)
buf = np.empty_like(base)

def offset(c):
    return (c.origin[0] + c.origin[1] // 4 + c.origin[2] // 16) // 8

# Reset the peak RSS to the current RSS (Linux: "5" > /proc/self/clear_refs), so that
# "before" is not an earlier, higher peak (e.g. from the imports) that would hide growth.
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    reset = True
except OSError:
    reset = False
def peak_rss():
    # VmHWM is this process's own peak (reset by clear_refs); ru_maxrss would also carry
    # the parent's peak across fork and exec (pytest's), hiding the growth.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

before = peak_rss()
started = time.perf_counter()
n = 0
with a.write_shard((0, 0, 0)) as w:
    for c in w.inner_chunks():
        np.add(base, offset(c), out=buf)
        w[c] = buf          # copied: buf is reused for the next chunk
        n += 1
seconds = time.perf_counter() - started
after = peak_rss()

# spot checks of the data written (after the measurement)
checks = []
for c in [w_c for idx, w_c in enumerate(a.iter_chunks()) if idx in (0, 1, 4097, 8191)]:
    checks.append(bool(np.array_equal(a[c.slices], base + offset(c))))
print(json.dumps({"before": before, "after": after, "seconds": seconds, "chunks": n,
                  "stats": w.stats, "checks": checks, "reset": reset}))
"""


def test_one_big_shard_in_bounded_memory(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    growth = result["after"] - result["before"]
    stats = result["stats"]
    print(
        f"\npeak RSS growth writing one 512 MiB uint16 shard chunk by chunk: "
        f"{growth / MiB:.1f} MiB (limit {LIMIT / MiB:.0f} MiB); encoded shard "
        f"{stats['bytes_written'] / MiB:.1f} MiB; {result['seconds']:.1f} s; "
        f"peak reset before measuring: {result['reset']}"
    )
    assert result["chunks"] == 8192
    assert stats["puts"] == 1 and stats["gets"] == 0
    assert stats["chunks_written"] == 8192 and stats["chunks_empty"] == 0
    assert stats["bytes_written"] < LIMIT  # compressible data: the encoded shard is small
    assert result["checks"] == [True, True, True, True]
    assert growth < LIMIT, (
        f"peak RSS grew by {growth / MiB:.1f} MiB writing a {RAW_SHARD / MiB:.0f} MiB shard "
        f"(limit {LIMIT / MiB:.0f} MiB, encoded shard {stats['bytes_written'] / MiB:.1f} MiB)"
    )


def test_huge_slot_count_does_not_abort_the_process(tmp_path):
    """A shard with 2**40 inner chunks (valid metadata, absurd size) must give a Python
    error, not abort the interpreter on a failed allocation sized by the metadata. Run in
    a child so that an abort cannot take pytest down."""
    code = f"""
import shardwright as sw
try:
    a = sw.create({str(tmp_path / "h.zarr")!r}, shape=(2**40, 2**20), dtype="u1",
                  chunks=(1, 1), shards=(2**20, 2**20))
    assert a[0, 0] == 0
    with a.write_shard((0, 0)) as w:
        w[sw.Domain((0, 0), (1, 1))] = 1
except (sw.ShardwrightError, MemoryError) as exc:
    print("raised", type(exc).__name__, exc)
else:
    print("wrote")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    # Refused up front: the metadata asks for 2**40 inner chunks in one shard.
    assert proc.stdout.startswith("raised UnsupportedError"), proc.stdout
    assert "inner chunks" in proc.stdout
    assert "PanicException" not in proc.stderr
