"""Memory: a one-shot ``a[...] = data`` or ``a.append(data)`` of a big array outside any
block is written shard by shard from the caller's array, in memory bounded by the shards
in flight, not by the array.

The data is a (256, 1024, 1024) uint16 array (512 MiB), written into 8 shards of 64 MiB
(inner chunks of 32**3) in a child process, which measures its own peak RSS growth
(``VmHWM``, reset to the current RSS after the data was made) across the one statement:
it must stay under 160 MiB (it was 526 MiB when the assignment staged a transaction).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

MiB = 1024 * 1024
LIMIT = 160 * MiB

CHILD = r"""
import json, sys, time
import numpy as np
import shardwright as sw

folder, mode = sys.argv[1], sys.argv[2]
shape = (256, 1024, 1024)
data = np.empty(shape, dtype=np.uint16)
ramp = np.arange(1024, dtype=np.uint16)[:, None] * 3 + np.arange(1024, dtype=np.uint16)
for z in range(shape[0]):
    np.add(ramp, z * 7, out=data[z])
data[::97, ::89, ::83] = 12345  # a little noise
start = (0, 1024, 1024) if mode == "append" else shape
a = sw.create(folder + "/big.zarr", shape=start, dtype="uint16", chunks=(32, 32, 32),
              shards=(64, 1024, 512), compressor="zstd")

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak RSS is now the current RSS

def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

before = peak_rss()
started = time.perf_counter()
if mode == "append":
    a.append(data)
elif mode == "map_chunks":
    a.map_chunks(lambda c: data[c.slices])
else:
    a[...] = data
seconds = time.perf_counter() - started
after = peak_rss()
b = sw.open(folder + "/big.zarr")
same = b.shape == shape and all(
    np.array_equal(b[z : z + 16], data[z : z + 16]) for z in range(0, 256, 16))
print(json.dumps({"growth": after - before, "seconds": seconds, "same": bool(same)}))
"""


def run_child(folder: str, mode: str) -> dict:
    """Run the write ``mode`` (``assign``, ``append``, ``map_chunks``) in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, folder, mode],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
@pytest.mark.parametrize("mode", ["assign", "append"])
def test_one_shot_write_of_512_mib_in_bounded_memory(tmp_path, mode):
    result = run_child(str(tmp_path), mode)
    print(
        f"\n{mode} of a 512 MiB uint16 array: peak RSS growth {result['growth'] / MiB:.1f} MiB "
        f"(limit {LIMIT / MiB:.0f} MiB), {result['seconds']:.1f} s"
    )
    assert result["same"]
    assert result["growth"] < LIMIT, (
        f"{mode}: peak RSS grew by {result['growth'] / MiB:.1f} MiB writing 512 MiB "
        f"(limit {LIMIT / MiB:.0f} MiB)"
    )
