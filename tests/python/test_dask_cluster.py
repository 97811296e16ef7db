"""shardwright.dask on a real cluster (LocalCluster, two worker processes): to the loopback
S3 server with every shard key put once, a task that fails once and is retried, a worker
killed mid-run, progress and task names where Dask shows them, targets no worker can
open (refused at the call, or a task's error: never a hung computation), one open of the
target per worker process, and the memory a task holds (a fresh process, RSS measured)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import s3_server as s3
import shardwright as sw
import shardwright.dask as swd
import zarr
from conftest import assert_same, reference
from distributed import Client, LocalCluster, get_task_stream, progress
from distributed.utils import key_split

SHAPE = (64, 48)
CHUNKS = (8, 8)
SHARDS = (32, 16)
SHARD_KEYS = [f"x.zarr/c/{i}/{j}" for i in range(2) for j in range(3)]


def once(marker: Path) -> bool:
    """True the first time it is called for ``marker``, in any process."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


@pytest.mark.parametrize("how", ["threads", "distributed"])
def test_to_zarr_on_s3_puts_each_shard_key_once(how, s3_bucket, s3_proxy, s3_client, request):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    scheduler = request.getfixturevalue("dask_client") if how == "distributed" else how
    data = reference(SHAPE, "uint16", seed=11)
    darr = da.from_array(data, chunks=(7, 11))  # cuts inner chunks and shards
    url = f"s3://{bucket}/x.zarr"
    proxy.clear()
    stats = swd.to_zarr(
        darr, url, storage_options=options, chunks=CHUNKS, shards=SHARDS, scheduler=scheduler
    )
    assert stats["puts"] == len(SHARD_KEYS) and stats["gets"] == 0
    for key in SHARD_KEYS:
        calls = [(r.method, r.status) for r in proxy.for_key(bucket, key)]
        assert calls == [("PUT", 200)], (key, calls)
    assert not proxy.matching("GET", "/c/")
    assert_same(sw.open(url, storage_options=options)[...], data)
    assert s3.list_keys(s3_client, bucket) == sorted(["x.zarr/zarr.json", *SHARD_KEYS])


def test_pyramid_on_the_cluster_to_s3_equals_one_process(
    s3_bucket, s3_client, dask_client, tmp_path
):
    bucket, options = s3_bucket
    data = reference((48, 80), "uint8", seed=4)
    darr = da.from_array(data, chunks=(13, 30))
    url = f"s3://{bucket}/img.zarr"
    got = swd.pyramid(
        darr,
        url,
        factors=(2, 2),
        chunks=(8, 8),
        shards=(16, 16),
        storage_options=options,
        scheduler=dask_client,
    )
    want = sw.pyramid(data, tmp_path / "img.zarr", factors=(2, 2), chunks=(8, 8), shards=(16, 16))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert_same(sw.open(a.url, storage_options=options)[...], b[...])
    stored = s3_client.get_object(Bucket=bucket, Key="img.zarr/zarr.json")["Body"].read()
    group = json.loads(stored)
    assert group == json.loads((tmp_path / "img.zarr/zarr.json").read_text())


def test_a_task_that_fails_once_is_retried_and_stores_its_shard_once(
    tmp_path, s3_bucket, s3_proxy, dask_client
):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    url = f"s3://{bucket}/x.zarr"
    a = sw.create(
        url, shape=SHAPE, dtype="int32", chunks=CHUNKS, shards=SHARDS, storage_options=options
    )
    marker = tmp_path / "failed-once"

    def fill(chunk: sw.Domain) -> int:
        # the last chunk of shard (1, 1): the task has written its other chunks by then
        if chunk.origin == (56, 24) and once(marker):
            raise RuntimeError("a transient failure")
        return chunk.origin[0] * 1000 + chunk.origin[1]

    proxy.clear()
    task = swd.map_chunks(fill, a, compute=False)
    with pytest.raises(RuntimeError, match="a transient failure"):
        dask_client.compute(task, retries=0).result()
    assert marker.exists()
    assert not proxy.for_key(bucket, "x.zarr/c/1/1")  # the failed task stored nothing
    marker.unlink()
    proxy.clear()
    stats = dask_client.compute(swd.map_chunks(fill, a, compute=False), retries=1).result()
    assert stats["shards_written"] == len(SHARD_KEYS)
    assert [r.method for r in proxy.for_key(bucket, "x.zarr/c/1/1")] == ["PUT"]
    want = np.zeros(SHAPE, "int32")
    for c in a.iter_chunks():
        want[c.slices] = c.origin[0] * 1000 + c.origin[1]
    assert_same(a[...], want)


