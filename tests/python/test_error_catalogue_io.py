"""docs/errors.md's bad inputs that need a place of their own: missing arrays, groups and
Zarr v2 arrays, read-only and full filesystems (tmpfs mounts: root only), S3 URLs with bad
credentials (moto checking signatures), wrong buckets and refused ports, a conflict, the
pyramid and copy arguments, and the command line (exit status and stderr)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import zarr
from error_doc import array, expect, expect_cli
from shardwright.testing import FaultyStore


@pytest.fixture
def a(tmp_path: Path) -> sw.Array:
    return array(tmp_path)


# --------------------------------------------------------------------------------------
# missing arrays, groups, Zarr v2, read-only places, a full disk
# --------------------------------------------------------------------------------------


def test_missing_arrays(tmp_path):
    with expect("missing-path"):
        sw.open(tmp_path / "nope.zarr")
    with expect("missing-url"):
        sw.open("memory:///nope/x.zarr")
    image = tmp_path / "img.zarr"
    sw.pyramid(np.zeros((8, 8), "uint8"), image, factors=(2, 2), levels=2)
    with expect("group"):
        sw.open(image)
    with expect("pyramid-group"):
        sw.pyramid(image, tmp_path / "again.zarr", factors=(2, 2), levels=2)
    zarr.create_array(str(tmp_path / "v2.zarr"), shape=(4,), dtype="uint8", zarr_format=2)
    with expect("zarr-v2"):
        sw.open(tmp_path / "v2.zarr")
    zarr.create_array(str(tmp_path / "text.zarr"), shape=(4,), dtype=str, chunks=(2,))
    with expect("zarr-string"):
        sw.open(tmp_path / "text.zarr")


def test_modes(a):
    with expect("mode-r"):
        sw.open(a.path, mode="r")[:] = 1
    with expect("mode-bad"):
        sw.open(a.path, mode="w")


def test_calls_during_a_commit_in_another_thread(a):
    store = FaultyStore(a.path)
    for op in ("put", "put_if", "complete"):  # every commit below waits in the store
        store.inject(op, 0, "block")
    b = store.open()
    w = b.write_shard((0, 0))
    w[0:8, 0:7] = 1
    tx = b.transaction()
    tx[9, 0] = 3
    commits = [threading.Thread(target=w.commit), threading.Thread(target=tx.commit)]
    try:
        for commit in commits:
            commit.start()
        deadline = time.monotonic() + 10
        while store.blocked() < 2:
            assert time.monotonic() < deadline, store.counts()
            time.sleep(0.005)
        with expect("writer-while-committing"):
            w[0, 0] = 2
        with expect("tx-while-committing"):
            tx[9, 0] = 4
    finally:
        store.release()
        for commit in commits:
            commit.join(30)
    assert (b[0, 0], b[9, 0]) == (1, 3)


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    """A fresh tmpfs of ``size`` (root only: the tests run as root here and in CI),
    unmounted afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="sw-tmpfs-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)
        folder.rmdir()


def test_a_read_only_filesystem():
    with tmpfs("1m") as place:
        a = sw.create(place / "a.zarr", shape=(8, 8), dtype="uint8", chunks=(4, 4), shards=(8, 8))
        a[...] = 7
        subprocess.run(["mount", "-o", "remount,ro", str(place)], check=True)
        with expect("readonly-folder"):
            a[0, 0] = 1
        with expect("readonly-folder-create"):
            sw.create(place / "b.zarr", shape=(4,), dtype="uint8", chunks=(2,))
        assert (a[...] == 7).all()


def test_a_full_disk():
    with tmpfs("64k") as place:
        a = sw.create(
            place / "a.zarr",
            shape=(256, 256),
            dtype="uint32",
            chunks=(64, 64),
            shards=(256, 256),
            compressor=None,
        )
        with expect("disk-full"):
            a[...] = np.arange(256 * 256, dtype="uint32").reshape(256, 256)
        assert sorted(p.name for p in Path(a.path).rglob("*") if p.is_file()) == ["zarr.json"]


# --------------------------------------------------------------------------------------
# URLs: credentials (moto checking signatures), buckets, endpoints, schemes
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def moto_checks_credentials() -> Iterator[None]:
    """moto's server checks request signatures against its IAM users while this lasts
    (its ``INITIAL_NO_AUTH_ACTION_COUNT`` setting, read at each request, is 0)."""
    from moto import settings

    before = settings.INITIAL_NO_AUTH_ACTION_COUNT
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    try:
        yield
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT = before


