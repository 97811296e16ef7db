"""The geometry, the cases and the child side of ``bench_convert.py``: the OME-TIFF source
(written once, page by page), the reference levels, one measured case in one process
(``bench_convert.py --child '<json>'`` runs ``child_main``) and the check. Only the standard
library (and ``bench_pyramid``, which imports only the standard library at module level) is
imported at module level: each case imports the library it measures."""

from __future__ import annotations

import json
import math
import os
import time
import traceback
from pathlib import Path
from typing import Any

import bench_pyramid as bp

# (c, z, y, x) uint16: 2 channels of 2048 x 2048 camera planes (tiny: 512 x 512)
SIZES = {
    "tiny": (2, 4, 512, 512),  # 4 MiB
    "0.5": (2, 32, 2048, 2048),  # 512 MiB
    "1": (2, 64, 2048, 2048),
    "2": (2, 128, 2048, 2048),
}
AXES = ("c", "z", "y", "x")
FACTORS = (1, 2, 2, 2)
CHUNKS = (1, 32, 128, 128)  # 1 MiB inner chunks (64^3-sized), clipped to each level
SHARDS = (1, 64, 512, 512)  # 32 MiB shards, clipped to each level
ZSTD_LEVEL = 3
TILE = (512, 512)  # the TIFF's tiles (tiny: 256 x 256)
PIXEL_UM = (2.0, 0.406, 0.406)  # z, y, x
NOISE_BITS = 7  # bits of hash noise: ≈ 1.85x with zstd 3, as camera data
CASES = {
    "sw_convert": "shardwright sw.convert(tif, dest, ...)",
    "ngff_zarr": "ngff-zarr to_multiscales (DASK_BIN_SHRINK) + to_ngff_zarr of tifffile aszarr",
    "ome_zarr_py": "ome-zarr-py write_image (LOCAL_MEAN) of tifffile aszarr, format 0.5",
    "tifffile_zarr": "tifffile.imread whole, zarr.create_array per level, numpy means",
    "compress_only": "zstd 3 alone on every level's inner chunks, all cores (the floor)",
}
SW, FLOOR = "sw_convert", "compress_only"
PEERS = ("ngff_zarr", "ome_zarr_py", "tifffile_zarr")
METHODS = {
    "sw_convert": "mean (as ts.downsample: half to even)",
    "ngff_zarr": "Methods.DASK_BIN_SHRINK: dask coarsen mean, integers rounded half up",
    "ome_zarr_py": "Methods.LOCAL_MEAN: skimage downscale_local_mean, truncated",
    "tifffile_zarr": "numpy integer block sums, rounded half to even (as ts.downsample)",
    "compress_only": "none (compresses the reference levels)",
}


def levels_for(shape: tuple[int, ...]) -> int:
    """Levels including 0 until every downsampled axis fits within one inner chunk (the
    rule of ``sw.pyramid(levels=None)``, ngff-zarr and ome-zarr-py): 5 for 2048^2 planes."""
    need = [
        math.ceil(math.log2(n / c)) if n > c else 0
        for n, c, f in zip(shape, CHUNKS, FACTORS)
        if f > 1
    ]
    return 1 + max(need)


def configure(shape: tuple[int, ...]) -> int:
    """Point bench_pyramid's helpers (level_shapes, level_grid, boxes) at this geometry."""
    levels = levels_for(shape)
    bp.FACTORS, bp.LEVELS, bp.CHUNKS, bp.SHARDS, bp.ZSTD_LEVEL, bp.DIMS = (
        FACTORS, levels, CHUNKS, SHARDS, ZSTD_LEVEL, AXES
    )  # fmt: skip
    return levels


def tile_for(shape: tuple[int, ...]) -> tuple[int, int]:
    return (256, 256) if shape[-1] < 1024 else TILE


# ---------------------------------------------------------------------------------------
# Children
# ---------------------------------------------------------------------------------------


def plane(c: int, z: int, yx: tuple[int, int]) -> Any:
    """One camera plane: ``bench_pyramid.source_data`` of it (t = 0)."""
    region = (slice(0, 1), slice(c, c + 1), slice(z, z + 1), slice(0, yx[0]), slice(0, yx[1]))
    return bp.source_data(region, NOISE_BITS)[0, 0, 0]


