"""The workloads, sizes and cases of ``bench.py``, the grid helpers and the data
function. Only the standard library is imported at module level (numpy and numcodecs
inside the functions that need them), so importing this keeps the parent small."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

MiB = 1024 * 1024

# ---------------------------------------------------------------------------------------
# Workloads and sizes
# ---------------------------------------------------------------------------------------

# (array edge, shard edge, inner chunk edge) per workload and size; all arrays are cubes.
SIZES: dict[str, dict[str, tuple[int, int, int]]] = {
    # full: the sizes of shardwright's design notes (peers.md)
    "full": {"a": (512, 256, 32), "b": (512, 256, 8), "c": (512, 256, 256), "d": (512, 256, 32)},
    # small: 1/8 of the data, same number of shards and of chunks per shard as full, except
    # (b), which keeps its 8³ inner chunks (4,096 a shard): 4³ ones make a 3-minute case
    "small": {"a": (256, 128, 16), "b": (256, 128, 8), "c": (256, 128, 128), "d": (256, 128, 16)},
    # tiny: CI smoke test (fewer chunks per shard, so the slow cases stay quick)
    "tiny": {"a": (64, 32, 8), "b": (64, 64, 4), "c": (64, 32, 32), "d": (64, 32, 8)},
}
# (e) and (f): the seed's computation (int64 intermediates, each result freed right after
# it is assigned); (e) has small shards, so per-shard costs weigh more.
SIZES["full"].update({"e": (384, 128, 32), "f": (512, 256, 32)})
SIZES["small"].update({"e": (192, 64, 16), "f": (256, 128, 16)})
SIZES["tiny"].update({"e": (48, 16, 8), "f": (64, 32, 8)})

WORKLOADS: dict[str, dict[str, Any]] = {
    "a": {
        "title": "uint16, zstd 3",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
    },
    "b": {
        "title": "uint16, zstd 3, tiny inner chunks",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
    },
    "c": {
        "title": "uint16, zstd 3, one inner chunk per shard",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
    },
    "d": {
        "title": "float32, blosc (zstd 5, shuffle)",
        "dtype": "float32",
        "compressor": "blosc",
        "level": None,
    },
    "e": {
        "title": "uint16, zstd 3, the seed's computation, small shards",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
        "data": "seed",
    },
    "f": {
        "title": "uint16, zstd 3, the seed's computation",
        "dtype": "uint16",
        "compressor": "zstd",
        "level": 3,
        "data": "seed",
    },
}

# (key, label, writes an array); in table order.
CASES: list[tuple[str, str, bool]] = [
    ("compute", "compute alone (1 thread)", False),
    ("compute_held", "compute alone, held (1 thread): x = f(c)", False),
    ("zstd1", "{codec} 1 thread (compress only)", False),
    ("zstd", "{codec} alone (compute + compress, N threads)", False),
    ("pipeline", "loop limit: w[c]'s loop, compress on N threads, nothing stored", False),
    ("sw_write_shard", "shardwright write_shard: w[c] = f(c)", True),
    ("sw_write_shard_held", "shardwright write_shard: x = f(c); w[c] = x", True),
    ("sw_map_chunks", "shardwright map_chunks", True),
    ("sw_map_threads", "shardwright map_chunks(threads=N): fn on N threads", True),
    ("zarr_chunk", "zarr-python per chunk", True),
    ("zarr_shard", "zarr-python whole shard", True),
    ("ts_txn", "TensorStore transaction per shard", True),
    ("ts_shard", "TensorStore whole shard", True),
    # the whole array held in memory and assigned at once (the data exists before the
    # timed part: the peak growth is what the write adds)
    ("sw_assign", "shardwright a[...] = data (data in memory)", True),
    ("zarr_assign", "zarr-python z[...] = data (data in memory)", True),
    ("ts_assign", "TensorStore t.write(data) (data in memory)", True),
]
# The cases that assign one array holding all the data.
ASSIGN_CASES = {"sw_assign", "zarr_assign", "ts_assign"}
CASE_LABEL = {key: label for key, label, _ in CASES}
WRITES = {key: writes for key, _, writes in CASES}
SLOW_CASES = {"zarr_chunk"}  # only run for workload (a); dropped by --skip-slow
SLOW_WORKLOADS = {"zarr_chunk": {"a"}}


def case_label(key: str, spec: dict[str, Any]) -> str:
    return CASE_LABEL[key].format(codec=spec["compressor"])


def workload_spec(name: str, size: str) -> dict[str, Any]:
    edge, shard, chunk = SIZES[size][name]
    spec = dict(WORKLOADS[name])
    spec.update(
        name=name,
        shape=[edge] * 3,
        shards=[shard] * 3,
        chunks=[chunk] * 3,
    )
    return spec


def describe(spec: dict[str, Any]) -> str:
    def cube(v: Sequence[int]) -> str:
        return f"{v[0]}³" if len(set(v)) == 1 else "x".join(map(str, v))

    n_shards = math.prod(-(-s // h) for s, h in zip(spec["shape"], spec["shards"], strict=True))
    per_shard = math.prod(h // c for h, c in zip(spec["shards"], spec["chunks"], strict=True))
    raw = math.prod(spec["shape"]) * _itemsize(spec["dtype"]) / MiB
    return (
        f"({spec['name']}) {spec['title']}: {cube(spec['shape'])} = {raw:.3g} MiB, "
        f"shards {cube(spec['shards'])} ({n_shards}), inner chunks {cube(spec['chunks'])} "
        f"({per_shard} a shard)"
    )


def _itemsize(dtype: str) -> int:
    return {"uint16": 2, "float32": 4}[dtype]


# ---------------------------------------------------------------------------------------
# Grid helpers (pure Python, so the zarr and TensorStore children never import shardwright)
# ---------------------------------------------------------------------------------------


class Box:
    """A half-open box (origin + shape), the same fields as ``shardwright.Domain``."""

    __slots__ = ("index", "origin", "shape")

    def __init__(self, origin: tuple[int, ...], shape: tuple[int, ...], index=None) -> None:
        self.origin = origin
        self.shape = shape
        self.index = index

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + s) for o, s in zip(self.origin, self.shape, strict=True))

    def local(self, inner: Box) -> tuple[slice, ...]:
        """The slices of ``inner`` relative to this box's origin."""
        triples = zip(inner.origin, inner.shape, self.origin, strict=True)
        return tuple(slice(o - b, o - b + s) for o, s, b in triples)