def test_s3_credentials(s3_server, s3_bucket):
    import boto3

    bucket, options = s3_bucket
    url = f"s3://{bucket}/a.zarr"
    sw.create(url, shape=(4,), dtype="uint8", chunks=(2,), storage_options=options)
    iam = boto3.client(
        "iam",
        endpoint_url=s3_server.endpoint,
        region_name=options["region"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    user = f"sw-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    iam.put_user_policy(
        UserName=user,
        PolicyName="s3",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
            }
        ),
    )
    key = iam.create_access_key(UserName=user)["AccessKey"]
    good = dict(options, access_key_id=key["AccessKeyId"], secret_access_key=key["SecretAccessKey"])
    with moto_checks_credentials():
        assert sw.open(url, storage_options=good)[:].tolist() == [0] * 4  # they are checked
        with expect("s3-bad-secret"):
            sw.open(url, storage_options=dict(good, secret_access_key="wrong"))
        with expect("s3-unknown-key"):
            sw.open(url, storage_options=options)  # "testing" is no IAM user's key


def test_s3_no_credentials(s3_bucket, forbidding_endpoint):
    bucket, options = s3_bucket
    anonymous = {k: v for k, v in options.items() if "access_key" not in k}
    # the instance metadata endpoint on loopback, answering 403 as off EC2
    anonymous["metadata_endpoint"] = forbidding_endpoint
    with expect("s3-no-credentials"):
        sw.open(f"s3://{bucket}/a.zarr", storage_options=anonymous)


def test_s3_places(s3_bucket):
    _, options = s3_bucket
    with expect("s3-no-bucket"):
        sw.create(
            "s3://no-such-bucket/a.zarr",
            shape=(4,),
            dtype="uint8",
            chunks=(2,),
            storage_options=options,
        )
    refused = dict(options, endpoint="http://127.0.0.1:9")  # nothing listens on port 9
    with expect("s3-refused"):  # retried 10 times with backoff: 2 s or so
        sw.create(
            "s3://bucket/x.zarr", shape=(2,), dtype="uint8", chunks=(2,), storage_options=refused
        )


def test_urls():
    with expect("url-scheme"):
        sw.open("ftp://host/x.zarr")
    with expect("url-malformed"):
        sw.open("s3://")
    with expect("url-credentials"):
        sw.open("s3://key:secret@bucket/x.zarr")
    with expect("storage-option"):
        sw.open("s3://bucket/x.zarr", storage_options={"no_such_option": "1"})
    with expect("endpoint-not-url"):  # object_store panicked on it ("request valid")
        sw.open("s3://bucket/x.zarr", storage_options={"endpoint": "not a url"})
    with expect("endpoint-plain-http"):
        sw.open("s3://bucket/x.zarr", storage_options={"endpoint": "http://127.0.0.1:9"})


