"""``sw.open(zarr_array)`` for arrays on zarr-python's ``ObjectStore`` over obstore: the
engine opens the same bucket, prefix and config natively (writes counted on the server's
side, through the fault proxy's log)."""

from __future__ import annotations

import numpy as np
import pytest
import shardwright as sw
import zarr
from conftest import assert_same, reference, write_all
from obstore.store import LocalStore, MemoryStore, S3Store


def _s3_store(bucket: str, options: dict[str, str], prefix: str = "") -> S3Store:
    config = {k: v for k, v in options.items() if k != "allow_http"}
    return S3Store(
        bucket, prefix=prefix or None, config=config, client_options={"allow_http": True}
    )


def test_a_zarr_array_on_an_obstore_s3_store_is_written_natively(s3_bucket, s3_proxy):
    bucket, _ = s3_bucket
    options, proxy = s3_proxy
    store = zarr.storage.ObjectStore(_s3_store(bucket, options, prefix="deep/er"))
    z = zarr.create_array(
        store, name="a", shape=(64, 48), chunks=(8, 8), shards=(32, 16), dtype="int32", fill_value=0
    )
    a = sw.open(z)
    assert a.url == f"s3://{bucket}/deep/er/a"
    data = reference(a.shape, a.dtype)
    proxy.clear()
    write_all(a, data)
    shard_puts = [r for r in proxy.requests if r.method == "PUT" and "/c/" in r.path]
    assert len(shard_puts) == 6
    assert not [r for r in proxy.requests if r.method == "GET" and "/c/" in r.path]
    assert_same(zarr.open_array(store, path="a", mode="r")[...], data)
    assert_same(a[...], data)


def test_a_zarr_array_on_an_obstore_local_store_is_a_local_folder(tmp_path):
    store = zarr.storage.ObjectStore(LocalStore(str(tmp_path)))
    z = zarr.create_array(
        store,
        name="g/a",
        shape=(10, 10),
        chunks=(5, 5),
        shards=(10, 10),
        dtype="uint8",
        fill_value=0,
    )
    a = sw.open(z)
    assert a.path == tmp_path / "g" / "a"
    a.map_chunks(lambda c: c.index[0] + 2 * c.index[1] + 1)
    expected = np.repeat(np.repeat(np.array([[1, 3], [2, 4]], "u1"), 5, 0), 5, 1)
    assert_same(zarr.open_array(store, path="g/a", mode="r")[...], expected)


def test_other_obstore_stores_go_through_the_adapter_and_bad_targets_are_refused():
    z = zarr.create_array(
        zarr.storage.ObjectStore(MemoryStore()), shape=(4,), chunks=(2,), dtype="u1", fill_value=0
    )
    a = sw.open(z)  # obstore's MemoryStore: not shared with the engine, so the adapter
    assert a.path == a.url and a.url.startswith("object_store://")
    a.map_chunks(lambda c: 5)
    assert z[...].tolist() == [5] * 4
    with pytest.raises(TypeError, match="brings its own"):
        sw.open(z, storage_options={"region": "x"})
    with pytest.raises(TypeError, match=r"expected a path, a URL, a zarr\.Array or a zarr store"):
        sw.open(42)


def test_an_obstore_credential_provider_is_refused_not_dropped(s3_bucket):
    bucket, options = s3_bucket

    def provider():
        return {"access_key_id": "testing", "secret_access_key": "testing", "expires_at": None}

    inner = S3Store(
        bucket,
        config={"endpoint": options["endpoint"], "region": "us-east-1"},
        client_options={"allow_http": True},
        credential_provider=provider,
    )
    z = zarr.create_array(zarr.storage.ObjectStore(inner), shape=(4,), chunks=(2,), dtype="u1")
    with pytest.raises(sw.UnsupportedError, match="credential_provider"):
        sw.open(z)


def test_a_read_only_zarr_store_stays_read_only(tmp_path):
    store = zarr.storage.ObjectStore(LocalStore(str(tmp_path)))
    z = zarr.create_array(store, name="a", shape=(4,), chunks=(2,), dtype="u1", fill_value=0)
    z[...] = 3
    a = sw.open(zarr.open_array(store.with_read_only(True), path="a", mode="r"))
    assert a[...].tolist() == [3] * 4
    with pytest.raises(sw.ShardwrightError, match="read-only"), a.write_shard((0,)) as w:
        w[0:2] = 4
    assert z[...].tolist() == [3] * 4


def test_a_counting_wrapper_around_an_obstore_s3_store_goes_through_the_adapter(s3_bucket):
    from test_adapter_stores import Counting

    bucket, options = s3_bucket
    store = Counting(zarr.storage.ObjectStore(_s3_store(bucket, options)))
    a = sw.create(store, path="w", shape=(32, 32), dtype="uint16", chunks=(8, 8), shards=(16, 16))
    data = reference(a.shape, a.dtype, seed=4)
    store.clear()
    write_all(a, data)
    assert store.shard_calls("set") == [f"w/c/{i}/{j}" for i in range(2) for j in range(2)]
    assert store.shard_calls("get") == []
    with a.write_shard((1, 0)) as w:  # a merge: one get, one set
        w[17:19, 3:5] = 9
    data[17:19, 3:5] = 9
    assert store.shard_calls("get") == ["w/c/1/0"]
    assert_same(zarr.open_array(store, path="w", mode="r")[...], data)