def child_tiff(job: dict[str, Any]) -> dict[str, Any]:
    """Write the OME-TIFF page by page (a plane in memory at a time): BigTIFF, uint16,
    uncompressed, tiled, OME-XML with the physical pixel sizes."""
    import tifffile

    shape, path = tuple(job["shape"]), job["tif"]
    tile = tile_for(shape)

    def tiles():
        for c in range(shape[0]):
            for z in range(shape[1]):
                p = plane(c, z, shape[2:])
                for y in range(0, shape[2], tile[0]):
                    for x in range(0, shape[3], tile[1]):
                        yield p[y : y + tile[0], x : x + tile[1]]

    t0 = time.perf_counter()
    meta = {"axes": "CZYX"}
    for ax, um in zip("ZYX", PIXEL_UM):
        meta[f"PhysicalSize{ax}"], meta[f"PhysicalSize{ax}Unit"] = um, "µm"
    with tifffile.TiffWriter(path + ".part", bigtiff=True, ome=True) as w:
        w.write(
            tiles(), shape=shape, dtype="uint16", tile=tile, photometric="minisblack",
            compression=None, metadata=meta,
        )  # fmt: skip
    os.replace(path + ".part", path)
    return {"seconds": time.perf_counter() - t0, "bytes": os.path.getsize(path), "tile": tile}


def read_tiff(path: str) -> Any:
    import tifffile

    return tifffile.imread(path)


