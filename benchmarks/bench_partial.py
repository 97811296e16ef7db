#!/usr/bin/env python
"""Partial rewrites of an existing sharded array: shardwright against zarr-python and
TensorStore.

    python benchmarks/bench_partial.py [--size tiny|full] [--fraction 0.1] [--json out.json]
                                       [--cases shardwright,zarr,tensorstore] [--tmpdir DIR]

The stored array: uint16, zstd level 3, ``bytes`` + ``crc32c`` index at the end; full size
512³ with 256³ shards of 32³ inner chunks (tiny: 64³, 32³ shards, 8³ chunks). It is written
once by shardwright with data ``f`` (a smooth ramp plus two bits of a hash: zstd compresses
it about 5x). Each case then rewrites the same ``--fraction`` of the inner chunks of every
shard (chosen at random with a fixed seed), whole inner chunks with data ``g``:

- ``shardwright``: one ``write_shard`` per shard, ``w[chunk] = g(chunk)`` for its chosen
  chunks; at commit the shard is read once and merged at byte level.
- ``zarr``: zarr-python, ``z[chunk.slices] = g(chunk)`` per chosen chunk.
- ``tensorstore``: one ``ts.Transaction`` per shard, ``t.with_transaction(txn)[slices] =
  g(chunk)`` per chosen chunk, then ``txn.commit_sync()``.

How it measures: every case runs in a fresh child process (``sys.executable`` running this
file with ``--child``) on a fresh copy of the stored array (``shutil.copytree``, outside the
clock). The child imports its library, opens the array, then times the rewrite and reads
``rchar``/``wchar`` of ``/proc/self/io`` before and after it (bytes passed through
``read``/``write``-family system calls by all the process's threads, page cache or not)
and ``ru_maxrss`` (peak RSS) at the end; *growth* is the peak minus the RSS right before
the timed part. The parent imports only the standard library (so no child inherits a large
``ru_maxrss``). Afterwards every case's array is read back whole with zarr-python, outside
the clock, and compared with the expected array; all three must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
RESULT = "@@RESULT "
SIZES = {"tiny": (64, 32, 8), "full": (512, 256, 32)}  # array, shard, inner chunk edges
CASES = ("shardwright", "zarr", "tensorstore")


# ---------------------------------------------------------------------------------------
# Data (children only: numpy)
# ---------------------------------------------------------------------------------------


def data_f(origin, shape, salt: int = 0):
    """The data of the box at ``origin`` of ``shape``: uint16, a pure function of the
    coordinates. ``salt`` != 0 gives the rewrite data ``g``."""
    import numpy as np

    z, y, x = (
        np.arange(o, o + n, dtype=np.uint32).reshape([-1 if i == d else 1 for i in range(3)])
        for d, (o, n) in enumerate(zip(origin, shape))
    )
    ramp = (3 * x + 5 * y + 7 * z + 1000 * salt) >> 3
    h = (x * np.uint32(73856093)) ^ (y * np.uint32(19349663)) ^ (z * np.uint32(83492791 + salt))
    return ((ramp + ((h >> 7) & 3)) & 0xFFFF).astype(np.uint16)


def rewrite_plan(n: int, shard: int, chunk: int, fraction: float, seed: int) -> list[list[int]]:
    """Origins of the inner chunks to rewrite: ``fraction`` of each shard's, at random."""
    rng = random.Random(seed)
    per_shard = (shard // chunk) ** 3
    k = max(1, round(fraction * per_shard))
    origins = []
    for sz in range(0, n, shard):
        for sy in range(0, n, shard):
            for sx in range(0, n, shard):
                for i in sorted(rng.sample(range(per_shard), k)):
                    cz, rest = divmod(i, (shard // chunk) ** 2)
                    cy, cx = divmod(rest, shard // chunk)
                    origins.append([sz + cz * chunk, sy + cy * chunk, sx + cx * chunk])
    return origins


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


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child_create(job: dict[str, Any]) -> dict[str, Any]:
    import shardwright as sw

    n, s, c = job["n"], job["shard"], job["chunk"]
    a = sw.create(
        job["root"],
        shape=(n, n, n),
        dtype="uint16",
        chunks=(c, c, c),
        shards=(s, s, s),
        compressor="zstd",
        compression_level=3,
    )
    a.map_chunks(lambda ch: data_f(ch.origin, ch.shape))
    stored = sum(p.stat().st_size for p in Path(job["root"]).rglob("*") if p.is_file())
    return {"stored_bytes": stored}


def child_case(job: dict[str, Any]) -> dict[str, Any]:
    case, root, c = job["case"], job["root"], job["chunk"]
    origins = [tuple(o) for o in job["origins"]]
    shard = job["shard"]
    by_shard: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for o in origins:
        by_shard.setdefault(tuple(x // shard for x in o), []).append(o)
    extra: dict[str, Any] = {}

    if case == "shardwright":
        import shardwright as sw

        a = sw.open(root)

        def run() -> None:
            totals: dict[str, int] = {}
            for index, chunks in by_shard.items():
                with a.write_shard(index) as w:
                    for o in chunks:
                        w[sw.Domain(o, (c, c, c))] = data_f(o, (c, c, c), salt=1)
                for k, v in w.stats.items():
                    totals[k] = totals.get(k, 0) + v
            extra["stats"] = totals

    elif case == "zarr":
        import zarr

        z = zarr.open_array(root, mode="r+")

        def run() -> None:
            for chunks in by_shard.values():
                for o in chunks:
                    z[tuple(slice(x, x + c) for x in o)] = data_f(o, (c, c, c), salt=1)

    elif case == "tensorstore":
        import tensorstore as ts

        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root}}).result()

        def run() -> None:
            for chunks in by_shard.values():
                txn = ts.Transaction()
                tt = t.with_transaction(txn)
                for o in chunks:
                    tt[tuple(slice(x, x + c) for x in o)] = data_f(o, (c, c, c), salt=1)
                txn.commit_sync()

    else:
        raise SystemExit(f"unknown case {case}")

    data_f((0, 0, 0), (c, c, c), salt=1)  # warm the data path
    rss_before = rss_now()
    io0 = proc_io()
    t0 = time.perf_counter()
    run()
    seconds = time.perf_counter() - t0
    io1 = proc_io()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "case": case,
        "seconds": seconds,
        "rchar": io1["rchar"] - io0["rchar"],
        "wchar": io1["wchar"] - io0["wchar"],
        "read_bytes": io1["read_bytes"] - io0["read_bytes"],
        "write_bytes": io1["write_bytes"] - io0["write_bytes"],
        "syscr": io1["syscr"] - io0["syscr"],
        "syscw": io1["syscw"] - io0["syscw"],
        "peak_rss": peak,
        "rss_before": rss_before,
        **extra,
    }


def child_verify(job: dict[str, Any]) -> dict[str, Any]:
    """Read each case's array whole with zarr-python and compare with the expected one."""
    import hashlib

    import numpy as np
    import zarr

    n, c = job["n"], job["chunk"]
    expected = data_f((0, 0, 0), (n, n, n))
    for o in job["origins"]:
        expected[tuple(slice(x, x + c) for x in o)] = data_f(o, (c, c, c), salt=1)
    out = {}
    for case, root in job["roots"].items():
        got = np.asarray(zarr.open_array(root, mode="r")[...])
        out[case] = {
            "equal": bool(np.array_equal(got, expected)),
            "sha256": hashlib.sha256(got.tobytes()).hexdigest(),
            "stored_bytes": sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file()),
        }
    return out


def child_main(job: dict[str, Any]) -> None:
    fn = {"create": child_create, "case": child_case, "verify": child_verify}[job["kind"]]
    print(RESULT + json.dumps(fn(job)), flush=True)


# ---------------------------------------------------------------------------------------
# Parent (standard library only)
# ---------------------------------------------------------------------------------------


def run_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    raise RuntimeError(
        f"child {job['kind']} {job.get('case', '')} failed (rc {proc.returncode}):\n"
        f"{proc.stderr[-4000:]}"
    )


def fmt_mib(b: float) -> str:
    return f"{b / MiB:,.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="full")
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the results as JSON here")
    ap.add_argument("--tmpdir", help="where the temporary folder goes")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return 0

    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}")
    n, shard, chunk = SIZES[args.size]
    origins = rewrite_plan(n, shard, chunk, args.fraction, args.seed)
    per_shard = (shard // chunk) ** 3
    n_shards = (n // shard) ** 3
    work = Path(tempfile.mkdtemp(prefix="bench_partial-", dir=args.tmpdir))
    results: dict[str, Any] = {
        "size": args.size,
        "array": [n] * 3,
        "shard": [shard] * 3,
        "chunk": [chunk] * 3,
        "dtype": "uint16",
        "codec": "zstd level 3",
        "fraction": args.fraction,
        "chunks_rewritten": len(origins),
        "chunks_per_shard": per_shard,
        "shards": n_shards,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cases": {},
    }
    try:
        base = work / "base.zarr"
        t0 = time.perf_counter()
        created = run_child(
            {"kind": "create", "root": str(base), "n": n, "shard": shard, "chunk": chunk},
            args.timeout,
        )
        results["stored_bytes"] = created["stored_bytes"]
        print(
            f"stored array {n}³ uint16, {shard}³ shards of {chunk}³ chunks, zstd 3: "
            f"{fmt_mib(created['stored_bytes'])} MiB on disk ({time.perf_counter() - t0:.1f} s); "
            f"rewriting {len(origins)} inner chunks ({len(origins) // n_shards} of {per_shard} "
            f"per shard)",
            flush=True,
        )
        roots = {}
        for case in cases:
            root = work / f"{case}.zarr"
            shutil.copytree(base, root)
            os.sync()
            job = {
                "kind": "case",
                "case": case,
                "root": str(root),
                "n": n,
                "shard": shard,
                "chunk": chunk,
                "origins": origins,
            }
            res = run_child(job, args.timeout)
            results["cases"][case] = res
            roots[case] = str(root)
            print(f"  {case}: {res['seconds']:.2f} s", flush=True)
        verify = run_child(
            {"kind": "verify", "roots": roots, "n": n, "chunk": chunk, "origins": origins},
            args.timeout,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    digests = {v["sha256"] for v in verify.values()}
    all_ok = all(v["equal"] for v in verify.values()) and len(digests) == 1
    for case, v in verify.items():
        results["cases"][case]["verified"] = v["equal"]
        results["cases"][case]["stored_bytes_after"] = v["stored_bytes"]
    results["identical"] = len(digests) == 1

    header = (
        f"{'case':<13} {'wall s':>8} {'read MiB':>10} {'written MiB':>12} "
        f"{'peak RSS MiB':>13} {'growth MiB':>11} {'read/write calls':>17}  ok"
    )
    print()
    print(
        f"Rewrite {args.fraction:.0%} of the inner chunks of every shard of a {n}³ uint16 "
        f"array ({shard}³ shards, {chunk}³ chunks, zstd 3; {fmt_mib(results['stored_bytes'])} "
        f"MiB stored)"
    )
    print(header)
    print("-" * len(header))
    for case in cases:
        r = results["cases"][case]
        print(
            f"{case:<13} {r['seconds']:>8.2f} {fmt_mib(r['rchar']):>10} "
            f"{fmt_mib(r['wchar']):>12} {fmt_mib(r['peak_rss']):>13} "
            f"{fmt_mib(r['peak_rss'] - r['rss_before']):>11} "
            f"{r['syscr']:>8}/{r['syscw']:<8}  {'yes' if r['verified'] else 'NO'}"
        )
    if "shardwright" in results["cases"]:
        s = results["cases"]["shardwright"].get("stats", {})
        print(
            f"shardwright stats: {s.get('gets')} gets, {s.get('puts')} puts, "
            f"{s.get('chunks_written')} chunks written, {s.get('chunks_kept')} kept as bytes, "
            f"{s.get('chunks_decoded')} decoded"
        )
    print(
        "read/written: rchar/wchar of /proc/self/io (bytes through read/write system calls, "
        "page cache included) during the timed part"
    )
    print(f"results identical across cases and equal to the expected array: {all_ok}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
