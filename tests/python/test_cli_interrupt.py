"""Ctrl-C (SIGINT) or SIGTERM during ``shardwright pyramid`` (the console script, run in
the Python process): the build stops at the next shard, aborts its uploads, removes its
temporary files, says "interrupted: rerun with --resume" and exits 130; ``--resume`` then
finishes the same pyramid."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr


def levels_of(data: np.ndarray, factors, levels: int) -> list[np.ndarray]:
    out = [data]
    for _ in range(levels - 1):
        out.append(ts.downsample(ts.array(out[-1]), list(factors), "mean").read().result())
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupt") / "src.zarr"
    src = sw.create(
        path,
        shape=(1, 2, 64, 512, 512),
        dtype="uint16",
        chunks=(1, 1, 32, 128, 128),
        shards=(1, 1, 64, 256, 256),
    )

    def value(c: sw.Domain) -> np.ndarray:
        t, ch, z, y, x = np.ogrid[c.slices]
        noise = np.random.default_rng(list(c.origin)).integers(0, 256, c.shape)
        return ((t + ch * 7 + z * 3 + y * 5 + x * 11) % 4001 + noise).astype("uint16")

    src.map_chunks(value)
    return path, np.asarray(src)


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_cli_pyramid_cleans_up_and_resumes(tmp_path, source, signum):
    src, data = source
    dest = tmp_path / "p.zarr"
    args = [sys.executable, "-m", "shardwright", "pyramid", src, dest, "--factors", "1,1,2,2,2"]
    args += ["--levels", "3", "--chunks", "1,1,32,128,128", "--shards", "1,1,64,256,256", "-q"]
    args = [str(a) for a in args]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120

    def stored() -> bool:
        chunks = dest / "0" / "c"
        return chunks.exists() and any(
            p.is_file() and not p.name.startswith(".") for p in chunks.rglob("*")
        )

    while not stored():  # poll for progress: signal once a shard is stored
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted: rerun with --resume" in err and "Traceback" not in err, err
    assert not out
    assert not [p for p in dest.rglob("*") if "shardwright-tmp" in p.name]

    done = subprocess.run([*args, "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "already stored and skipped" in done.stdout
    for k, want in enumerate(levels_of(data, (1, 1, 2, 2, 2), 3)):
        np.testing.assert_array_equal(zarr.open_array(dest / str(k))[...], want, err_msg=str(k))
    assert sw.check(dest).ok