def test_conflict(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    a = sw.create(
        f"s3://{bucket}/a.zarr",
        shape=(16, 16),
        dtype="uint8",
        chunks=(4, 4),
        shards=(8, 8),
        storage_options=options,
    )
    a[...] = 3
    proxy.fail_next(100, 412, method="PUT", path_contains="a.zarr/c/0/1")
    with expect("conflict"), a.write_shard((0, 1), retries=2) as w:
        w[0:2, 8:10] = 1
    proxy.clear()
    assert (a[...] == 3).all()


# --------------------------------------------------------------------------------------
# pyramid and copy
# --------------------------------------------------------------------------------------


def test_pyramid_arguments(tmp_path):
    data = np.arange(64, dtype="uint8").reshape(8, 8)
    image = tmp_path / "img.zarr"

    def build(source=data, **settings):
        settings = {"factors": (2, 2), "levels": 2, **settings}
        return sw.pyramid(source, image, **settings)

    with expect("pyramid-factors"):
        build(factors=(2,))
    with expect("pyramid-method"):
        build(method="median-ish")
    with expect("pyramid-dtype"):
        build(np.zeros((8, 8), "complex64"))
    with expect("pyramid-levels"):
        build(levels=0)
    with expect("pyramid-source-options"):
        build(source_storage_options={"region": "x"})
    with expect("pyramid-dest-options"):
        build("s3://b/src.zarr", storage_options={"a": "b"}, source_storage_options={"a": "c"})
    build()
    before = sorted(p.relative_to(image) for p in image.rglob("*"))
    with expect("pyramid-levels-past-one"):
        build(levels=10**5, overwrite=True)
    assert sorted(p.relative_to(image) for p in image.rglob("*")) == before  # nothing removed
    with expect("pyramid-exists"):
        build()
    with expect("pyramid-overwrite-resume"):
        build(overwrite=True, resume=True)
    with expect("pyramid-resume-method"):
        build(method="max", resume=True)
    with expect("pyramid-resume-shape"):
        build(np.zeros((16, 8), "uint8"), resume=True)


def test_add_levels_arguments(tmp_path):
    import zarr

    zarr.open_group(tmp_path / "empty.zarr", mode="w")
    with expect("add-levels-no-level0"):
        sw.add_levels(tmp_path / "empty.zarr")
    image = tmp_path / "img.zarr"
    sw.create(image / "0", shape=(8, 8), dtype="uint8", chunks=(4, 4))[...] = 1
    with expect("add-levels-factors"):
        sw.add_levels(image, factors=(2,))
    sw.add_levels(image, factors=(2, 2), levels=2)
    with expect("add-levels-made-otherwise"):
        sw.add_levels(image, method="max")


class _Failing:
    shape, dtype = (8, 8), np.dtype("uint8")

    def __getitem__(self, key):
        raise OSError("sensor unplugged")


class _Short(_Failing):
    def __getitem__(self, key):
        return np.zeros((1, 1), "uint8")


def test_pyramid_sources(tmp_path):
    with expect("pyramid-source-fails"):
        sw.pyramid(_Failing(), tmp_path / "f.zarr", factors=(2, 2), levels=2)
    with expect("pyramid-source-shape"):
        sw.pyramid(_Short(), tmp_path / "s.zarr", factors=(2, 2), levels=2)


def test_copy_arguments(a, tmp_path):
    with expect("copy-overlap"):
        sw.copy(a.path, Path(a.path) / "inner", overwrite=True)
    with expect("copy-shards"):
        sw.copy(a.path, tmp_path / "c.zarr", chunks=(3, 3), shards=(8, 8))
    with expect("copy-missing"):
        sw.copy(tmp_path / "nope.zarr", tmp_path / "c.zarr")
    tif = tmp_path / "stack.tif"
    tif.write_bytes(b"II*\x00")
    notes = tmp_path / "stack.txt"
    notes.write_text("not an array")
    for convert in (sw.copy, lambda s, d: sw.pyramid(s, d, factors=(2, 2))):
        with expect("copy-file"):
            convert(notes, tmp_path / "c.zarr")
    with expect("copy-file"):
        sw.open(tif)
    (tmp_path / "empty.zarr").mkdir()
    (tmp_path / "empty.zarr" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    with expect("check-empty-group"):
        sw.check(tmp_path / "empty.zarr")
    assert (Path(a.path) / "zarr.json").is_file()


def test_overwrite_refusals(tmp_path, monkeypatch):
    import zarr
    from zarr.storage import LocalStore, WrapperStore

    class Opaque(WrapperStore):
        pass

    z = zarr.create_array(Opaque(LocalStore(str(tmp_path))), name="raw", shape=(4,), dtype="u1")
    with expect("copy-overlap-unknown"):
        sw.copy(z, tmp_path / "c.zarr", chunks=(2,), overwrite=True)
    monkeypatch.chdir(tmp_path)
    with expect("overwrite-protected"):
        sw.create(".", shape=(4,), dtype="uint8", chunks=(2,), overwrite=True)
    assert (tmp_path / "raw" / "zarr.json").is_file()


# --------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------


def test_cli(a, tmp_path, capfd):
    expect_cli("cli-unknown-command", capfd, "nope")
    expect_cli("cli-missing-argument", capfd, "info")
    expect_cli("cli-unknown-option", capfd, "info", "--bogus", a.path)
    expect_cli("cli-missing-array", capfd, "copy", tmp_path / "nope.zarr", tmp_path / "o.zarr")
    expect_cli("cli-missing-array", capfd, "info", tmp_path / "nope.zarr")
    tif = tmp_path / "stack.tif"
    tif.write_bytes(b"II*\x00")
    expect_cli("cli-file", capfd, "check", tif)
    notes = tmp_path / "stack.txt"
    notes.write_text("not an array")
    expect_cli("cli-file", capfd, "copy", notes, tmp_path / "o.zarr")
    empty = tmp_path / "empty.zarr"
    empty.mkdir()
    (empty / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    expect_cli("cli-check-empty-group", capfd, "check", empty)
    image = tmp_path / "img.zarr"
    expect_cli("cli-factors", capfd, "pyramid", a.path, image, "--factors", "x,y")
    expect_cli("cli-levels", capfd, "pyramid", a.path, image, "--factors", "2,2", "--levels", "0")
    expect_cli("cli-exists", capfd, "copy", a.path, a.path)
    expect_cli("cli-compressor", capfd, "copy", a.path, tmp_path / "c.zarr", "--compressor", "lz4")


def test_cli_check_on_a_group_an_object_store_cannot_list(s3_bucket, s3_client, capfd):
    bucket, options = s3_bucket
    group = b'{"zarr_format": 3, "node_type": "group"}'
    s3_client.put_object(Bucket=bucket, Key="g.zarr/zarr.json", Body=group)
    settings = [f"--storage-option={k}={v}" for k, v in options.items()]
    expect_cli("cli-check-unlisted-group", capfd, "check", f"s3://{bucket}/g.zarr", *settings)
