#!/usr/bin/env python
"""TIFF -> OME-Zarr conversion: an uncompressed tiled OME-TIFF turned into a sharded
multiscale OME-Zarr 0.5 image by shardwright's ``sw.convert``, ngff-zarr, ome-zarr-py and
tifffile + zarr-python, against the compressor alone.

    python benchmarks/bench_convert.py [--size tiny|0.5|1|2] [--cases sw_convert,...]
                                       [--repeat 3] [--timeout 1800] [--workdir DIR]
                                       [--json benchmarks/recorded/convert-2core.json]

The source: an OME-TIFF written once by tifffile (untimed, page by page: one plane in memory
at a time; kept in ``--workdir`` for the next invocation): BigTIFF, uint16, **uncompressed**,
tiled 512 x 512 (256 x 256 for ``tiny``), one page per (c, z) plane, axes CZYX, OME-XML with
PhysicalSizeX/Y 0.406 um and PhysicalSizeZ 2 um. Shapes (c, z, y, x): ``tiny`` (2, 4, 512,
512) = 4 MiB, ``0.5`` (2, 32, 2048, 2048) = 512 MiB, ``1`` (2, 64, 2048, 2048), ``2`` (2, 128,
2048, 2048) = 2 GiB. The values: ``bench_pyramid.source_data`` with 7 bits of hash noise
(≈ 1.85x with zstd 3, as camera data).

The output, the same for every tool: factors (1, 2, 2, 2) (z, y and x halved), levels until
every downsampled axis fits within one inner chunk (5 for 2048^2 planes, 3 for tiny; passed
explicitly to every tool), inner chunks (1, 32, 128, 128) and shards (1, 64, 512, 512), both
clipped to each level, zstd level 3, a mean.

Cases (each run in a fresh process, ``--repeat`` runs round robin over the cases, medians
shown; the clock runs from after the imports until the last level is stored):

``sw_convert``: ``sw.convert(tif, dest, factors=..., levels=..., method="mean", chunks=...,
shards=..., compressor="zstd", compression_level=3, overwrite=True)`` (an error row while
the installed shardwright has no ``convert``).
``ngff_zarr``: ``dask.array.from_zarr(zarr.open(tifffile.imread(tif, aszarr=True)))`` ->
``to_ngff_image`` -> ``to_multiscales(method=Methods.DASK_BIN_SHRINK, chunks=...)`` ->
``to_ngff_zarr(version="0.5", chunks_per_shard=..., compressors=[ZstdCodec(3)])``.
``ome_zarr_py``: the same dask array -> ``write_image(method=Methods.LOCAL_MEAN,
fmt=FormatV05(), storage_options=[{chunks, shards, compressors}] per level)``: sharded
Zarr v3 / OME-Zarr 0.5.
``tifffile_zarr``: ``tifffile.imread(tif)`` whole, ``zarr.create_array(data=...)`` sharded
for level 0, then each level by numpy (integer block sums rounded half to even) and
``create_array`` again; an OME 0.5 ``multiscales`` group.
``compress_only``: the floor: every inner chunk of every level (the TIFF and the reference
levels, contiguous in memory before the clock) through ``numcodecs.Zstd(level=3)`` on a pool
of as many threads as cores; nothing read or stored (level 0's chunks alone are timed too:
``level0_seconds`` in the JSON).

Measured as ``bench_pyramid.py`` does: wall time, peak RSS (``VmHWM`` reset just before the
clock) and growth (the peak less the RSS then), ``rchar``; the quiet-machine wait, ``--nice``
and ``--retries`` are its. Checked outside the clock in another process: level 0 equal to the
TIFF (``tifffile``) and each level k >= 1 equal to ``ts.downsample(reference k-1, factors,
"mean")`` from the TIFF (half to even), every element. ``sw_convert`` and ``tifffile_zarr``
must be equal (else the case fails); ngff-zarr (rounds half up) and ome-zarr-py (truncates)
are reported ``differs`` with the largest difference. A case that crashes, raises or runs
past ``--timeout`` is an error row; the exit status is 1 when ``sw_convert`` or
``tifffile_zarr`` failed or wrote wrong levels (a peer's failure is recorded, not fatal).
Ratios: each case's time against ``compress_only`` and against the fastest peer. ``--json``
merges into an existing file: other sizes are kept, and so are the cases of this size that an
earlier invocation measured and this one did not run (marked ``*``; e.g. a slow peer measured
once, apart). The child side is ``_convert_cases.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _convert_cases as cc
import bench_pyramid as bp
from _convert_cases import AXES, CASES, CHUNKS, FACTORS, FLOOR, PEERS, SHARDS, SIZES, SW

MUST_EQUAL = (SW, "tifffile_zarr")


def run_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    return bp.run_child(job, timeout, script=__file__)


def prepare_source(work: Path, size: str, shape: tuple[int, ...]) -> dict[str, Any]:
    """The TIFF and the reference levels, reused from ``work`` when an earlier invocation
    made them for the same shape."""
    levels = cc.configure(shape)
    tif = work / f"convert-{size}.ome.tif"
    refs = [str(tif)] + [str(work / f"convert-ref-{size}-{k}.npy") for k in range(1, levels)]
    mark = work / f"convert-{size}.json"
    key = {"shape": list(shape), "levels": levels, "noise": cc.NOISE_BITS}
    made = json.loads(mark.read_text()) if mark.exists() else {}
    if {k: made.get(k) for k in key} != key or not all(Path(f).exists() for f in refs):
        t = run_child({"kind": "tiff", "tif": str(tif), "shape": shape}, 7200)
        if "error" in t:
            raise SystemExit(f"{t['error']}\n{t.get('stderr', '')}")
        r = run_child({"kind": "reference", "tif": str(tif), "refs": refs}, 7200)
        if "error" in r:
            raise SystemExit(f"{r['error']}\n{r.get('stderr', '')}")
        made = {**key, "seconds": t["seconds"], "tiff_bytes": t["bytes"], "tile": t["tile"]}
        mark.write_text(json.dumps(made))
        print(f"source: {tif} written in {t['seconds']:.1f} s", flush=True)
    else:
        print(f"source: reusing {tif}", flush=True)
    return {"tif": str(tif), "refs": refs, "levels": levels, **made}


def measure(case: str, src: dict[str, Any], work: Path, shape, args) -> dict[str, Any]:
    """One measured run of ``case``, then its check; its output is deleted after."""
    dst = work / f"convert-out-{case}"
    job = {"tif": src["tif"], "dst": str(dst), "shape": shape, "refs": src["refs"]}
    job.update({"kind": "compress"} if case == FLOOR else {"kind": "case", "case": case})

    def prepare() -> None:
        shutil.rmtree(dst, ignore_errors=True)
        with open(src["tif"], "rb") as f:  # every run finds the TIFF in the page cache
            while f.read(1 << 24):
                pass

    res = bp.run_measured(job, args.timeout, args.quiet_wait, args.retries, prepare, __file__)
    if "error" not in res and case != FLOOR:
        res["stored_bytes"] = bp.stored_bytes(dst) if dst.exists() else None
        check = run_child({**job, "kind": "verify", "levels": res["levels_written"]}, 3600)
        res["check"] = check
        if "error" in check:
            res["verified"] = "check failed"
        elif check["equal"]:
            res["verified"] = "equal"
        elif len(check["levels"]) == src["levels"] and all(
            "error" not in lv and (lv["level"] > 0 or lv["equal"]) for lv in check["levels"]
        ):
            worst = max(lv["max_abs_diff"] for lv in check["levels"])
            res["verified"] = f"differs (max {worst})"
        else:
            res["verified"] = "wrong"
    shutil.rmtree(dst, ignore_errors=True)
    return res


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"], "runs": runs}
    out = {
        k: statistics.median(r[k] for r in ok) for k in ("seconds", "peak_rss", "growth", "rchar")
    }
    if all(r.get("stored_bytes") is not None for r in ok):
        out["stored_bytes"] = statistics.median(r["stored_bytes"] for r in ok)
    verdicts = sorted({r.get("verified", "-") for r in ok})
    out.update(verified=", ".join(verdicts), errors=len(runs) - len(ok), runs=runs)
    return out


def ratios(cases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ok = {c: r for c, r in cases.items() if "error" not in r}
    peers = {c: ok[c]["seconds"] for c in PEERS if c in ok}
    fastest = min(peers, key=peers.__getitem__) if peers else None
    out: dict[str, Any] = {"fastest_peer": fastest, "ratios": {}}
    for c, r in ok.items():
        q = out["ratios"][c] = {}
        if FLOOR in ok:
            q["time_vs_floor"] = r["seconds"] / ok[FLOOR]["seconds"]
        if fastest:
            q["time_vs_fastest_peer"] = r["seconds"] / peers[fastest]
            q["peak_vs_fastest_peer"] = r["peak_rss"] / ok[fastest]["peak_rss"]
    return out


def print_table(size: str, shape, result: dict[str, Any], repeat: int) -> None:
    print(
        f"\n{size if size == 'tiny' else size + ' GiB'}: TIFF {shape} uint16 CZYX "
        f"({result['raw_bytes'] / bp.MiB:,.0f} MiB, "
        f"uncompressed, tiles {result['tiff_tile']}) -> {result['levels_count']} levels, factors "
        f"{FACTORS}, chunks {CHUNKS}, shards {SHARDS}, zstd {cc.ZSTD_LEVEL}; median of {repeat}"
    )
    head = (
        f"| {'case':<14} | {'wall s':>8} | {'MiB/s':>7} | {'peak MiB':>9} | {'growth MiB':>10} "
        f"| {'stored MiB':>10} | {'/floor':>6} | {'/fastest peer':>13} | check |"
    )
    print(head + "\n|" + "|".join("-" * (len(p)) for p in head.split("|")[1:-1]) + "|")
    rat = result["ratios"]
    for name, r in result["cases"].items():
        case = name + ("*" if r.get("from_earlier_invocation") else "")
        if "error" in r:
            print(f"| {case:<14} | error: {r['error'].splitlines()[0][:110]} |")
            continue
        q = rat.get(name, {})

        def f(k: str, q: dict[str, Any] = q) -> str:
            return f"{q[k]:.2f}x" if k in q else "-"

        print(
            f"| {case:<14} | {r['seconds']:>8.2f} | "
            f"{result['raw_bytes'] / bp.MiB / r['seconds']:>7.0f} | "
            f"{bp.fmt_mib(r['peak_rss']):>9} | {bp.fmt_mib(r['growth']):>10} | "
            f"{bp.fmt_mib(r.get('stored_bytes')):>10} | {f('time_vs_floor'):>6} | "
            f"{f('time_vs_fastest_peer'):>13} | {r.get('verified', '-')} |"
        )
    if result.get("merged_from_earlier"):
        print("*: measured by an earlier invocation (kept from the --json file)")
    print(
        f"fastest peer: {result['fastest_peer']}; MiB/s: level 0's raw size / wall s; peak: "
        "VmHWM of the case's process during the timed part; check: level 0 = the TIFF, levels "
        "1.. = the ts.downsample chain (differs: another rounding, see the JSON)"
    )


def merge_earlier(path: Path | None, size: str, result: dict[str, Any]) -> None:
    """Keep the cases of ``size`` that an earlier invocation wrote into the ``--json`` file
    and this one did not run (e.g. a slow peer measured once, apart), marked as such."""
    if path is None or not path.exists():
        return
    earlier = json.loads(path.read_text()).get("sizes", {}).get(size, {})
    for case, r in earlier.get("cases", {}).items():
        if case not in result["cases"]:
            result["cases"][case] = {**r, "from_earlier_invocation": True}
            result["merged_from_earlier"] = True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=list(SIZES), default="0.5")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (medians shown)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per run")
    ap.add_argument("--quiet-wait", type=float, default=600, help="max wait for an idle machine")
    ap.add_argument("--retries", type=int, default=2, help="reruns of a disturbed run")
    ap.add_argument(
        "--nice",
        type=int,
        default=-20 if hasattr(os, "geteuid") and os.geteuid() == 0 else 0,
        help="nice value of the measured processes (default -20 as root, else 0)",
    )
    ap.add_argument("--workdir", help="keeps the TIFF and the reference between invocations")
    ap.add_argument("--json", help="merge the results into this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        cc.child_main(json.loads(args.child))
        return 0
    bp.NICE = args.nice
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    shape = SIZES[args.size]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_convert-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    started, load_before = time.perf_counter(), os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    try:
        src = prepare_source(work, args.size, shape)
        for i in range(args.repeat):  # round robin: a load spike hits every case
            for case in cases:
                res = measure(case, src, work, shape, args)
                runs[case].append(res)
                if "error" in res:
                    print(f"  {case} run {i + 1}: error: {res['error']}", flush=True)
                    continue
                print(
                    f"  {case} run {i + 1}: {res['seconds']:.2f} s, peak "
                    f"{bp.fmt_mib(res['peak_rss'])} MiB (growth {bp.fmt_mib(res['growth'])}), "
                    f"{res.get('verified', '-')}; other processes {res['other_cpu_s']:.1f} CPU s",
                    flush=True,
                )
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    shapes = bp.level_shapes(shape)
    result: dict[str, Any] = {
        "shape": list(shape),
        "dims": "".join(AXES),
        "raw_bytes": 2 * math.prod(shape),
        "tiff_bytes": src["tiff_bytes"],
        "tiff_tile": src["tile"],
        "levels_count": src["levels"],
        "levels": [
            {
                "shape": list(s),
                "chunks": list(bp.level_grid(s)[0]),
                "shards": list(bp.level_grid(s)[1]),
            }
            for s in shapes
        ],
        "cases": {
            c: {"label": CASES[c], "method": cc.METHODS[c], **summarize(runs[c])} for c in cases
        },
        "total_seconds": time.perf_counter() - started,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "repeat": args.repeat,
        "nice": bp.NICE,
        "quiet_wait_s": args.quiet_wait,
        "retries": args.retries,
    }
    merge_earlier(Path(args.json) if args.json else None, args.size, result)
    result.update(ratios(result["cases"]))
    print_table(args.size, shape, result, args.repeat)
    if args.json:
        write_json(Path(args.json), args.size, result)
    failed = any(
        "error" in r or r.get("errors") or r.get("verified") != "equal"
        for c, r in result["cases"].items()
        if c in MUST_EQUAL
    ) or ("error" in result["cases"].get(FLOOR, {}))
    return 1 if failed else 0


def write_json(path: Path, size: str, result: dict[str, Any]) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    dists = ["shardwright", "tifffile", "imagecodecs", "zarr", "numcodecs", "tensorstore",
             "numpy", "dask", "ngff-zarr", "ome-zarr", "scikit-image", "psutil"]  # fmt: skip
    versions = run_child({"kind": "versions", "dists": dists}, 120)
    for k in ("child_ru_maxrss", "child_life_s", "child_cpu_s", "other_cpu_s", "nice"):
        versions.pop(k, None)
    data.update(
        {
            "benchmark": "benchmarks/bench_convert.py",
            "description": __doc__.split("\n\n")[0].replace("\n", " "),
            "python": platform.python_version(),
            "executable_env": os.path.relpath(sys.prefix, bp.ROOT),
            "requirements": "benchmarks/requirements-convert.txt",
            "cpus": os.cpu_count(),
            "mem_total_gib": round(
                os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1
            ),
            "git": bp.git_commit(),
            "tiff": "BigTIFF, uint16, uncompressed, tiled, one page per (c, z), OME-XML, "
            "written by tifffile page by page",
            "factors": list(FACTORS),
            "chunks": list(CHUNKS),
            "shards": list(SHARDS),
            "zstd_level": cc.ZSTD_LEVEL,
            "methods": cc.METHODS,
            "page_cache": "not dropped; the TIFF is read once before every run",
            "peak_rss": "VmHWM after resetting it just before the timed part; growth: that "
            "minus the RSS just before; medians over the runs of each case, independently",
            "versions": versions,
        }
    )
    data.setdefault("sizes", {})[size] = result
    exe = sys.executable
    exe = os.path.relpath(exe, bp.ROOT) if exe.startswith(str(bp.ROOT)) else exe
    command = " ".join([exe, "benchmarks/bench_convert.py", *sys.argv[1:]])
    earlier = data.setdefault("commands", {}).get(size)
    if result.get("merged_from_earlier") and earlier:
        data["commands"][size] = [*(earlier if isinstance(earlier, list) else [earlier]), command]
    else:
        data["commands"][size] = [command]
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
