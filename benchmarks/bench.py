#!/usr/bin/env python
"""Side-by-side write benchmarks: shardwright against zarr-python, TensorStore and the
compressor alone, on the same arrays, data and machine.

    python benchmarks/bench.py [--size tiny|small|full] [--workloads a,b,c,d]
                               [--json out.json] [--repeat N] [--skip-slow]

Every measured case runs in its own fresh child process (``sys.executable`` running this
file with ``--child``), so its peak RSS is its own. The child prints one JSON line the
parent collects; the parent prints one table (medians over ``--repeat`` runs) and writes
JSON. Each written array is checked outside the timed part: a few random inner chunks
(plus the first and the last) are read back with zarr-python and compared with the data
function, and every shard must exist. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
RESULT_PREFIX = "@@BENCH_RESULT "

# ---------------------------------------------------------------------------------------
# Workloads and sizes
# ---------------------------------------------------------------------------------------

# (array edge, shard edge, inner chunk edge) per workload and size; all arrays are cubes.
SIZES: dict[str, dict[str, tuple[int, int, int]]] = {
    # full: the sizes of shardwright's design notes (peers.md)
    "full": {"a": (512, 256, 32), "b": (512, 256, 8), "c": (512, 256, 256), "d": (512, 256, 32)},
    # small: 1/8 of the data, same number of shards and of chunks per shard as full, except
    # (b), which keeps its 8³ inner chunks (4,096 a shard): 4³ ones make a 3-minute case
    "small": {"a": (256, 128, 16), "b": (256, 128, 8), "c": (256, 128, 128), "d": (256, 128, 16)},
    # tiny: CI smoke test (fewer chunks per shard, so the slow cases stay quick)
    "tiny": {"a": (64, 32, 8), "b": (64, 64, 4), "c": (64, 32, 32), "d": (64, 32, 8)},
}

WORKLOADS: dict[str, dict[str, Any]] = {
    "a": {
        "title": "uint16, zstd 3",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
    },
    "b": {
        "title": "uint16, zstd 3, tiny inner chunks",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
    },
    "c": {
        "title": "uint16, zstd 3, one inner chunk per shard",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
    },
    "d": {
        "title": "float32, blosc (zstd 5, shuffle)",
        "dtype": "float32",
        "compressor": "blosc",
        "level": None,
    },
}

# (key, label, writes an array); in table order.
CASES: list[tuple[str, str, bool]] = [
    ("compute", "compute alone (1 thread)", False),
    ("zstd1", "{codec} 1 thread (compress only)", False),
    ("zstd", "{codec} alone (compute + compress, N threads)", False),
    ("sw_write_shard", "shardwright write_shard", True),
    ("sw_map_chunks", "shardwright map_chunks", True),
    ("zarr_chunk", "zarr-python per chunk", True),
    ("zarr_shard", "zarr-python whole shard", True),
    ("ts_txn", "TensorStore transaction per shard", True),
    ("ts_shard", "TensorStore whole shard", True),
]
CASE_LABEL = {key: label for key, label, _ in CASES}
WRITES = {key: writes for key, _, writes in CASES}
SLOW_CASES = {"zarr_chunk"}  # only run for workload (a); dropped by --skip-slow
SLOW_WORKLOADS = {"zarr_chunk": {"a"}}


def case_label(key: str, spec: dict[str, Any]) -> str:
    return CASE_LABEL[key].format(codec=spec["compressor"])


def workload_spec(name: str, size: str) -> dict[str, Any]:
    edge, shard, chunk = SIZES[size][name]
    spec = dict(WORKLOADS[name])
    spec.update(
        name=name,
        shape=[edge] * 3,
        shards=[shard] * 3,
        chunks=[chunk] * 3,
    )
    return spec


def describe(spec: dict[str, Any]) -> str:
    def cube(v: Sequence[int]) -> str:
        return f"{v[0]}³" if len(set(v)) == 1 else "x".join(map(str, v))

    n_shards = math.prod(-(-s // h) for s, h in zip(spec["shape"], spec["shards"], strict=True))
    per_shard = math.prod(h // c for h, c in zip(spec["shards"], spec["chunks"], strict=True))
    raw = math.prod(spec["shape"]) * _itemsize(spec["dtype"]) / MiB
    return (
        f"({spec['name']}) {spec['title']}: {cube(spec['shape'])} = {raw:.3g} MiB, "
        f"shards {cube(spec['shards'])} ({n_shards}), inner chunks {cube(spec['chunks'])} "
        f"({per_shard} a shard)"
    )


def _itemsize(dtype: str) -> int:
    return {"uint16": 2, "float32": 4}[dtype]


# ---------------------------------------------------------------------------------------
# Grid helpers (pure Python, so the zarr and TensorStore children never import shardwright)
# ---------------------------------------------------------------------------------------


class Box:
    """A half-open box (origin + shape), the same fields as ``shardwright.Domain``."""

    __slots__ = ("index", "origin", "shape")

    def __init__(self, origin: tuple[int, ...], shape: tuple[int, ...], index=None) -> None:
        self.origin = origin
        self.shape = shape
        self.index = index

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + s) for o, s in zip(self.origin, self.shape, strict=True))

    def local(self, inner: Box) -> tuple[slice, ...]:
        """The slices of ``inner`` relative to this box's origin."""
        triples = zip(inner.origin, inner.shape, self.origin, strict=True)
        return tuple(slice(o - b, o - b + s) for o, s, b in triples)


