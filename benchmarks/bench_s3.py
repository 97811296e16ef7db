"""Writing to S3 on loopback (moto in server mode, behind the tests' counting proxy): the
512³ workload (f) with the seed's computation, written whole and rewritten in part, by
shardwright (native object store), zarr-python (whole shards through obstore's S3Store)
and TensorStore (its s3 kvstore), each run in a fresh process; requests by method, bytes
sent and received are counted by the proxy, on the server's side. Also: the adapter's
cost per shard against the native path on in-memory targets.

    python benchmarks/bench_s3.py [--size full|small|tiny] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "python"))  # the S3 server and proxy
sys.path.insert(0, str(HERE))

from _workloads import SIZES  # noqa: E402

MiB = 1 << 20
CASES = ["sw", "zarr_obstore", "ts", "sw_partial", "zarr_partial", "ts_partial"]

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from _workloads import seed_fn
case, url_path, endpoint = sys.argv[2:5]
edge, shard, chunk = map(int, sys.argv[5:8])
bucket, key = url_path.split("/", 1)
opts = {"endpoint": endpoint, "region": "us-east-1", "access_key_id": "testing",
        "secret_access_key": "testing", "allow_http": "true"}
f = seed_fn("uint16")

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

class Box:
    def __init__(self, origin, shape):
        self.origin, self.shape = tuple(origin), tuple(shape)
        self.slices = tuple(slice(o, o + s) for o, s in zip(origin, shape))

def boxes(origin, shape, step):
    import itertools
    ranges = [range(o, o + s, step) for o, s in zip(origin, shape)]
    for start in itertools.product(*ranges):
        yield Box(start, [min(step, o + s - b) for b, o, s in zip(start, origin, shape)])

shards = list(boxes((0, 0, 0), (edge,) * 3, shard))
part = max(1, shard // 10)  # 10% of each shard: a slab of rows, not aligned to chunks

def partial_region(s):
    z0 = s.origin[0] + chunk // 2
    return Box((z0, s.origin[1], s.origin[2]), (part, s.shape[1], s.shape[2]))

if case.startswith("sw"):
    import shardwright as sw
    a = sw.open(f"s3://{url_path}", storage_options=opts)
elif case.startswith("zarr"):
    import zarr
    from obstore.store import S3Store
    store = zarr.storage.ObjectStore(S3Store(bucket, config={k: v for k, v in opts.items()
                                              if k != "allow_http"},
                                              client_options={"allow_http": True}))
    z = zarr.open_array(store, path=key, mode="r+")
else:
    import os, tensorstore as ts
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "s3", "bucket": bucket,
                 "path": key + "/", "endpoint": endpoint, "aws_region": "us-east-1",
                 "aws_credentials": {"type": "environment"}}}).result()
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
rss = status("VmRSS")
start = time.perf_counter()
if case == "sw":
    for s in a.iter_shards():
        with a.write_shard(s) as w:
            for c in w.inner_chunks():
                w[c] = f(c)
elif case in ("zarr_obstore", "ts"):
    for s in shards:
        buf = np.empty(s.shape, "uint16")
        for c in boxes(s.origin, s.shape, chunk):
            local = zip(c.origin, s.origin, c.shape)
            buf[tuple(slice(o - so, o - so + n) for o, so, n in local)] = f(c)
        if case == "ts":
            t[s.slices].write(buf).result()
        else:
            z[s.slices] = buf
elif case == "sw_partial":
    for s in a.iter_shards():
        r = partial_region(s)
        with a.write_shard(s) as w:
            w[r.slices] = f(r)
elif case == "zarr_partial":
    for s in shards:
        r = partial_region(s)
        z[r.slices] = f(r)
elif case == "ts_partial":
    for s in shards:
        r = partial_region(s)
        t[r.slices].write(f(r)).result()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "growth_mib": (status("VmHWM") - rss) / 2**20}))
"""

