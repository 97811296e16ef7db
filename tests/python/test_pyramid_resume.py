"""Pyramids and copies killed with SIGKILL at random moments leave only whole shards, and
finish with resume=True writing only the missing ones; memory stays bounded by the shard
and chunk shapes, flat as the source grows; progress; bad input writes nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr

SHAPE = (2, 48, 96, 96)
FACTORS = (1, 2, 2, 2)
LEVELS = 3
CHUNKS = (1, 8, 16, 16)
SHARDS = (1, 16, 32, 32)

SOURCE = f"""
import numpy as np, time
class SlowSource:
    shape = {SHAPE}
    dtype = np.dtype("uint16")
    def __init__(self, delay):
        self.data = np.random.default_rng(7).integers(1, 4000, self.shape, dtype="uint16")
        self.delay = delay
    def __getitem__(self, key):
        time.sleep(self.delay)
        return self.data[key]
"""

RUN = (
    SOURCE
    + f"""
import sys, shardwright as sw
dest, kind = sys.argv[1], sys.argv[2]
print("started", flush=True)
if kind == "pyramid":
    sw.pyramid(SlowSource(0.004), dest, factors={FACTORS}, levels={LEVELS}, chunks={CHUNKS},
               shards={SHARDS}, axes=["c", "z", "y", "x"], resume=True)
else:
    sw.copy(SlowSource(0.004), dest, chunks={CHUNKS}, shards={SHARDS}, resume=True)
"""
)


def source_data() -> np.ndarray:
    return np.random.default_rng(7).integers(1, 4000, SHAPE, dtype="uint16")


def expected_levels() -> list[np.ndarray]:
    out = [source_data()]
    for _ in range(LEVELS - 1):
        out.append(ts.downsample(ts.array(out[-1]), list(FACTORS), "mean").read().result())
    return out


def stored_shards(level_dir: Path) -> list[Path]:
    chunk_dir = level_dir / "c"
    if not chunk_dir.exists():
        return []
    return [p for p in chunk_dir.rglob("*") if p.is_file() and not p.name.startswith(".")]


def check_whole(level_dir: Path, want: np.ndarray) -> int:
    """Every shard stored under level_dir decodes to exactly the expected data."""
    if not (level_dir / "zarr.json").exists():
        return 0
    array = zarr.open_array(level_dir, mode="r")
    shard_shape = array.metadata.chunk_grid.chunk_shape
    shards = stored_shards(level_dir)
    for path in shards:
        index = [int(p) for p in path.relative_to(level_dir / "c").parts]
        region = tuple(
            slice(i * s, min((i + 1) * s, n))
            for i, s, n in zip(index, shard_shape, want.shape, strict=True)
        )
        np.testing.assert_array_equal(array[region], want[region], err_msg=str(path))
    return len(shards)


def first_shard_stored(dest: Path, timeout: float = 60) -> None:
    """Wait until the run has stored its first shard (so a kill lands mid-run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(stored_shards(dest / "0")) or any(stored_shards(dest)):
            return
        time.sleep(0.01)
    raise AssertionError(f"no shard stored under {dest} within {timeout} s")


def kill_at_random(tmp_path: Path, kind: str, delay: float) -> Path:
    """Start a build, wait for its first shard, wait `delay` more, SIGKILL it."""
    dest = tmp_path / "out.zarr"
    script = tmp_path / "run.py"
    script.write_text(RUN)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(dest), kind], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"
    first_shard_stored(dest)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the build ended before the kill"
    return dest


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pyramid_killed_at_random_resumes_to_the_right_data(tmp_path, seed):
    want = expected_levels()
    delay = random.Random(seed).uniform(0.0, 0.6)  # the whole run takes about 2 s
    dest = kill_at_random(tmp_path, "pyramid", delay)
    before = [check_whole(dest / str(k), want[k]) for k in range(LEVELS)]
    exec_globals: dict = {}
    exec(SOURCE, exec_globals)
    levels = sw.pyramid(
        exec_globals["SlowSource"](0.0),
        dest,
        factors=FACTORS,
        levels=LEVELS,
        chunks=CHUNKS,
        shards=SHARDS,
        axes=["c", "z", "y", "x"],
        resume=True,
    )
    totals = [sum(1 for _ in a.iter_shards()) for a in levels]
    assert 0 < sum(before) < sum(totals)  # killed mid-run
    assert levels.stats["shards_skipped"] == before
    assert levels.stats["shards_written"] == [t - b for t, b in zip(totals, before, strict=True)]
    assert levels.stats["puts"] == sum(totals) - sum(before)  # only the missing shards
    for k in range(LEVELS):
        np.testing.assert_array_equal(np.asarray(levels[k]), want[k])
        assert check_whole(dest / str(k), want[k]) == totals[k]
    meta = json.loads((dest / "zarr.json").read_text())
    assert len(meta["attributes"]["ome"]["multiscales"][0]["datasets"]) == LEVELS


