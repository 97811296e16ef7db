"""Does a write block the event loop? A 10 ms ticker coroutine runs while another coroutine
writes big chunks that wait for the encoders (256x256x16 uint16 of random data, zstd level
19, ``max_in_flight=1``), once with the assignment ``w[c] = data`` (which blocks the loop
while it waits) and once with ``await w.write_async(c, data)``; prints the ticker's gaps
(ideal: 10 ms) while the writes run. Each case runs in a fresh process. A second table
gives the cost per call of many small writes that never wait (8x8x8 uint16, no codec).

    python benchmarks/bench_async_loop.py [--chunks N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

TICK = 0.010


def child(case: str, chunks: int) -> dict:
    import asyncio
    import tempfile
    import time

    import numpy as np
    import shardwright as sw

    if case in ("sync", "async"):
        a = sw.create(
            tempfile.mkdtemp() + "/t.zarr",
            shape=(256, 256, 16 * chunks),
            dtype="uint16",
            chunks=(256, 256, 16),
            shards=(256, 256, 16 * chunks),
            compressor="zstd",
            compression_level=19,
        )
        data = np.random.default_rng(0).integers(0, 65536, size=(256, 256, 16), dtype="uint16")
    else:
        a = sw.create(
            tempfile.mkdtemp() + "/t.zarr",
            shape=(128, 128, 128),
            dtype="uint16",
            chunks=(8, 8, 8),
            shards=(128, 128, 128),
            compressor=None,
        )
        data = (np.arange(512, dtype="uint16") % 7).reshape(8, 8, 8)

    async def main() -> dict:
        ticks: list[float] = []
        running = True

        async def ticker() -> None:
            while running:
                ticks.append(time.perf_counter())
                await asyncio.sleep(TICK)

        tick_task = asyncio.create_task(ticker())
        await asyncio.sleep(0.2)  # the ticker settles
        blocked = []  # how long each call kept the loop (sync) or took (async)
        async with a.write_shard((0, 0, 0), max_in_flight=1 if chunks else None) as w:
            started = time.perf_counter()
            for c in w.inner_chunks():
                t = time.perf_counter()
                if case in ("sync", "small-sync"):
                    w[c] = data
                else:
                    await w.write_async(c, data)
                blocked.append(time.perf_counter() - t)
            ended = time.perf_counter()
        running = False
        await tick_task
        window = [t for t in ticks if started <= t <= ended]
        gaps = np.diff([started, *window, ended]) * 1e3
        return {
            "case": case,
            "writes": len(blocked),
            "write_s": round(ended - started, 3),
            "per_call_us": round((ended - started) / len(blocked) * 1e6, 1),
            "ticks": len(window),
            "max_gap_ms": round(float(gaps.max()), 1),
            "p99_gap_ms": round(float(np.percentile(gaps, 99)), 1),
            "median_gap_ms": round(float(np.median(gaps)), 1),
            "max_call_ms": round(max(blocked) * 1e3, 1),
        }

    return asyncio.run(main())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=8, help="big chunks written per case")
    parser.add_argument("--repeat", type=int, default=1, help="processes per case")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, chunks = args.child.split(":")
        print(json.dumps(child(case, int(chunks))))
        return 0
    rows = []
    for case in ("sync", "async", "small-sync", "small-async"):
        for _ in range(args.repeat):
            chunks = args.chunks if case in ("sync", "async") else 0
            proc = subprocess.run(
                [sys.executable, __file__, "--child", f"{case}:{chunks}"],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    names = {
        "sync": "w[c] = data",
        "async": "await w.write_async(c, data)",
        "small-sync": "small: w[c] = data",
        "small-async": "small: await w.write_async",
    }
    print(
        f"ticker every {TICK * 1e3:.0f} ms; big: 256x256x16 uint16 random, zstd 19, "
        "max_in_flight=1; small: 8x8x8 uint16, no codec"
    )
    head = (
        "case",
        "writes",
        "write s",
        "us/call",
        "ticks",
        "max gap ms",
        "p99 gap ms",
        "median ms",
        "max call ms",
    )
    print(" | ".join(head))
    for r in rows:
        print(
            f"{names[r['case']]} | {r['writes']} | {r['write_s']} | {r['per_call_us']} | "
            f"{r['ticks']} | {r['max_gap_ms']} | {r['p99_gap_ms']} | {r['median_gap_ms']} | "
            f"{r['max_call_ms']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
