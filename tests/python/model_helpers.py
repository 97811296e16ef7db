"""Pieces of the model-based test (test_model_based.py): geometries, values, exact
comparison, and the keys (regions and zarr-python selections) it writes and reads.
The backends and the second process are in model_backends.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import shardwright as sw
from hypothesis import strategies as st

DTYPES = (
    "uint8",
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bool",
    "complex64",
)
COMPRESSORS = ("zstd", "blosc", "gzip", None)
MAX_ELEMENTS = 3000  # every step compares the whole array three ways: keep it small
MAX_SHARDS = 12  # each shard is a request on S3


# --------------------------------------------------------------------------------------
# geometry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """An array's settings."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None
    dtype: str
    fill: Any
    compressor: str | None
    index_location: str

    @property
    def cell(self) -> tuple[int, ...]:
        """The shape of what a shard writer writes: the shard, or the chunk if unsharded."""
        return self.shards if self.shards is not None else self.chunks

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(-(-n // s) for n, s in zip(self.shape, self.cell))

    def create_kwargs(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "dtype": self.dtype,
            "chunks": self.chunks,
            "shards": self.shards,
            "fill_value": self.fill,
            "compressor": self.compressor,
            "index_location": self.index_location,
        }

    def shard_key(self, index: tuple[int, ...]) -> str:
        return "c/" + "/".join(str(i) for i in index)

    def shard_slices(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(
            slice(i * s, min((i + 1) * s, n)) for i, s, n in zip(index, self.cell, self.shape)
        )


def _fills(dtype: str) -> list[Any]:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return [False, True]
    if kind == "u":
        return [0, 7]
    if kind == "i":
        return [0, -3]
    if kind == "f":
        return [0.0, -1.5, float("nan")]
    return [0j, 1 + 2j]


@st.composite
def geometries(draw: Any) -> Geometry:
    """Rank 1 to 4, sharded or not, edge (partial) shards and chunks likely, the index
    at the start or the end, every listed dtype and compressor, a zero or other fill."""
    rank = draw(st.integers(1, 4))
    sharded = draw(st.booleans())
    top = (6, 5, 3, 2)[rank - 1]
    chunks = tuple(draw(st.integers(1, top)) for _ in range(rank))
    if sharded:
        factors = tuple(draw(st.integers(1, 3)) for _ in range(rank))
        shards: tuple[int, ...] | None = tuple(c * f for c, f in zip(chunks, factors))
    else:
        shards = None
    cell = shards if shards is not None else chunks
    shape = []
    for s in cell:
        # one to three cells along each axis, the last one often partial
        shape.append(draw(st.integers(1, 3 * s)))
    shape_t = tuple(shape)
    elements = int(np.prod(shape_t))
    cells = int(np.prod([-(-n // s) for n, s in zip(shape_t, cell)]))
    if elements > MAX_ELEMENTS or cells > MAX_SHARDS:
        shape_t = tuple(min(n, s) for n, s in zip(shape_t, cell))
    dtype = draw(st.sampled_from(DTYPES))
    fill = draw(st.sampled_from(_fills(dtype)))
    compressor = draw(st.sampled_from(COMPRESSORS))
    location = draw(st.sampled_from(("end", "start")))
    return Geometry(shape_t, chunks, shards, dtype, fill, compressor, location)


@st.composite
def streaming_geometries(draw: Any) -> Geometry:
    """Arrays whose shards hold more than the writer's 1 MiB staging buffer of random
    (incompressible) data, so writers stream to temporary files before they commit."""
    chunks = (draw(st.sampled_from((64, 80))), draw(st.sampled_from((128, 160))))
    shards = (chunks[0] * 4, chunks[1] * 4)
    shape = (shards[0] + draw(st.integers(0, chunks[0])), shards[1])
    dtype = draw(st.sampled_from(("float64", "uint64")))
    location = draw(st.sampled_from(("end", "start")))
    return Geometry(shape, chunks, shards, dtype, 0, draw(st.sampled_from(COMPRESSORS)), location)


def full_of_fill(geom: Geometry) -> np.ndarray:
    return np.full(geom.shape, geom.fill, dtype=geom.dtype)


# --------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------


def random_values(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    """Random elements of ``dtype``; floats with some NaN, infinities and negative
    zeros among them (a negative zero is not the fill value 0.0 and must survive)."""
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    if dtype.kind == "f":
        out = np.asarray(rng.standard_normal(shape) * 100).astype(dtype)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=dtype)
        pick = np.asarray(rng.random(shape) < 0.15)
        out[pick] = rng.choice(special, size=int(pick.sum()))
        return out
    real = rng.standard_normal(shape) * 10
    imag = rng.standard_normal(shape) * 10
    return (real + 1j * imag).astype(dtype)


def make_value(
    seed: int, kind: str, dtype: np.dtype, shape: tuple[int, ...], fill: Any
) -> tuple[Any, Any]:
    """``(value, model_value)`` to assign to a region of numpy ``shape``: what to hand
    shardwright, and what numpy assigns to the model (the same, except that a Python
    scalar is given to the model as such too).

    ``kind``: ``array`` (random elements), ``fill`` (the fill value, as an array),
    ``fill_scalar``, ``scalar`` (a Python scalar), ``np_scalar``, ``row`` (one row
    broadcast along the leading axes), ``mixed`` (mostly fill, a few random elements).
    """
    rng = np.random.default_rng(seed)
    if kind == "fill":
        v = np.full(shape, fill, dtype=dtype)
        return v, v
    if kind == "fill_scalar":
        s = np.array(fill, dtype=dtype)[()]
        return s, s
    if kind in ("scalar", "np_scalar"):
        s = random_values(rng, dtype, ())
        s = np.asarray(s, dtype=dtype)[()]
        if kind == "scalar" and dtype.kind in "biu":
            py = s.item()
            return py, py
        return s, s
    if kind == "row" and shape:
        v = random_values(rng, dtype, shape[-1:])
        return v, v
    if kind == "mixed":
        v = np.full(shape, fill, dtype=dtype)
        pick = rng.random(shape) < 0.1
        v[pick] = random_values(rng, dtype, (int(pick.sum()),))
        return v, v
    v = np.asarray(random_values(rng, dtype, shape), dtype=dtype)
    if kind == "wide":  # a wider type of the same kind, whose values all fit the dtype
        wide = {"i": "int64", "u": "uint64", "f": "float64", "c": "complex128", "b": "bool"}
        return v.astype(wide[dtype.kind]), v
    if kind == "list" and v.size:  # Python numbers that fit the dtype
        return v.tolist(), v
    return v, v


VALUE_KINDS = (
    "array",
    "array",
    "array",
    "fill",
    "fill_scalar",
    "scalar",
    "np_scalar",
    "row",
    "mixed",
    "wide",
    "list",
)


# --------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------


def exact_mismatch(actual: Any, expected: np.ndarray) -> str | None:
    """``None`` when ``actual`` has ``expected``'s dtype, shape and bytes (so NaN equals
    NaN, and -0.0 differs from 0.0); otherwise what differs, with the first positions."""
    actual_a = np.asarray(actual)
    if actual_a.dtype != expected.dtype:
        return f"dtype {actual_a.dtype}, expected {expected.dtype}"
    if actual_a.shape != expected.shape:
        return f"shape {actual_a.shape}, expected {expected.shape}"
    if actual_a.tobytes() == np.ascontiguousarray(expected).tobytes():
        return None
    width = expected.dtype.itemsize
    a_bytes = np.frombuffer(np.ascontiguousarray(actual_a).tobytes(), np.uint8).reshape(-1, width)
    e_bytes = np.frombuffer(np.ascontiguousarray(expected).tobytes(), np.uint8).reshape(-1, width)
    bad = np.flatnonzero((a_bytes != e_bytes).any(axis=1))
    where = [np.unravel_index(int(i), expected.shape) for i in bad[:5]]
    pairs = ", ".join(
        f"{tuple(int(x) for x in w)}: {actual_a[w]!r} != {expected[w]!r}" for w in where
    )
    return f"{bad.size} of {expected.size} elements differ; first: {pairs}"


def assert_exact(actual: Any, expected: np.ndarray, what: str) -> None:
    problem = exact_mismatch(actual, expected)
    assert problem is None, f"{what}: {problem}"


def all_fill(values: np.ndarray, fill: Any) -> bool:
    """Whether every element of ``values`` has the fill value's bytes."""
    return bool(values.tobytes() == np.full(values.shape, fill, values.dtype).tobytes())


# --------------------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------------------


def boxes(data: Any, origin: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """A non-empty box inside ``origin``/``shape``, as slices."""
    out = []
    for o, n in zip(origin, shape):
        lo = data.draw(st.integers(0, n - 1))
        hi = data.draw(st.integers(lo + 1, n))
        out.append(slice(o + lo, o + hi))
    return tuple(out)


def write_key(data: Any, box: tuple[slice, ...]) -> Any:
    """``box`` as a writer or transaction key: a Domain, the slices, or with an integer
    for some axis of extent one (which drops that axis from the value's shape)."""
    form = data.draw(st.sampled_from(("slices", "domain", "ints")))
    if form == "domain":
        return sw.Domain([s.start for s in box], [s.stop - s.start for s in box])
    if form == "ints":
        return tuple(s.start if s.stop - s.start == 1 else s for s in box)
    return box


def model_key(key: Any) -> Any:
    return key.slices if isinstance(key, sw.Domain) else key


def zarr_reads(key: Any) -> bool:
    """Whether zarr-python takes ``key`` (it refuses negative slice steps)."""
    items = key if isinstance(key, tuple) else (key,)
    return not any(isinstance(k, slice) and (k.step or 1) < 0 for k in items)


@st.composite
def selections(draw: Any, shape: tuple[int, ...], writes: bool) -> tuple[str, Any, Any]:
    """``(how, key, model_key)``: ``plain`` keys (ints, slices of any step, Ellipsis,
    one integer array, a full mask), ``oindex`` keys (per axis an int, slice, integer
    array or 1-d mask), ``vindex`` keys (one integer array per axis, or a full mask)."""
    how = draw(st.sampled_from(("basic", "basic", "int_array", "mask", "oindex", "vindex")))
    ndim = len(shape)
    if how == "mask":
        mask = np.array(draw(st.lists(st.booleans(), min_size=1, max_size=64)))
        mask = np.resize(mask, shape)
        return ("vindex" if draw(st.booleans()) else "plain"), mask, mask
    if how == "vindex":
        n = draw(st.integers(1, 6))
        arrays = tuple(
            np.array(draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n))) for s in shape
        )
        return "vindex", arrays, arrays
    if how == "oindex":
        key, mkey = [], []
        for s in shape:
            form = draw(st.sampled_from(("int", "slice", "array", "mask")))
            if form == "int":
                i = draw(st.integers(0, s - 1))
                key.append(i)
                mkey.append(np.array([i]))
            elif form == "slice":
                key.append(slice(draw(st.integers(0, s - 1)), None))
                mkey.append(np.arange(key[-1].start, s))
            elif form == "array":
                arr = np.array(draw(st.lists(st.integers(0, s - 1), min_size=1, max_size=4)))
                key.append(arr)
                mkey.append(arr)
            else:
                mask = np.array(draw(st.lists(st.booleans(), min_size=s, max_size=s)))
                key.append(mask)
                mkey.append(np.flatnonzero(mask))
        mfinal = _oindex_model_key(key, mkey)
        return "oindex", tuple(key), mfinal
    key_items: list[Any] = []
    # one integer array (numpy and zarr-python agree when the other axes are slices)
    array_axis = draw(st.integers(0, ndim - 1)) if how == "int_array" else -1
    for axis, s in enumerate(shape):
        forms = ("slice", "slice", "full") if array_axis >= 0 else ("slice", "slice", "int", "full")
        form = draw(st.sampled_from(forms))
        if axis == array_axis:
            key_items.append(
                np.array(draw(st.lists(st.integers(-s, s - 1), min_size=1, max_size=4)))
            )
        elif form == "int":
            key_items.append(draw(st.integers(-s, s - 1)))
        elif form == "full":
            key_items.append(slice(None))
        else:
            start = draw(st.none() | st.integers(-s - 1, s + 1))
            stop = draw(st.none() | st.integers(-s - 1, s + 1))
            step = draw(st.sampled_from((None, 1, 2, 3, -1, -2)))
            key_items.append(slice(start, stop, step))
    if draw(st.booleans()) and ndim > 1 and array_axis < 0:
        key_items = [*key_items[:-1], Ellipsis]
    key = tuple(key_items) if len(key_items) > 1 or draw(st.booleans()) else key_items[0]
    return "plain", key, key


def _oindex_model_key(key: list[Any], mkey: list[np.ndarray]) -> Any:
    """The numpy key for an orthogonal selection with integer axes: broadcast the
    array axes with ``np.ix_`` and keep the integers (numpy drops their axes)."""
    arrays = [m for k, m in zip(key, mkey) if not isinstance(k, int)]
    grids = iter(np.ix_(*arrays)) if arrays else iter(())
    return tuple(k if isinstance(k, int) else next(grids) for k in key)
