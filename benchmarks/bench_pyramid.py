#!/usr/bin/env python
"""Multiscale pyramids: a TCZYX uint16 volume downsampled into 4 sharded Zarr v3 levels by
TensorStore (a transaction per shard, as in the motivating issue, and whole levels),
ngff-zarr, ome-zarr-py and shardwright's ``pyramid``, against the compressor alone.

    python benchmarks/bench_pyramid.py [--size tiny|512M|2G] [--cases ts_loop,ts_whole,...]
                                       [--repeat 1] [--timeout 600] [--workdir DIR]
                                       [--json benchmarks/recorded/pyramid-2core.json]

The environment is its own virtual env, ``.venv-bench`` (CPython 3.12), pinned in
``benchmarks/requirements-pyramid.txt``::

    python3.12 -m venv .venv-bench
    .venv-bench/bin/pip install -r benchmarks/requirements-pyramid.txt
    .venv-bench/bin/pip install --no-deps target/wheels-test/*.whl   # shardwright
    .venv-bench/bin/python benchmarks/bench_pyramid.py --size 512M \\
        --json benchmarks/recorded/pyramid-2core.json

(the wheel is the one ``scripts/test.sh`` builds: ``maturin build --release --out
target/wheels-test``). Without shardwright, or with a shardwright that has no
``pyramid``, its case is skipped with a message and the others run.

The measurement:

- **Source**: a Zarr v3 array on local disk, shape (2, 2, 64, 1024, 1024) (``512M``) or
  (2, 2, 256, 1024, 1024) (``2G``), uint16, smooth gradients plus 5 bits of hash noise,
  sharded like the levels: shards (1, 1, 64, 512, 512), inner chunks (1, 1, 32, 128, 128),
  ``bytes`` + zstd level 3, ``bytes`` + ``crc32c`` index at the end. It is written once by
  TensorStore, outside any clock, and kept in ``--workdir`` (reused by later invocations
  when the same size is asked for).
- **Pyramid**: factors (1, 1, 2, 2, 2), 4 levels: level 0 the source re-sharded, level
  k >= 1 the mean of 2x2x2 windows of level k - 1. Every level sharded Zarr v3, shards
  (1, 1, 64, 512, 512) and inner chunks (1, 1, 32, 128, 128), each clipped to the level's
  shape (the shard then rounded up to a multiple of the chunk), zstd level 3 (the
  ``zstd_level`` field of the JSON), in every tool.
- **Cases**, each run in a fresh Python process (``sys.executable`` running this file with
  ``--child``); the timed part starts after the imports and ends when the last level is
  stored; it includes creating the arrays and opening the source:

  ``ts_loop``: TensorStore as the issue writes it: level 0 copied from the source, then
  for each level k >= 1 the view ``ts.downsample(level k-1, factors, "mean")`` of the level
  just written (read back from disk: TensorStore's cache pool is 0 by default); for each
  write chunk (shard) of the destination, a ``ts.Transaction()``,
  ``dst.with_transaction(txn)[region].write(view[region]).result()``,
  ``txn.commit_async().result()``.
  ``ts_whole``: TensorStore, one ``dst.write(view).result()`` per level.
  ``ngff_zarr``: ``to_multiscales(method=Methods.DASK_BIN_SHRINK)`` (the local mean, integers
  rounded half up) on ``dask.array.from_zarr`` of the source (zarr-python), then
  ``to_ngff_zarr(version="0.5", chunks_per_shard=..., compressors=[ZstdCodec(level=3)])``.
  ``ome_zarr``: ome-zarr-py ``write_image(method=Methods.LOCAL_MEAN)`` (skimage's
  ``downscale_local_mean``, truncated to uint16) on the same dask array, format 0.5,
  ``storage_options`` per level with ``chunks``, ``shards`` and ``compressors``.
  ``shardwright``: ``sw.pyramid(src, dst, factors=(1, 1, 2, 2, 2), levels=4, method="mean",
  chunks=(1, 1, 32, 128, 128), shards=(1, 1, 64, 512, 512), compressor="zstd",
  overwrite=True)`` (plus ``compression_level=3`` when its signature takes one), returning
  the level arrays.
  ``compress``: the compressor-only floor: every inner chunk of every level (the reference
  pyramid, in memory, each chunk a contiguous array before the clock) compressed with
  ``numcodecs.Zstd(level=3)`` on a 2-thread pool (the machine's cores; all the tools use
  both), and on 1 thread for comparison. Nothing is read or stored.
- **Measured** in each child: wall time of the timed part (``time.perf_counter``); peak
  RSS = ``VmHWM`` of ``/proc/self/status`` after resetting it (``5`` into
  ``/proc/self/clear_refs``) just before the clock, i.e. the process's whole resident set
  at its largest during the timed part (imports included), growth = that minus the RSS at
  the start; also the child's ``ru_maxrss`` as the parent's ``os.wait4`` returns it (the
  whole life of the process, set-up included). Bytes read: ``rchar`` of ``/proc/self/io``
  before and after the timed part: all bytes through ``read``-family system calls of all
  the process's threads, page cache or not, so it counts levels read back as well as the
  source. Bytes read *from the source*: TensorStore: ``rchar`` during level 0 (the only
  phase that touches the source; per-level ``rchar`` is in the JSON); ngff-zarr and
  ome-zarr: the bytes the source's zarr-python store returned (a counting ``LocalStore``);
  shardwright: ``rchar`` (its one-pass driver reads nothing else, if it does read its own
  levels back, the number includes them). The page cache is **not** dropped: the source is
  read once (``cat`` to /dev/null) before every run, so every run finds it cached; outputs
  are deleted after each run.
- **A shared machine**: the measured processes run at nice -20 (``--nice``; as root), wait
  for an idle machine before they start (``--quiet-wait``) and are run again (at most
  ``--retries`` times) when other processes took more than 0.5 CPU s and 5% of the CPUs
  during the run; ``other_cpu_s`` (the machine's busy CPU seconds from ``/proc/stat`` over
  the child's life, less the child's own ``ru_utime + ru_stime``) and ``disturbed`` are
  recorded per run, the least disturbed attempt is kept.
- **Checked**, outside the clock, in a separate process: level 0 equal to the source and
  each level k >= 1 equal to the reference ``ts.downsample(reference k-1, factors,
  "mean")`` (TensorStore rounds the mean half to even), the chain starting at the source,
  every element compared. A tool whose levels are not equal is reported ``differs`` (with
  the largest difference and the fraction of elements that differ), not failed: ngff-zarr
  rounds half up and ome-zarr-py truncates. Each level's stored chunk and shard shapes and
  codecs are read from its ``zarr.json`` and recorded.

``--json`` merges into an existing file: the results of other sizes in it are kept.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
RESULT = "@@RESULT "
NICE = 0  # the children's nice value (--nice)
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SIZES = {
    "tiny": (1, 2, 16, 256, 256),  # smoke test: 8 MiB
    "512M": (2, 2, 64, 1024, 1024),
    "2G": (2, 2, 256, 1024, 1024),
}
DIMS = ("t", "c", "z", "y", "x")
FACTORS = (1, 1, 2, 2, 2)
LEVELS = 4
CHUNKS = (1, 1, 32, 128, 128)
SHARDS = (1, 1, 64, 512, 512)
ZSTD_LEVEL = 3
CASES = ("ts_loop", "ts_whole", "ngff_zarr", "ome_zarr", "shardwright", "compress")
LABELS = {
    "ts_loop": "TensorStore, transaction per shard (downsample view of the level before)",
    "ts_whole": "TensorStore, one write per level (downsample view of the level before)",
    "ngff_zarr": "ngff-zarr to_multiscales + to_ngff_zarr (dask_bin_shrink)",
    "ome_zarr": "ome-zarr-py write_image (local_mean)",
    "shardwright": "shardwright pyramid",
    "compress": "zstd 3 alone, 2 threads (compress only: the floor)",
}
METHODS = {
    "ts_loop": "mean (ts.downsample 'mean', integers rounded half to even)",
    "ts_whole": "mean (ts.downsample 'mean', integers rounded half to even)",
    "ngff_zarr": "Methods.DASK_BIN_SHRINK: local mean by dask.array.coarsen, rounded half up",
    "ome_zarr": "Methods.LOCAL_MEAN: skimage downscale_local_mean, truncated (astype uint16)",
    "shardwright": "mean",
    "compress": "none (compresses the reference pyramid)",
}


# ---------------------------------------------------------------------------------------
# Geometry (standard library; parent and children)
# ---------------------------------------------------------------------------------------


def level_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Each level's shape: ``ceil(n / f)`` per dimension, as ``ts.downsample`` gives."""
    shapes = [tuple(shape)]
    for _ in range(LEVELS - 1):
        shapes.append(tuple(-(-n // f) for n, f in zip(shapes[-1], FACTORS)))
    return shapes


def level_grid(shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(chunks, shards) of a level: both clipped to its shape, the shard a multiple of the
    chunk."""
    chunks = tuple(min(c, n) for c, n in zip(CHUNKS, shape))
    shards = tuple(
        min(s, -(-n // c) * c) for s, c, n in zip(SHARDS, chunks, shape)
    )  # fmt: skip
    shards = tuple(-(-s // c) * c for s, c in zip(shards, chunks))
    return chunks, shards


def boxes(shape: tuple[int, ...], step: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """The regions of the grid of ``step`` over ``shape``, in C order."""
    ranges = [range(0, n, s) for n, s in zip(shape, step)]
    return [
        tuple(slice(o, min(o + s, n)) for o, s, n in zip(start, step, shape))
        for start in itertools.product(*ranges)
    ]


# ---------------------------------------------------------------------------------------
# Children
# ---------------------------------------------------------------------------------------


def proc_io() -> dict[str, int]:
    out = {}
    with open("/proc/self/io") as f:
        for line in f:
            k, v = line.split(":")
            out[k.strip()] = int(v)
    return out


def status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def ts_spec(path: str) -> dict[str, Any]:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}


def ts_create_spec(path: str, shape: tuple[int, ...]) -> dict[str, Any]:
    """A sharded zarr3 array as zarr-python would write it (bytes + zstd inside
    ``sharding_indexed``, a ``bytes`` + ``crc32c`` index at the end)."""
    chunks, shards = level_grid(shape)
    return {
        **ts_spec(path),
        "metadata": {
            "shape": list(shape),
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shards)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": list(chunks),
                        "codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "zstd", "configuration": {"level": ZSTD_LEVEL}},
                        ],
                        "index_codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "crc32c"},
                        ],
                        "index_location": "end",
                    },
                }
            ],
            "dimension_names": list(DIMS),
        },
        "create": True,
        "delete_existing": True,
    }


def source_data(region: tuple[slice, ...], noise_bits: int = 5):
    """The source's values in ``region`` (a pure function of the coordinates): smooth
    gradients and a slow wave per (t, c), plus ``noise_bits`` bits of a multiplicative hash
    (5: ≈ 2.3x with zstd 3; 7: ≈ 1.85x)."""
    import numpy as np

    t, c, z, y, x = (
        np.arange(s.start, s.stop, dtype=np.uint32).reshape([-1 if i == d else 1 for i in range(5)])
        for d, s in enumerate(region)
    )
    ramp = (3 * x + 5 * y + 7 * z) // 4 + 4000 * c + 2000 * t
    wave = 600.0 * np.sin(x / 97.0) * np.cos(y / 131.0) * np.cos(z / 23.0)
    h = (x * np.uint32(73856093)) ^ (y * np.uint32(19349663)) ^ (z * np.uint32(83492791))
    h ^= (t * 2 + c) * np.uint32(2654435761)
    noise = (h >> np.uint32(11)) & np.uint32((1 << noise_bits) - 1)
    return (ramp + noise + 1000 + wave).astype(np.uint16)


def stored_bytes(path: Path, below: bool = True) -> int:
    """Bytes of the files under ``path``; without the arrays or groups below it (folders
    with their own ``zarr.json``) when ``below`` is false."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        if not below:
            dirnames[:] = [d for d in dirnames if not Path(dirpath, d, "zarr.json").exists()]
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in filenames)
    return total


def child_source(job: dict[str, Any]) -> dict[str, Any]:
    """Write the source array (untimed); ``job["noise_bits"]``: see :func:`source_data`."""
    import tensorstore as ts

    shape = tuple(job["shape"])
    t0 = time.perf_counter()
    dst = ts.open(ts_create_spec(job["src"], shape)).result()
    _, shards = level_grid(shape)
    for region in boxes(shape, shards):
        dst[region].write(source_data(region, job.get("noise_bits", 5))).result()
    return {"seconds": time.perf_counter() - t0, "stored_bytes": stored_bytes(Path(job["src"]))}


def child_reference(job: dict[str, Any]) -> dict[str, Any]:
    """The reference levels 1..3, saved as .npy files: ``half_even``, the one every tool is
    checked against, ``ts.downsample(reference k-1, factors, "mean")``, the chain starting
    at the source (TensorStore rounds a mean half to even); and, to tell rounding apart
    from other differences, the same chain of means rounded half up (``half_up``) and
    truncated (``floor``), computed with numpy (integer sums, so exact)."""
    import numpy as np
    import tensorstore as ts

    source = ts.open(ts_spec(job["src"])).result().read().result()
    out: dict[str, Any] = {}
    prev = source
    for k in range(1, LEVELS):
        ref = ts.downsample(ts.array(prev), list(FACTORS), "mean").read().result()
        np.save(job["refs"]["half_even"][k], ref)
        prev = ref
    if not all(n % f**LEVELS == 0 for n, f in zip(source.shape, FACTORS)):
        out["variants"] = "half_up and floor skipped: the shape is not a multiple of the windows"
        return out
    n = math.prod(FACTORS)
    for variant in ("half_up", "floor"):
        prev = source
        for k in range(1, LEVELS):
            t, c, z, y, x = prev.shape
            ref = np.empty((t, c, z // 2, y // 2, x // 2), np.uint16)
            for i, j in itertools.product(range(t), range(c)):
                windows = prev[i, j].reshape(z // 2, 2, y // 2, 2, x // 2, 2)
                total = windows.sum(axis=(1, 3, 5), dtype=np.uint32)
                ref[i, j] = (total + n // 2) // n if variant == "half_up" else total // n
            np.save(job["refs"][variant][k], ref)
            prev = ref
    return out


def ts_write_per_shard(out: Any, view: Any, shape: tuple[int, ...]) -> None:
    """Write ``view`` into the TensorStore ``out`` as the motivating issue does: for each
    write chunk (shard) of ``out``, a ``ts.Transaction()``,
    ``out.with_transaction(txn)[region].write(view[region]).result()``,
    ``txn.commit_async().result()``."""
    import tensorstore as ts

    grid = tuple(out.chunk_layout.write_chunk.shape)
    for region in boxes(shape, grid):
        txn = ts.Transaction()
        out.with_transaction(txn)[region].write(view[region]).result()
        txn.commit_async().result()


class _Counting:
    """The bytes a zarr-python store's reads returned."""

    total = 0


def counting_local_store(root: str):
    from zarr.storage import LocalStore

    class CountingLocalStore(LocalStore):
        async def get(self, key, prototype=None, byte_range=None):
            buf = await super().get(key, prototype, byte_range)
            if buf is not None:
                _Counting.total += len(buf)
            return buf

        async def get_partial_values(self, prototype, key_ranges):
            bufs = await super().get_partial_values(prototype, key_ranges)
            _Counting.total += sum(len(b) for b in bufs if b is not None)
            return bufs

    return CountingLocalStore(root, read_only=True)


def child_case(job: dict[str, Any]) -> dict[str, Any]:
    case, src, dst = job["case"], job["src"], job["dst"]
    shapes = [tuple(s) for s in level_shapes(tuple(job["shape"]))]
    extra: dict[str, Any] = {}
    levels_out: list[str] = []  # the folders of the written levels, for the check
    phases: list[dict[str, Any]] = []

    def phase(k: int, t_start: float, io_start: dict[str, int]) -> None:
        io = proc_io()
        phases.append(
            {
                "level": k,
                "seconds": time.perf_counter() - t_start,
                "rchar": io["rchar"] - io_start["rchar"],
                "wchar": io["wchar"] - io_start["wchar"],
            }
        )

    if case in ("ts_loop", "ts_whole"):
        from importlib.metadata import version

        import tensorstore as ts

        extra["versions"] = {"tensorstore": version("tensorstore")}

        def run() -> None:
            prev = ts.open(ts_spec(src)).result()
            for k, shape in enumerate(shapes):
                t_k, io_k = time.perf_counter(), proc_io()
                path = os.path.join(dst, str(k))
                out = ts.open(ts_create_spec(path, shape)).result()
                view = prev if k == 0 else ts.downsample(prev, list(FACTORS), "mean")
                if case == "ts_whole":
                    out.write(view).result()
                else:
                    ts_write_per_shard(out, view, shape)
                levels_out.append(path)
                phase(k, t_k, io_k)
                prev = out

    elif case in ("ngff_zarr", "ome_zarr"):
        import dask
        import dask.array as da
        import zarr
        from zarr.codecs import ZstdCodec

        extra["versions"] = {"dask": dask.__version__, "zarr": zarr.__version__}
        factors = [
            {d: f**k for d, f in zip(DIMS, FACTORS) if f != 1} for k in range(1, LEVELS)
        ]  # fmt: skip

        if case == "ngff_zarr":
            import ngff_zarr as nz

            extra["versions"]["ngff_zarr"] = nz.__version__
            extra["memory_target"] = getattr(getattr(nz, "config", None), "memory_target", None)

            def run() -> None:
                z = zarr.open_array(counting_local_store(src), mode="r")
                image = nz.to_ngff_image(da.from_zarr(z), dims=list(DIMS))
                ms = nz.to_multiscales(
                    image,
                    scale_factors=factors,
                    method=nz.Methods.DASK_BIN_SHRINK,
                    chunks=dict(zip(DIMS, CHUNKS)),
                )
                nz.to_ngff_zarr(
                    dst,
                    ms,
                    version="0.5",
                    chunks_per_shard={d: s // c for d, s, c in zip(DIMS, SHARDS, CHUNKS)},
                    compressors=[ZstdCodec(level=ZSTD_LEVEL)],
                )

        else:
            import ome_zarr
            from ome_zarr.format import FormatV05
            from ome_zarr.scale import Methods
            from ome_zarr.writer import write_image

            extra["versions"]["ome_zarr"] = ome_zarr.__version__
            options = []
            for shape in shapes:
                chunks, shards = level_grid(shape)
                options.append(
                    {
                        "chunks": chunks,
                        "shards": shards,
                        "compressors": [ZstdCodec(level=ZSTD_LEVEL)],
                    }
                )

            def run() -> None:
                z = zarr.open_array(counting_local_store(src), mode="r")
                group = zarr.open_group(dst, mode="w", zarr_format=3)
                write_image(
                    da.from_zarr(z),
                    group,
                    scale_factors=factors,
                    method=Methods.LOCAL_MEAN,
                    fmt=FormatV05(),
                    axes=list(DIMS),
                    storage_options=options,
                )

    elif case == "shardwright":
        try:
            import shardwright as sw
        except ImportError as e:
            return {"case": case, "skipped": f"shardwright is not installed ({e})"}
        extra["versions"] = {"shardwright": getattr(sw, "__version__", None)}
        if not hasattr(sw, "pyramid"):
            return {
                "case": case,
                "skipped": f"shardwright {getattr(sw, '__version__', '?')} at "
                f"{os.path.dirname(sw.__file__)} has no pyramid() (not written yet)",
            }
        import inspect

        kwargs: dict[str, Any] = dict(
            factors=FACTORS,
            levels=LEVELS,
            method="mean",
            chunks=CHUNKS,
            shards=SHARDS,
            compressor="zstd",
            overwrite=True,
        )
        try:
            params = inspect.signature(sw.pyramid).parameters
        except (TypeError, ValueError):
            params = {}
        if "compression_level" in params:
            kwargs["compression_level"] = ZSTD_LEVEL
        extra["kwargs"] = {k: v for k, v in kwargs.items()}

        def run() -> None:
            arrays = sw.pyramid(src, dst, **kwargs)
            for a in arrays:
                p = a.path
                levels_out.append(str(p) if isinstance(p, Path) else str(a.url))

    else:
        raise SystemExit(f"unknown case {case}")

    rss_start = status_bytes("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss_before = status_bytes("VmRSS")
    io0 = proc_io()
    _Counting.total = 0
    t0 = time.perf_counter()
    run()
    seconds = time.perf_counter() - t0
    io1 = proc_io()
    peak = status_bytes("VmHWM")
    if case in ("ngff_zarr", "ome_zarr"):
        levels_out = ome_level_paths(dst)
        source_read = _Counting.total
        source_read_how = "bytes returned by the source's zarr-python LocalStore (counted)"
    elif case.startswith("ts_"):
        source_read = phases[0]["rchar"]
        source_read_how = "rchar of /proc/self/io while level 0 was written"
    else:
        source_read = io1["rchar"] - io0["rchar"]
        source_read_how = "rchar of /proc/self/io over the whole call (includes any read-back)"
    return {
        "case": case,
        "seconds": seconds,
        "rchar": io1["rchar"] - io0["rchar"],
        "wchar": io1["wchar"] - io0["wchar"],
        "syscr": io1["syscr"] - io0["syscr"],
        "source_bytes_read": source_read,
        "source_bytes_read_how": source_read_how,
        "peak_rss": peak,
        "rss_before": rss_before,
        "rss_start": rss_start,
        "levels_written": levels_out,
        "phases": phases,
        **extra,
    }


def ome_level_paths(root: str) -> list[str]:
    """The level folders of an OME-Zarr 0.5 image at ``root``, from its ``zarr.json``."""
    meta = json.loads(Path(root, "zarr.json").read_text())
    ome = meta.get("attributes", {}).get("ome", meta.get("attributes", {}))
    datasets = ome["multiscales"][0]["datasets"]
    return [os.path.join(root, d["path"]) for d in datasets]


def child_compress(job: dict[str, Any]) -> dict[str, Any]:
    """The compressor alone on every inner chunk of every level of the reference pyramid."""
    from concurrent.futures import ThreadPoolExecutor

    import numcodecs
    import numpy as np
    import tensorstore as ts

    arrays = [ts.open(ts_spec(job["src"])).result().read().result()]
    arrays += [np.load(job["refs"]["half_even"][k]) for k in range(1, LEVELS)]
    pieces = []
    for a in arrays:
        chunks, _ = level_grid(a.shape)
        pieces += [np.ascontiguousarray(a[r]) for r in boxes(a.shape, chunks)]
    del arrays
    codec = numcodecs.Zstd(level=ZSTD_LEVEL)
    codec.encode(pieces[-1])  # warm
    out: dict[str, Any] = {"chunks": len(pieces), "raw_bytes": sum(p.nbytes for p in pieces)}
    rss_start = status_bytes("VmRSS")
    for threads in (1, 2):
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        rss_before = status_bytes("VmRSS")
        with ThreadPoolExecutor(threads) as pool:
            t0 = time.perf_counter()
            sizes = list(pool.map(lambda p: len(codec.encode(p)), pieces))
            seconds = time.perf_counter() - t0
        out[f"threads_{threads}"] = {
            "seconds": seconds,
            "compressed_bytes": sum(sizes),
            "peak_rss": status_bytes("VmHWM"),
            "rss_before": rss_before,
        }
    two = out["threads_2"]
    out.update(
        case="compress",
        seconds=two["seconds"],
        peak_rss=two["peak_rss"],
        rss_before=two["rss_before"],
        rss_start=rss_start,
        rchar=0,
        source_bytes_read=0,
        source_bytes_read_how="nothing read in the timed part (the data is in memory)",
        versions={"numcodecs": numcodecs.__version__},
    )
    return out


def child_verify(job: dict[str, Any]) -> dict[str, Any]:
    """Compare each written level with the source (level 0) and the references."""
    import numpy as np
    import tensorstore as ts

    src = ts.open(ts_spec(job["src"])).result()
    shapes = level_shapes(tuple(job["shape"]))
    out: dict[str, Any] = {"levels": [], "equal": True}
    paths = job["levels"]
    if len(paths) != LEVELS:
        out["equal"] = False
        out["problem"] = f"{len(paths)} levels written, {LEVELS} expected"
    for k, path in enumerate(paths[:LEVELS]):
        info: dict[str, Any] = {"level": k, "path": os.path.relpath(path, job["dst"])}
        try:
            meta = json.loads(Path(path, "zarr.json").read_text())
            info.update(zarr_layout(meta))
            info["stored_bytes"] = stored_bytes(Path(path), below=False)
            got = ts.open(ts_spec(path)).result()
            info["shape"] = list(got.shape)
            if tuple(got.shape) != tuple(shapes[k]):
                raise ValueError(f"shape {got.shape}, expected {shapes[k]}")
            if k == 0:
                ndiff = maxdiff = 0
                for region in boxes(shapes[0], (1, 1, *shapes[0][2:])):
                    a = got[region].read().result().astype(np.int32)
                    b = src[region].read().result().astype(np.int32)
                    d = np.abs(a - b)
                    ndiff += int(np.count_nonzero(d))
                    maxdiff = max(maxdiff, int(d.max()))
            else:
                a = got.read().result()
                d = np.abs(a.astype(np.int32) - np.load(job["refs"]["half_even"][k]))
                ndiff, maxdiff = int(np.count_nonzero(d)), int(d.max())
                del d
                info["equals_reference"] = [
                    variant
                    for variant, files in job["refs"].items()
                    if Path(files[k]).exists() and np.array_equal(a, np.load(files[k]))
                ]
            size = 1
            for n in shapes[k]:
                size *= n
            info.update(
                equal=ndiff == 0,
                differing_elements=ndiff,
                differing_fraction=ndiff / size,
                max_abs_diff=maxdiff,
            )
        except Exception as e:  # a level a tool wrote wrong or not at all
            info.update(equal=False, error=f"{type(e).__name__}: {e}")
        out["equal"] = out["equal"] and info["equal"]
        out["levels"].append(info)
    return out


def zarr_layout(meta: dict[str, Any]) -> dict[str, Any]:
    """Chunk shape, shard shape and codec chain of a zarr.json (v3) or .zarray."""
    out: dict[str, Any] = {"zarr_format": meta.get("zarr_format")}
    grid = meta.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
    codecs = meta.get("codecs", [])
    if codecs and codecs[0].get("name") == "sharding_indexed":
        conf = codecs[0]["configuration"]
        out.update(
            shards=grid,
            chunks=conf["chunk_shape"],
            codecs=conf["codecs"],
            index_codecs=conf.get("index_codecs"),
            index_location=conf.get("index_location", "end"),
        )
    else:
        out.update(shards=None, chunks=grid, codecs=codecs)
    return out


def child_versions(job: dict[str, Any]) -> dict[str, Any]:
    from importlib import metadata

    out = {}
    for dist in job["dists"]:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def set_nice(nice: int | None) -> None:
    """Give this (child) process the nice value ``nice`` (nothing when 0 or ``None``); call
    it before any thread exists: the threads the libraries start inherit it."""
    if nice:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        # with autogroups (sched_autogroup_enabled), nice only ranks processes within one
        # session's group; the child is a session leader: give its group the same value
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
        except OSError:
            pass


def child_main(job: dict[str, Any]) -> None:
    set_nice(job.get("nice"))
    fn = {
        "source": child_source,
        "reference": child_reference,
        "case": child_case,
        "compress": child_compress,
        "verify": child_verify,
        "versions": child_versions,
    }[job["kind"]]
    print(RESULT + json.dumps(fn(job)), flush=True)


# ---------------------------------------------------------------------------------------
# Parent (standard library only)
# ---------------------------------------------------------------------------------------


def run_child(job: dict[str, Any], timeout: float, script: str | None = None) -> dict[str, Any]:
    """Run ``job`` in a fresh interpreter (``script --child '<json>'``, by default this
    file); its result, plus the child's ``ru_maxrss`` (from ``wait4``) and exit status;
    ``{"error": ...}`` when it crashed or timed out."""
    job = {**job, "nice": NICE}
    cmd = [sys.executable, os.path.abspath(script or __file__), "--child", json.dumps(job)]
    busy0, life0 = cpu_busy_seconds(), time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # interrupted: take the child down with us
            kill()
            raise
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    for line in stdout.splitlines():
        if line.startswith(RESULT):
            res = json.loads(line[len(RESULT) :])
            res["child_ru_maxrss"] = usage.ru_maxrss * 1024
            # what else ran on the machine meanwhile: CPU seconds of the whole machine
            # (/proc/stat) over the child's life, less the child's own
            child_cpu = usage.ru_utime + usage.ru_stime
            res["child_life_s"] = time.perf_counter() - life0
            res["child_cpu_s"] = child_cpu
            res["other_cpu_s"] = max(0.0, cpu_busy_seconds() - busy0 - child_cpu)
            return res
    what = f"timed out after {timeout:.0f} s" if timed_out.is_set() else f"rc {proc.returncode}"
    return {
        "error": f"{job['kind']} {job.get('case', '')} failed ({what})",
        "stderr": stderr[-4000:],
    }


def cpu_busy_seconds() -> float:
    """CPU seconds all the machine's CPUs spent busy since boot (/proc/stat: user, nice,
    system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (sum(fields[:3]) + sum(fields[5:8])) / os.sysconf("SC_CLK_TCK")


def busy_over(seconds: float) -> float:
    """CPU seconds the machine spent busy over the next ``seconds``."""
    b0 = cpu_busy_seconds()
    time.sleep(seconds)
    return cpu_busy_seconds() - b0


def wait_quiet(max_wait: float) -> float:
    """Wait (at most ``max_wait`` s) until the machine is idle: under 0.1 CPU s busy in a
    1 s window. Returns the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_wait and busy_over(1.0) > 0.1:
        pass
    return time.perf_counter() - t0


def disturbed(res: dict[str, Any]) -> bool:
    """Whether other processes took a noticeable share of the CPUs during a run: more than
    0.5 CPU s and 5% of the run's life on all CPUs (the kernel's own work for the run,
    e.g. writeback, counts here too: ~0.1-0.3 CPU s on a quiet machine)."""
    life = res.get("child_life_s", 0.0)
    return res["other_cpu_s"] > max(0.5, 0.05 * life * (os.cpu_count() or 1))


def run_measured(
    job: dict[str, Any],
    timeout: float,
    quiet_wait: float,
    retries: int,
    prepare: Callable[[], None] | None = None,
    script: str | None = None,
) -> dict[str, Any]:
    """One measured run of ``job`` (see :func:`run_child`) on a quiet machine: before each
    attempt, ``prepare()`` then a wait (at most ``quiet_wait`` s) for an idle machine; run
    again (at most ``retries`` times) when other processes took CPU during the run
    (:func:`disturbed`), keeping the least disturbed attempt (the others are listed in its
    ``disturbed_attempts``)."""
    attempts = []
    for _ in range(retries + 1):
        if prepare is not None:
            prepare()
        waited = wait_quiet(quiet_wait)
        res = run_child(job, timeout, script)
        res["waited_for_quiet_s"] = waited
        attempts.append(res)
        if "other_cpu_s" not in res or "skipped" in res or "error" in res or not disturbed(res):
            break
        if len(attempts) > retries:
            break
        print(
            f"  {job.get('case', job['kind'])}: other processes used {res['other_cpu_s']:.1f} "
            f"CPU s during the run ({res['child_life_s']:.1f} s): run again",
            flush=True,
        )
    if len(attempts) > 1:
        ok = [a for a in attempts if "other_cpu_s" in a]
        if ok:
            res = min(ok, key=lambda a: a["other_cpu_s"])
        res["disturbed_attempts"] = [
            {k: a.get(k) for k in ("seconds", "other_cpu_s", "child_life_s")}
            for a in attempts
            if a is not res
        ]
    if "other_cpu_s" in res:
        res["disturbed"] = disturbed(res)
    return res


def warm_source(src: Path) -> None:
    """Read every file of the source once, so each run finds it in the page cache."""
    for p in sorted(src.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                while f.read(1 << 24):
                    pass


def fmt_mib(b: float | None) -> str:
    return "-" if b is None else f"{b / MiB:,.1f}"


def git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r and "skipped" not in r]
    if not ok:
        return runs[0]
    return sorted(ok, key=lambda r: r["seconds"])[(len(ok) - 1) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=list(SIZES), default="512M")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (median shown)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed per run")
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=600,
        help="before each run, wait at most this many seconds for an idle machine",
    )
    ap.add_argument(
        "--retries",
        type=int,
        default=2,
        help="run again (at most this many times) when other processes took CPU during a run",
    )
    ap.add_argument(
        "--nice",
        type=int,
        default=-20 if hasattr(os, "geteuid") and os.geteuid() == 0 else 0,
        help="nice value of the measured processes (default -20 as root, so that other "
        "work on a shared machine takes little CPU from them; 0 otherwise)",
    )
    ap.add_argument("--workdir", help="keeps the source and reference between invocations")
    ap.add_argument("--json", help="merge the results into this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return 0

    global NICE
    NICE = args.nice
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}")
    shape = SIZES[args.size]
    shapes = level_shapes(shape)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_pyramid-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"source-{args.size}.zarr"
    refs = {
        variant: [None]
        + [str(work / f"ref-{args.size}-{variant}-{k}.npy") for k in range(1, LEVELS)]
        for variant in ("half_even", "half_up", "floor")
    }
    done_mark = work / f"source-{args.size}.json"
    started = time.perf_counter()
    load_before = os.getloadavg()
    size_result: dict[str, Any] = {
        "shape": list(shape),
        "dims": "".join(DIMS),
        "raw_bytes": 2 * shape[0] * shape[1] * shape[2] * shape[3] * shape[4],
        "levels": [
            {"shape": list(s), "chunks": list(level_grid(s)[0]), "shards": list(level_grid(s)[1])}
            for s in shapes
        ],
        "cases": {},
    }
    failed = False
    try:
        if done_mark.exists() and json.loads(done_mark.read_text()).get("shape") == list(shape):
            made = json.loads(done_mark.read_text())
            print(f"source: reusing {src}", flush=True)
        else:
            shutil.rmtree(src, ignore_errors=True)
            for files in refs.values():
                for f in files[1:]:
                    Path(f).unlink(missing_ok=True)
            made = run_child({"kind": "source", "src": str(src), "shape": shape}, 3600)
            if "error" in made:
                print(made["error"], made["stderr"], file=sys.stderr)
                return 1
            made["shape"] = list(shape)
            done_mark.write_text(json.dumps(made))
            print(f"source: written in {made['seconds']:.1f} s", flush=True)
        if not all(Path(f).exists() for files in refs.values() for f in files[1:]):
            ref = run_child({"kind": "reference", "src": str(src), "refs": refs}, 3600)
            if "error" in ref:
                print(ref["error"], ref["stderr"], file=sys.stderr)
                return 1
            size_result["reference_notes"] = ref
        size_result["source"] = {
            "stored_bytes": made["stored_bytes"],
            "written_by": "TensorStore (untimed), same shard/chunk shapes and codecs as level 0",
            "data": "smooth gradients + a slow wave per (t, c) + 5 bits of hash noise, uint16",
        }
        print(
            f"pyramid of {shape} uint16 ({fmt_mib(size_result['raw_bytes'])} MiB raw, "
            f"{fmt_mib(made['stored_bytes'])} MiB stored), factors {FACTORS}, {LEVELS} levels "
            f"{[list(s) for s in shapes]}, zstd {ZSTD_LEVEL}",
            flush=True,
        )
        for case in cases:
            runs = []
            for i in range(args.repeat):
                dst = work / f"out-{case}"
                shutil.rmtree(dst, ignore_errors=True)
                job = {"src": str(src), "dst": str(dst), "shape": shape, "refs": refs}
                if case == "compress":
                    job = {**job, "kind": "compress"}
                else:
                    job = {**job, "kind": "case", "case": case}

                def prepare(dst: Path = dst) -> None:
                    shutil.rmtree(dst, ignore_errors=True)
                    warm_source(src)

                res = run_measured(job, args.timeout, args.quiet_wait, args.retries, prepare)
                if "error" not in res and "skipped" not in res and case != "compress":
                    res["stored_bytes"] = stored_bytes(dst) if dst.exists() else None
                    check = run_child(
                        {**job, "kind": "verify", "levels": res["levels_written"]}, 1800
                    )
                    res["check"] = check
                    if "error" in check:
                        res["verified"] = "check failed"
                    elif check["equal"]:
                        res["verified"] = "equal"
                    elif (
                        all("error" not in lv for lv in check["levels"])
                        and len(check["levels"]) == LEVELS
                    ):
                        res["verified"] = "differs"
                    else:
                        res["verified"] = "wrong"
                shutil.rmtree(dst, ignore_errors=True)
                runs.append(res)
                if "skipped" in res:
                    print(f"  {case}: skipped: {res['skipped']}", flush=True)
                    break
                if "error" in res:
                    print(f"  {case}: {res['error']}\n{res['stderr'][-1500:]}", flush=True)
                    failed = True
                    continue
                if res.get("verified") == "wrong" and case in ("ts_loop", "ts_whole"):
                    failed = True
                print(
                    f"  {case} run {i + 1}: {res['seconds']:.2f} s, peak "
                    f"{fmt_mib(res['peak_rss'])} MiB, read {fmt_mib(res['rchar'])} MiB "
                    f"(source {fmt_mib(res['source_bytes_read'])} MiB), "
                    f"{res.get('verified', '')}; other processes {res['other_cpu_s']:.1f} CPU s",
                    flush=True,
                )
            best = median_run(runs)
            size_result["cases"][case] = {
                "label": LABELS[case],
                "method": METHODS[case],
                **{k: v for k, v in best.items() if k != "stderr"},
                "runs": runs,
            }
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    size_result["total_seconds"] = time.perf_counter() - started
    size_result["loadavg_before"] = load_before
    size_result["loadavg_after"] = os.getloadavg()
    size_result["repeat"] = args.repeat
    size_result["nice"] = NICE
    size_result["quiet_wait_s"] = args.quiet_wait
    size_result["retries"] = args.retries

    print()
    title = (
        f"{args.size}: {shape} uint16 -> {LEVELS} levels, factors {FACTORS}, shards {SHARDS}, "
        f"chunks {CHUNKS}, zstd {ZSTD_LEVEL}; median of {args.repeat}"
    )
    print(title)
    header = (
        f"{'case':<12} {'wall s':>8} {'peak RSS MiB':>13} {'growth MiB':>11} "
        f"{'read MiB':>10} {'source MiB':>11} {'stored MiB':>11}  check"
    )
    print(header)
    print("-" * len(header))
    for case, r in size_result["cases"].items():
        if "skipped" in r or "error" in r:
            print(f"{case:<12} {r.get('skipped') or r.get('error')}")
            continue
        print(
            f"{case:<12} {r['seconds']:>8.2f} {fmt_mib(r['peak_rss']):>13} "
            f"{fmt_mib(r['peak_rss'] - r['rss_before']):>11} {fmt_mib(r['rchar']):>10} "
            f"{fmt_mib(r['source_bytes_read']):>11} {fmt_mib(r.get('stored_bytes')):>11}  "
            f"{r.get('verified', '-')}"
        )
    if "compress" in size_result["cases"] and "threads_1" in size_result["cases"]["compress"]:
        c = size_result["cases"]["compress"]
        print(
            f"compress: {c['chunks']} inner chunks, {fmt_mib(c['raw_bytes'])} MiB -> "
            f"{fmt_mib(c['threads_2']['compressed_bytes'])} MiB; 1 thread "
            f"{c['threads_1']['seconds']:.2f} s, 2 threads {c['threads_2']['seconds']:.2f} s"
        )
    print(
        "read: rchar of /proc/self/io in the timed part (all files, page cache included; the "
        "page cache was not dropped). source: see the JSON's source_bytes_read_how."
    )

    if args.json:
        path = Path(args.json)
        data = json.loads(path.read_text()) if path.exists() else {}
        versions = run_child(
            {
                "kind": "versions",
                "dists": ["tensorstore", "zarr", "numpy", "numcodecs", "dask", "ngff-zarr",
                          "ome-zarr", "zarrista", "scikit-image", "shardwright", "psutil"],
            },
            120,
        )  # fmt: skip
        for k in ("child_ru_maxrss", "child_life_s", "child_cpu_s", "other_cpu_s", "nice"):
            versions.pop(k, None)
        data.update(
            {
                "benchmark": "benchmarks/bench_pyramid.py",
                "description": __doc__.split("\n\n")[0].replace("\n", " "),
                "python": platform.python_version(),
                "executable_env": os.path.relpath(sys.prefix, ROOT),
                "requirements": "benchmarks/requirements-pyramid.txt",
                "cpus": os.cpu_count(),
                "mem_total_gib": round(
                    os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1
                ),
                "git": git_commit(),
                "factors": list(FACTORS),
                "levels": LEVELS,
                "chunks": list(CHUNKS),
                "shards": list(SHARDS),
                "zstd_level": ZSTD_LEVEL,
                "nice": NICE,
                "page_cache": "not dropped; the source is read once before every run, so "
                "every run finds it cached; each run's output is deleted after its check",
                "peak_rss": "VmHWM after resetting it just before the timed part (whole "
                "process resident set at its largest during the timed part); "
                "child_ru_maxrss: ru_maxrss of the child from wait4 (its whole life)",
                "bytes_read": "rchar: /proc/self/io rchar over the timed part (all reads, "
                "levels read back included); source_bytes_read: see source_bytes_read_how",
                "versions": versions,
            }
        )
        data.setdefault("sizes", {})[args.size] = size_result
        data.setdefault("commands", {})[args.size] = " ".join(
            [os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(str(ROOT))
             else sys.executable, "benchmarks/bench_pyramid.py", *sys.argv[1:]]
        )  # fmt: skip
        path.write_text(json.dumps(data, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
