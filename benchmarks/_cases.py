"""The child side of ``bench.py``: one measured case in one process
(``bench.py --child '<json>'`` runs ``child_main``), then the read-back check of what it
wrote. Only the standard library is imported at module level: each case imports the
library it measures."""

from __future__ import annotations

import os
import random
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _workloads import (
    ASSIGN_CASES,
    WRITES,
    MiB,
    chunk_boxes,
    grid,
    iter_chunks,
    make_codec,
    make_data_fn,
    shard_boxes,
    slabs,
)

# ---------------------------------------------------------------------------------------
# Child: one case, one process
# ---------------------------------------------------------------------------------------


def _rss_bytes() -> int:
    try:
        import psutil
    except ImportError:  # e.g. a lent machine without it: Linux's /proc has the same
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return psutil.Process().memory_info().rss


def _maxrss_bytes() -> int:
    """Peak RSS: Linux's VmHWM (which ``_reset_peak`` can reset), else ru_maxrss."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux; elsewhere the peak keeps the set-up)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def _prewarm(mib: int) -> None:
    """Touch ``mib`` MiB and free them. On a VM whose free memory the hypervisor takes
    back (virtio free page reporting), memory the guest has not used lately costs a host
    fault on first touch (measured here: 2.8 ms per MiB, against 0.13 ms per MiB for
    memory freed just before); the pages freed here are handed out again first, so the
    files a case writes are not charged for it."""
    if mib > 0:
        import numpy as np

        block = np.ones(mib * MiB, dtype=np.uint8)
        del block


def _ncores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def _ts_context(threads: int | None) -> Any:
    import tensorstore as ts

    if threads is None:
        return ts.Context()
    return ts.Context(
        {
            "data_copy_concurrency": {"limit": threads},
            "file_io_concurrency": {"limit": threads},
        }
    )


def child_main(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    case = spec["case"]
    path = spec.get("path")
    threads = spec.get("threads")
    dtype = np.dtype(spec["dtype"])
    f = make_data_fn(spec["dtype"], spec.get("data", "ramp"))
    shards = shard_boxes(spec)
    extra: dict[str, Any] = {}

    if spec.get("precomputed") or case in ASSIGN_CASES:
        full = np.empty(spec["shape"], dtype=dtype)
        for c in iter_chunks(spec):
            full[c.slices] = f(c)

        def view(c: Any) -> Any:  # the same data: a view of the precomputed array
            return full[c.slices]

        f = view

    # -- set-up (not timed) --------------------------------------------------------------
    if case.startswith("sw_"):
        import shardwright as sw

        arr = sw.open(path)
        threads_fn = getattr(sw._core, "num_threads", None)  # the rayon pool's size
        extra["encoder_threads"] = threads_fn() if threads_fn else None
    elif case.startswith("zarr_"):
        import zarr

        z = zarr.open_array(path, mode="r+")
    elif case.startswith("ts_"):
        import tensorstore as ts

        t = ts.open(
            {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
            context=_ts_context(threads),
        ).result()
    elif case in ("zstd", "zstd1", "pipeline"):
        codec = make_codec(spec)
        n_threads = threads or _ncores()
        tasks = slabs(spec)

    # -- the timed part ------------------------------------------------------------------
    _prewarm(spec.get("prewarm_mib") or 0)
    _reset_peak()
    rss_before = _rss_bytes()
    maxrss_before = _maxrss_bytes()
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    if case == "compute":
        for c in iter_chunks(spec):
            f(c)
    elif case == "compute_held":
        # The loop's own floor on one thread: each result kept until the next is made.
        x = None
        for c in iter_chunks(spec):
            x = f(c)
        del x
    elif case == "zstd1":
        # compression only: the data are computed outside the clock, chunk by chunk
        encode_s = 0.0
        stored = 0
        for c in iter_chunks(spec):
            data = np.ascontiguousarray(f(c))
            t0 = time.perf_counter()
            stored += len(codec.encode(data))
            encode_s += time.perf_counter() - t0
        extra["stored_bytes"] = stored
    elif case == "zstd":
        from concurrent.futures import ThreadPoolExecutor

        def slab(bounds: tuple[list[int], list[int]]) -> int:
            chunks = grid(bounds[0], bounds[1], spec["chunks"])
            return sum(len(codec.encode(np.ascontiguousarray(f(c)))) for c in chunks)

        with ThreadPoolExecutor(n_threads) as pool:
            extra["stored_bytes"] = sum(pool.map(slab, tasks))
        extra["threads"] = n_threads
    elif case == "pipeline":
        # What the w[c] = f(c) loop could reach if storing cost nothing: f on this thread
        # as the loop runs it (each result handed over, then dropped), the compression on
        # N threads. Chunks go to the pool four at a time (a task per chunk would cost the
        # baseline ~30 µs of executor overhead each), at most N batches in flight.
        from concurrent.futures import ThreadPoolExecutor
        from threading import BoundedSemaphore

        slots = BoundedSemaphore(n_threads)
        sizes: list[int] = []

        def encode(batch: list[Any]) -> None:
            try:
                sizes.append(sum(len(codec.encode(data)) for data in batch))
            finally:
                slots.release()

        with ThreadPoolExecutor(n_threads) as pool:
            batch: list[Any] = []
            futures = []
            for c in iter_chunks(spec):
                batch.append(np.ascontiguousarray(f(c)))
                if len(batch) == 4:
                    slots.acquire()
                    futures.append(pool.submit(encode, batch))
                    batch = []
            if batch:
                slots.acquire()
                futures.append(pool.submit(encode, batch))
        for future in futures:
            future.result()  # an encode that failed fails the case
        extra["stored_bytes"] = sum(sizes)
        extra["threads"] = n_threads
    elif case == "sw_write_shard":
        for shard in arr.iter_shards():
            with arr.write_shard(shard) as w:
                for c in w.inner_chunks():
                    w[c] = f(c)
    elif case == "sw_write_shard_held":
        for shard in arr.iter_shards():
            with arr.write_shard(shard) as w:
                for c in w.inner_chunks():
                    x = f(c)
                    w[c] = x
    elif case == "sw_map_chunks":
        stats = arr.map_chunks(f)
        extra["puts"] = stats.get("puts")
        extra["gets"] = stats.get("gets")
    elif case == "sw_map_threads":
        n_threads = threads or _ncores()
        stats = arr.map_chunks(f, threads=n_threads)
        extra["puts"] = stats.get("puts")
        extra["gets"] = stats.get("gets")
        extra["threads"] = n_threads
    elif case == "zarr_chunk":
        for shard in shards:
            for c in chunk_boxes(spec, shard):
                z[c.slices] = f(c)
    elif case == "zarr_shard":
        for shard in shards:
            buf = np.empty(shard.shape, dtype=dtype)
            for c in chunk_boxes(spec, shard):
                buf[shard.local(c)] = f(c)
            z[shard.slices] = buf
            del buf
    elif case == "ts_txn":
        for shard in shards:
            with ts.Transaction() as txn:
                tt = t.with_transaction(txn)
                for c in chunk_boxes(spec, shard):
                    tt[c.slices].write(f(c)).result()
    elif case == "sw_assign":
        arr[...] = full
    elif case == "zarr_assign":
        z[...] = full
    elif case == "ts_assign":
        t.write(full).result()
    elif case == "ts_shard":
        for shard in shards:
            buf = np.empty(shard.shape, dtype=dtype)
            for c in chunk_boxes(spec, shard):
                buf[shard.local(c)] = f(c)
            t[shard.slices].write(buf).result()
            del buf
    else:
        raise ValueError(f"unknown case {case}")
    seconds = time.perf_counter() - start
    extra["minor_faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
    if case == "zstd1":
        seconds = encode_s
    peak = _maxrss_bytes()

    result = {
        "seconds": seconds,
        "peak_rss_mib": peak / MiB,
        "rss_before_mib": rss_before / MiB,
        "growth_mib": max(0, peak - max(rss_before, 0)) / MiB,
        "peak_before_mib": maxrss_before / MiB,
        **extra,
    }
    # -- verification (not timed, after the peak was taken) ------------------------------
    if WRITES[case]:
        result.update(verify(spec, make_data_fn(spec["dtype"], spec.get("data", "ramp"))))
    return result


def verify(spec: dict[str, Any], f: Callable[[Any], Any]) -> dict[str, Any]:
    """Read back the first, the last and a few random inner chunks with zarr-python (or,
    where it is not installed, TensorStore) and compare with ``f``; check that every shard
    was stored. Raises on any mismatch."""
    import numpy as np

    path = Path(spec["path"])
    try:
        import zarr

        z = zarr.open_array(str(path), mode="r")
        shape, dtype = list(z.shape), str(z.dtype)
    except ImportError:
        import tensorstore as ts

        spec_ts = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
        z = ts.open(spec_ts).result()
        shape, dtype = list(z.shape), str(z.dtype.numpy_dtype)
    if shape != spec["shape"] or dtype != spec["dtype"]:
        raise AssertionError(f"array metadata changed: {shape} {dtype}")
    every = list(iter_chunks(spec))
    rng = random.Random(spec.get("seed", 0))
    picks = [every[0], every[-1], *rng.sample(every, min(6, len(every)))]
    for c in picks:
        got = np.asarray(z[c.slices])
        want = np.asarray(f(c))
        if not np.array_equal(got, want):
            raise AssertionError(f"chunk at {c.origin} differs from the data function")
    shard_files = [p for p in (path / "c").rglob("*") if p.is_file()]
    n_shards = len(shard_boxes(spec))
    if len(shard_files) != n_shards:
        raise AssertionError(f"{len(shard_files)} shard files stored, expected {n_shards}")
    stored = sum(p.stat().st_size for p in shard_files)
    return {"verified_chunks": len(picks), "stored_bytes": stored}
