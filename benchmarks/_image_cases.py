"""The geometry, the cases and the child side of ``bench_image.py``: one measured case in
one process (``bench_image.py --child '<json>'`` runs ``child_main``), the reference levels and
the check. Only the standard library (and ``bench_pyramid``/``_workloads``, which import only
the standard library at module level) is imported at module level: each case imports the
library it measures."""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

import bench_pyramid as bp
from _workloads import grid

SIZES = {
    "tiny": (1, 2, 16, 256, 256),
    "0.5g": (2, 2, 64, 1024, 1024),
    "1g": (2, 2, 128, 1024, 1024),
    "2g": (2, 2, 256, 1024, 1024),
}
AXES = ("t", "c", "z", "y", "x")
FACTORS = (1, 1, 1, 2, 2)
LEVELS = 4
CHUNKS = (1, 1, 32, 128, 128)
SHARDS = (1, 1, 64, 512, 512)  # the default; --shards (passed on in SHARDS_ENV)
SHARDS_ENV = "BENCH_IMAGE_SHARDS"
ZSTD_LEVEL = 3
NOISE_BITS = 7  # bits of hash noise in the data: ≈ 1.85x with zstd 3, as camera data
SCALE = (1.0, 1.0, 2.0, 0.406, 0.406)
UNITS = [None, None, "micrometer", "micrometer", "micrometer"]
CASES = {
    "ts_txn_downsample": "TensorStore: txn per shard for level 0, then ts.downsample + txn "
    "per shard per level",
    "sw_loop_then_pyramid": "shardwright: write loop into sw.create, then sw.pyramid",
    "sw_level0_only": "shardwright: write loop into sw.create (level 0 alone)",
    "sw_create_image": "shardwright: write loop into sw.create_image (levels as it goes)",
    "sw_add_levels": "shardwright: write loop into group/0, then sw.add_levels",
}
BASE, IMAGE, LEVEL0 = "ts_txn_downsample", "sw_create_image", "sw_level0_only"
# the targets for sw_create_image: at most these ratios; and the 1g peak RSS bound
TARGETS = {"time_vs_ts": 0.75, "peak_vs_ts": 0.25, "time_vs_level0": 1.15}
PEAK_1G_MIB = 400


def configure(shards: str | None) -> None:
    """Use the shard shape ``shards`` (``"1,1,64,1024,1024"``; ``None``: the default) here
    and in bench_pyramid's helpers (level_shapes, level_grid, ts_create_spec, child_source,
    child_verify), which read its module constants: give them this benchmark's pyramid."""
    global SHARDS
    if shards:
        SHARDS = tuple(int(v) for v in shards.split(","))
        if len(SHARDS) != len(CHUNKS) or any(s % c for s, c in zip(SHARDS, CHUNKS)):
            raise ValueError(f"shards {SHARDS} must be 5 multiples of the chunks {CHUNKS}")
    bp.FACTORS, bp.LEVELS, bp.CHUNKS, bp.SHARDS, bp.ZSTD_LEVEL, bp.DIMS = (
        FACTORS, LEVELS, CHUNKS, SHARDS, ZSTD_LEVEL, AXES
    )  # fmt: skip


configure(os.environ.get(SHARDS_ENV))  # a child: the parent's --shards


# ---------------------------------------------------------------------------------------
# Children
# ---------------------------------------------------------------------------------------


def calculation(c: Any) -> Any:
    """The user's per-chunk computation: the values of the chunk's region."""
    return bp.source_data(c.slices, NOISE_BITS)


def seed_loop(a: Any) -> None:
    """The seed's loop, as the user types it."""
    for shard in a.iter_shards():
        with a.write_shard(shard) as w:
            for c in w.inner_chunks():
                w[c] = calculation(c)