def grid(origin: Sequence[int], stop: Sequence[int], step: Sequence[int]) -> Iterator[Box]:
    """The cells of the regular grid ``step`` from ``origin`` to ``stop``, in C order,
    clipped at ``stop``."""
    axes = [range(o, e, s) for o, e, s in zip(origin, stop, step, strict=True)]
    for corner in itertools.product(*axes):
        shape = tuple(min(s, e - c) for c, s, e in zip(corner, step, stop, strict=True))
        index = tuple(c // s for c, s in zip(corner, step, strict=True))
        yield Box(corner, shape, index)


def shard_boxes(spec: dict[str, Any]) -> list[Box]:
    return list(grid([0] * len(spec["shape"]), spec["shape"], spec["shards"]))


def chunk_boxes(spec: dict[str, Any], shard: Box) -> Iterator[Box]:
    stop = [o + s for o, s in zip(shard.origin, shard.shape, strict=True)]
    return grid(shard.origin, stop, spec["chunks"])


def iter_chunks(spec: dict[str, Any]) -> Iterator[Box]:
    """Every inner chunk, shard by shard (the order all cases write in), made lazily: a
    list of 262,144 boxes would add ≈ 60 MiB to every child's RSS."""
    for shard in shard_boxes(spec):
        yield from chunk_boxes(spec, shard)


def slabs(spec: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    """The shards cut into slabs one inner chunk thick along the first axis, as
    (origin, stop): the tasks of the thread pool of ``zstd alone``."""
    out = []
    c0 = spec["chunks"][0]
    for shard in shard_boxes(spec):
        stop = [o + s for o, s in zip(shard.origin, shard.shape, strict=True)]
        for z in range(shard.origin[0], stop[0], c0):
            out.append(([z, *shard.origin[1:]], [min(z + c0, stop[0]), *stop[1:]]))
    return out


# ---------------------------------------------------------------------------------------
# The data: a pure function of coordinates, computed per inner chunk with numpy
# ---------------------------------------------------------------------------------------


def make_data_fn(dtype: str, kind: str = "ramp") -> Callable[[Any], Any]:
    """``f(chunk)`` of the workload's ``data``: ``"ramp"`` (below) or ``"seed"`` (the
    computation of the seed-form issue: int64 intermediates, see :func:`seed_fn`)."""
    if kind == "seed":
        return seed_fn(dtype)
    return ramp_fn(dtype)


def seed_fn(dtype: str) -> Callable[[Any], Any]:
    """The computation users reported: a function of coordinates with int64 temporaries
    (four 32³ int64 arrays per 32³ chunk) and a fresh result each call."""
    import numpy as np

    out_dtype = np.dtype(dtype)

    def calculation(c: Any) -> Any:
        (z0, y0, x0), (nz, ny, nx) = c.origin, c.shape
        g = np.add.outer(
            np.add.outer(np.arange(z0, z0 + nz) * 5, np.arange(y0, y0 + ny)),
            np.arange(x0, x0 + nx) * 11,
        )
        return ((g % 1013) ^ (g // 257)).astype(out_dtype)

    return calculation


def ramp_fn(dtype: str) -> Callable[[Any], Any]:
    """``f(chunk)``: a smooth ramp ``(3x + 5y + 7z) / 8`` plus two bits of integer-hash
    noise; ≈3.3x with zstd 3 (uint16). float32: the same values times 0.25."""
    import numpy as np

    u32 = np.uint32
    ka, kb, kc, km = u32(0x9E3779B1), u32(0x85EBCA77), u32(0xC2B2AE3D), u32(0x2C1B3C6D)
    shift3, shift30 = u32(3), u32(30)
    out_dtype = np.dtype(dtype)
    scale = np.float32(0.25)

    def f(chunk: Any) -> Any:
        (z0, y0, x0), (nz, ny, nx) = chunk.origin, chunk.shape
        z = np.arange(z0, z0 + nz, dtype=u32)[:, None, None]
        y = np.arange(y0, y0 + ny, dtype=u32)[None, :, None]
        x = np.arange(x0, x0 + nx, dtype=u32)[None, None, :]
        h = (x * ka) ^ (y * kb)  # 2-D
        h = h ^ (z * kc)  # full chunk from here on
        h *= km
        h >>= shift30  # two bits of hash noise
        v = (x * 3 + y * 5) + z * 7
        v >>= shift3
        v += h
        if out_dtype.kind == "f":
            return v.astype(np.float32) * scale
        return v.astype(out_dtype)

    return f


def make_codec(spec: dict[str, Any]) -> Any:
    """The numcodecs compressor matching the array's inner codec."""
    import numcodecs

    if spec["compressor"] == "zstd":
        return numcodecs.Zstd(level=spec["level"])
    if spec["compressor"] == "blosc":
        numcodecs.blosc.use_threads = False  # one thread per call, as zarr-python runs it
        return numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, typesize=4)
    raise ValueError(spec["compressor"])
