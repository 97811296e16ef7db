"""Pieces of the model-based test (test_model_based.py): geometries, values, exact
comparison, the storage backends it runs on, and a second process that writes.

A *backend* creates the array and answers what the test checks beyond the values: how
zarr-python reads the array, whether a shard's key is stored, what debris (temporary
files, multipart uploads) is left, and a digest of everything stored (to prove that an
aborted block stored nothing). The *worker* is a long-lived second Python process that
opens the array by its path or URL and writes through its own transactions and shard
writers on command (JSON lines on stdin/stdout), so concurrent writers are real processes
yet cost milliseconds, not an interpreter start, per step.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import shardwright as sw
import zarr
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
    if kind == "wide":  # a wider type of the same kind, cast back under same_kind
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
# backends
# --------------------------------------------------------------------------------------


class Backend:
    """Where an array of the state machine lives; one fresh location per example."""

    name = "?"
    subprocess_ok = True  # a second process can open it

    def create(self, geom: Geometry) -> sw.Array:
        raise NotImplementedError

    def open(self) -> sw.Array:
        raise NotImplementedError

    def zarr_array(self, mode: str = "r") -> zarr.Array | None:
        """The array opened by zarr-python (``None`` where it cannot see the store)."""
        raise NotImplementedError

    def target(self) -> tuple[str, dict[str, str] | None]:
        """Path or URL and storage options, for the worker process."""
        raise NotImplementedError

    def shard_present(self, key: str) -> bool | None:
        """Whether ``key`` is stored (``None``: cannot tell)."""
        return None

    def debris(self) -> list[str]:
        """Temporary files or unfinished uploads left behind."""
        return []

    def digest(self) -> dict[str, str] | None:
        """Every stored key (temporaries excluded) mapped to a digest of its bytes."""
        return None

    def close(self) -> None:
        pass


class LocalBackend(Backend):
    name = "local"

    def __init__(self, root: Path) -> None:
        self.base = root
        self.root = root

    def create(self, geom: Geometry) -> sw.Array:
        self.root = self.base / f"{uuid.uuid4().hex[:8]}.zarr"
        return sw.create(self.root, **geom.create_kwargs())

    def open(self) -> sw.Array:
        return sw.open(self.root)

    def zarr_array(self, mode: str = "r") -> zarr.Array:
        return zarr.open_array(str(self.root), mode=mode)

    def target(self) -> tuple[str, dict[str, str] | None]:
        return str(self.root), None

    def shard_present(self, key: str) -> bool:
        return (self.root / key).is_file()

    def debris(self) -> list[str]:
        return [str(p) for p in self.root.rglob("*") if p.name.endswith(".shardwright-tmp")]

    def digest(self) -> dict[str, str]:
        out = {}
        for folder, _, files in os.walk(self.root):
            for name in files:
                if name.endswith(".shardwright-tmp"):
                    continue
                path = Path(folder) / name
                out[str(path.relative_to(self.root))] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
        return out


class MemoryBackend(Backend):
    """``memory:///``: the process's in-memory object store (zarr-python cannot see it;
    a second handle opened on the URL is compared instead)."""

    name = "memory"
    subprocess_ok = False

    def __init__(self) -> None:
        self.url = ""

    def create(self, geom: Geometry) -> sw.Array:
        self.url = f"memory:///model/{uuid.uuid4().hex}.zarr"
        return sw.create(self.url, **geom.create_kwargs())

    def open(self) -> sw.Array:
        return sw.open(self.url)

    def zarr_array(self, mode: str = "r") -> None:
        return None

    def target(self) -> tuple[str, dict[str, str] | None]:
        return self.url, None


class ZarrMemoryBackend(Backend):
    """A zarr-python ``MemoryStore`` through shardwright's store adapter."""

    name = "zarr-memory"
    subprocess_ok = False

    def __init__(self) -> None:
        self.store: Any = None

    def create(self, geom: Geometry) -> sw.Array:
        self.store = zarr.storage.MemoryStore()
        return sw.create(self.store, path="a", **geom.create_kwargs())

    def open(self) -> sw.Array:
        return sw.open(self.store, path="a")

    def zarr_array(self, mode: str = "r") -> zarr.Array:
        return zarr.open_array(self.store, path="a", mode=mode)

    def target(self) -> tuple[str, dict[str, str] | None]:
        raise AssertionError("in-process only")

    def shard_present(self, key: str) -> bool:
        return f"a/{key}" in self.store._store_dict

    def digest(self) -> dict[str, str]:
        return {
            k: hashlib.sha256(bytes(v.to_bytes())).hexdigest()
            for k, v in self.store._store_dict.items()
        }


