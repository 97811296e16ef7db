"""The geometry, the cases and the child side of ``bench_append.py``: one measured case in
one process (``bench_append.py --child '<json>'`` runs ``child_main``), the I/O count of
shardwright's appender and the check. Only the standard library (and ``bench_pyramid``, which
imports only the standard library at module level) is imported at module level: each case
imports the library it measures."""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

import bench_pyramid as bp

# size: (frames, frame shape (c, y, x), inner chunks, shards), arrays (t, c, y, x) uint16
SIZES: dict[str, tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "tiny": (16, (2, 64, 64), (4, 1, 32, 32), (8, 1, 64, 64)),  # 2 shards deep
    "512x128": (128, (1, 512, 512), (8, 1, 256, 256), (64, 1, 512, 512)),  # 64 MiB
    "512x2048": (2048, (1, 512, 512), (8, 1, 256, 256), (64, 1, 512, 512)),  # 1 GiB
    "2048x256": (256, (2, 2048, 2048), (8, 1, 256, 256), (64, 1, 2048, 2048)),  # 2 GiB
}
FLATNESS = ("512x128", "512x2048")  # the memory-flatness pair: peak RSS should not grow
AXES = ("t", "c", "y", "x")
ZSTD_LEVEL = 3
RING = 8  # distinct frames, made before the clock; frame i is ring[i % RING]
NOISE_BITS = 7
CASES = {
    "sw_appender": "shardwright: with a.appender(axis=0) as ap: ap.append(frame)",
    "acquire_zarr": "acquire-zarr ZarrStream.append(frame), zstd codec",
    "tensorstore_txn": "TensorStore: per shard-deep slab, resize, write the frames in a "
    "transaction, commit",
    "zarr_append": "zarr-python Array.append(frame[None]) per frame",
    "sw_image_appender": "shardwright: sw.create_image(shape=(0, c, y, x), factors (1, 1, 2, 2), "
    "3 levels); with img.appender(axis=0) as ap: ap.append(frame)",
    "acquire_zarr_levels": "acquire-zarr ZarrStream.append(frame), zstd, MEAN downsampling, "
    "3 levels",
}
SW = "sw_appender"
# the cases that write an image (a group whose level 0 is the array "0")
IMAGE_CASES = ("sw_image_appender", "acquire_zarr_levels")
LEVELS = 3


def frames_ring(frame: tuple[int, ...]) -> list[Any]:
    """``RING`` camera-like frames: ``bench_pyramid.source_data`` of time points 0..7."""
    import numpy as np

    def plane(t: int, c: int) -> Any:
        region = (slice(t, t + 1), slice(c, c + 1), slice(0, 1), *(slice(0, n) for n in frame[1:]))
        return bp.source_data(region, NOISE_BITS)[0, :, 0]

    return [np.concatenate([plane(t, c) for c in range(frame[0])]) for t in range(RING)]


def ts_spec(path: str, frame, chunks, shards) -> dict[str, Any]:
    """A resizable sharded zarr3 array of 0 frames, as shardwright and zarr-python write it."""
    return {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": path},
        "metadata": {
            "shape": [0, *frame],
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
            "dimension_names": list(AXES),
        },
        "create": True,
        "delete_existing": True,
    }


