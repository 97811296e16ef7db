#!/usr/bin/env python
"""shardwright.dask on a 2-worker local cluster against dask.array.to_zarr: a 1 GiB dask
array written into a sharded Zarr v3 array, with shard-aligned dask chunks (dask's best
case) and misaligned ones (where dask loses data), the pyramid on the cluster against
sw.pyramid in one process, and the compressor-only floor.

    python benchmarks/bench_dask.py [--size tiny|1G] [--repeat 1] [--json FILE]
                                    [--workdir DIR] [--cases swd_aligned,...]

Every case runs in a fresh Python process (this file with ``--child``). The cluster
cases start ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` (one
worker per core) before the clock; the clock covers making the graph and computing it.

- **Data**: uint16, shape (512, 1024, 1024) (``1G``: 1 GiB) or (64, 128, 128) (``tiny``),
  made block by block on the workers by ``dask.array.map_blocks`` from the global
  coordinates (a gradient plus 5 bits of hash noise: the same array whatever the
  chunking). Target: inner chunks (64, 128, 128), shards (128, 256, 256) (``tiny``:
  (16, 32, 32) and (32, 64, 64)), zstd level 3, in both tools.
- **Cases**: ``swd_aligned`` / ``dask_aligned``: dask chunks equal to the shards;
  ``swd_misaligned`` / ``dask_misaligned``: dask chunks (100, 300, 300) (``tiny``:
  (25, 50, 50)), which cut shards and inner chunks. shardwright:
  ``swd.to_zarr(darr, path, chunks=..., shards=..., compressor="zstd",
  compression_level=3)``; dask: ``da.to_zarr(darr, path, chunks=..., shards=...,
  compressors=zarr.codecs.ZstdCodec(level=3))`` (it creates the array with those chunks
  and shards and stores with ``lock=False``: dask #12583). After the clock the child
  reads the array back and counts the elements that differ from the data.
  ``swd_pyramid`` / ``sw_pyramid``: 4 levels, factors 2, mean, the same chunks and
  shards, from the array ``swd_aligned`` wrote: ``swd.pyramid(path, ...)`` on the cluster
  (level 0's tasks read their shard of the source themselves) and ``sw.pyramid(path,
  ...)`` in the child alone (the one-pass engine, on both cores).
  ``source``: the data alone: the dask array made on the cluster and summed, nothing
  stored (what every cluster case spends before writing anything).
  ``compress``: every inner chunk of the data (in memory before the clock) compressed with
  ``numcodecs.Zstd(level=3)`` on a 2-thread pool: nothing is computed, read or stored.
- **Measured**: wall time; tasks in the graph (``len(graph)`` before computing); peak
  RSS: for cluster cases each worker's ``ru_maxrss`` after the job, less its RSS before
  (the largest worker is reported), for one-process cases the child's ``VmHWM`` growth.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SIZES = {
    "tiny": dict(
        shape=(64, 128, 128), chunks=(16, 32, 32), shards=(32, 64, 64), misaligned=(25, 50, 50)
    ),
    "1G": dict(
        shape=(512, 1024, 1024),
        chunks=(64, 128, 128),
        shards=(128, 256, 256),
        misaligned=(100, 300, 300),
    ),
}
CASES = [
    "compress",
    "source",
    "swd_aligned",
    "dask_aligned",
    "swd_misaligned",
    "dask_misaligned",
    "swd_pyramid",
    "sw_pyramid",
]
LEVEL = 3


def generate(block_info: Any = None) -> np.ndarray:
    """The block of the benchmark array at ``block_info``'s location."""
    (z0, z1), (y0, y1), (x0, x1) = block_info[None]["array-location"]
    z, y, x = (np.arange(a, b, dtype=np.uint32) for a, b in ((z0, z1), (y0, y1), (x0, x1)))
    z, y, x = z[:, None, None], y[None, :, None], x[None, None, :]
    smooth = (z * 3 + y * 5 + x * 7) & 0x0FFF
    noise = ((z * 73856093) ^ (y * 19349663) ^ (x * 83492791)) >> 11 & 31
    return (smooth + noise).astype(np.uint16)


def source(size: dict[str, Any], chunks: tuple[int, ...]) -> Any:
    import dask.array as da

    normalized = da.core.normalize_chunks(chunks, size["shape"])
    return da.map_blocks(generate, dtype=np.uint16, chunks=normalized)


def vm_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def worker_rss() -> int:
    return vm_bytes("VmRSS")


def worker_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def count_wrong(path: Path, size: dict[str, Any]) -> int:
    """Elements of the stored array that differ from the data (read shard by shard)."""
    import shardwright as sw

    stored = sw.open(path, mode="r")
    wrong = 0
    for shard in stored.iter_shards():
        info = {None: {"array-location": [(o, o + s) for o, s in zip(shard.origin, shard.shape)]}}
        wrong += int((stored[shard.slices] != generate(info)).sum())
    return wrong


