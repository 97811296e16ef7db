"""Memory of Array.appender (issue 25): appending 2,048 frames of 512 x 512 uint16 (1 GiB)
grows the writing process's peak RSS by no more than 48 MiB beyond what 128 frames do:
memory is flat in the number of frames (a row of frames, the open slab's encoded bytes
and the slab being stored, never the data appended)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

MiB = 1024 * 1024
MARGIN = 48 * MiB

CHILD = r"""
import json, sys, time
import numpy as np
import shardwright as sw

folder, n = sys.argv[1], int(sys.argv[2])
a = sw.create(folder + "/acq.zarr", shape=(0, 512, 512), dtype="uint16", chunks=(8, 256, 256),
              shards=(64, 512, 512))
ramp = (np.arange(512, dtype=np.uint16)[:, None] * 3 + np.arange(512, dtype=np.uint16))
frame = np.empty((512, 512), np.uint16)

def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = peak_rss()
started = time.perf_counter()
with a.appender(axis=0) as ap:
    for t in range(n):
        np.add(ramp, t, out=frame)
        ap.append(frame)
after = peak_rss()
seconds = time.perf_counter() - started
b = sw.open(folder + "/acq.zarr")
last = b[n - 1]
ok = b.shape == (n, 512, 512) and bool((last == ramp + np.uint16(n - 1)).all())
print(json.dumps({"growth": after - before, "seconds": seconds, "ok": ok}))
"""


def _run(tmp_path, n: int) -> dict:
    folder = tmp_path / str(n)
    folder.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(n)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.heavy
def test_appending_2048_frames_takes_no_more_memory_than_128(tmp_path):
    small = _run(tmp_path, 128)
    large = _run(tmp_path, 2048)
    assert small["ok"] and large["ok"]
    extra = large["growth"] - small["growth"]
    print(
        f"peak RSS growth: 128 frames {small['growth'] / MiB:.1f} MiB, 2048 frames "
        f"{large['growth'] / MiB:.1f} MiB ({large['seconds']:.1f} s)"
    )
    assert extra <= MARGIN, (small, large)