def grid(origin: Sequence[int], stop: Sequence[int], step: Sequence[int]) -> Iterator[Box]:
    """The cells of the regular grid ``step`` from ``origin`` to ``stop``, in C order,
    clipped at ``stop``."""
    axes = [range(o, e, s) for o, e, s in zip(origin, stop, step, strict=True)]
    for corner in itertools.product(*axes):
        shape = tuple(min(s, e - c) for c, s, e in zip(corner, step, stop, strict=True))
        index = tuple(c // s for c, s in zip(corner, step, strict=True))
        yield Box(corner, shape, index)


def shard_boxes(spec: dict[str, Any]) -> list[Box]:
    return list(grid([0] * len(spec["shape"]), spec["shape"], spec["shards"]))


def chunk_boxes(spec: dict[str, Any], shard: Box) -> Iterator[Box]:
    stop = [o + s for o, s in zip(shard.origin, shard.shape, strict=True)]
    return grid(shard.origin, stop, spec["chunks"])


def iter_chunks(spec: dict[str, Any]) -> Iterator[Box]:
    """Every inner chunk, shard by shard (the order all cases write in), made lazily: a
    list of 262,144 boxes would add ≈ 60 MiB to every child's RSS."""
    for shard in shard_boxes(spec):
        yield from chunk_boxes(spec, shard)


def slabs(spec: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    """The shards cut into slabs one inner chunk thick along the first axis, as
    (origin, stop): the tasks of the thread pool of ``zstd alone``."""
    out = []
    c0 = spec["chunks"][0]
    for shard in shard_boxes(spec):
        stop = [o + s for o, s in zip(shard.origin, shard.shape, strict=True)]
        for z in range(shard.origin[0], stop[0], c0):
            out.append(([z, *shard.origin[1:]], [min(z + c0, stop[0]), *stop[1:]]))
    return out


# ---------------------------------------------------------------------------------------
# The data: a pure function of coordinates, computed per inner chunk with numpy
# ---------------------------------------------------------------------------------------


def make_data_fn(dtype: str) -> Callable[[Any], Any]:
    """``f(chunk)``: a smooth ramp ``(3x + 5y + 7z) / 8`` plus two bits of integer-hash
    noise; ≈3.3x with zstd 3 (uint16). float32: the same values times 0.25."""
    import numpy as np

    u32 = np.uint32
    ka, kb, kc, km = u32(0x9E3779B1), u32(0x85EBCA77), u32(0xC2B2AE3D), u32(0x2C1B3C6D)
    shift3, shift30 = u32(3), u32(30)
    out_dtype = np.dtype(dtype)
    scale = np.float32(0.25)

    def f(chunk: Any) -> Any:
        (z0, y0, x0), (nz, ny, nx) = chunk.origin, chunk.shape
        z = np.arange(z0, z0 + nz, dtype=u32)[:, None, None]
        y = np.arange(y0, y0 + ny, dtype=u32)[None, :, None]
        x = np.arange(x0, x0 + nx, dtype=u32)[None, None, :]
        h = (x * ka) ^ (y * kb)  # 2-D
        h = h ^ (z * kc)  # full chunk from here on
        h *= km
        h >>= shift30  # two bits of hash noise
        v = (x * 3 + y * 5) + z * 7
        v >>= shift3
        v += h
        if out_dtype.kind == "f":
            return v.astype(np.float32) * scale
        return v.astype(out_dtype)

    return f


def make_codec(spec: dict[str, Any]) -> Any:
    """The numcodecs compressor matching the array's inner codec."""
    import numcodecs

    if spec["compressor"] == "zstd":
        return numcodecs.Zstd(level=spec["level"])
    if spec["compressor"] == "blosc":
        numcodecs.blosc.use_threads = False  # one thread per call, as zarr-python runs it
        return numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, typesize=4)
    raise ValueError(spec["compressor"])


# ---------------------------------------------------------------------------------------
# Child: one case, one process
# ---------------------------------------------------------------------------------------


def _rss_bytes() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


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
    f = make_data_fn(spec["dtype"])
    shards = shard_boxes(spec)
    extra: dict[str, Any] = {}

    if spec.get("precomputed"):
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
    elif case in ("zstd", "zstd1"):
        codec = make_codec(spec)
        n_threads = threads or _ncores()
        tasks = slabs(spec)

    # -- the timed part ------------------------------------------------------------------
    rss_before = _rss_bytes()
    maxrss_before = _maxrss_bytes()
    start = time.perf_counter()
    if case == "compute":
        for c in iter_chunks(spec):
            f(c)
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
    elif case == "sw_write_shard":
        for shard in arr.iter_shards():
            with arr.write_shard(shard) as w:
                for c in w.inner_chunks():
                    w[c] = f(c)
    elif case == "sw_map_chunks":
        stats = arr.map_chunks(f)
        extra["puts"] = stats.get("puts")
        extra["gets"] = stats.get("gets")
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
        result.update(verify(spec, make_data_fn(spec["dtype"])))
    return result


def verify(spec: dict[str, Any], f: Callable[[Any], Any]) -> dict[str, Any]:
    """Read back the first, the last and a few random inner chunks with zarr-python and
    compare with ``f``; check that every shard was stored. Raises on any mismatch."""
    import numpy as np
    import zarr

    path = Path(spec["path"])
    z = zarr.open_array(str(path), mode="r")
    if list(z.shape) != spec["shape"] or str(z.dtype) != spec["dtype"]:
        raise AssertionError(f"array metadata changed: {z.shape} {z.dtype}")
    every = list(iter_chunks(spec))
    rng = random.Random(spec.get("seed", 0))
    picks = [every[0], every[-1], *rng.sample(every, min(6, len(every)))]
    for c in picks:
        got = z[c.slices]
        want = np.asarray(f(c))
        if not np.array_equal(got, want):
            raise AssertionError(f"chunk at {c.origin} differs from the data function")
    shard_files = [p for p in (path / "c").rglob("*") if p.is_file()]
    n_shards = len(shard_boxes(spec))
    if len(shard_files) != n_shards:
        raise AssertionError(f"{len(shard_files)} shard files stored, expected {n_shards}")
    stored = sum(p.stat().st_size for p in shard_files)
    return {"verified_chunks": len(picks), "stored_bytes": stored}


# ---------------------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------------------


def _ncores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("shardwright", "zarr", "tensorstore", "numpy", "numcodecs", "psutil"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


def _build_info() -> dict[str, Any]:
    """The git commit of the checkout and when shardwright's extension was built, so runs
    against different builds are not compared by mistake (without importing shardwright:
    the parent stays small)."""
    import importlib.util
    from datetime import datetime, timezone

    info: dict[str, Any] = {}
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        info["git"] = head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        info["git"] = None
    spec = importlib.util.find_spec("shardwright")
    if spec is not None and spec.origin is not None:
        cores = sorted(Path(spec.origin).parent.glob("_core*"))
        if cores:
            built = datetime.fromtimestamp(cores[0].stat().st_mtime, tz=timezone.utc)
            info["core_built"] = built.isoformat(timespec="seconds")
    return info


def create_array(spec: dict[str, Any], path: Path) -> None:
    """The array every writing case fills: made by ``shardwright.create`` (the same
    ``zarr.json`` zarr-python writes for these settings), opened by each library.
    Runs in a helper child (``--create``): the parent stays small, because a child's
    ``ru_maxrss`` starts at the parent's peak (Linux keeps it across fork and exec)."""
    import shardwright as sw

    sw.create(
        path,
        shape=spec["shape"],
        dtype=spec["dtype"],
        chunks=spec["chunks"],
        shards=spec["shards"],
        compressor=spec["compressor"],
        compression_level=spec["level"],
    )


def make_template(spec: dict[str, Any], workdir: Path) -> Path:
    """An empty array (only its ``zarr.json``) that every run of ``spec`` copies."""
    path = workdir / f"template-{spec['name']}" / "array.zarr"
    cmd = [sys.executable, os.path.abspath(__file__), "--create", json.dumps(spec), str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"could not create the array for ({spec['name']}):\n{proc.stderr}")
    return path


def run_child(
    spec: dict[str, Any],
    workdir: Path,
    template: Path,
    timeout: float,
    threads: int | None,
) -> dict[str, Any]:
    spec = dict(spec)
    run_dir = Path(tempfile.mkdtemp(prefix=f"{spec['name']}-{spec['case']}-", dir=workdir))
    env = dict(os.environ)
    if threads is not None:
        env["RAYON_NUM_THREADS"] = str(threads)
    try:
        if WRITES[spec["case"]]:
            spec["path"] = str(run_dir / "array.zarr")
            shutil.copytree(template, spec["path"])
        cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        for line in proc.stdout.splitlines():
            if line.startswith(RESULT_PREFIX):
                return json.loads(line[len(RESULT_PREFIX) :])
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"] if runs else "not run", "runs": runs}

    def med(key: str) -> float | None:
        values = [r[key] for r in ok if r.get(key) is not None]
        return statistics.median(values) if values else None

    out = {
        "seconds": med("seconds"),
        "peak_rss_mib": med("peak_rss_mib"),
        "growth_mib": med("growth_mib"),
        "rss_before_mib": med("rss_before_mib"),
        "stored_bytes": med("stored_bytes"),
        "runs": runs,
    }
    if len(ok) < len(runs):
        out["error"] = f"{len(runs) - len(ok)} of {len(runs)} runs failed"
    return out


def select_cases(workload: str, only: set[str] | None, skip_slow: bool) -> list[str]:
    cases = []
    for key, _, _ in CASES:
        if only is not None and key not in only:
            continue
        if key in SLOW_CASES and (skip_slow or workload not in SLOW_WORKLOADS[key]):
            continue
        cases.append(key)
    return cases


def derived(spec: dict[str, Any], res: dict[str, dict[str, Any]], ncores: int) -> dict:
    """Ratios and the ideal line for one workload."""
    raw_mib = math.prod(spec["shape"]) * _itemsize(spec["dtype"]) / MiB

    def secs(key: str) -> float | None:
        r = res.get(key)
        return None if r is None or r.get("seconds") is None else r["seconds"]

    zstd_s, ws_s = secs("zstd"), secs("sw_write_shard")
    comp_s, zstd1_s = secs("compute"), secs("zstd1")
    ideal_s = (comp_s + zstd1_s) / ncores if comp_s is not None and zstd1_s else None
    for r in res.values():
        s = r.get("seconds")
        if not s:
            continue
        r["mib_s"] = raw_mib / s
        r["pct_of_zstd_alone"] = 100 * zstd_s / s if zstd_s else None
        r["x_write_shard"] = s / ws_s if ws_s else None
        r["pct_of_ideal"] = 100 * ideal_s / s if ideal_s else None
    stored = next(
        (
            res[k]["stored_bytes"]
            for k in ("zstd1", "zstd")
            if k in res and res[k].get("stored_bytes")
        ),
        None,
    )
    return {
        "raw_mib": raw_mib,
        "ideal_s": ideal_s,
        "ideal_mib_s": raw_mib / ideal_s if ideal_s else None,
        "write_shard_pct_of_ideal": 100 * ideal_s / ws_s if ideal_s and ws_s else None,
        "compression_ratio": raw_mib * MiB / stored if stored else None,
        "ncores": ncores,
    }


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_table(report: dict[str, Any], out=sys.stdout) -> None:
    meta = report["meta"]
    print(
        f"\nshardwright benchmarks — size {meta['size']}, median of {meta['repeat']}, "
        f"{meta['ncores']} cores, load {meta['load_before']} → {meta['load_after']}"
        + (f", {meta['threads']} threads" if meta.get("threads") else "")
        + (", data precomputed" if meta.get("precomputed") else ""),
        file=out,
    )
    v = meta["versions"]
    print(
        f"shardwright {v['shardwright']}, zarr {v['zarr']}, tensorstore {v['tensorstore']}, "
        f"numpy {v['numpy']}, numcodecs {v['numcodecs']}, python {v['python']}; "
        f"git {meta.get('git')}, extension built {meta.get('core_built')}",
        file=out,
    )
    header = (
        "| case | wall s | MiB/s | codec alone % | vs write_shard | ideal % "
        "| peak RSS MiB | growth MiB |"
    )
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|"
    for w in report["workloads"].values():
        d, codec = w["derived"], w["spec"]["compressor"]
        ideal = f"ideal (compute + {codec} 1 thread) / {d['ncores']}"
        print(f"\n{describe(w['spec'])}", file=out)
        print(
            f"compression {_fmt(d['compression_ratio'], '.2f', 'x')}; {ideal} cores = "
            f"{_fmt(d['ideal_s'], '.3f', ' s')} ({_fmt(d['ideal_mib_s'], '.0f', ' MiB/s')}); "
            f"write_shard reaches {_fmt(d['write_shard_pct_of_ideal'], '.0f', '%')} of it",
            file=out,
        )
        print(header, file=out)
        print(rule, file=out)
        for key, r in w["cases"].items():
            label = case_label(key, w["spec"])
            if r.get("seconds") is None:
                print(f"| {label} | FAILED: {r.get('error')} | | | | | | |", file=out)
                continue
            note = f" ({r['error']})" if r.get("error") else ""
            print(
                f"| {label}{note} | {r['seconds']:.3f} | {r['mib_s']:.0f} "
                f"| {_fmt(r.get('pct_of_zstd_alone'), '.0f', '%')} "
                f"| {_fmt(r.get('x_write_shard'), '.2f', 'x')} "
                f"| {_fmt(r.get('pct_of_ideal'), '.0f', '%')} "
                f"| {r['peak_rss_mib']:.0f} | {r['growth_mib']:.0f} |",
                file=out,
            )
        if d["ideal_s"]:
            print(
                f"| {ideal} | {d['ideal_s']:.3f} | {d['ideal_mib_s']:.0f} | | | 100% | | |",
                file=out,
            )


def parent_main(args: argparse.Namespace) -> int:
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r} (choose from {','.join(WORKLOADS)})")
    only = None if args.cases is None else {c.strip() for c in args.cases.split(",")}
    if only is not None and not only <= set(CASE_LABEL):
        raise SystemExit(f"unknown cases {sorted(only - set(CASE_LABEL))}")
    repeat = args.repeat or (3 if args.size == "full" else 1)
    ncores = args.threads or _ncores()
    started = time.perf_counter()
    report: dict[str, Any] = {
        "meta": {
            "size": args.size,
            "repeat": repeat,
            "ncores": ncores,
            "machine_cores": _ncores(),
            "threads": args.threads,
            "precomputed": args.precomputed,
            "platform": platform.platform(),
            "versions": _versions(),
            **_build_info(),
            "load_before": _loadavg(),
            "argv": sys.argv[1:],
        },
        "workloads": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="shardwright-bench-", dir=args.tmpdir))
    try:
        for name in workloads:
            spec = workload_spec(name, args.size)
            spec["precomputed"] = args.precomputed
            cases = select_cases(name, only, args.skip_slow)
            print(describe(spec), file=sys.stderr)
            template = make_template(spec, workdir)
            runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
            for rep in range(repeat):  # round robin, so drifting load hits every case
                for case in cases:
                    child = dict(spec, case=case, seed=rep, threads=args.threads)
                    r = run_child(child, workdir, template, args.timeout, args.threads)
                    runs[case].append(r)
                    shown = r.get("error") or f"{r['seconds']:.3f} s"
                    print(
                        f"  [{rep + 1}/{repeat}] {case_label(case, spec)}: {shown}", file=sys.stderr
                    )
            res = {c: summarize(runs[c]) for c in cases}
            report["workloads"][name] = {
                "spec": {k: v for k, v in spec.items() if k != "precomputed"},
                "cases": res,
                "derived": derived(spec, res, ncores),
            }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report["meta"]["load_after"] = _loadavg()
    report["meta"]["total_seconds"] = time.perf_counter() - started
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    print_table(report)
    print(f"\ntotal {report['meta']['total_seconds']:.1f} s", file=sys.stderr)
    failed = [
        f"{w}/{c}"
        for w, wr in report["workloads"].items()
        for c, r in wr["cases"].items()
        if r.get("error")
    ]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="full")
    p.add_argument("--workloads", default="a,b,c,d", help="comma-separated: a,b,c,d")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--repeat", type=int, help="runs per case (default 3 for full, else 1)")
    p.add_argument("--skip-slow", action="store_true", help="drop zarr-python per chunk")
    p.add_argument("--cases", help=f"only these cases: {','.join(CASE_LABEL)}")
    p.add_argument(
        "--threads",
        type=int,
        help="limit every library to N threads (RAYON_NUM_THREADS, TensorStore context, "
        "zstd-alone pool); the ideal line then uses N cores",
    )
    p.add_argument(
        "--precomputed",
        action="store_true",
        help="compute the whole array before the clock starts; each case then copies "
        "views of it (peers.md's many-cores setting)",
    )
    p.add_argument("--timeout", type=float, default=1800, help="seconds per child")
    p.add_argument("--tmpdir", help="where the temporary output folder goes")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--create", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.create is not None:
        create_array(json.loads(args.create[0]), Path(args.create[1]))
        return 0
    if args.child is not None:
        inherited = _maxrss_bytes()
        result = child_main(json.loads(args.child))
        result["inherited_maxrss_mib"] = inherited / MiB
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