def run_cluster_case(case: str, size: dict[str, Any], work: Path) -> dict[str, Any]:
    import dask.array as da
    import shardwright as sw
    import shardwright.dask as swd
    import zarr
    from distributed import Client, LocalCluster

    out = work / f"{case}.zarr"
    shutil.rmtree(out, ignore_errors=True)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        before = client.run(worker_rss)
        chunks = size["shards"] if "aligned" in case and "mis" not in case else size["misaligned"]
        started = time.perf_counter()
        if case == "source":
            task = source(size, size["shards"]).sum()
        elif case.startswith("swd_") and "pyramid" not in case:
            task = swd.to_zarr(
                source(size, chunks),
                out,
                chunks=size["chunks"],
                shards=size["shards"],
                compressor="zstd",
                compression_level=LEVEL,
                compute=False,
            )
        elif case.startswith("dask_"):
            task = da.to_zarr(
                source(size, chunks),
                str(out),
                chunks=size["chunks"],
                shards=size["shards"],
                compressors=zarr.codecs.ZstdCodec(level=LEVEL),
                compute=False,
            )
        else:  # swd_pyramid
            task = swd.pyramid(
                str(work / "swd_aligned.zarr"),
                out,
                factors=(2, 2, 2),
                levels=4,
                chunks=size["chunks"],
                shards=size["shards"],
                compression_level=LEVEL,
                compute=False,
            )
        tasks = len(dict(task.__dask_graph__()))
        task.compute()
        seconds = time.perf_counter() - started
        peaks = client.run(worker_peak)
    growth = max(peaks[w] - before[w] for w in peaks)
    result = {
        "seconds": seconds,
        "tasks": tasks,
        "worker_peak_rss": max(peaks.values()),
        "worker_peak_growth": growth,
    }
    if case == "source":
        pass
    elif "pyramid" not in case:
        result["wrong_elements"] = count_wrong(out, size)
        result["elements"] = int(np.prod(size["shape"]))
    else:
        result["levels"] = [list(sw.open(out / str(k)).shape) for k in range(4)]
    return result


def run_one_process_pyramid(size: dict[str, Any], work: Path) -> dict[str, Any]:
    import shardwright as sw

    out = work / "sw_pyramid.zarr"
    shutil.rmtree(out, ignore_errors=True)
    before = vm_bytes("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM
    started = time.perf_counter()
    levels = sw.pyramid(
        str(work / "swd_aligned.zarr"),
        out,
        factors=(2, 2, 2),
        levels=4,
        chunks=size["chunks"],
        shards=size["shards"],
        compression_level=LEVEL,
    )
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "peak_growth": vm_bytes("VmHWM") - before,
        "levels": [list(a.shape) for a in levels],
        "tasks": 0,
    }


def run_compress(size: dict[str, Any]) -> dict[str, Any]:
    import numcodecs

    codec = numcodecs.Zstd(level=LEVEL)
    pieces = []
    shape, chunk = size["shape"], size["chunks"]
    for origin in np.ndindex(*[-(-n // c) for n, c in zip(shape, chunk)]):
        loc = [(i * c, min((i + 1) * c, n)) for i, c, n in zip(origin, chunk, shape)]
        pieces.append(np.ascontiguousarray(generate({None: {"array-location": loc}})))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        started = time.perf_counter()
        stored = sum(len(b) for b in pool.map(codec.encode, pieces))
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "stored_bytes": stored, "tasks": 0}


def child(case: str, size_name: str, work: Path) -> None:
    size = SIZES[size_name]
    if case == "compress":
        result = run_compress(size)
    elif case == "sw_pyramid":
        result = run_one_process_pyramid(size, work)
    else:
        result = run_cluster_case(case, size, work)
    print("RESULT " + json.dumps(result))


def run_child(case: str, size: str, work: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", case, "--size", size, "--workdir", str(work)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{case} failed:\n{done.stderr[-3000:]}")
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line.removeprefix("RESULT "))


def mib(n: float) -> str:
    return f"{n / 2**20:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json")
    parser.add_argument("--workdir")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.size, Path(args.workdir))
        return
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; the cases are {CASES}")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_dask-"))
    work.mkdir(parents=True, exist_ok=True)
    if any("pyramid" in c for c in cases) and "swd_aligned" not in cases:
        cases.insert(0, "swd_aligned")  # the pyramids' source
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    for _ in range(args.repeat):
        for case in cases:
            runs[case].append(run_child(case, args.size, work))
    best = {c: min(r, key=lambda x: x["seconds"]) for c, r in runs.items()}
    raw = int(np.prod(SIZES[args.size]["shape"])) * 2
    print(
        f"{'case':<16} {'wall s':>8} {'GB/s':>6} {'tasks':>6} {'peak growth MiB':>16} "
        f"{'wrong elements':>15}"
    )
    for case, r in best.items():
        growth = r.get("worker_peak_growth", r.get("peak_growth", 0))
        wrong = r.get("wrong_elements", "")
        print(
            f"{case:<16} {r['seconds']:>8.2f} {raw / r['seconds'] / 1e9:>6.2f} "
            f"{r['tasks']:>6} {mib(growth):>16} {wrong!s:>15}"
        )
    for a, b in (
        ("swd_aligned", "dask_aligned"),
        ("swd_misaligned", "dask_misaligned"),
        ("swd_pyramid", "sw_pyramid"),
        ("swd_aligned", "compress"),
    ):
        if a in best and b in best:
            print(f"{a} / {b}: {best[a]['seconds'] / best[b]['seconds']:.2f}x the time")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "size": args.size,
                    "shape": SIZES[args.size]["shape"],
                    "cpus": os.cpu_count(),
                    "runs": runs,
                    "best": best,
                },
                indent=1,
            )
        )
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
