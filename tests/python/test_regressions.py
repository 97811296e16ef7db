"""Regression tests for defects found in review (each named by what went wrong)."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import shardwright as sw
from conftest import temp_files


def test_an_empty_region_at_the_far_edge_is_a_no_op(tmp_path):
    # Used to panic, then hang at commit.
    a = sw.create(tmp_path / "a.zarr", shape=(8, 6), dtype="uint16", chunks=(2, 4), shards=(4, 4))
    with a.write_shard((1, 1)) as w:
        w[8:8, 4:6] = np.zeros((0, 2), "uint16")
        w[4:6, 6:6] = 7
        w[4:8, 4:6] = 3
    assert w.stats["chunks_written"] == 2
    assert (a[4:8, 4:6] == 3).all()
    with a.write_shard((0, 0)) as w:
        w[0:0, 0:4] = 1
    assert w.stats["puts"] + w.stats["gets"] + w.stats["deletes"] == 0


def test_a_failed_early_commit_fails_the_transaction(tmp_path):
    # Used to drop the shard's data and then report success.
    a = sw.create(tmp_path / "a.zarr", shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    os.makedirs(tmp_path / "a.zarr" / "c" / "0" / "0")  # the put of shard (0, 0) fails
    tx = a.transaction(early_commit=True)
    with pytest.raises(sw.ShardwrightError):
        tx[0:4, 0:4] = 1
    with pytest.raises(sw.ShardwrightError):
        tx[4:8, 4:8] = 2
    with pytest.raises(sw.ShardwrightError):
        tx.commit()


def test_overwrite_with_bad_settings_keeps_the_old_array(tmp_path):
    # Used to delete the old array before checking the new settings.
    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(4,), dtype="int16", chunks=(2,), shards=(4,))
    a.map_chunks(lambda c: 5)
    with pytest.raises(sw.ShapeError, match="divide"):
        sw.create(path, shape=(4,), dtype="int16", chunks=(3,), shards=(4,), overwrite=True)
    assert sw.open(path)[...].tolist() == [5, 5, 5, 5]


def test_a_refused_create_leaves_no_folder(tmp_path):
    with pytest.raises(sw.ShapeError):
        sw.create(tmp_path / "b.zarr", shape=(4, 4), dtype="uint8", chunks=(2,))
    assert not (tmp_path / "b.zarr").exists()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"shape": (-1,), "chunks": (1,)}, sw.ShapeError),
        ({"shape": (2**64,), "chunks": (1,)}, sw.ShapeError),
        ({"shape": (4,), "chunks": (0,)}, sw.ShapeError),
        ({"shape": (4, 4), "chunks": (2,)}, sw.ShapeError),
        ({"shape": (4,), "chunks": (2,), "fill_value": 300}, sw.DTypeError),
    ],
)
def test_bad_create_settings_get_typed_errors(tmp_path, kwargs, error):
    # Used to raise OverflowError or a bare ShardwrightError.
    with pytest.raises(error):
        sw.create(tmp_path / "c.zarr", dtype="uint8", **kwargs)


# --------------------------------------------------------------------------------------
# Defects of the review issue (#9), one test or more each
# --------------------------------------------------------------------------------------


def test_a_chunk_recomputed_in_a_streamed_shard_is_stored(tmp_path):
    # 1. Used to fail the commit with "write zero" and store nothing: the compaction of
    # the temporary file appended an empty last batch.
    a = sw.create(
        tmp_path / "a.zarr",
        shape=(256, 256, 256),
        dtype="uint16",
        chunks=(64, 64, 64),
        shards=(256, 256, 256),
    )
    rng = np.random.default_rng(0)
    expected = np.zeros(a.shape, "uint16")
    with a.write_shard((0, 0, 0)) as w:
        chunks = list(w.inner_chunks())
        for c in chunks:
            expected[c.slices] = rng.integers(0, 65535, c.shape, dtype="uint16")
            w[c] = expected[c.slices]
        time.sleep(0.5)  # every chunk encoded and streamed
        expected[chunks[5].slices] = rng.integers(0, 65535, chunks[5].shape, dtype="uint16")
        w[chunks[5]] = expected[chunks[5].slices]
    assert w.stats["puts"] == 1
    np.testing.assert_array_equal(a[...], expected)
    assert temp_files(tmp_path) == []


def test_one_byte_chunks_all_rewritten_as_the_fill_value(tmp_path):
    # 1. The same with nothing streamed left live: the shard ends up empty (deleted).
    a = sw.create(tmp_path / "b.zarr", shape=(8,), dtype="uint8", chunks=(4,), shards=(8,))
    with a.write_shard((0,)) as w:
        w[0:4] = np.array([1, 2, 3, 4], "uint8")
        time.sleep(0.2)
        w[0:4] = 0
        w[4:8] = 0
    assert w.stats["deletes"] == 1
    assert a[...].tolist() == [0] * 8
    with a.write_shard((0,)) as w:
        w[0:4] = np.array([1, 2, 3, 4], "uint8")
        time.sleep(0.2)
        w[0:4] = np.array([5, 6, 7, 8], "uint8")
        w[4:8] = 9
    assert a[...].tolist() == [5, 6, 7, 8, 9, 9, 9, 9]


READ_TOO_MUCH = r"""
import sys, tempfile, shardwright as sw
a = sw.create(tempfile.mkdtemp() + "/h.zarr", shape=(2**44,), dtype="uint8",
              chunks=(2**20,), shards=(2**30,))