def test_a_worker_killed_mid_run_leaves_exact_data_and_whole_shards(tmp_path):
    data = reference((96, 64), "float32", seed=8)
    path = tmp_path / "k.zarr"
    a = sw.create(path, shape=data.shape, dtype="float32", chunks=(8, 8), shards=(16, 16))
    marker = tmp_path / "killed"

    def fill(chunk: sw.Domain) -> np.ndarray:
        if chunk.origin == (40, 40) and once(marker):
            os._exit(1)  # the worker process dies in the middle of a shard
        return data[chunk.slices]

    with (
        LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        stats = client.compute(swd.map_chunks(fill, a, compute=False)).result()
    assert marker.exists()
    assert stats["shards_written"] == 24
    assert_same(a[...], data)
    report = sw.check(path)
    assert report.ok and not report.damaged, report


def test_progress_and_task_names_say_which_shard(tmp_path, dask_client, capsys):
    darr = da.from_array(reference(SHAPE, "int16", seed=1), chunks=(10, 10))
    task = swd.to_zarr(darr, tmp_path / "p.zarr", chunks=CHUNKS, shards=SHARDS, compute=False)
    with get_task_stream(dask_client) as stream:
        future = dask_client.compute(task)
        progress(future, notebook=False)
        stats = future.result()
    assert "100% Completed" in capsys.readouterr().out
    assert stats["shards_written"] == 6
    keys = [
        eval(k) if isinstance(k, str) and k.startswith("(") else k
        for k in (t["key"] for t in stream.data)
    ]
    ours = sorted(
        k[1:] for k in keys if isinstance(k, tuple) and key_split(k) == "shardwright-shard"
    )
    assert ours == [(i, j) for i in range(2) for j in range(3)]


def raised_within(seconds: float, fn: Callable[[], object]) -> BaseException | None:
    """What ``fn()`` raises (None if nothing), failing the test if it is still running
    after ``seconds``: a hung computation fails instead of hanging the session."""
    done: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
        except BaseException as err:  # handed to the test
            done.append(err)
        else:
            done.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"still running after {seconds} s: the computation hangs"
    return done[0]


def chained(err: BaseException | None) -> str:
    """The messages of ``err`` and of the exceptions it was raised from or during."""
    seen: list[str] = []
    while err is not None and len(seen) < 10:
        seen.append(str(err))
        err = err.__cause__ or err.__context__
    return "\n".join(seen)


@pytest.mark.parametrize("kind", ["memory-url", "fsspec-memory"])
def test_a_target_in_this_process_memory_is_refused_at_once(kind, dask_client):
    """Issue 22: a worker process cannot see ``memory:///`` (nor fsspec's memory://
    filesystem); unpickling the target failed in distributed's comm layer, the worker
    died and the computation hung. Now the call raises, naming the target, and no task
    is sent."""
    if kind == "memory-url":
        name = "memory:///cluster/x.zarr"
        a = sw.create(name, shape=(8, 8), dtype="int8", chunks=(2, 2), shards=(4, 4))
    else:
        store = zarr.storage.FsspecStore.from_url("memory://cluster-fsspec/root")
        a = sw.create(store, path="x", shape=(8, 8), dtype="int8", chunks=(2, 2), shards=(4, 4))
        name = "/root)>/x"
    darr = da.ones((8, 8), dtype="int8", chunks=3)
    message = f"{re.escape(name)}' cannot be pickled: it is in .* a worker process does not share"
    err = raised_within(60, lambda: swd.to_zarr(darr, a, scheduler=dask_client))
    assert isinstance(err, TypeError) and re.search(message, str(err)), err
    err = raised_within(60, lambda: swd.map_chunks(lambda c: 1, a, scheduler=dask_client))
    assert isinstance(err, TypeError) and re.search(message, str(err)), err
    task = swd.to_zarr(darr, a, compute=False)  # refused when the client pickles it
    err = raised_within(60, lambda: dask_client.compute(task).result(timeout=60))
    assert isinstance(err, TypeError) and re.search(message, chained(err)), err
    if kind == "memory-url":
        err = raised_within(
            60,
            lambda: swd.pyramid(
                darr, "memory:///cluster/p.zarr", factors=(2, 2), scheduler=dask_client
            ),
        )
        assert isinstance(err, TypeError), err
        assert "the pyramid 'memory:///cluster/p.zarr' cannot be pickled" in str(err)
    assert len(dask_client.run(os.getpid)) == 2  # both workers alive


def test_each_worker_process_reads_the_target_zarr_json_once(s3_bucket, s3_proxy, dask_client):
    """64 shard tasks on two worker processes: each process opens the target once (one
    GET of its zarr.json), not once per task as when unpickling a task opened it."""
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    url = f"s3://{bucket}/x.zarr"
    data = reference((64, 64), "uint16", seed=3)
    a = sw.create(
        url, shape=data.shape, dtype="uint16", chunks=(8, 8), shards=(8, 8), storage_options=options
    )
    proxy.clear()
    stats = swd.to_zarr(da.from_array(data, chunks=(16, 16)), a, scheduler=dask_client)
    assert stats["shards_written"] == 64
    reads = [(r.method, r.status) for r in proxy.for_key(bucket, "x.zarr/zarr.json")]
    assert 1 <= len(reads) <= 2 and set(reads) == {("GET", 200)}, reads
    assert len(proxy.matching("PUT", "/x.zarr/c/")) == 64
    assert_same(a[...], data)


def test_a_target_gone_before_the_tasks_run_fails_the_task_not_the_worker(tmp_path, dask_client):
    """The target is opened inside the task: an array deleted between making the graph
    and running it is the tasks' error (the future raises it); the workers live on."""
    path = tmp_path / "gone.zarr"
    a = sw.create(path, shape=(16, 16), dtype="int8", chunks=(4, 4), shards=(8, 8))
    task = swd.map_chunks(lambda c: 1, a, compute=False)
    shutil.rmtree(path)
    err = raised_within(60, lambda: dask_client.compute(task).result(timeout=60))
    assert isinstance(err, sw.ArrayNotFoundError), err
    assert re.search(r"no Zarr v3 array at '.*gone\.zarr' \(no zarr\.json\)", str(err)), err
    assert not path.exists()  # nothing written
    assert len(dask_client.run(os.getpid)) == 2  # both workers alive


@pytest.mark.heavy
def test_memory_per_task_is_bounded_by_the_shard_and_its_blocks(tmp_path):
    """512 MiB of uint16 made block by block (misaligned 4 MiB blocks) into 8 MiB
    shards: the process's peak RSS grows by a few shards and blocks, not the array."""
    script = textwrap.dedent(
        f"""
        import resource, dask, dask.array as da, numpy as np, shardwright as sw
        import shardwright.dask as swd
        darr = da.map_blocks(
            lambda b, block_info=None: np.full(b.shape, block_info[0]["chunk-location"][0],
                                               "uint16"),
            da.empty((4096, 65536), dtype="uint16", chunks=(33, 65536)), dtype="uint16")
        a = sw.create({str(tmp_path / "m.zarr")!r}, shape=darr.shape, dtype="uint16",
                      chunks=(64, 4096), shards=(64, 65536), compressor="zstd",
                      compression_level=1)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with dask.config.set(num_workers=2):  # two threads, as on the 2-core machine
            stats = swd.to_zarr(darr, a, scheduler="threads")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert stats["shards_written"] == 64, stats
        assert int(a[4095, 0]) == 4095 // 33
        print((peak - base) // 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    grown_mib = int(out.stdout.split()[-1])
    # a shard is 8 MiB raw, a block 4 MiB: two threads with a few of each in hand, not 512
    assert grown_mib < 160, out.stdout
