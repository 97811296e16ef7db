#!/usr/bin/env python
"""Frames appended as they are acquired: a (t, c, y, x) uint16 array grown one frame at a
time along t into sharded Zarr v3 (zstd 3) by shardwright's appender, acquire-zarr's
streaming writer, TensorStore (a transaction per shard-deep slab) and zarr-python's
``Array.append``.

    python benchmarks/bench_append.py [--size tiny|512x128|512x2048|2048x256]
                                      [--cases sw_appender,...] [--repeat 3] [--timeout 1800]
                                      [--json benchmarks/recorded/append-2core.json]

Sizes (frames x frame (c, y, x); inner chunks; shards):

| size | frames | frame | chunks | shards | raw |
|---|---|---|---|---|---|
| ``tiny`` | 16 | (2, 64, 64) | (4, 1, 32, 32) | (8, 1, 64, 64) | 256 KiB |
| ``512x128`` | 128 | (1, 512, 512) | (8, 1, 256, 256) | (64, 1, 512, 512) | 64 MiB |
| ``512x2048`` | 2048 | (1, 512, 512) | (8, 1, 256, 256) | (64, 1, 512, 512) | 1 GiB |
| ``2048x256`` | 256 | (2, 2048, 2048) | (8, 1, 256, 256) | (64, 1, 2048, 2048) | 2 GiB |

The frames: a ring of 8 camera-like frames (``bench_pyramid.source_data`` of time points 0..7,
7 bits of hash noise: ≈ 1.85x with zstd 3) made before the clock; frame i is ring[i % 8].

Cases (each run in a fresh process; ``--repeat`` runs round robin, medians shown; the clock
runs from the creation of the array until the last frame is stored):

``sw_appender``: ``a = sw.create(dest, shape=(0, c, y, x), ...)``, ``with
a.appender(axis=0) as ap: for f in frames: ap.append(f)`` (an error row while the installed
shardwright has no appender).
``acquire_zarr``: acquire-zarr's ``ZarrStream`` (a plain array, no NGFF group or pyramid),
``Dimension``s with the same chunk sizes and ``shard_size_chunks``, the plain ``zstd`` codec
(``Compressor.ZSTD``/``CompressionCodec.ZSTD``, level 3: not blosc), ``max_threads`` = the
cores; ``stream.append(frame)`` per frame, ``close()``.
``tensorstore_txn``: a zarr3 array of 0 frames; per slab of one shard depth (64 frames):
``t = t.resize(exclusive_max=[stop, c, y, x], expand_only=True)``, a ``ts.Transaction()``,
``t.with_transaction(txn)[i].write(frame).result()`` per frame, ``txn.commit_async()``.
``zarr_append``: ``zarr.create_array(shape=(0, c, y, x), chunks, shards, ZstdCodec(3))``,
``z.append(frame[None], axis=0)`` per frame (each append re-reads and rewrites the shard: it
slows with the shard size; ``--timeout`` stops it).

Measured as ``bench_pyramid.py`` does (peak RSS = ``VmHWM`` reset just before the clock;
growth; quiet-machine wait, ``--nice``, ``--retries``). Reported: wall s, frames/s, MiB/s
(raw), peak RSS, growth, stored MiB. Checked outside the clock: every frame read back with
TensorStore equals the frame appended (a wrong or failed ``sw_appender`` fails the run, a
peer's is recorded). For shardwright, the store calls per shard: an untimed run of the
appender (2.5 shards deep) through a zarr-python ``WrapperStore`` counting ``get``/``set``
on shard keys (``gets/shard``, ``puts/shard``; one put and no get is the goal), plus the
appender's ``stats`` when it has them. Memory flatness: with both ``512x128`` and
``512x2048`` in the ``--json`` file, their ``sw_appender`` peak RSS side by side (16x the
frames should not grow it). ``--json`` merges into an existing file: other sizes are kept,
and so are the cases of this size that an earlier invocation measured and this one did not
run (marked ``*``: e.g. ``zarr_append`` at ``2048x256``, minutes a run, measured once
apart). The child side is ``_append_cases.py``.
"""