def half_even_mean(prev: Any) -> Any:
    """The 2x2x2 (per channel) mean of ``prev`` rounded half to even, exact in integers
    (even shapes: the sizes here are powers of two)."""
    import numpy as np

    c, z, y, x = prev.shape
    if z % 2 or y % 2 or x % 2:
        raise ValueError(f"shape {prev.shape} is not a multiple of the factors")
    total = prev.reshape(c, z // 2, 2, y // 2, 2, x // 2, 2).sum(axis=(2, 4, 6), dtype=np.uint32)
    q, r = np.divmod(total, 8)
    q += (r > 4) | ((r == 4) & (q % 2 == 1))
    return q.astype(np.uint16)


def child_reference(job: dict[str, Any]) -> dict[str, Any]:
    """Levels 1.. as .npy: ``ts.downsample(reference k-1, factors, "mean")`` from the TIFF."""
    import numpy as np
    import tensorstore as ts

    prev = read_tiff(job["tif"])
    for path in job["refs"][1:]:
        prev = ts.downsample(ts.array(prev), list(FACTORS), "mean").read().result()
        np.save(path, prev)
    return {}


def ome_metadata(levels: int) -> dict[str, Any]:
    """OME-Zarr 0.5 ``multiscales`` for levels "0".."levels-1" (for ``tifffile_zarr``)."""
    axes = [{"name": "c", "type": "channel"}] + [
        {"name": a, "type": "space", "unit": "micrometer"} for a in AXES[1:]
    ]
    datasets = [
        {
            "path": str(k),
            "coordinateTransformations": [
                {
                    "type": "scale",
                    "scale": [1.0] + [um * f**k for um, f in zip(PIXEL_UM, FACTORS[1:])],
                }
            ],
        }
        for k in range(levels)
    ]
    return {"ome": {"version": "0.5", "multiscales": [{"axes": axes, "datasets": datasets}]}}


def case_runner(case: str, tif: str, dst: str, shape: tuple[int, ...], extra: dict[str, Any]):
    """The imports of ``case`` (here, before the clock) and its timed part, which returns
    the folders of the levels written."""
    levels = configure(shape)
    shapes = bp.level_shapes(shape)
    scale = dict(zip(AXES[1:], PIXEL_UM))
    if case == SW:
        import shardwright as sw

        extra["versions"] = {"shardwright": getattr(sw, "__version__", None)}
        if not hasattr(sw, "convert"):
            raise RuntimeError(f"shardwright at {os.path.dirname(sw.__file__)} has no convert()")

        def run_sw() -> list[str]:
            out = sw.convert(
                tif, dst, factors=FACTORS, levels=levels, method="mean", chunks=CHUNKS,
                shards=SHARDS, compressor="zstd", compression_level=ZSTD_LEVEL, overwrite=True,
            )  # fmt: skip
            stats = getattr(out, "stats", None)
            if isinstance(stats, dict):
                extra["stats"] = {k: v for k, v in stats.items() if k != "seconds"}
            paths = [getattr(a, "path", None) for a in out]
            return [str(p) for p in paths] if all(paths) else bp.ome_level_paths(dst)

        return run_sw

    import tifffile
    import zarr
    from zarr.codecs import ZstdCodec

    extra["versions"] = {"tifffile": tifffile.__version__, "zarr": zarr.__version__}
    if case in ("ngff_zarr", "ome_zarr_py"):
        import dask
        import dask.array as da

        extra["versions"]["dask"] = dask.__version__
    factors = [{a: f**k for a, f in zip(AXES, FACTORS) if f > 1} for k in range(1, levels)]
    if case == "ngff_zarr":
        import ngff_zarr as nz

        extra["versions"]["ngff_zarr"] = nz.__version__

        def run_ngff() -> list[str]:
            source = da.from_zarr(zarr.open(tifffile.imread(tif, aszarr=True), mode="r"))
            image = nz.to_ngff_image(source, dims=list(AXES), scale=scale)
            ms = nz.to_multiscales(
                image, scale_factors=factors, method=nz.Methods.DASK_BIN_SHRINK,
                chunks=dict(zip(AXES, CHUNKS)),
            )  # fmt: skip
            nz.to_ngff_zarr(
                dst, ms, version="0.5",
                chunks_per_shard={a: s // c for a, s, c in zip(AXES, SHARDS, CHUNKS)},
                compressors=[ZstdCodec(level=ZSTD_LEVEL)],
            )  # fmt: skip
            return bp.ome_level_paths(dst)

        return run_ngff
    if case == "ome_zarr_py":
        import ome_zarr
        from ome_zarr.format import FormatV05
        from ome_zarr.scale import Methods
        from ome_zarr.writer import write_image

        extra["versions"]["ome_zarr"] = ome_zarr.__version__
        options = [
            dict(
                zip(("chunks", "shards"), bp.level_grid(s)),
                compressors=[ZstdCodec(level=ZSTD_LEVEL)],
            )
            for s in shapes
        ]

        def run_ome() -> list[str]:
            source = da.from_zarr(zarr.open(tifffile.imread(tif, aszarr=True), mode="r"))
            # LOCAL_MEAN runs per dask block: on the TIFF's blocks (one page deep) the
            # z-windows would be padded with zeros (means halved), so the blocks are the
            # level-0 chunks, as a user who checks the output would do
            source = source.rechunk(bp.level_grid(shape)[0])
            write_image(
                source, zarr.open_group(dst, mode="w", zarr_format=3), scale_factors=factors,
                method=Methods.LOCAL_MEAN, fmt=FormatV05(), axes=list(AXES),
                storage_options=options, scale=scale,
                axes_units={a: "micrometer" for a in AXES[1:]},
            )  # fmt: skip
            return bp.ome_level_paths(dst)

        return run_ome
    if case == "tifffile_zarr":

        def run_tifffile() -> list[str]:
            data = tifffile.imread(tif)
            store = zarr.storage.LocalStore(dst)
            zarr.create_group(store, zarr_format=3, attributes=ome_metadata(levels))
            for k, level_shape in enumerate(shapes):
                if k:
                    data = half_even_mean(data)
                chunks, shards = bp.level_grid(level_shape)
                zarr.create_array(
                    store, name=str(k), data=data, chunks=chunks, shards=shards,
                    compressors=[ZstdCodec(level=ZSTD_LEVEL)], dimension_names=AXES,
                )  # fmt: skip
            return [os.path.join(dst, str(k)) for k in range(levels)]

        return run_tifffile
    raise SystemExit(f"unknown case {case}")


def measured(case: str, run) -> dict[str, Any]:
    """Reset the peak RSS, run the timed part, take the peak (as bench_pyramid)."""
    rss_start = bp.status_bytes("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss_before = bp.status_bytes("VmRSS")
    io0 = bp.proc_io()
    t0 = time.perf_counter()
    try:
        out = run()
    except Exception as e:  # a peer that fails, or an API this shardwright lacks: an error row
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
        "out": out,
    }


def child_case(job: dict[str, Any]) -> dict[str, Any]:
    case, shape = job["case"], tuple(job["shape"])
    extra: dict[str, Any] = {}
    try:
        run = case_runner(case, job["tif"], job["dst"], shape, extra)
    except Exception as e:  # the case cannot even start (e.g. an import or an API missing)
        return {"case": case, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
    res = measured(case, run)
    res["levels_written"] = res.pop("out", None)
    return {**res, **extra}


def child_compress(job: dict[str, Any]) -> dict[str, Any]:
    """The compressor alone: every inner chunk of level 0 (the TIFF) and of the reference
    levels, contiguous in memory before the clock, ``numcodecs.Zstd(level=3)`` on a pool of
    as many threads as cores; level 0's chunks alone are timed too."""
    from concurrent.futures import ThreadPoolExecutor

    import numcodecs
    import numpy as np

    configure(tuple(job["shape"]))
    arrays = [read_tiff(job["tif"])] + [np.load(p) for p in job["refs"][1:]]
    pieces: list[list[Any]] = []
    for a in arrays:
        chunks, _ = bp.level_grid(a.shape)
        pieces.append([np.ascontiguousarray(a[r]) for r in bp.boxes(a.shape, chunks)])
    del arrays, a
    codec, threads = numcodecs.Zstd(level=ZSTD_LEVEL), os.cpu_count() or 1
    codec.encode(pieces[-1][-1])  # warm
    out: dict[str, Any] = {"threads": threads, "versions": {"numcodecs": numcodecs.__version__}}
    with ThreadPoolExecutor(threads) as pool:
        t0 = time.perf_counter()
        sizes0 = list(pool.map(lambda p: len(codec.encode(p)), pieces[0]))
        out["level0_seconds"] = time.perf_counter() - t0

        def run() -> list[int]:
            return [n for level in pieces for n in pool.map(lambda p: len(codec.encode(p)), level)]

        res = measured(FLOOR, run)
    sizes = res.pop("out")
    out.update(
        chunks=sum(len(level) for level in pieces),
        raw_bytes=sum(p.nbytes for level in pieces for p in level),
        compressed_bytes=sum(sizes),
        level0_compressed_bytes=sum(sizes0),
    )
    return {**res, **out}


def child_verify(job: dict[str, Any]) -> dict[str, Any]:
    """Each written level against the TIFF (level 0, plane by plane) and the reference
    chain (levels 1..), every element; the stored layout of each level from its zarr.json."""
    import numpy as np
    import tensorstore as ts
    import tifffile
    import zarr

    shape = tuple(job["shape"])
    levels = configure(shape)
    shapes = bp.level_shapes(shape)
    src = zarr.open(tifffile.imread(job["tif"], aszarr=True), mode="r")
    out: dict[str, Any] = {"levels": [], "equal": True}
    paths = job["levels"] or []
    if len(paths) != levels:
        out.update(equal=False, problem=f"{len(paths)} levels written, {levels} expected")
    for k, path in enumerate(paths[:levels]):
        info: dict[str, Any] = {"level": k, "path": os.path.relpath(path, job["dst"])}
        try:
            info.update(bp.zarr_layout(json.loads(Path(path, "zarr.json").read_text())))
            info["stored_bytes"] = bp.stored_bytes(Path(path), below=False)
            got = ts.open(bp.ts_spec(path)).result()
            info["shape"] = list(got.shape)
            if tuple(got.shape) != tuple(shapes[k]):
                raise ValueError(f"shape {got.shape}, expected {shapes[k]}")
            if k == 0:
                pairs = (
                    (got[r].read().result(), src[r])
                    for r in bp.boxes(shape, (1, 1, *shape[2:]))
                )  # fmt: skip
            else:
                pairs = iter([(got.read().result(), np.load(job["refs"][k]))])
            ndiff = maxdiff = 0
            for a, b in pairs:
                d = np.abs(a.astype(np.int32) - b.astype(np.int32))
                ndiff += int(np.count_nonzero(d))
                maxdiff = max(maxdiff, int(d.max()))
            info.update(
                equal=ndiff == 0,
                differing_elements=ndiff,
                differing_fraction=ndiff / math.prod(shapes[k]),
                max_abs_diff=maxdiff,
            )
        except Exception as e:  # a level written wrong or not at all
            info.update(equal=False, error=f"{type(e).__name__}: {e}")
        out["equal"] = out["equal"] and info["equal"]
        out["levels"].append(info)
    return out


def child_main(job: dict[str, Any]) -> None:
    bp.set_nice(job.get("nice"))
    fn = {
        "tiff": child_tiff,
        "reference": child_reference,
        "case": child_case,
        "compress": child_compress,
        "verify": child_verify,
        "versions": bp.child_versions,
    }[job["kind"]]
    print(bp.RESULT + json.dumps(fn(job)), flush=True)