def test_copy_killed_resumes(tmp_path):
    dest = kill_at_random(tmp_path, "copy", 0.2)
    data = source_data()
    before = check_whole(dest, data)
    exec_globals: dict = {}
    exec(SOURCE, exec_globals)
    copied = sw.copy(
        exec_globals["SlowSource"](0.0), dest, chunks=CHUNKS, shards=SHARDS, resume=True
    )
    np.testing.assert_array_equal(np.asarray(copied), data)
    assert check_whole(dest, data) == sum(1 for _ in copied.iter_shards())
    assert 0 < before < sum(1 for _ in copied.iter_shards())


def test_resume_with_other_settings_is_refused(tmp_path):
    data = source_data()
    sw.pyramid(data, tmp_path / "p.zarr", factors=FACTORS, levels=2, chunks=CHUNKS, shards=SHARDS)
    with pytest.raises(sw.ShardwrightError, match=r"cannot resume into .*chunks"):
        sw.pyramid(
            data,
            tmp_path / "p.zarr",
            factors=FACTORS,
            levels=2,
            chunks=(1, 4, 8, 8),
            shards=SHARDS,
            resume=True,
        )
    levels = sw.pyramid(
        data,
        tmp_path / "p.zarr",
        factors=FACTORS,
        levels=2,
        chunks=CHUNKS,
        shards=SHARDS,
        resume=True,
    )
    assert sum(levels.stats["shards_written"]) == 0  # everything was stored already


MEMORY = """
import resource, sys, numpy as np, shardwright as sw

class Generated:
    '''A volume computed on the fly from its coordinates (never held whole).'''
    def __init__(self, shape):
        self.shape, self.dtype = shape, np.dtype("uint16")
    def __getitem__(self, key):
        grids = np.ogrid[key]
        total = sum(g * (3 + 2 * d) for d, g in enumerate(grids))
        return ((total // 8) % 4096).astype("uint16")

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

dest, z = sys.argv[1], int(sys.argv[2])
sw.pyramid(Generated((1, 1, 16, 128, 128)), dest + "-warm", factors=(1, 1, 2, 2, 2), levels=4,
           chunks=(1, 1, 16, 64, 64), shards=(1, 1, 32, 256, 256), compression_level=1)
base = peak_mib()
levels = sw.pyramid(Generated((1, 1, z, 1024, 1024)), dest, factors=(1, 1, 2, 2, 2), levels=4,
                    chunks=(1, 1, 16, 64, 64), shards=(1, 1, 32, 256, 256), compression_level=1)
print(peak_mib() - base, levels.stats["memory_bound"], levels.stats["bytes_read"])
"""


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_memory_is_bounded_and_flat_as_the_source_grows(tmp_path):
    script = tmp_path / "memory.py"
    script.write_text(MEMORY)
    results = {}
    for z in (32, 128):  # 64 MiB and 256 MiB sources
        out = subprocess.run(
            [sys.executable, str(script), str(tmp_path / f"p{z}"), str(z)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "RAYON_NUM_THREADS": "2"},
        ).stdout.split()
        growth, bound, read = float(out[0]), int(out[1]), int(out[2])
        results[z] = (growth, bound, read)
    (small_growth, bound, small_read), (big_growth, _, big_read) = results[32], results[128]
    assert big_read == 4 * small_read == 256 * 2**20
    assert big_read >= 8 * bound  # the source is far larger than the bound
    # the peak grows by less than the bound (plus allocator slack), and not with the source
    assert big_growth < bound / 2**20 + 8, results
    assert big_growth - small_growth < 12, results


def test_progress_callable_and_bar(tmp_path, capsys):
    events = []
    data = np.zeros((32, 32), "uint8") + 3
    sw.pyramid(
        data,
        tmp_path / "a.zarr",
        factors=(2, 2),
        levels=3,
        chunks=(4, 4),
        shards=(8, 8),
        progress=events.append,
    )
    assert [e["shards_done"] for e in events] == list(range(1, 16 + 4 + 1 + 1))
    assert {e["shards_total"] for e in events} == {21}
    assert events[-1]["bytes_read"] == data.nbytes
    assert events[-1]["shards_done_per_level"] == [16, 4, 1]
    sw.pyramid(
        data,
        tmp_path / "b.zarr",
        factors=(2, 2),
        levels=3,
        chunks=(4, 4),
        shards=(8, 8),
        progress=True,
    )
    err = capsys.readouterr().err
    assert "21/21" in err  # tqdm's bar or the plain one


