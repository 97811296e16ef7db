"""The object-store backend against a real S3 server on loopback (moto, server mode).

Requests are counted on the server side, by the fault proxy in front of moto
(``s3_proxy``: s3_server.FaultProxy), never from shardwright's own stats. The stored
objects are checked from outside with boto3 and read back by zarr-python (the objects
copied with boto3 into a ``zarr.storage.MemoryStore``: s3fs is not a dependency) and by
TensorStore (its own ``s3`` kvstore driver, talking to moto directly).
"""

from __future__ import annotations

import multiprocessing
import traceback
import uuid
from typing import Any

import numpy as np
import pytest
import s3_server as s3
import shardwright as sw
import tensorstore as ts
import zarr
from conftest import assert_same, reference, write_all
from zarr.core.buffer import cpu

SHAPE = (64, 64)
CHUNKS = (8, 8)
SHARDS = (32, 32)
DTYPE = np.dtype("uint16")
PREFIX = "path/a.zarr"
SHARD_KEYS = [f"{PREFIX}/c/{i}/{j}" for i in range(2) for j in range(2)]


def url(bucket: str) -> str:
    """The ``s3://`` URL of the test array in ``bucket``."""
    return f"s3://{bucket}/{PREFIX}"


def create(bucket: str, options: dict[str, str], **settings: Any) -> sw.Array:
    """The (64, 64) uint16 test array, (8, 8) inner chunks in (32, 32) shards."""
    spec: dict[str, Any] = {"shape": SHAPE, "dtype": DTYPE, "chunks": CHUNKS, "shards": SHARDS}
    spec.update(settings)
    return sw.create(url(bucket), compressor="zstd", storage_options=options, **spec)


def zarr_read(client: Any, bucket: str, prefix: str = PREFIX) -> np.ndarray:
    """The whole array as zarr-python reads it from the objects stored under ``prefix``."""
    objects = s3.read_objects(client, bucket, prefix)
    store = zarr.storage.MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in objects.items()})
    return zarr.open_array(store=store, mode="r")[...]


