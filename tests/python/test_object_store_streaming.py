"""Streaming shards to S3 (moto on loopback): the encoded chunks go out as multipart parts
while the shard is written, the object appears when the upload completes, an exception
aborts it (nothing left, not even an incomplete upload), and a 2 GiB raw shard streams in
bounded memory. Requests are counted by the proxy in front of the server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
import s3_server as s3
import shardwright as sw
from conftest import assert_same

PREFIX = "stream/a.zarr"


MARKER = ".shardwright-upload"  # the suffix of a multipart upload's marker object


def _chunk(c: sw.Domain, salt: int = 0) -> np.ndarray:
    """Low-entropy data (one random bit per element): 64³ uint16 chunks encode to about
    40 KiB, so a 256³ shard (64 chunks) is ~2.6 MiB and a 512³ one ~20 MiB: several parts."""
    rng = np.random.default_rng(hash((c.index, salt)) % 2**32)
    return rng.integers(0, 2, size=c.shape, dtype=np.uint16) + 1


def _create(bucket: str, options: dict[str, str], edge: int) -> sw.Array:
    return sw.create(
        f"s3://{bucket}/{PREFIX}",
        shape=(edge,) * 3,
        dtype="uint16",
        chunks=(64,) * 3,
        shards=(edge,) * 3,
        storage_options=options,
    )


def _expected(a: sw.Array, salt=lambda c: 0) -> np.ndarray:
    out = np.zeros(a.shape, a.dtype)
    for c in a.iter_chunks():
        out[c.slices] = _chunk(c, salt(c))
    return out


def _shard_requests(proxy: s3.FaultProxy) -> list[tuple[str, str]]:
    """The requests on shard keys (not on the upload markers beside them)."""
    return [
        (r.method, r.query)
        for r in proxy.matching(path_contains=f"{PREFIX}/c/")
        if not r.path.endswith(MARKER)
    ]


def _shard_keys(s3_client, bucket: str) -> list[str]:
    """The stored keys under the shard prefix, but the upload markers."""
    return [k for k in s3.list_keys(s3_client, bucket, f"{PREFIX}/c/") if not k.endswith(MARKER)]


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_a_shard_larger_than_a_part_streams_as_a_multipart_upload(s3_proxy, s3_client):
    options, proxy = s3_proxy
    bucket = s3.new_bucket(s3_client)
    a = _create(bucket, options, 512)
    proxy.clear()
    with a.write_shard((0, 0, 0)) as w:
        chunks = list(w.inner_chunks())
        for i, c in enumerate(chunks):
            w[c] = _chunk(c)
            if i == len(chunks) - 2:
                sent = _shard_requests(proxy)
                # parts went out while writing; the object does not exist yet
                assert ("POST", "uploads=") in sent, sent
                assert sum(m == "PUT" and "partNumber=" in q for m, q in sent) >= 1, sent
                assert _shard_keys(s3_client, bucket) == []
    requests = _shard_requests(proxy)
    # the upload's id is recorded in a marker before the first part, removed after completing
    # (object_store deletes with a bucket-level POST ?delete, which names no key in its path)
    assert [r.method for r in proxy.matching(path_contains=MARKER)] == ["PUT"]
    assert not [k for k in s3.list_keys(s3_client, bucket, PREFIX) if k.endswith(MARKER)]
    parts = [q for m, q in requests if m == "PUT" and "partNumber=" in q]
    assert len(parts) >= 2, requests
    assert [m for m, q in requests if "partNumber=" not in q] == ["POST", "POST"], requests
    assert not [m for m, _ in requests if m in ("GET", "HEAD")]
    assert s3.multipart_uploads(s3_client, bucket) == []
    assert_same(a[...], _expected(a))


def test_an_exception_aborts_the_upload_and_leaves_nothing(s3_proxy, s3_client):
    options, proxy = s3_proxy
    bucket = s3.new_bucket(s3_client)
    a = _create(bucket, options, 512)
    with pytest.raises(KeyError), a.write_shard((0, 0, 0)) as w:
        for i, c in enumerate(w.inner_chunks()):
            w[c] = _chunk(c)
            if i == 400:
                assert s3.multipart_uploads(s3_client, bucket) != []  # parts were sent
                raise KeyError("stop")
    assert s3.multipart_uploads(s3_client, bucket) == []
    assert s3.list_keys(s3_client, bucket, f"{PREFIX}/c/") == []
    assert ("DELETE", "uploadId=") in [
        (m, q.split("=")[0] + "=") for m, q in _shard_requests(proxy)
    ]


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_a_merge_after_streaming_is_one_conditional_put(s3_proxy, s3_client):
    options, proxy = s3_proxy
    bucket = s3.new_bucket(s3_client)
    a = _create(bucket, options, 512)
    with a.write_shard((0, 0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = _chunk(c)
    proxy.clear()
    first = next(a.iter_chunks())
    with a.write_shard((0, 0, 0)) as w:
        for c in list(w.inner_chunks())[1:]:
            w[c] = _chunk(c, salt=1)
    requests = proxy.matching(path_contains=f"{PREFIX}/c/")
    final = [
        r
        for r in requests
        if r.method in ("PUT", "POST")
        and "partNumber" not in r.query
        and "uploads" not in r.query
        and r.status < 300
        and not r.path.endswith(MARKER)
    ]
    assert [r.method for r in requests if r.path.endswith(MARKER)] == ["PUT"]
    assert not [k for k in s3.list_keys(s3_client, bucket, PREFIX) if k.endswith(MARKER)]
    assert len(final) == 1 and final[0].method == "PUT" and "if-match" in final[0].headers
    assert s3.multipart_uploads(s3_client, bucket) == []
    assert_same(a[...], _expected(a, lambda c: 0 if c == first else 1))


_WRITER = textwrap.dedent(
    """
    import json, sys, numpy as np, shardwright as sw
    url, options = sys.argv[1], json.loads(sys.argv[2])
    a = sw.open(url, storage_options=options)
    rng = np.random.default_rng(0)
    bases = [rng.integers(0, 2, size=(64, 64, 64), dtype=np.uint16) + 1 for _ in range(8)]
    def hwm():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024
    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak
    before = rss()
    with a.write_shard((0, 0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = bases[sum(c.index) % 8] + np.uint16(sum(c.index) % 5)
    print(json.dumps({"growth": hwm() - before, "stats": w.stats}))
    """
)


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_a_2_gib_shard_streams_with_peak_rss_growth_under_128_mib(s3_proxy, s3_client):
    options, proxy = s3_proxy
    bucket = s3.new_bucket(s3_client)
    edge = 1024  # 1024³ uint16 = 2 GiB raw, one shard of 4,096 chunks of 64³
    a = _create(bucket, options, edge)
    proxy.clear()
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, f"s3://{bucket}/{PREFIX}", json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    print(f"2 GiB shard: {report}, {len(proxy.requests)} requests")
    parts = [r for r in proxy.matching("PUT", f"{PREFIX}/c/") if "partNumber" in r.query]
    assert len(parts) >= 10, len(parts)
    print(f"{len(parts)} parts, {sum(r.body_size for r in parts)} bytes")
    assert report["stats"]["puts"] == 1 and report["stats"]["gets"] == 0
    assert report["growth"] < 128 << 20, report
    assert s3.multipart_uploads(s3_client, bucket) == []
    # spot checks against the generator (reading 2 GiB back here would dominate the test)
    rng = np.random.default_rng(0)
    bases = [rng.integers(0, 2, size=(64, 64, 64), dtype=np.uint16) + 1 for _ in range(8)]
    for index in [(0, 0, 0), (3, 7, 1), (15, 15, 15), (9, 0, 14)]:
        c = sw.Domain(tuple(64 * i for i in index), (64,) * 3)
        expected = bases[sum(index) % 8] + np.uint16(sum(index) % 5)
        assert_same(a[c.slices], expected)
