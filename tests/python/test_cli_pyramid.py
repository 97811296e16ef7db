"""The command line: `shardwright pyramid`, `copy` and `info` on Zarr v2 and v3 arrays and
OME-Zarr images; bad input exits non-zero with the message on stderr and writes nothing; a
killed `pyramid` finishes with `--resume`."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shardwright", *map(str, args)], capture_output=True, text=True
    )


def levels_of(data: np.ndarray, factors, levels: int) -> list[np.ndarray]:
    out = [data]
    for _ in range(levels - 1):
        out.append(ts.downsample(ts.array(out[-1]), list(factors), "mean").read().result())
    return out


@pytest.fixture
def source(tmp_path):
    data = np.random.default_rng(7).integers(1, 4000, (2, 40, 70, 90), dtype="uint16")
    z = zarr.create_array(
        tmp_path / "v2.zarr",
        shape=data.shape,
        dtype="uint16",
        chunks=(1, 16, 32, 32),
        zarr_format=2,
    )
    z[...] = data
    return tmp_path / "v2.zarr", data


def test_copy_a_zarr_v2_array_then_pyramid_then_info(tmp_path, source):
    src, data = source
    out = cli("copy", src, tmp_path / "c.zarr", "--chunks", "1,8,16,16", "--shards", "1,16,32,32")
    assert out.returncode == 0, out.stderr
    assert "copy: 1 level(s)" in out.stdout and "MiB/s" in out.stdout
    copied = sw.open(tmp_path / "c.zarr")
    assert (copied.chunks, copied.shards) == ((1, 8, 16, 16), (1, 16, 32, 32))
    np.testing.assert_array_equal(np.asarray(copied), data)

    out = cli(
        "pyramid",
        tmp_path / "c.zarr",
        tmp_path / "p.zarr",
        "--factors",
        "1,2,2,2",
        "--levels",
        "3",
        "--chunks",
        "1,8,16,16",
        "--shards",
        "1,16,32,32",
        "--axes",
        "c,z,y,x",
    )
    assert out.returncode == 0, out.stderr
    assert "pyramid: 3 level(s)" in out.stdout and "peak memory" in out.stdout
    for k, want in enumerate(levels_of(data, (1, 2, 2, 2), 3)):
        np.testing.assert_array_equal(zarr.open_array(tmp_path / "p.zarr" / str(k))[...], want)

    out = cli("info", tmp_path / "p.zarr")
    assert out.returncode == 0, out.stderr
    assert "OME-Zarr 0.5" in out.stdout and "3 levels" in out.stdout
    assert out.stdout.count("stored:") == 3 and "empty (the fill value)" in out.stdout
    assert "'p.zarr'" in out.stdout  # the image is named after its folder
    out = cli("info", src)
    assert out.returncode == 0, out.stderr
    assert "Zarr v2" in out.stdout and "[2, 40, 70, 90]" in out.stdout
    assert "stored:        " + f"{2 * 3 * 3 * 3} of {2 * 3 * 3 * 3} chunks" in out.stdout


def test_pyramid_straight_from_zarr_v2(tmp_path, source):
    src, data = source
    out = cli(
        "pyramid",
        src,
        tmp_path / "p.zarr",
        "--factors",
        "1,2,2,2",
        "--levels",
        "2",
        "--axes",
        "c,z,y,x",
        "-q",
    )
    assert out.returncode == 0, out.stderr
    for k, want in enumerate(levels_of(data, (1, 2, 2, 2), 2)):
        np.testing.assert_array_equal(np.asarray(sw.open(tmp_path / "p.zarr" / str(k))), want)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--factors", "1,2"], "factors (1, 2) must have 4 values"),
        (["--factors", "1,2,2,2", "--method", "average"], "unknown downsampling method 'average'"),
        (["--factors", "1,x,2,2"], "expected integers"),
        (
            ["--factors", "1,2,2,2", "--chunks", "1,8,16,16", "--shards", "1,12,32,32"],
            "not a multiple of chunks",
        ),
    ],
)
def test_bad_input_exits_non_zero_and_writes_nothing(tmp_path, source, args, message):
    src, _ = source
    out = cli("pyramid", src, tmp_path / "p.zarr", "--axes", "c,z,y,x", *args)
    assert out.returncode == 1
    assert message in out.stderr and out.stderr.startswith("shardwright: error:")
    assert not (tmp_path / "p.zarr").exists()


def test_existing_destination_and_missing_source(tmp_path, source):
    src, _ = source
    (tmp_path / "p.zarr").mkdir()
    (tmp_path / "p.zarr" / "keep.txt").write_text("mine")
    out = cli("pyramid", src, tmp_path / "p.zarr", "--factors", "1,2,2,2", "--axes", "c,z,y,x")
    assert out.returncode == 1 and "--overwrite" in out.stderr
    assert (tmp_path / "p.zarr" / "keep.txt").exists()
    out = cli("copy", tmp_path / "nothing.zarr", tmp_path / "c.zarr")
    assert out.returncode == 1 and "no Zarr array" in out.stderr
    out = cli(
        "pyramid", tmp_path / "p.zarr" / "0", tmp_path / "p.zarr", "--factors", "2", "--overwrite"
    )
    assert out.returncode == 1 and "overlap: --overwrite would delete the source" in out.stderr
    out = cli("pyramid", "--help")
    assert out.returncode == 0 and "--resume" in out.stdout and "--factors" in out.stdout


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_killed_cli_pyramid_finishes_with_resume(tmp_path):
    shape, factors = (2, 2, 64, 512, 512), (1, 1, 2, 2, 2)
    src = sw.create(
        tmp_path / "src.zarr",
        shape=shape,
        dtype="uint16",
        chunks=(1, 1, 32, 128, 128),
        shards=(1, 1, 64, 256, 256),
    )

    def value(c: sw.Domain) -> np.ndarray:  # smooth plus noise: about 2x compressible
        t, ch, z, y, x = np.ogrid[c.slices]
        noise = np.random.default_rng(list(c.origin)).integers(0, 256, c.shape)
        return ((t + ch * 7 + z * 3 + y * 5 + x * 11) % 4001 + noise).astype("uint16")

    src.map_chunks(value)
    dest = tmp_path / "p.zarr"
    args = [
        sys.executable,
        "-m",
        "shardwright",
        "pyramid",
        tmp_path / "src.zarr",
        dest,
        "--factors",
        "1,1,2,2,2",
        "--levels",
        "4",
        "--chunks",
        "1,1,32,128,128",
        "--shards",
        "1,1,64,256,256",
        "-q",
    ]
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60

    def stored() -> bool:
        chunks = dest / "0" / "c"
        return chunks.exists() and any(
            p.is_file() and not p.name.startswith(".") for p in chunks.rglob("*")
        )

    while not stored():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    time.sleep(random.Random(4).uniform(0.0, 0.3))  # the run takes about 1.5 s
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    out = subprocess.run([str(a) for a in [*args, "--resume"]], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    data = np.asarray(src)
    for k, want in enumerate(levels_of(data, factors, 4)):
        np.testing.assert_array_equal(zarr.open_array(dest / str(k))[...], want, err_msg=str(k))
    assert proc.returncode == -signal.SIGKILL  # it was killed, not finished
    assert "already stored and skipped" in out.stdout


def test_levels_that_downsample_nothing_exit_1_before_overwrite_removes_anything(tmp_path):
    """Issue 23: `--levels` past the 1 x 1 level is refused at once, `--overwrite` or not."""
    src = sw.create(tmp_path / "s.zarr", shape=(64, 64), dtype="uint8", chunks=(16, 16))
    src[...] = 3
    dst = tmp_path / "p.zarr"
    assert cli("pyramid", src.path, dst, "--factors", "2,2", "--levels", "7").returncode == 0
    before = sorted(p.relative_to(dst) for p in dst.rglob("*"))
    out = cli("pyramid", src.path, dst, "--factors", "2,2", "--levels", "100000", "--overwrite")
    assert out.returncode == 1
    assert "levels=100000 would add levels that downsample nothing" in out.stderr
    assert "has at most 7 levels (the last 1\u00d71)" in out.stderr
    assert sorted(p.relative_to(dst) for p in dst.rglob("*")) == before