def test_progress_callback_error_stops_the_build(tmp_path):
    def stop(event):
        if event["shards_done"] == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sw.pyramid(
            np.ones((32, 32), "u1"),
            tmp_path / "a.zarr",
            factors=(2, 2),
            levels=2,
            chunks=(4, 4),
            shards=(8, 8),
            progress=stop,
        )
    assert not (tmp_path / "a.zarr" / "zarr.json").exists()  # the group is written last
    levels = sw.pyramid(
        np.ones((32, 32), "u1"),
        tmp_path / "a.zarr",
        factors=(2, 2),
        levels=2,
        chunks=(4, 4),
        shards=(8, 8),
        resume=True,
    )
    assert sum(levels.stats["shards_skipped"]) >= 3


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"factors": (2,)}, sw.ShapeError, r"factors \(2\) must have 2 values"),
        ({"factors": (2, 0)}, sw.ShapeError, r"at least 1; got \(2, 0\)"),
        (
            {"factors": (2, 2), "method": "average"},
            sw.ShapeError,
            "unknown downsampling method 'average'",
        ),
        (
            {"factors": (2, 2), "chunks": (4, 4), "shards": (6, 8)},
            sw.ShapeError,
            "not a multiple of chunks",
        ),
        ({"factors": (2, 2), "chunks": (4,)}, sw.ShapeError, "must have 2 values"),
        ({"factors": (2, 2), "axes": ["a", "b"]}, sw.ShapeError, "not an OME-Zarr 0.5 image"),
        (
            {"factors": (2, 2), "levels": 0},
            sw.ShapeError,
            "levels must be an integer of at least 1",
        ),
        ({"factors": (2, 2), "overwrite": True, "resume": True}, ValueError, "contradict"),
    ],
)
def test_bad_input_names_what_was_given_and_writes_nothing(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        sw.pyramid(np.zeros((16, 16), "u2"), tmp_path / "p.zarr", **kwargs)
    assert not (tmp_path / "p.zarr").exists()


def test_bad_sources_and_existing_destinations(tmp_path):
    with pytest.raises(TypeError, match=r"numpy-style slicing.*got int"):
        sw.pyramid(5, tmp_path / "p.zarr", factors=(2,))
    with pytest.raises(sw.ArrayNotFoundError, match="no Zarr array"):
        sw.pyramid(tmp_path / "missing.zarr", tmp_path / "p.zarr", factors=(2,))
    sw.pyramid(np.zeros((8, 8), "u1"), tmp_path / "p.zarr", factors=(2, 2))
    with pytest.raises(sw.ShardwrightError, match=r"exists already .*overwrite=True"):
        sw.pyramid(np.zeros((8, 8), "u1"), tmp_path / "p.zarr", factors=(2, 2))
    with pytest.raises(sw.ShardwrightError, match="is a Zarr group, not an array"):
        sw.pyramid(tmp_path / "p.zarr", tmp_path / "q.zarr", factors=(2, 2))
    # overwrite checks the settings before removing anything
    with pytest.raises(sw.ShapeError):
        sw.pyramid(np.zeros((8, 8), "u1"), tmp_path / "p.zarr", factors=(2,), overwrite=True)
    assert (tmp_path / "p.zarr" / "zarr.json").exists()
    levels = sw.pyramid(np.ones((8, 8), "u1"), tmp_path / "p.zarr", factors=(2, 2), overwrite=True)
    assert int(levels[0][0, 0]) == 1

    class Broken:
        shape, dtype = (8, 8), np.dtype("u1")

        def __getitem__(self, key):
            raise OSError("disk on fire")

    with pytest.raises(OSError, match="disk on fire"):
        sw.pyramid(Broken(), tmp_path / "b.zarr", factors=(2, 2))
    assert not (tmp_path / "b.zarr").exists()  # the source is tried before anything is written

    class WrongShape(Broken):
        def __getitem__(self, key):
            return np.zeros((1, 1), "u1")

    with pytest.raises(sw.ShapeError, match=r"shape \(1, 1\) for \[0:8, 0:8\]"):
        sw.pyramid(WrongShape(), tmp_path / "w.zarr", factors=(2, 2))
    assert not [p for p in (tmp_path / "w.zarr").rglob("*") if p.is_file() and "/c/" in str(p)]


def test_overwrite_never_deletes_the_source(tmp_path):
    levels = sw.pyramid(np.ones((16, 16), "u1"), tmp_path / "p.zarr", factors=(2, 2))
    for source, dest in [
        (tmp_path / "p.zarr" / "0", tmp_path / "p.zarr"),
        (levels[0], tmp_path / "p.zarr"),
        (tmp_path / "p.zarr" / "0", tmp_path / "p.zarr" / "0"),
    ]:
        with pytest.raises(ValueError, match="overlap: overwrite=True would delete the source"):
            sw.pyramid(source, dest, factors=(2, 2), overwrite=True)
        with pytest.raises(ValueError, match="overlap"):
            sw.copy(source, dest, overwrite=True)
    assert int(sw.open(tmp_path / "p.zarr" / "0")[3, 3]) == 1