def case_runner(case: str, dst: str, shape: tuple[int, ...], extra: dict[str, Any]):
    """The imports of ``case`` (done here, before the clock) and its timed part, which
    returns the folders of the levels it wrote."""
    shapes = bp.level_shapes(shape)
    if case == BASE:
        import tensorstore as ts

        def run_ts() -> list[str]:
            paths, prev = [], None
            for k, level_shape in enumerate(shapes):
                t_k = time.perf_counter()
                path = os.path.join(dst, str(k))
                out = ts.open(bp.ts_create_spec(path, level_shape)).result()
                if k == 0:
                    chunks, shards = bp.level_grid(level_shape)
                    for region in bp.boxes(level_shape, shards):
                        txn = ts.Transaction()
                        staged = out.with_transaction(txn)
                        start, stop = [s.start for s in region], [s.stop for s in region]
                        for c in grid(start, stop, chunks):
                            staged[c.slices].write(calculation(c)).result()
                        txn.commit_async().result()
                else:
                    view = ts.downsample(prev, list(FACTORS), "mean")
                    bp.ts_write_per_shard(out, view, level_shape)
                extra.setdefault("phases", []).append(
                    {"level": k, "seconds": time.perf_counter() - t_k}
                )
                paths.append(path)
                prev = out
            return paths

        return run_ts

    import shardwright as sw

    extra["shardwright"] = {"version": getattr(sw, "__version__", None), "file": sw.__file__}
    kwargs: dict[str, Any] = dict(
        shape=shape,
        dtype="uint16",
        chunks=CHUNKS,
        shards=SHARDS,
        compressor="zstd",
        compression_level=ZSTD_LEVEL,
    )

    def timed(name: str, t0: float) -> None:
        extra.setdefault("phases", []).append({"part": name, "seconds": time.perf_counter() - t0})

    def run_sw() -> list[str]:
        t0 = time.perf_counter()
        if case == LEVEL0:
            seed_loop(sw.create(dst, **kwargs, dimension_names=AXES))
            timed("loop", t0)
            return [dst]
        if case == "sw_loop_then_pyramid":
            a = sw.create(dst + "-level0", **kwargs, dimension_names=AXES)
            seed_loop(a)
            timed("loop", t0)
            t1 = time.perf_counter()
            levels = sw.pyramid(
                a, dst, factors=FACTORS, levels=LEVELS, method="mean", chunks=CHUNKS,
                shards=SHARDS, compressor="zstd", compression_level=ZSTD_LEVEL, axes=AXES,
            )  # fmt: skip
            timed("pyramid", t1)
            return [str(lv.path) for lv in levels]
        if case == IMAGE:
            with sw.create_image(
                dst, **kwargs, factors=FACTORS, levels=LEVELS, axes=list(AXES), scale=SCALE,
                units=UNITS,
            ) as img:  # fmt: skip
                for shard in img.iter_shards():
                    with img.write_shard(shard) as w:
                        for c in w.inner_chunks():
                            w[c] = calculation(c)
            timed("loop and levels", t0)
            return bp.ome_level_paths(dst)
        if case == "sw_add_levels":
            os.makedirs(dst)
            group = {"zarr_format": 3, "node_type": "group", "attributes": {}}
            Path(dst, "zarr.json").write_text(json.dumps(group))
            seed_loop(sw.create(os.path.join(dst, "0"), **kwargs, dimension_names=AXES))
            timed("loop", t0)
            t1 = time.perf_counter()
            sw.add_levels(
                dst, factors=FACTORS, levels=LEVELS, method="mean", compression_level=ZSTD_LEVEL
            )
            timed("add_levels", t1)
            return bp.ome_level_paths(dst)
        raise SystemExit(f"unknown case {case}")

    return run_sw


def child_case(job: dict[str, Any]) -> dict[str, Any]:
    case, dst, shape = job["case"], job["dst"], tuple(job["shape"])
    extra: dict[str, Any] = {}
    try:
        run = case_runner(case, dst, shape, extra)
    except Exception as e:  # the case cannot even start (e.g. an import fails)
        return {"case": case, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
    rss_start = bp.status_bytes("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss_before = bp.status_bytes("VmRSS")
    io0 = bp.proc_io()
    t0 = time.perf_counter()
    try:
        levels = run()
    except Exception as e:  # a case this shardwright lacks, or a failure: an error row
        return {
            "case": case,
            "error": f"{type(e).__name__}: {e}",
            "trace": traceback.format_exc()[-3000:],
            "seconds_until_error": time.perf_counter() - t0,
        }
    seconds = time.perf_counter() - t0
    io1 = bp.proc_io()
    peak = bp.status_bytes("VmHWM")
    return {
        "case": case,
        "seconds": seconds,
        "peak_rss": peak,
        "rss_before": rss_before,
        "rss_start": rss_start,
        "growth": peak - rss_before,
        "rchar": io1["rchar"] - io0["rchar"],
        "wchar": io1["wchar"] - io0["wchar"],
        "levels_written": levels,
        **extra,
    }


def child_reference(job: dict[str, Any]) -> dict[str, Any]:
    """The reference levels 1.. as .npy files: ``ts.downsample(reference k-1, factors,
    "mean")``, the chain starting at the reference level 0 (half to even)."""
    import numpy as np
    import tensorstore as ts

    prev = ts.open(bp.ts_spec(job["src"])).result().read().result()
    for k in range(1, LEVELS):
        prev = ts.downsample(ts.array(prev), list(FACTORS), "mean").read().result()
        np.save(job["refs"]["half_even"][k], prev)
    return {}


def child_verify(job: dict[str, Any]) -> dict[str, Any]:
    bp.LEVELS = job["expect_levels"]  # 1 for level 0 alone
    return bp.child_verify(job)


def child_main(job: dict[str, Any]) -> None:
    bp.set_nice(job.get("nice"))
    fn = {
        "source": bp.child_source,
        "reference": child_reference,
        "case": child_case,
        "verify": child_verify,
        "versions": bp.child_versions,
    }[job["kind"]]
    print(bp.RESULT + json.dumps(fn(job)), flush=True)
