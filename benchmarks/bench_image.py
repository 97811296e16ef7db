#!/usr/bin/env python
"""The seed's workflow end to end: compute level 0 of a TCZYX uint16 light-sheet image shard by
shard, inner chunk by inner chunk, and get a 4-level OME-Zarr pyramid (2x2 in y and x), with
TensorStore (the user's code) and with shardwright (today's loop + pyramid, the image writer,
add_levels over a level 0), against shardwright writing level 0 alone.

    python benchmarks/bench_image.py [--size tiny|0.5g|1g|2g] [--cases ts_txn_downsample,...]
                                     [--repeat 3] [--shards 1,1,64,512,512] [--workdir DIR]
                                     [--json out.json]

Geometry (all sizes but ``tiny``): a light-sheet stack of 1024 x 1024 camera planes
(0.406 um pixels: a 6.5 um sCMOS pixel behind a 16x objective) every 2 um in z, 2 channels,
t time points: shape (t, 2, z, 1024, 1024) uint16 with (t, z) = (2, 64) for ``0.5g`` (512 MiB),
(2, 128) for ``1g``, (2, 256) for ``2g``; ``tiny`` (1, 2, 16, 256, 256) (4 MiB). Inner chunks
(1, 1, 32, 128, 128) (1 MiB raw), shards (1, 1, 64, 512, 512) (32 MiB raw, 32 chunks), zstd
level 3, ``bytes`` + ``crc32c`` index at the end; every level the same, clipped to its shape
(``bench_pyramid.level_grid``); ``--shards 1,1,64,1024,1024`` (whole camera planes) gives
another shard shape (TensorStore's peak RSS grows with it). Factors (1, 1, 1, 2, 2), 4
levels. Scale (1, 1, 2, 0.406, 0.406), units micrometer on z, y, x.

The data: ``bench_pyramid.source_data`` of each inner chunk's region with 7 bits of noise
(smooth gradients and a slow wave per (t, c) plus 7 bits of a multiplicative hash: a cheap,
deterministic calculation per chunk, ≈ 1.85x with zstd 3, as camera data), computed inside the
timed part, chunk by chunk, as the user's loop does.

Cases (each run in a fresh process; the clock starts after the imports and stops when the
last level is stored; medians of ``--repeat`` runs, round robin over the cases):

``ts_txn_downsample``: TensorStore, the user's code: level 0 written with a
``ts.Transaction()`` per shard, ``t.with_transaction(txn)[chunk].write(calculation(c))
.result()`` per inner chunk, ``txn.commit_async().result()``; then each level k >= 1 from
``ts.downsample(level k-1, factors, "mean")`` (read back from disk) with a transaction per
shard (``bench_pyramid.ts_write_per_shard``, its ``ts_loop`` case).
``sw_loop_then_pyramid``: ``a = sw.create(...)``, the seed loop ``for shard in
a.iter_shards(): with a.write_shard(shard) as w: for c in w.inner_chunks(): w[c] =
calculation(c)``, then ``sw.pyramid(a, image, factors=..., levels=4)`` (copies level 0).
``sw_level0_only``: the same loop into a plain ``sw.create`` array: level 0 alone.
``sw_create_image``: the same loop into ``with sw.create_image(dest, ..., factors=...,
levels=4, axes=["t", "c", "z", "y", "x"], scale=..., units=...) as img``, the levels filled
as level 0's shards commit.
``sw_add_levels``: the loop into ``sw.create(dest/"0", ...)`` inside a group, then
``sw.add_levels(dest, factors=..., levels=4)``.

A case that raises (e.g. an API this shardwright lacks) is an error row, not a crash.
Peak RSS and the other measurements are ``bench_pyramid``'s (``VmHWM`` reset just before the
clock; growth = peak minus the RSS then); so are the quiet-machine wait, nice and retries.
Checked, outside the clock, in another process (``bench_pyramid.child_verify``): level 0
equal to the calculation (a reference written once by TensorStore, untimed, kept in
``--workdir``) and every level k >= 1 equal, element for element, to the chain
``ts.downsample(reference k-1, factors, "mean")`` from it (half to even): so every case's
levels equal each other's. ``--json`` merges into an existing file (other sizes are kept).

Printed: medians, the ratios to ``ts_txn_downsample`` (time, peak RSS) and to
``sw_level0_only`` (time), and the issue's targets for ``sw_create_image`` (<= 0.75x
TensorStore's time, <= 1/4 of its peak RSS, <= 1.15x level 0 alone's time); with ``--size 1g``
also its peak RSS against the 400 MiB bound (``--size 1g --cases sw_create_image``). The exit
status is 1 when a case raised, crashed or wrote wrong levels. The child side (geometry,
cases, reference, check) is ``_image_cases.py``.
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

import _image_cases as ic
import bench_pyramid as bp
from _image_cases import (
    AXES,
    BASE,
    CASES,
    CHUNKS,
    FACTORS,
    IMAGE,
    LEVEL0,
    LEVELS,
    NOISE_BITS,
    PEAK_1G_MIB,
    SCALE,
    SIZES,
    TARGETS,
    UNITS,
    ZSTD_LEVEL,
    child_main,
)

# ---------------------------------------------------------------------------------------
# Parent (standard library only)
# ---------------------------------------------------------------------------------------


def run_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    return bp.run_child(job, timeout, script=__file__)


def prepare_reference(work: Path, size: str, shape: tuple[int, ...]) -> dict[str, Any]:
    """The reference level 0 (TensorStore, untimed) and levels 1.. (.npy), reused from
    ``work`` when an earlier invocation made them for the same shape."""
    src = work / f"image-source-{size}.zarr"
    refs = {
        "half_even": [None] + [str(work / f"image-ref-{size}-{k}.npy") for k in range(1, LEVELS)]
    }
    mark = work / f"image-source-{size}.json"
    key = {"shape": list(shape), "factors": list(FACTORS), "levels": LEVELS, "noise": NOISE_BITS}
    made = json.loads(mark.read_text()) if mark.exists() else {}
    if {k: made.get(k) for k in key} != key or not all(
        Path(f).exists() for f in refs["half_even"][1:]
    ):
        shutil.rmtree(src, ignore_errors=True)
        made = run_child(
            {"kind": "source", "src": str(src), "shape": shape, "noise_bits": NOISE_BITS}, 3600
        )
        if "error" in made:
            raise SystemExit(f"{made['error']}\n{made.get('stderr', '')}")
        ref = run_child({"kind": "reference", "src": str(src), "refs": refs}, 3600)
        if "error" in ref:
            raise SystemExit(f"{ref['error']}\n{ref.get('stderr', '')}")
        made = {**key, "seconds": made["seconds"], "stored_bytes": made["stored_bytes"]}
        mark.write_text(json.dumps(made))
        print(f"reference: level 0 written by TensorStore in {made['seconds']:.1f} s", flush=True)
    else:
        print(f"reference: reusing {src}", flush=True)
    return {"src": str(src), "refs": refs, "stored_bytes": made["stored_bytes"]}


def measure(case: str, ref: dict[str, Any], work: Path, shape, args) -> dict[str, Any]:
    """One measured run of ``case``, then its check; its outputs are deleted after."""
    dst = work / f"image-out-{case}"

    def clean() -> None:
        for p in (dst, Path(f"{dst}-level0")):
            shutil.rmtree(p, ignore_errors=True)

    job = {"kind": "case", "case": case, "dst": str(dst), "shape": shape}
    res = bp.run_measured(job, args.timeout, args.quiet_wait, args.retries, clean, __file__)
    if "error" not in res:
        res["stored_bytes"] = bp.stored_bytes(dst)
        check = run_child(
            {
                "kind": "verify",
                "src": ref["src"],
                "dst": str(dst),
                "shape": shape,
                "refs": ref["refs"],
                "levels": res["levels_written"],
                "expect_levels": 1 if case == LEVEL0 else LEVELS,
            },
            3600,
        )
        res["check"] = check
        res["verified"] = (
            "check failed" if "error" in check else ("equal" if check["equal"] else "wrong")
        )
    clean()
    return res


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"], "runs": runs}
    return {
        "seconds": statistics.median(r["seconds"] for r in ok),
        "peak_rss": statistics.median(r["peak_rss"] for r in ok),
        "growth": statistics.median(r["growth"] for r in ok),
        "stored_bytes": statistics.median(r["stored_bytes"] for r in ok),
        "verified": "equal" if all(r.get("verified") == "equal" for r in ok) else "NOT EQUAL",
        "errors": len(runs) - len(ok),
        "runs": runs,
    }


def ratios(cases: dict[str, dict[str, Any]], size: str) -> dict[str, Any]:
    """Each case against TensorStore's and against level 0 alone; the issue's targets and
    whether they were met."""
    ok = {c: r for c, r in cases.items() if "error" not in r}
    out: dict[str, dict[str, float]] = {c: {} for c in ok}
    for r, q in ((ok[c], out[c]) for c in ok):
        if BASE in ok:
            q["time_vs_ts"] = r["seconds"] / ok[BASE]["seconds"]
            q["peak_vs_ts"] = r["peak_rss"] / ok[BASE]["peak_rss"]
            q["growth_vs_ts"] = r["growth"] / max(ok[BASE]["growth"], 1)
        if LEVEL0 in ok:
            q["time_vs_level0"] = r["seconds"] / ok[LEVEL0]["seconds"]
    targets = {
        name: {"value": out[IMAGE][name], "target": limit, "met": out[IMAGE][name] <= limit}
        for name, limit in TARGETS.items()
        if IMAGE in out and name in out[IMAGE]
    }
    if size == "1g" and IMAGE in ok:
        v = ok[IMAGE]["peak_rss"] / bp.MiB
        targets["peak_1g_mib"] = {"value": v, "target": PEAK_1G_MIB, "met": v < PEAK_1G_MIB}
    return {"ratios": out, "targets": targets}


def print_table(size: str, shape, result: dict[str, Any], repeat: int) -> None:
    print(
        f"\n{size}: {shape} uint16 ({result['raw_bytes'] / bp.MiB:,.0f} MiB), {LEVELS} levels, "
        f"factors {FACTORS}, chunks {CHUNKS}, shards {ic.SHARDS}, zstd {ZSTD_LEVEL}; "
        f"median of {repeat}"
    )
    head = (
        f"{'case':<21} {'wall s':>8} {'peak MiB':>9} {'growth MiB':>11} {'stored MiB':>11} "
        f"{'time/TS':>8} {'peak/TS':>8} {'time/L0':>8}  check"
    )
    print(head + "\n" + "-" * len(head))
    rat = result["ratios"]
    for case, r in result["cases"].items():
        if "error" in r:
            print(f"{case:<21} error: {r['error'].splitlines()[0][:120]}")
            continue
        q = rat.get(case, {})

        def f(k: str, q: dict[str, Any] = q) -> str:
            return f"{q[k]:.2f}" if k in q else "-"

        print(
            f"{case:<21} {r['seconds']:>8.2f} {bp.fmt_mib(r['peak_rss']):>9} "
            f"{bp.fmt_mib(r['growth']):>11} {bp.fmt_mib(r['stored_bytes']):>11} "
            f"{f('time_vs_ts'):>8} {f('peak_vs_ts'):>8} {f('time_vs_level0'):>8}  {r['verified']}"
        )
    for name, t in result["targets"].items():
        print(
            f"target {name}: {t['value']:.2f} (<= {t['target']}): {'met' if t['met'] else 'MISSED'}"
        )
    print(
        "peak: VmHWM during the timed part (whole process); growth: peak minus the RSS just "
        "before it; check: level 0 = the calculation, levels 1.. = ts.downsample chain"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=list(SIZES), default="0.5g")
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
    ap.add_argument(
        "--shards",
        help="shard shape of every level, e.g. 1,1,64,1024,1024 (default 1,1,64,512,512)",
    )
    ap.add_argument("--workdir", help="keeps the reference between invocations")
    ap.add_argument("--json", help="merge the results into this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return 0
    bp.NICE = args.nice
    if args.shards:
        try:
            ic.configure(args.shards)
        except ValueError as e:
            ap.error(str(e))
        os.environ[ic.SHARDS_ENV] = args.shards  # the children's
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    shape = SIZES[args.size]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_image-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    started, load_before = time.perf_counter(), os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    try:
        ref = prepare_reference(work, args.size, shape)
        for i in range(args.repeat):  # round robin: a load spike hits every case
            for case in cases:
                res = measure(case, ref, work, shape, args)
                runs[case].append(res)
                if "error" in res:
                    print(f"  {case} run {i + 1}: error: {res['error']}", flush=True)
                    continue
                print(
                    f"  {case} run {i + 1}: {res['seconds']:.2f} s, peak "
                    f"{bp.fmt_mib(res['peak_rss'])} MiB (growth {bp.fmt_mib(res['growth'])}), "
                    f"{res['verified']}; other processes {res['other_cpu_s']:.1f} CPU s",
                    flush=True,
                )
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    result: dict[str, Any] = {
        "shape": list(shape),
        "dims": "".join(AXES),
        "raw_bytes": 2 * math.prod(shape),
        "levels": [
            {
                "shape": list(s),
                "chunks": list(bp.level_grid(s)[0]),
                "shards": list(bp.level_grid(s)[1]),
            }
            for s in bp.level_shapes(shape)
        ],
        "shards": list(ic.SHARDS),
        "reference_stored_bytes": ref["stored_bytes"],
        "cases": {c: {"label": CASES[c], **summarize(runs[c])} for c in cases},
        "total_seconds": time.perf_counter() - started,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "repeat": args.repeat,
        "nice": bp.NICE,
        "quiet_wait_s": args.quiet_wait,
        "retries": args.retries,
    }
    result.update(ratios(result["cases"], args.size))
    print_table(args.size, shape, result, args.repeat)
    if args.json:
        write_json(Path(args.json), args.size, result, args.shards)
    failed = any(
        r.get("errors") or "error" in r or r.get("verified") != "equal"
        for r in result["cases"].values()
    )
    return 1 if failed else 0


def write_json(path: Path, size: str, result: dict[str, Any], args_shards: str | None) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    versions = run_child(
        {"kind": "versions", "dists": ["tensorstore", "numpy", "shardwright", "psutil"]}, 120
    )
    for k in ("child_ru_maxrss", "child_life_s", "child_cpu_s", "other_cpu_s", "nice"):
        versions.pop(k, None)
    data.update(
        {
            "benchmark": "benchmarks/bench_image.py",
            "description": __doc__.split("\n\n")[0].replace("\n", " "),
            "python": platform.python_version(),
            "executable_env": os.path.relpath(sys.prefix, bp.ROOT),
            "cpus": os.cpu_count(),
            "mem_total_gib": round(
                os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1
            ),
            "git": bp.git_commit(),
            "factors": list(FACTORS),
            "levels": LEVELS,
            "chunks": list(CHUNKS),
            "shards": list(ic.SHARDS),
            "zstd_level": ZSTD_LEVEL,
            "scale": list(SCALE),
            "units": UNITS,
            "targets": {**TARGETS, "peak_1g_mib": PEAK_1G_MIB},
            "peak_rss": "VmHWM after resetting it just before the timed part (whole process "
            "resident set at its largest during the timed part); growth: that minus the RSS "
            "just before; medians over the runs of each case, independently",
            "versions": versions,
        }
    )
    if args_shards:  # another geometry: kept beside the default one
        size = f"{size}-shards-{'x'.join(map(str, ic.SHARDS))}"
    data.setdefault("sizes", {})[size] = result
    exe = sys.executable
    exe = os.path.relpath(exe, bp.ROOT) if exe.startswith(str(bp.ROOT)) else exe
    data.setdefault("commands", {})[size] = " ".join(
        [exe, "benchmarks/bench_image.py", *sys.argv[1:]]
    )
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
