"""Memory of sw.convert (issue 25): a 1 GiB BigTIFF stack (tiled, zstd) converts to a
4-level OME-Zarr image with the process's peak RSS under 400 MiB, and the peak stays flat
as the file grows (a quarter of the stack peaks within 48 MiB of the whole); level 1 is
checked against the mean of the decoded TIFF after the measurement."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import tifffile

MiB = 1024 * 1024
LIMIT = 400 * MiB

CHILD = r"""
import json, sys, time
import shardwright as sw

tif, dest = sys.argv[1], sys.argv[2]

def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

started = time.perf_counter()
levels = sw.convert(tif, dest, levels=4, chunks=(32, 128, 128), shards=(64, 512, 512))
print(json.dumps({"peak": peak_rss(), "seconds": time.perf_counter() - started,
                  "shards": levels.stats["shards_written"],
                  "shapes": [list(a.shape) for a in levels]}))
"""


def write_stack(path, planes: int) -> None:
    """A BigTIFF of ``planes`` 2048² uint16 pages (8 MiB each), written page by page."""
    y, x = np.ogrid[:2048, :2048]
    base = ((3 * x + 5 * y) // 4 + (x * y) % 31).astype("uint16")
    with tifffile.TiffWriter(path, bigtiff=True) as tiff:
        for z in range(planes):
            tiff.write(base + np.uint16(z), tile=(256, 256), compression="zstd", contiguous=False)


def convert(tmp_path, planes: int) -> dict:
    tif = tmp_path / f"stack{planes}.tif"
    write_stack(tif, planes)
    dest = tmp_path / f"stack{planes}.zarr"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tif), str(dest)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["tif"], result["dest"] = tif, dest
    return result


@pytest.mark.heavy
def test_a_1gib_bigtiff_converts_in_bounded_flat_memory(tmp_path):
    small = convert(tmp_path, 32)
    whole = convert(tmp_path, 128)  # 128 pages of 8 MiB: 1 GiB
    print(
        f"\npeak RSS converting a BigTIFF: 0.25 GiB {small['peak'] / MiB:.0f} MiB "
        f"({small['seconds']:.1f} s), 1 GiB {whole['peak'] / MiB:.0f} MiB "
        f"({whole['seconds']:.1f} s); limit {LIMIT / MiB:.0f} MiB"
    )
    assert whole["shapes"] == [[128, 2048, 2048], [64, 1024, 1024], [32, 512, 512], [16, 256, 256]]
    assert whole["peak"] < LIMIT
    assert whole["peak"] - small["peak"] < 48 * MiB
    import shardwright as sw

    level1 = sw.open(whole["dest"] / "1")[10:12]
    planes = tifffile.imread(whole["tif"], key=range(20, 24)).astype("float64")
    mean = planes.reshape(2, 2, 1024, 2, 1024, 2).mean(axis=(1, 3, 5))
    np.testing.assert_array_equal(level1, np.round(mean).astype("uint16"))