def sw_append(dest: Any, n: int, ring: list[Any], chunks, shards, extra: dict[str, Any]) -> None:
    """The user's loop: frames appended one at a time as they are acquired."""
    import shardwright as sw

    a = sw.create(
        dest, shape=(0, *ring[0].shape), dtype="uint16", chunks=chunks, shards=shards,
        compressor="zstd", compression_level=ZSTD_LEVEL, dimension_names=AXES,
    )  # fmt: skip
    with a.appender(axis=0) as ap:
        for i in range(n):
            ap.append(ring[i % RING])
    stats = getattr(ap, "stats", None)
    if isinstance(stats, dict):
        extra["stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float))}


def sw_image_append(dest: Any, n: int, ring: list[Any], chunks, shards) -> None:
    """The user's loop into an image whose coarser levels (2x2 in y and x) grow with it."""
    import shardwright as sw

    img = sw.create_image(
        dest, shape=(0, *ring[0].shape), dtype="uint16", chunks=chunks, shards=shards,
        factors=(1, 1, 2, 2), levels=LEVELS, axes="".join(AXES), compressor="zstd",
        compression_level=ZSTD_LEVEL,
    )  # fmt: skip
    with img.appender(axis=0) as ap:
        for i in range(n):
            ap.append(ring[i % RING])


def case_runner(case: str, dst: str, size: str, extra: dict[str, Any]):
    """The imports and the frames of ``case`` (here, before the clock) and its timed part."""
    n, frame, chunks, shards = SIZES[size]
    ring = frames_ring(frame)
    if case == SW:
        import shardwright as sw

        extra["versions"] = {"shardwright": getattr(sw, "__version__", None)}
        if not hasattr(sw.Array, "appender"):
            raise RuntimeError(f"shardwright at {os.path.dirname(sw.__file__)} has no appender()")
        return lambda: sw_append(dst, n, ring, chunks, shards, extra)
    if case == "sw_image_appender":
        import shardwright as sw

        extra["versions"] = {"shardwright": getattr(sw, "__version__", None)}
        return lambda: sw_image_append(dst, n, ring, chunks, shards)
    if case in ("acquire_zarr", "acquire_zarr_levels"):
        from importlib.metadata import version

        import acquire_zarr as az
        import numpy as np

        extra["versions"] = {"acquire_zarr": version("acquire-zarr")}
        kinds = [az.DimensionType.TIME, az.DimensionType.CHANNEL] + [az.DimensionType.SPACE] * 2
        dims = [
            az.Dimension(
                name=name,
                kind=kind,
                array_size_px=size_px,
                chunk_size_px=c,
                shard_size_chunks=s // c,
            )
            for name, kind, size_px, c, s in zip(AXES, kinds, (0, *frame), chunks, shards)
        ]
        settings = az.StreamSettings(
            store_path=dst,
            arrays=[
                az.ArraySettings(
                    dimensions=dims,
                    data_type=np.uint16,
                    **(
                        {"downsampling_method": az.DownsamplingMethod.MEAN, "max_levels": LEVELS}
                        if case == "acquire_zarr_levels"
                        else {}
                    ),
                    compression=az.CompressionSettings(
                        compressor=az.Compressor.ZSTD,
                        codec=az.CompressionCodec.ZSTD,
                        level=ZSTD_LEVEL,
                        shuffle=0,
                    ),
                )
            ],
            overwrite=True,
            max_threads=os.cpu_count() or 1,
        )

        def run_acquire() -> None:
            stream = az.ZarrStream(settings)
            for i in range(n):
                stream.append(ring[i % RING])
            stream.close()

        return run_acquire
    if case == "tensorstore_txn":
        from importlib.metadata import version

        import tensorstore as ts

        extra["versions"] = {"tensorstore": version("tensorstore")}

        def run_ts() -> None:
            t = ts.open(ts_spec(dst, frame, chunks, shards)).result()
            depth = shards[0]
            for start in range(0, n, depth):
                stop = min(n, start + depth)
                t = t.resize(exclusive_max=[stop, *frame], expand_only=True).result()
                txn = ts.Transaction()
                staged = t.with_transaction(txn)
                for i in range(start, stop):
                    staged[i].write(ring[i % RING]).result()
                txn.commit_async().result()

        return run_ts
    if case == "zarr_append":
        import zarr
        from zarr.codecs import ZstdCodec

        extra["versions"] = {"zarr": zarr.__version__}

        def run_zarr() -> None:
            z = zarr.create_array(
                zarr.storage.LocalStore(dst), shape=(0, *frame), dtype="uint16", chunks=chunks,
                shards=shards, compressors=[ZstdCodec(level=ZSTD_LEVEL)], dimension_names=AXES,
                fill_value=0,
            )  # fmt: skip
            for i in range(n):
                z.append(ring[i % RING][None], axis=0)

        return run_zarr
    raise SystemExit(f"unknown case {case}")


def child_case(job: dict[str, Any]) -> dict[str, Any]:
    case = job["case"]
    extra: dict[str, Any] = {}
    try:
        run = case_runner(case, job["dst"], job["size"], extra)
    except Exception as e:  # the case cannot even start (an import or an API missing)
        return {"case": case, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
    rss_start = bp.status_bytes("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss_before = bp.status_bytes("VmRSS")
    io0 = bp.proc_io()
    t0 = time.perf_counter()
    try:
        run()
    except Exception as e:  # a peer that fails: an error row
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
        **extra,
    }


def child_count(job: dict[str, Any]) -> dict[str, Any]:
    """Shardwright's appender through a zarr-python store that counts the get and set calls
    on shard keys (untimed; the tests' WrapperStore way): 2.5 shards deep of frames (the
    last shard partial), enough to see the calls per shard."""
    import threading
    from collections import Counter

    import zarr
    from zarr.storage import LocalStore, WrapperStore

    class Counting(WrapperStore):
        def __init__(self, store: Any) -> None:
            super().__init__(store)
            self.calls: Counter[str] = Counter()
            self._lock = threading.Lock()

        def _count(self, method: str, key: str) -> None:
            what = method if "/c/" in f"/{key}" else f"{method} {key.rsplit('/', 1)[-1]}"
            with self._lock:
                self.calls[what] += 1

        async def get(self, key, prototype, byte_range=None):
            self._count("get", key)
            return await self._store.get(key, prototype, byte_range)

        async def set(self, key, value):
            self._count("set", key)
            return await self._store.set(key, value)

        async def delete(self, key):
            self._count("delete", key)
            return await self._store.delete(key)

    n, frame, chunks, shards = SIZES[job["size"]]
    n = min(n, shards[0] * 5 // 2)
    store = Counting(LocalStore(job["dst"]))
    extra: dict[str, Any] = {}
    sw_append(store, n, frames_ring(frame), chunks, shards, extra)
    per_slab = 1
    for f, s in zip(frame, shards[1:]):
        per_slab *= -(-f // s)
    shard_count = -(-n // shards[0]) * per_slab
    return {
        "frames": n,
        "shards": shard_count,
        "calls": dict(store.calls),
        "gets_per_shard": store.calls["get"] / shard_count,
        "puts_per_shard": store.calls["set"] / shard_count,
        "appender_stats": extra.get("stats"),
        "zarr": zarr.__version__,
        "how": "zarr-python WrapperStore over LocalStore counting get/set/delete calls: on "
        "shard keys as 'get'/'set'/'delete', on others by file name ('set zarr.json')",
    }


def child_verify(job: dict[str, Any]) -> dict[str, Any]:
    """Every frame read back (TensorStore) and compared with the frame appended."""
    import numpy as np
    import tensorstore as ts

    n, frame, _, shards = SIZES[job["size"]]
    ring = frames_ring(frame)
    out: dict[str, Any] = {"equal": False}
    root = Path(job["dst"], "0") if job.get("case") in IMAGE_CASES else Path(job["dst"])
    try:
        if job.get("case") in IMAGE_CASES:
            group = Path(job["dst"])
            out["levels"] = sorted(p.name for p in group.iterdir() if (p / "zarr.json").exists())
        out.update(bp.zarr_layout(json.loads(Path(root, "zarr.json").read_text())))
        t = ts.open(bp.ts_spec(str(root))).result()
        out["shape"] = list(t.shape)
        if tuple(t.shape) != (n, *frame):
            out["problem"] = f"shape {t.shape}, expected {(n, *frame)}"
            return out
        wrong = 0
        for start in range(0, n, shards[0]):
            slab = t[start : start + shards[0]].read().result()
            wrong += sum(
                not np.array_equal(slab[i], ring[(start + i) % RING]) for i in range(len(slab))
            )
        out.update(equal=wrong == 0, wrong_frames=wrong)
    except Exception as e:  # nothing (readable) written
        out["problem"] = f"{type(e).__name__}: {e}"
    return out


def child_main(job: dict[str, Any]) -> None:
    bp.set_nice(job.get("nice"))
    fn = {
        "case": child_case,
        "count": child_count,
        "verify": child_verify,
        "versions": bp.child_versions,
    }[job["kind"]]
    print(bp.RESULT + json.dumps(fn(job)), flush=True)