class S3Backend(Backend):
    """moto's S3 on loopback (tests/python/s3_server.py); a prefix per example."""

    name = "s3"

    def __init__(self, bucket: str, options: dict[str, str], client: Any) -> None:
        self.bucket = bucket
        self.options = options
        self.client = client
        self.prefix = ""

    def create(self, geom: Geometry) -> sw.Array:
        self.prefix = f"m{uuid.uuid4().hex[:10]}.zarr"
        return sw.create(self.url, storage_options=self.options, **geom.create_kwargs())

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def open(self) -> sw.Array:
        return sw.open(self.url, storage_options=self.options)

    def zarr_array(self, mode: str = "r") -> zarr.Array:
        from obstore.store import S3Store

        config = {k: v for k, v in self.options.items() if k != "allow_http"}
        store = S3Store(self.bucket, config=config, client_options={"allow_http": True})
        return zarr.open_array(zarr.storage.ObjectStore(store), path=self.prefix, mode=mode)

    def target(self) -> tuple[str, dict[str, str] | None]:
        return self.url, self.options

    def _objects(self) -> dict[str, str]:
        out = {}
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + "/"):
            for item in page.get("Contents", []):
                out[item["Key"][len(self.prefix) + 1 :]] = item["ETag"]
        return out

    def shard_present(self, key: str) -> bool:
        return key in self._objects()

    def debris(self) -> list[str]:
        answer = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.prefix)
        return [u["Key"] for u in answer.get("Uploads", [])]

    def digest(self) -> dict[str, str]:
        return self._objects()


# --------------------------------------------------------------------------------------
# the second process
# --------------------------------------------------------------------------------------

WORKER = r"""
import base64, json, sys
import numpy as np
import shardwright as sw

def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def regions(a, writes):
    for w in writes:
        data = np.frombuffer(base64.b64decode(w["data"]), dtype=a.dtype).reshape(w["shape"])
        yield sw.Domain(w["origin"], w["shape"]), data

def error(err):
    return {"error": type(err).__name__, "message": str(err)}

held = None
for line in sys.stdin:
    cmd = json.loads(line)
    try:
        if cmd["op"] == "quit":
            break
        if cmd["op"] == "go":
            held.commit()
            held = None
            reply({"ok": True})
            continue
        a = sw.open(cmd["target"], storage_options=cmd["options"])
        if cmd["op"] == "tx":
            with a.transaction(retries=cmd["retries"]) as tx:
                for region, data in regions(a, cmd["writes"]):
                    tx[region] = data
            reply({"ok": True})
        elif cmd["op"] == "stage":
            held = a.write_shard(tuple(cmd["shard"]), retries=cmd["retries"])
            for region, data in regions(a, cmd["writes"]):
                held[region] = data
            reply({"ready": True})
    except Exception as err:
        if held is not None:
            try:
                held.abort()
            except Exception:
                pass
            held = None
        reply(error(err))
"""


def encode_write(origin: tuple[int, ...], data: np.ndarray) -> dict[str, Any]:
    return {
        "origin": list(origin),
        "shape": list(data.shape),
        "data": base64.b64encode(np.ascontiguousarray(data).tobytes()).decode(),
    }


class Worker:
    """A second Python process writing on command; started on first use."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.stderr: Any = None

    def _ensure(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            if self.stderr is None:
                self.stderr = tempfile.TemporaryFile("w+")
            self.proc = subprocess.Popen(
                [sys.executable, "-c", WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                text=True,
                env=dict(os.environ),
            )
        return self.proc

    def errors(self) -> str:
        """What the worker wrote to stderr (its last 4000 characters)."""
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        return self.stderr.read()[-4000:]

    def send(self, cmd: dict[str, Any]) -> None:
        proc = self._ensure()
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        proc = self._ensure()
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            raise AssertionError(f"the worker died (exit code {code}): {self.errors()}")
        return json.loads(line)

    def call(self, cmd: dict[str, Any]) -> dict[str, Any]:
        self.send(cmd)
        return self.receive()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.send({"op": "quit"})
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None
