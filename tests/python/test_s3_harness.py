"""The object-store tests' harness itself (s3_server.py): moto behind the fault proxy,
driven by boto3 and raw HTTP, so a failure in test_object_store_s3.py is the backend's."""

from __future__ import annotations

import http.client
import io
import threading
import urllib.parse

import boto3.s3.transfer
import botocore.exceptions
import pytest
import s3_server as s3


@pytest.fixture
def via_proxy(s3_bucket, s3_proxy):
    """``(bucket, boto3 client through the proxy, proxy)``."""
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    return bucket, s3.s3_client(options["endpoint"]), proxy


def test_proxy_forwards_and_logs(via_proxy, s3_client):
    bucket, client, proxy = via_proxy
    body = bytes(range(256)) * (12 << 12)  # 12 MiB, streamed in blocks
    etag = client.put_object(Bucket=bucket, Key="a/b c", Body=body)["ETag"]
    assert client.get_object(Bucket=bucket, Key="a/b c")["Body"].read() == body
    assert client.head_object(Bucket=bucket, Key="a/b c")["ContentLength"] == len(body)
    client.put_object(Bucket=bucket, Key="a/b c", Body=b"x", IfMatch=etag)
    client.delete_object(Bucket=bucket, Key="a/b c")
    seen = [(r.method, r.key(bucket), r.status, r.body_size) for r in proxy.requests]
    assert seen == [
        ("PUT", "a/b c", 200, len(body)),
        ("GET", "a/b c", 200, 0),
        ("HEAD", "a/b c", 200, 0),
        ("PUT", "a/b c", 200, 1),
        ("DELETE", "a/b c", 204, 0),
    ]
    assert proxy.requests[0].etag == etag and proxy.requests[3].headers["if-match"] == etag
    assert s3.list_keys(s3_client, bucket) == []


def test_proxy_forwards_chunked_bodies_and_multipart(via_proxy, s3_client):
    bucket, client, proxy = via_proxy
    host, port = urllib.parse.urlsplit(proxy.endpoint).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port))
    blocks = [b"a" * 70000, b"b" * 3, b"c" * (1 << 20)]
    conn.request("PUT", f"/{bucket}/chunked", body=iter(blocks), encode_chunked=True)
    assert conn.getresponse().status == 200
    conn.close()
    assert s3.read_objects(s3_client, bucket, "")["chunked"] == b"".join(blocks)
    assert proxy.requests[-1].headers["transfer-encoding"] == "chunked"
    config = boto3.s3.transfer.TransferConfig(
        multipart_threshold=5 << 20, multipart_chunksize=5 << 20, max_concurrency=2
    )
    body = bytes(range(251)) * (46 << 10)  # 11.3 MiB: parts of 5, 5 and 1.3 MiB
    client.upload_fileobj(io.BytesIO(body), bucket, "multi", Config=config)
    assert s3.read_objects(s3_client, bucket, "")["multi"] == body
    assert [r.method for r in proxy.for_key(bucket, "multi")] == ["POST"] + ["PUT"] * 3 + ["POST"]
    assert s3.multipart_uploads(s3_client, bucket) == []


def test_faults_answer_matching_requests_only(via_proxy, s3_client):
    bucket, client, proxy = via_proxy
    proxy.fail_next(1, 403, method="PUT", path_contains="/c/")
    client.put_object(Bucket=bucket, Key="zarr.json", Body=b"{}")  # not matching
    with pytest.raises(botocore.exceptions.ClientError) as info:
        client.put_object(Bucket=bucket, Key="c/0", Body=b"x" * 100)
    assert info.value.response["Error"]["Code"] == "AccessDenied"
    client.put_object(Bucket=bucket, Key="c/0", Body=b"y")  # the fault is used up
    seen = [(r.key(bucket), r.status, r.injected, r.body_size) for r in proxy.requests]
    assert seen == [("zarr.json", 200, False, 2), ("c/0", 403, True, 100), ("c/0", 200, False, 1)]
    proxy.fail_next(5, 503)
    proxy.clear()
    assert proxy.requests == [] and client.get_object(Bucket=bucket, Key="c/0")["Body"].read()
    assert s3.read_objects(s3_client, bucket, "")["c/0"] == b"y"


def test_conditional_puts_are_atomic(via_proxy):
    """Of 16 racing ``If-None-Match: *`` creations exactly one succeeds, as in S3 (moto
    checks, then stores, without a lock of its own; the server's write lock makes the
    pair atomic — the race was not seen without it either, but nothing in moto rules it
    out)."""
    bucket, _, proxy = via_proxy
    clients = [s3.s3_client(proxy.endpoint) for _ in range(16)]
    start, outcomes = threading.Barrier(16), []

    def create(client) -> None:
        start.wait()
        try:
            client.put_object(Bucket=bucket, Key="once", Body=b"z" * 200_000, IfNoneMatch="*")
            outcomes.append(200)
        except botocore.exceptions.ClientError as exc:
            outcomes.append(exc.response["ResponseMetadata"]["HTTPStatusCode"])

    threads = [threading.Thread(target=create, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == [200] + [412] * 15


def test_moto_conditional_semantics(s3_bucket, s3_client):
    """What the backend can rely on (see s3_server's docstring)."""
    bucket, _ = s3_bucket
    etag = s3_client.put_object(Bucket=bucket, Key="k", Body=b"v1")["ETag"]
    assert etag.startswith('"')

    def status(**kw) -> int:
        try:
            s3_client.put_object(Bucket=bucket, Body=b"v", **kw)
        except botocore.exceptions.ClientError as exc:
            return exc.response["ResponseMetadata"]["HTTPStatusCode"]
        return 200

    assert status(Key="k", IfNoneMatch="*") == 412
    assert status(Key="k", IfMatch='"0123"') == 412
    assert status(Key="missing", IfMatch=etag) == 404
    assert status(Key="k", IfMatch=etag) == 200
    assert status(Key="new", IfNoneMatch="*") == 200