def tensorstore_read(endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """The whole array as TensorStore's own S3 driver reads it from the server."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.SECRET)
    monkeypatch.setenv("AWS_REGION", s3.REGION)
    kvstore = {
        "driver": "s3",
        "bucket": bucket,
        "path": PREFIX + "/",
        "endpoint": endpoint,
        "aws_region": s3.REGION,
        "aws_credentials": {"type": "environment"},
    }
    return ts.open({"driver": "zarr3", "kvstore": kvstore}, read=True).result().read().result()


def calls(proxy: s3.FaultProxy, bucket: str, key: str) -> list[tuple[str, int]]:
    """``(method, status)`` of each request the server saw on ``key``, in order."""
    return [(r.method, r.status) for r in proxy.for_key(bucket, key)]


def unquote(etag: str | None) -> str | None:
    """An ETag without its quotes (S3 compares them without)."""
    return None if etag is None else etag.strip('"')


# --------------------------------------------------------------------------------------
# whole shards
# --------------------------------------------------------------------------------------


def test_write_every_chunk_reads_back_everywhere(s3_server, s3_bucket, s3_client, monkeypatch):
    bucket, options = s3_bucket
    data = reference(SHAPE, DTYPE)
    a = create(bucket, options)
    write_all(a, data)
    assert s3.list_keys(s3_client, bucket) == sorted([f"{PREFIX}/zarr.json", *SHARD_KEYS])
    assert_same(a[...], data)
    assert_same(sw.open(url(bucket), storage_options=options)[...], data)
    assert_same(zarr_read(s3_client, bucket), data)
    assert_same(tensorstore_read(s3_server.endpoint, bucket, monkeypatch), data)


@pytest.mark.parametrize("how", ["write_shard", "map_chunks"])
def test_full_shard_is_one_put_and_no_get(s3_bucket, s3_proxy, s3_client, how):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = reference(SHAPE, DTYPE, seed=1)
    a = create(bucket, options)
    proxy.clear()
    if how == "write_shard":
        write_all(a, data)
    else:
        a.map_chunks(lambda c: data[c.slices])
    for key in SHARD_KEYS:
        seen = proxy.for_key(bucket, key)
        assert len(seen) == 1, seen  # the only request on that key
        put = seen[0]
        assert (put.method, put.status, put.query) == ("PUT", 200, ""), put
        assert put.body_size == s3_client.head_object(Bucket=bucket, Key=key)["ContentLength"]
    assert not proxy.matching("GET", "/c/") and not proxy.matching("HEAD", "/c/")
    assert_same(a[...], data)


def test_large_shard_round_trip_leaves_no_upload(s3_bucket, s3_proxy, s3_client):
    """An ~8 MiB (barely compressible) shard: past the 5 MiB multipart part size, so a
    streaming upload would take parts; whichever path is taken, it lands whole."""
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    shape = (1024, 1024)
    data = np.random.default_rng(7).random(shape)
    a = create(bucket, options, shape=shape, dtype="float64", chunks=(128, 128), shards=shape)
    proxy.clear()
    write_all(a, data)
    key = f"{PREFIX}/c/0/0"
    seen = proxy.for_key(bucket, key)
    assert all(r.method in ("PUT", "POST") and r.status == 200 for r in seen), seen
    assert s3.multipart_uploads(s3_client, bucket) == []
    assert_same(a[...], data)
    assert_same(zarr_read(s3_client, bucket), data)


# --------------------------------------------------------------------------------------
# merges: one GET, one conditional PUT
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["write_shard", "transaction"])
def test_partial_rewrite_is_one_get_and_one_if_match_put(s3_bucket, s3_proxy, s3_client, how):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = reference(SHAPE, DTYPE, seed=2)
    a = create(bucket, options)
    write_all(a, data)
    proxy.clear()
    patch = reference((10, 15), DTYPE, seed=3)
    if how == "write_shard":
        with a.write_shard((0, 1)) as w:
            w[3:13, 35:50] = patch
    else:
        with a.transaction() as tx:
            tx[3:13, 35:50] = patch
    key = f"{PREFIX}/c/0/1"
    get, put = proxy.for_key(bucket, key)
    assert (get.method, get.status, put.method, put.status) == ("GET", 200, "PUT", 200)
    assert unquote(put.headers.get("if-match")) == unquote(get.etag) is not None, put
    assert "if-none-match" not in put.headers
    assert [r for r in proxy.requests if r.key(bucket) in SHARD_KEYS and r.key(bucket) != key] == []
    expected = data.copy()
    expected[3:13, 35:50] = patch
    assert_same(a[...], expected)
    assert_same(zarr_read(s3_client, bucket), expected)


def test_partial_write_of_missing_shard_is_if_none_match_put(s3_bucket, s3_proxy, s3_client):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    a = create(bucket, options)
    proxy.clear()
    patch = reference((5, 27), DTYPE, seed=4)
    with a.write_shard((1, 1)) as w:
        w[40:45, 33:60] = patch
    key = f"{PREFIX}/c/1/1"
    get, put = proxy.for_key(bucket, key)
    assert (get.method, get.status, put.method, put.status) == ("GET", 404, "PUT", 200)
    assert put.headers.get("if-none-match") == "*" and "if-match" not in put.headers, put
    expected = np.zeros(SHAPE, DTYPE)
    expected[40:45, 33:60] = patch
    assert_same(a[...], expected)
    assert_same(zarr_read(s3_client, bucket), expected)


def test_conflict_that_persists_raises_conflict_error(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = reference(SHAPE, DTYPE, seed=5)
    a = create(bucket, options)
    write_all(a, data)
    key = f"{PREFIX}/c/0/1"
    proxy.clear()
    proxy.fail_next(100, 412, method="PUT", path_contains=key)
    with pytest.raises(sw.ConflictError) as info, a.write_shard((0, 1), retries=2) as w:
        w[3:13, 35:50] = 1
    assert key in str(info.value), str(info.value)
    methods = [m for m, _ in calls(proxy, bucket, key)]
    assert methods == ["GET", "PUT"] * 3, methods  # the first try and 2 retries
    assert_same(a[...], data)


# --------------------------------------------------------------------------------------
# concurrent writers in several processes
# --------------------------------------------------------------------------------------

WORKERS = 4
ROUNDS = 20


def conflict_region(k: int) -> tuple[slice, slice]:
    """Write ``k`` (0..79) of the conflict test: one row of shard (0, 0), ten columns
    starting at 1, 11 or 21 — unaligned and disjoint; the four workers' writes of one
    round fall into the same rows of inner chunks."""
    return slice(k % 32, k % 32 + 1), slice(1 + 10 * (k // 32), 11 + 10 * (k // 32))


def conflict_worker(
    p: int, target: str, options: dict[str, str], barrier: Any, results: Any
) -> None:
    """Worker ``p``: ROUNDS region writes of shard (0, 0), alternately through a
    transaction and through write_shard; reports failures to ``results``."""
    failures = []
    try:
        a = sw.open(target, storage_options=options)
        barrier.wait(timeout=60)
        for r in range(ROUNDS):
            k = r * WORKERS + p
            rows, cols = conflict_region(k)
            value = np.full((1, cols.stop - cols.start), k + 1, DTYPE)
            try:
                if r % 2:
                    with a.write_shard((0, 0), retries=200) as w:
                        w[rows, cols] = value
                else:
                    with a.transaction(retries=200) as tx:
                        tx[rows, cols] = value
            except Exception as exc:
                failures.append(f"write {k}: {type(exc).__name__}: {exc}")
    except Exception:
        failures.append(traceback.format_exc())
    results.put((p, failures))


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_conditional_writes_lose_nothing_across_processes(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    create(bucket, options)
    proxy.clear()
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [
        ctx.Process(target=conflict_worker, args=(p, url(bucket), options, barrier, results))
        for p in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    reports = dict(results.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    assert [proc.exitcode for proc in procs] == [0] * WORKERS
    assert reports == {p: [] for p in range(WORKERS)}, reports
    expected = np.zeros(SHAPE, DTYPE)
    for k in range(WORKERS * ROUNDS):
        expected[conflict_region(k)] = k + 1
    assert_same(sw.open(url(bucket), storage_options=options)[...], expected)
    puts = proxy.matching("PUT", f"{PREFIX}/c/0/0")
    assert all("if-match" in r.headers or "if-none-match" in r.headers for r in puts), puts
    stored = [r for r in puts if r.status == 200]
    assert len(stored) == WORKERS * ROUNDS, [(r.status, r.headers) for r in puts]
    assert sum("if-none-match" in r.headers for r in stored) == 1
    assert {r.status for r in puts} <= {200, 412}


# --------------------------------------------------------------------------------------
# faults: retried or not
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 503])
def test_transient_error_on_shard_put_is_retried(s3_bucket, s3_proxy, status):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = reference(SHAPE, DTYPE, seed=6)
    a = create(bucket, options)
    proxy.clear()
    proxy.fail_next(2, status, method="PUT", path_contains="/c/")
    write_all(a, data)
    assert calls(proxy, bucket, SHARD_KEYS[0]) == [("PUT", status)] * 2 + [("PUT", 200)]
    assert [calls(proxy, bucket, key) for key in SHARD_KEYS[1:]] == [[("PUT", 200)]] * 3
    assert_same(a[...], data)


def _put_shard_failing(
    bucket: str, options: dict[str, str], proxy: s3.FaultProxy, status: int, times: int
) -> list[tuple[str, int]]:
    """Write shard (0, 0) whole while the proxy answers its PUT ``status`` ``times``
    times; check the error names the status, the key and the bucket; return the calls
    the server saw on the key."""
    a = create(bucket, options)
    key = SHARD_KEYS[0]
    proxy.clear()
    proxy.fail_next(times, status, method="PUT", path_contains="/c/0/0")
    with pytest.raises(sw.ShardwrightError) as info, a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 5
    message = str(info.value)
    assert str(status) in message and key in message and bucket in message, message
    return calls(proxy, bucket, key)


def test_persistent_503_gives_up_and_stores_nothing(s3_bucket, s3_proxy, s3_client):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    seen = _put_shard_failing(bucket, options, proxy, 503, 1000)
    assert len(seen) > 2 and set(seen) == {("PUT", 503)}, seen  # retried, then given up
    assert s3.list_keys(s3_client, bucket, f"{PREFIX}/c/") == []


def test_transient_error_on_merge_get_is_retried(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = reference(SHAPE, DTYPE, seed=7)
    a = create(bucket, options)
    write_all(a, data)
    key = f"{PREFIX}/c/0/1"
    proxy.clear()
    proxy.fail_next(1, 503, method="GET", path_contains=key)
    with a.write_shard((0, 1)) as w:
        w[3:13, 35:50] = 9
    assert calls(proxy, bucket, key) == [("GET", 503), ("GET", 200), ("PUT", 200)]
    expected = data.copy()
    expected[3:13, 35:50] = 9
    assert_same(a[...], expected)


def test_forbidden_put_is_not_retried_and_names_the_key(s3_bucket, s3_proxy, s3_client):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    assert _put_shard_failing(bucket, options, proxy, 403, 10) == [("PUT", 403)]
    assert s3.list_keys(s3_client, bucket, f"{PREFIX}/c/") == []


@pytest.mark.parametrize("size", ["small", "large"])
def test_exception_in_write_shard_stores_nothing(s3_bucket, s3_client, size):
    bucket, options = s3_bucket
    if size == "small":
        a = create(bucket, options)
    else:  # an ~8 MiB shard: a streaming upload would have started parts
        shape = (1024, 1024)
        a = create(bucket, options, shape=shape, dtype="float64", chunks=(128, 128), shards=shape)
    data = reference(a.shape, a.dtype, seed=8)
    fail_at = 10 if size == "small" else 60  # of 16 / 64 inner chunks
    with pytest.raises(RuntimeError, match="calculation failed"), a.write_shard((0, 0)) as w:
        for n, c in enumerate(w.inner_chunks()):
            if n == fail_at:
                raise RuntimeError("calculation failed")
            w[c] = data[c.slices]
    assert s3.list_keys(s3_client, bucket) == [f"{PREFIX}/zarr.json"]
    assert s3.multipart_uploads(s3_client, bucket) == []
    assert_same(a[0:32, 0:32], np.zeros((32, 32), a.dtype))


# --------------------------------------------------------------------------------------
# reads, transactions, create/open
# --------------------------------------------------------------------------------------


def test_region_reads_and_transaction_read_your_writes(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    data = reference(SHAPE, DTYPE, seed=9)
    a = create(bucket, options)
    write_all(a, data)
    for key in [np.s_[5:40, 3:61], np.s_[63, :], np.s_[..., 31], np.s_[30:34, 30:34]]:
        assert_same(a[key], data[key])
    expected = data.copy()
    patch = reference((10, 40), DTYPE, seed=10)
    expected[10:20, 10:50] = patch
    proxy.clear()
    with a.transaction() as tx:
        tx[10:20, 10:50] = patch
        assert_same(tx[10:20, 10:50], patch)
        assert_same(tx[8:22, 8:52], expected[8:22, 8:52])  # staged and stored together
        assert_same(a[10:20, 10:50], data[10:20, 10:50])  # not stored yet
        assert not proxy.matching("PUT") and not proxy.matching("POST")
    for key, puts in zip(SHARD_KEYS, [1, 1, 0, 0]):
        assert [m for m, _ in calls(proxy, bucket, key)].count("PUT") == puts, key
    assert_same(a[...], expected)


def test_create_refuses_existing_array_unless_overwrite(s3_bucket, s3_client):
    bucket, options = s3_bucket
    write_all(create(bucket, options), np.ones(SHAPE, DTYPE))
    with pytest.raises(sw.ShardwrightError):
        create(bucket, options)
    b = create(bucket, options, overwrite=True)
    assert_same(b[...], np.zeros(SHAPE, DTYPE))
    assert s3.list_keys(s3_client, bucket) == [f"{PREFIX}/zarr.json"]


def test_open_missing_array(s3_bucket):
    bucket, options = s3_bucket
    with pytest.raises(sw.ArrayNotFoundError):
        sw.open(f"s3://{bucket}/nothing/here.zarr", storage_options=options)


def test_memory_store_in_process():
    target = f"memory:///{uuid.uuid4().hex}.zarr"
    data = reference(SHAPE, DTYPE, seed=11)
    a = sw.create(target, shape=SHAPE, dtype=DTYPE, chunks=CHUNKS, shards=SHARDS)
    write_all(a, data)
    assert_same(a[...], data)
    b = sw.open(target)
    assert_same(b[...], data)
    with b.write_shard((1, 0)) as w:
        w[33:40, 2:9] = 7
    expected = data.copy()
    expected[33:40, 2:9] = 7
    assert_same(a[...], expected)
    with pytest.raises(RuntimeError), a.transaction() as tx:
        tx[:, :] = 3
        raise RuntimeError("abandoned")
    assert_same(b[...], expected)
    with pytest.raises(sw.ArrayNotFoundError):
        sw.open(f"memory:///{uuid.uuid4().hex}.zarr")


def test_overwrite_deletes_only_under_the_array_and_never_a_whole_bucket(s3_bucket, s3_client):
    bucket, options = s3_bucket
    write_all(create(bucket, options), np.ones(SHAPE, DTYPE))
    neighbour = sw.create(
        f"s3://{bucket}/{PREFIX}2", shape=(4,), dtype="u1", chunks=(2,), storage_options=options
    )
    neighbour.map_chunks(lambda c: 5)
    create(bucket, options, overwrite=True)
    assert f"{PREFIX}2/zarr.json" in s3.list_keys(s3_client, bucket)  # a sibling prefix stays
    assert sw.open(f"s3://{bucket}/{PREFIX}2", storage_options=options)[...].tolist() == [5] * 4
    sw.create(f"s3://{bucket}", shape=(4,), dtype="u1", chunks=(2,), storage_options=options)
    with pytest.raises(sw.UnsupportedError, match="root of a bucket"):
        sw.create(
            f"s3://{bucket}",
            shape=(4,),
            dtype="u1",
            chunks=(2,),
            overwrite=True,
            storage_options=options,
        )
    assert f"{PREFIX}2/zarr.json" in s3.list_keys(s3_client, bucket)