for read in (lambda: a[:], lambda: a.transaction()[:]):
    try:
        read()
    except sw.OutOfMemoryError as err:
        assert isinstance(err, MemoryError)
        print("raised:", err)
    else:
        sys.exit("no error")
"""


def test_a_read_larger_than_memory_raises_instead_of_aborting():
    # 2. Used to end the interpreter: "memory allocation of 17592186044416 bytes failed".
    run = subprocess.run([sys.executable, "-c", READ_TOO_MUCH], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("raised: out of memory: could not allocate 17592186044416") == 2


SCALAR_OVER_A_SHARD = r"""
import sys, tempfile, shardwright as sw
def peak():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(512, 512, 512), dtype="uint8",
              chunks=(32, 32, 32), shards=(512, 512, 512))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = peak()
if sys.argv[1] == "writer":
    with a.write_shard((0, 0, 0)) as w:
        w[0:511, :, :] = 7
else:
    with a.transaction() as tx:
        tx[0:511, :, :] = 7
print((peak() - before) // 2**20)
assert int(a[510, 7, 9]) == 7 and int(a[511, 7, 9]) == 0
"""


@pytest.mark.parametrize("how", ["writer", "transaction"])
def test_a_scalar_over_most_of_a_shard_never_builds_the_raw_region(how):
    # 3. Used to build the raw region (128 MiB here) first: +149 MiB of peak RSS. Now the
    # chunks covered whole share one encoded chunk, and only the 256 chunks covered in
    # part (32 KiB each) are raw.
    run = subprocess.run(
        [sys.executable, "-c", SCALAR_OVER_A_SHARD, how], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    growth_mib = int(run.stdout.split()[-1])
    assert growth_mib < 32, growth_mib


def test_a_staged_shard_writer_counts_against_the_memory_limit(tmp_path):
    # 4. Used to stage 16 MiB through tx.write_shard with memory_limit=1 MiB, no error.
    a = sw.create(
        tmp_path / "m.zarr",
        shape=(64, 256, 256),
        dtype="uint16",
        chunks=(16, 64, 64),
        shards=(64, 256, 256),
    )
    rng = np.random.default_rng(1)
    with pytest.raises(sw.TransactionTooLarge, match="memory limit of 1048576"):
        with a.transaction(memory_limit=1 << 20) as tx:
            with tx.write_shard((0, 0, 0)) as w:
                for c in w.inner_chunks():
                    w[c] = rng.integers(0, 65535, c.shape, dtype="uint16")
    assert not (tmp_path / "m.zarr" / "c").exists()


def _blocked_shard(path, index):
    """Make the commit of shard ``index`` fail: a non-empty folder where its file goes."""
    folder = path.joinpath("c", *map(str, index))
    folder.mkdir(parents=True)
    (folder / "in-the-way").write_bytes(b"")


def test_map_chunks_reports_a_background_commit_that_failed_when_fn_raises(tmp_path):
    # 5. Used to hide the failed commit of shard (0, 0) behind fn's error.
    path = tmp_path / "e.zarr"
    a = sw.create(path, shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    _blocked_shard(path, (0, 0))

    def fn(c):
        if c.index == (0, 2):  # shard (0, 1), while shard (0, 0) commits
            raise ValueError("bad chunk")
        return 1

    with pytest.raises(ExceptionGroup) as caught:
        a.map_chunks(fn, workers=2)
    group = caught.value
    assert "1 shard(s) committing in the background failed" in str(group)
    fn_error, commit_error = group.exceptions
    assert isinstance(fn_error, ValueError)
    assert any("0 of 4 shards were stored" in n for n in fn_error.__notes__)
    assert isinstance(commit_error, sw.ShardwrightError)
    assert any("shard [0:4, 0:4] was not stored" in n for n in commit_error.__notes__)


def test_map_chunks_raises_a_failed_background_commit_naming_its_shard(tmp_path):
    # 5. A failed commit alone: raised (not swallowed), naming the shard; no shard after
    # it is started.
    path = tmp_path / "f.zarr"
    a = sw.create(path, shape=(12, 4), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    _blocked_shard(path, (1, 0))
    with pytest.raises(sw.ShardwrightError) as caught:
        a.map_chunks(lambda c: 3, workers=1)
    notes = "\n".join(caught.value.__notes__)
    assert "shard [4:8, 0:4] was not stored" in notes
    assert "1 of 3 shards were stored" in notes
    assert (a[0:4] == 3).all() and (a[8:12] == 0).all()


TEMP_NAMES_TAKEN = r"""
import os, sys, shardwright as sw
path = sys.argv[1]
os.makedirs(path + "/c/0")
# What another writer with this process id (in another PID namespace, on a volume both
# containers mount) would have open: the names the old scheme gave this process.
for n in range(64):
    for folder, name in ((path, "zarr.json"), (path + "/c/0", "0")):
        open(f"{folder}/.{name}.{os.getpid()}.{n}.shardwright-tmp", "w").close()
a = sw.create(path, shape=(4, 4), dtype="uint8", chunks=(2, 2), shards=(4, 4), overwrite=False)
a.map_chunks(lambda c: 1)
assert (a[...] == 1).all()
"""


def test_temporary_names_of_another_pid_namespace_do_not_collide(tmp_path):
    # 6. Used to fail the commit with EEXIST: names were .NAME.PID.COUNTER, the same for
    # two writers with one process id in different PID namespaces.
    path = tmp_path / "n.zarr"
    run = subprocess.run(
        [sys.executable, "-c", TEMP_NAMES_TAKEN, str(path)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


def test_two_threads_writing_one_chunk_whole_and_in_part_lose_neither(tmp_path):
    # 8. Dropping a partial chunk and marking the slot pending are now one step.
    a = sw.create(tmp_path / "t.zarr", shape=(64,), dtype="uint8", chunks=(64,), shards=(64,))
    whole = np.full(64, 1, "uint8")
    for trial in range(200):
        start = threading.Barrier(2)
        with a.write_shard((0,)) as w:

            def write_whole(w=w, start=start):
                start.wait()
                w[0:64] = whole

            def write_part(w=w, start=start):
                start.wait()
                w[8:16] = 2

            threads = [threading.Thread(target=write_whole), threading.Thread(target=write_part)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        got = a[...]
        a_then_b = whole.copy()
        a_then_b[8:16] = 2
        assert (got == whole).all() or (got == a_then_b).all(), (trial, got)
