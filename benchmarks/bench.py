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

This file is the command line, the parent and the table; the parent runs the cases
in ``_cases.py`` (one child each) on the workloads, grid and data of ``_workloads.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path
from typing import Any

from _cases import _maxrss_bytes, _ncores, child_main
from _workloads import (
    CASE_LABEL,
    CASES,
    SIZES,
    SLOW_CASES,
    SLOW_WORKLOADS,
    WORKLOADS,
    WRITES,
    MiB,
    _itemsize,
    case_label,
    describe,
    workload_spec,
)

RESULT_PREFIX = "@@BENCH_RESULT "

# ---------------------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------------------


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
    from datetime import datetime

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
            built = datetime.fromtimestamp(cores[0].stat().st_mtime, tz=UTC)
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
        "minor_faults": med("minor_faults"),
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

    zstd_s, ws_s, pipe_s = secs("zstd"), secs("sw_write_shard"), secs("pipeline")
    comp_s, zstd1_s = secs("compute"), secs("zstd1")
    ideal_s = (comp_s + zstd1_s) / ncores if comp_s is not None and zstd1_s else None
    for r in res.values():
        s = r.get("seconds")
        if not s:
            continue
        r["mib_s"] = raw_mib / s
        r["pct_of_zstd_alone"] = 100 * zstd_s / s if zstd_s else None
        r["pct_of_pipeline"] = 100 * pipe_s / s if pipe_s else None
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
        + (", data precomputed" if meta.get("precomputed") else "")
        + (f", {meta['prewarm_mib']} MiB prewarmed" if meta.get("prewarm_mib") else ""),
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
        "| case | wall s | MiB/s | codec alone % | loop limit % | vs write_shard | ideal % "
        "| peak RSS MiB | growth MiB | minor faults |"
    )
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
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
                print(f"| {label} | FAILED: {r.get('error')} | | | | | | | | |", file=out)
                continue
            note = f" ({r['error']})" if r.get("error") else ""
            print(
                f"| {label}{note} | {r['seconds']:.3f} | {r['mib_s']:.0f} "
                f"| {_fmt(r.get('pct_of_zstd_alone'), '.0f', '%')} "
                f"| {_fmt(r.get('pct_of_pipeline'), '.0f', '%')} "
                f"| {_fmt(r.get('x_write_shard'), '.2f', 'x')} "
                f"| {_fmt(r.get('pct_of_ideal'), '.0f', '%')} "
                f"| {r['peak_rss_mib']:.0f} | {r['growth_mib']:.0f} "
                f"| {_fmt(r.get('minor_faults'), '.0f')} |",
                file=out,
            )
        if d["ideal_s"]:
            print(
                f"| {ideal} | {d['ideal_s']:.3f} | {d['ideal_mib_s']:.0f} | | | | 100% | | | |",
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
            "prewarm_mib": args.prewarm,
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
            spec["prewarm_mib"] = args.prewarm
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
    p.add_argument("--workloads", default="a,b,c,d,e,f", help="comma-separated: a,b,c,d,e,f")
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
    p.add_argument(
        "--prewarm",
        type=int,
        default=0,
        metavar="MIB",
        help="before the clock, each case touches and frees this many MiB, so that the "
        "memory it then allocates (page cache of the files it writes included) is backed "
        "by the hypervisor already (see 'How it measures'); default 0",
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
