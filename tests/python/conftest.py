"""Helpers shared by the shardwright Python tests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import shardwright as sw
from shard_bytes import PRODUCERS

if TYPE_CHECKING:  # imported by the fixtures only: moto takes 0.5 s to import
    from collections.abc import Iterator

    import s3_server as s3


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path) mapped to the SHA-256 of its bytes."""
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def temp_files(root: Path) -> list[Path]:
    """Leftover temporary files of the filesystem store under ``root``."""
    return [p for p in Path(root).rglob("*") if p.name.endswith(".shardwright-tmp")]


def reference(shape: tuple[int, ...], dtype, seed: int = 0) -> np.ndarray:
    """Deterministic random data of ``shape`` and ``dtype`` (every value distinct enough
    that a misplaced chunk is noticed)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -(2**30)), min(info.max, 2**30)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    raise AssertionError(f"no reference data for {dtype}")


def write_all(array: sw.Array, data: np.ndarray) -> list[dict[str, int]]:
    """Write ``data`` into ``array`` shard by shard, inner chunk by inner chunk."""
    stats = []
    for shard in array.iter_shards():
        with array.write_shard(shard) as w:
            for chunk in w.inner_chunks():
                w[chunk] = data[chunk.slices]
        stats.append(w.stats)
    return stats


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Exact equality of values (NaN equal to NaN) and of dtype."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, expected)


@pytest.fixture
def small(tmp_path: Path) -> sw.Array:
    """A (10, 7) uint16 array with (4, 4) inner chunks and (8, 8) shards: 2 x 1 shards,
    the second and the right column of chunks clipped by the array edge."""
    return sw.create(
        tmp_path / "small.zarr", shape=(10, 7), dtype="uint16", chunks=(4, 4), shards=(8, 8)
    )


@pytest.fixture(params=["end", "start"])
def location(request) -> str:
    """Where the shard index lies (tests of merges and corrupt shards)."""
    return request.param


@pytest.fixture(params=PRODUCERS)
def producer(request) -> str:
    """Which library writes the stored shard (shard_bytes.PRODUCERS)."""
    return request.param


# --------------------------------------------------------------------------------------
# object-store tests: moto's S3 on loopback, a bucket per test, the fault proxy
# --------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_cloud_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the credentials or settings of the shell that runs it (object_store
    reads ``AWS_*``, ``GOOGLE_*`` and ``AZURE_*``); a test that wants some sets them."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "GOOGLE_", "AZURE_")) or name in (
            "SERVICE_ACCOUNT",
            "MSI_ENDPOINT",
        ):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def forbidding_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` answering 403 to every request: the instance metadata
    endpoint (``metadata_endpoint``) of a machine that is no EC2 instance, on loopback."""
    import s3_server as s3

    server = s3.ForbiddingServer()
    yield server.endpoint
    server.stop()


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server (s3_server.MotoServer) for the whole session."""
    import s3_server as s3

    server = s3.MotoServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_client(s3_server):
    """A boto3 client talking to the moto server directly (not through the proxy)."""
    import s3_server as s3

    return s3.s3_client(s3_server.endpoint)


@pytest.fixture
def s3_bucket(s3_server, s3_client) -> tuple[str, dict[str, str]]:
    """A fresh bucket: ``(name, storage_options)`` pointing at the server directly."""
    import s3_server as s3

    return s3.new_bucket(s3_client), s3.storage_options(s3_server.endpoint)


@pytest.fixture(scope="session")
def _s3_proxy_session(s3_server):
    """The fault proxy (s3_server.FaultProxy) in front of the server, for the session."""
    import s3_server as s3

    proxy = s3.FaultProxy(s3_server.address)
    yield proxy
    proxy.stop()


@pytest.fixture
def s3_proxy(_s3_proxy_session) -> tuple[dict[str, str], s3.FaultProxy]:
    """``(storage_options, proxy)``: the fault proxy in front of the server, its log
    and its pending faults cleared before and after the test."""
    import s3_server as s3

    proxy = _s3_proxy_session
    proxy.clear()
    yield s3.storage_options(proxy.endpoint), proxy
    proxy.clear()


# --------------------------------------------------------------------------------------
# Dask: a local cluster of two worker processes, and the three schedulers
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def dask_client():
    """A ``distributed.Client`` on ``LocalCluster(n_workers=2, processes=True)`` for the
    session (started on first use, about 2 s; stopped at the end)."""
    import logging

    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(params=["sync", "threads", "distributed"])
def scheduler(request):
    """What ``compute(scheduler=...)`` takes: dask's synchronous and threaded schedulers,
    and the local cluster's client."""
    if request.param == "distributed":
        return request.getfixturevalue("dask_client")
    return request.param