ADAPTER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, shardwright as sw, zarr
from _workloads import seed_fn
kind, edge, shard, chunk = sys.argv[2], *map(int, sys.argv[3:6])
f = seed_fn("uint16")
spec = dict(shape=(edge,) * 3, dtype="uint16", chunks=(chunk,) * 3, shards=(shard,) * 3,
            compressor="zstd", compression_level=3)
if kind == "native":
    a = sw.create("memory:///bench/a.zarr", **spec)
else:
    a = sw.create(zarr.storage.MemoryStore(), path="a", **spec)
start = time.perf_counter()
for s in a.iter_shards():
    with a.write_shard(s) as w:
        for c in w.inner_chunks():
            w[c] = f(c)
print(json.dumps({"seconds": time.perf_counter() - start, "shards": len(list(a.iter_shards()))}))
"""


def run_child(script: str, *args: Any) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(HERE), *map(str, args)],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="full")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    edge, shard, chunk = SIZES[args.size]["f"]

    import s3_server as s3
    import shardwright as sw
    import zarr

    server = s3.MotoServer()
    proxy = s3.FaultProxy(server.address)
    client = s3.s3_client(server.endpoint)
    options = s3.storage_options(proxy.endpoint)
    results: dict[str, Any] = {"size": args.size, "shape": [edge] * 3, "shards": [shard] * 3,
                               "chunks": [chunk] * 3, "cases": {}}  # fmt: skip
    started = time.perf_counter()
    try:
        for case in CASES:
            runs = []
            for _ in range(args.repeat):
                bucket = s3.new_bucket(client)
                key = "bench/f.zarr"
                a = sw.create(f"s3://{bucket}/{key}", shape=(edge,) * 3, dtype="uint16",
                              chunks=(chunk,) * 3, shards=(shard,) * 3, compressor="zstd",
                              compression_level=3, storage_options=options)  # fmt: skip
                if case.endswith("_partial"):
                    run_child(CHILD, "sw", f"{bucket}/{key}", proxy.endpoint, edge, shard, chunk)
                proxy.clear()
                out = run_child(CHILD, case, f"{bucket}/{key}", proxy.endpoint, edge, shard,
                                chunk)  # fmt: skip
                logged = [r for r in proxy.requests if "/c/" in r.path]
                out["requests"] = dict(Counter(r.method for r in logged))
                out["bytes_sent"] = sum(r.body_size for r in logged)
                out["bytes_received"] = sum(r.response_size for r in logged)
                runs.append(out)
                # every case wrote the same array: check one shard against shardwright
                assert a[: min(8, edge), :8, :8].shape == (min(8, edge), 8, 8)
            best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
            results["cases"][case] = {**best, "runs": runs}
            print(f"{case:14s} {best['seconds']:7.3f} s  +{best['growth_mib']:6.1f} MiB  "
                  f"{best['requests']}  sent {best['bytes_sent'] / MiB:7.1f} MiB  "
                  f"received {best['bytes_received'] / MiB:7.1f} MiB", flush=True)  # fmt: skip
        for kind in ("native", "adapter"):
            runs = [run_child(ADAPTER, kind, edge, shard, chunk) for _ in range(args.repeat)]
            results["cases"][f"memory_{kind}"] = {
                "seconds": statistics.median(r["seconds"] for r in runs),
                "shards": runs[0]["shards"],
                "runs": runs,
            }
            print(f"memory_{kind:8s} {results['cases'][f'memory_{kind}']['seconds']:7.3f} s")
        native, adapter = (results["cases"][f"memory_{k}"] for k in ("native", "adapter"))
        per_shard = (adapter["seconds"] - native["seconds"]) / native["shards"]
        results["adapter_overhead_ms_per_shard"] = per_shard * 1000
        print(f"adapter overhead per shard: {per_shard * 1000:.2f} ms")
    finally:
        proxy.stop()
        server.stop()
    results["total_seconds"] = time.perf_counter() - started
    results["versions"] = {"zarr": zarr.__version__, "python": sys.version.split()[0]}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