from __future__ import annotations

import argparse
import json
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

import _append_cases as ac
import bench_pyramid as bp
from _append_cases import CASES, FLATNESS, SIZES, SW


def run_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    return bp.run_child(job, timeout, script=__file__)


def measure(case: str, size: str, work: Path, args) -> dict[str, Any]:
    dst = work / f"append-out-{case}"

    def clean() -> None:
        shutil.rmtree(dst, ignore_errors=True)

    job = {"kind": "case", "case": case, "dst": str(dst), "size": size}
    res = bp.run_measured(job, args.timeout, args.quiet_wait, args.retries, clean, __file__)
    if "error" not in res:
        res["stored_bytes"] = bp.stored_bytes(dst) if dst.exists() else None
        check = run_child({"kind": "verify", "dst": str(dst), "size": size, "case": case}, 3600)
        res["check"] = check
        res["verified"] = (
            "check failed" if "error" in check else ("equal" if check["equal"] else "wrong")
        )
    clean()
    return res


def summarize(runs: list[dict[str, Any]], raw: int, frames: int) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"], "runs": runs}
    seconds = statistics.median(r["seconds"] for r in ok)
    out = {
        "seconds": seconds,
        "frames_per_s": frames / seconds,
        "mib_per_s": raw / bp.MiB / seconds,
        "peak_rss": statistics.median(r["peak_rss"] for r in ok),
        "growth": statistics.median(r["growth"] for r in ok),
    }
    if all(r.get("stored_bytes") is not None for r in ok):
        out["stored_bytes"] = statistics.median(r["stored_bytes"] for r in ok)
    verdicts = sorted({r.get("verified", "-") for r in ok})
    out.update(verified=", ".join(verdicts), errors=len(runs) - len(ok), runs=runs)
    return out


def print_table(size: str, result: dict[str, Any], repeat: int) -> None:
    n, frame, chunks, shards = SIZES[size]
    print(
        f"\n{size}: {n} frames of {frame} uint16 ({result['raw_bytes'] / bp.MiB:,.1f} MiB), "
        f"chunks {chunks}, shards {shards}, zstd {ac.ZSTD_LEVEL}; median of {repeat}"
    )
    head = (
        f"| {'case':<15} | {'wall s':>8} | {'frames/s':>9} | {'MiB/s':>7} | {'peak MiB':>9} "
        f"| {'growth MiB':>10} | {'stored MiB':>10} | check |"
    )
    print(head + "\n|" + "|".join("-" * len(p) for p in head.split("|")[1:-1]) + "|")
    for name, r in result["cases"].items():
        case = name + ("*" if r.get("from_earlier_invocation") else "")
        if "error" in r:
            print(f"| {case:<15} | error: {r['error'].splitlines()[0][:110]} |")
            continue
        print(
            f"| {case:<15} | {r['seconds']:>8.2f} | {r['frames_per_s']:>9.1f} | "
            f"{r['mib_per_s']:>7.1f} | {bp.fmt_mib(r['peak_rss']):>9} | "
            f"{bp.fmt_mib(r['growth']):>10} | {bp.fmt_mib(r.get('stored_bytes')):>10} | "
            f"{r.get('verified', '-')} |"
        )
    if result.get("merged_from_earlier"):
        print("*: measured by an earlier invocation (kept from the --json file)")
    count = result.get("sw_store_calls")
    if count and "error" not in count:
        print(
            f"shardwright appender, {count['frames']} frames into {count['shards']} shards: "
            f"{count['gets_per_shard']:.2f} gets and {count['puts_per_shard']:.2f} puts per "
            f"shard ({count['calls']})"
        )
    elif count:
        print(f"shardwright appender store calls: {count['error']}")


def print_flatness(data: dict[str, Any]) -> None:
    sizes = data.get("sizes", {})
    peaks = [sizes.get(s, {}).get("cases", {}).get(SW, {}).get("peak_rss") for s in FLATNESS]
    if all(peaks):
        print(
            f"memory flatness, sw_appender peak RSS: {bp.fmt_mib(peaks[0])} MiB at "
            f"{FLATNESS[0]}, {bp.fmt_mib(peaks[1])} MiB at {FLATNESS[1]} "
            f"({peaks[1] / peaks[0]:.2f}x for 16x the frames)"
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
    if "sw_store_calls" not in result and "sw_store_calls" in earlier:
        result["sw_store_calls"] = earlier["sw_store_calls"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=list(SIZES), default="512x2048")
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
    ap.add_argument("--tmpdir", help="where the outputs go (default: the system's temp)")
    ap.add_argument("--json", help="merge the results into this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        ac.child_main(json.loads(args.child))
        return 0
    bp.NICE = args.nice
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    n, frame, chunks, shards = SIZES[args.size]
    raw = 2 * n * frame[0] * frame[1] * frame[2]
    work = Path(tempfile.mkdtemp(prefix="bench_append-", dir=args.tmpdir)).resolve()
    started, load_before = time.perf_counter(), os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    result: dict[str, Any] = {}
    try:
        for i in range(args.repeat):  # round robin: a load spike hits every case
            for case in cases:
                res = measure(case, args.size, work, args)
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
        if SW in cases and any("error" not in r for r in runs[SW]):
            count_dst = work / "append-count"
            result["sw_store_calls"] = run_child(
                {"kind": "count", "dst": str(count_dst), "size": args.size}, args.timeout
            )
            result["sw_store_calls"].pop("stderr", None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result.update(
        {
            "frames": n,
            "frame": list(frame),
            "shape": [n, *frame],
            "chunks": list(chunks),
            "shards": list(shards),
            "raw_bytes": raw,
            "cases": {c: {"label": CASES[c], **summarize(runs[c], raw, n)} for c in cases},
            "total_seconds": time.perf_counter() - started,
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
            "repeat": args.repeat,
            "nice": bp.NICE,
            "quiet_wait_s": args.quiet_wait,
            "retries": args.retries,
        }
    )
    merge_earlier(Path(args.json) if args.json else None, args.size, result)
    print_table(args.size, result, args.repeat)
    if args.json:
        print_flatness(write_json(Path(args.json), args.size, result))
    sw = result["cases"].get(SW)
    failed = sw is not None and ("error" in sw or sw.get("errors") or sw["verified"] != "equal")
    return 1 if failed else 0


def write_json(path: Path, size: str, result: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(path.read_text()) if path.exists() else {}
    dists = ["shardwright", "acquire-zarr", "tensorstore", "zarr", "numcodecs", "numpy", "psutil"]
    versions = run_child({"kind": "versions", "dists": dists}, 120)
    for k in ("child_ru_maxrss", "child_life_s", "child_cpu_s", "other_cpu_s", "nice"):
        versions.pop(k, None)
    data.update(
        {
            "benchmark": "benchmarks/bench_append.py",
            "description": __doc__.split("\n\n")[0].replace("\n", " "),
            "python": platform.python_version(),
            "executable_env": os.path.relpath(sys.prefix, bp.ROOT),
            "requirements": "benchmarks/requirements-convert.txt",
            "cpus": os.cpu_count(),
            "mem_total_gib": round(
                os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1
            ),
            "git": bp.git_commit(),
            "zstd_level": ac.ZSTD_LEVEL,
            "peak_rss": "VmHWM after resetting it just before the timed part; growth: that "
            "minus the RSS just before; medians over the runs of each case, independently",
            "versions": versions,
        }
    )
    data.setdefault("sizes", {})[size] = result
    exe = sys.executable
    exe = os.path.relpath(exe, bp.ROOT) if exe.startswith(str(bp.ROOT)) else exe
    command = " ".join([exe, "benchmarks/bench_append.py", *sys.argv[1:]])
    earlier = data.setdefault("commands", {}).get(size)
    if result.get("merged_from_earlier") and earlier:
        data["commands"][size] = [*(earlier if isinstance(earlier, list) else [earlier]), command]
    else:
        data["commands"][size] = [command]
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data


if __name__ == "__main__":
    sys.exit(main())
