"""S3 settings from the environment and storage-option spellings, against moto on loopback.

object_store reads ``AWS_*`` (``from_env``): credentials given only there must be used,
options given explicitly win over them, and a machine with credentials nowhere hears that
none were found (not only the instance metadata endpoint's 403). Keys are accepted in
object_store's every spelling: ``AWS_REGION``, ``aws_region``, ``region``.

The instance metadata endpoint is always a loopback server answering 403
(``metadata_endpoint``): no test contacts ``169.254.169.254``. The autouse fixture of
conftest.py clears the shell's ``AWS_*`` before each test.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import s3_server as s3
import shardwright as sw


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``shardwright ARGS`` in a new process, with this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "shardwright", *args], capture_output=True, text=True, timeout=120
    )


def test_credentials_only_in_the_environment_are_used(
    s3_server, s3_client, forbidding_endpoint, monkeypatch
):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.SECRET)
    monkeypatch.setenv("AWS_REGION", s3.REGION)
    # an explicit option wins over the environment's: nothing listens on port 9
    monkeypatch.setenv("AWS_ENDPOINT", "http://127.0.0.1:9")
    bucket = s3.new_bucket(s3_client)
    url = f"s3://{bucket}/env.zarr"
    options = {
        "endpoint": s3_server.endpoint,
        "allow_http": "true",
        "metadata_endpoint": forbidding_endpoint,  # were the environment ignored
    }
    data = np.arange(24, dtype="uint16").reshape(4, 6)
    a = sw.create(url, shape=(4, 6), dtype="uint16", chunks=(2, 3), storage_options=options)
    a[...] = data
    np.testing.assert_array_equal(sw.open(url, storage_options=options)[...], data)
    assert s3.list_keys(s3_client, bucket, "env.zarr/")[0] == "env.zarr/c/0/0"

    args = [f"--storage-option={k}={v}" for k, v in options.items()]
    done = _cli("info", url, *args)
    assert done.returncode == 0, done.stderr
    assert "(4, 6)" in done.stdout or "4 x 6" in done.stdout or "[4, 6]" in done.stdout, done.stdout


def test_no_credentials_anywhere_says_so_and_where_they_are_looked_for(
    s3_server, s3_client, forbidding_endpoint
):
    bucket = s3.new_bucket(s3_client)
    url = f"s3://{bucket}/none.zarr"
    options = {
        "endpoint": s3_server.endpoint,
        "allow_http": "true",
        "metadata_endpoint": forbidding_endpoint,
    }
    with pytest.raises(sw.ShardwrightError) as info:
        sw.create(url, shape=(4,), dtype="uint8", chunks=(2,), storage_options=options)
    message = str(info.value)
    assert "no S3 credentials found" in message, message
    for where in ("access_key_id", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        assert where in message, (where, message)
    assert "403" in message, message  # what the metadata endpoint said, kept

    done = _cli("info", url, *(f"--storage-option={k}={v}" for k, v in options.items()))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "no S3 credentials found" in done.stderr, done.stderr


def test_storage_option_keys_in_any_of_object_stores_spellings(s3_server, s3_client):
    bucket = s3.new_bucket(s3_client)
    url = f"s3://{bucket}/upper.zarr"
    upper = {
        "AWS_ENDPOINT": s3_server.endpoint,
        "AWS_REGION": s3.REGION,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": s3.KEY_ID,
        "AWS_SECRET_ACCESS_KEY": s3.SECRET,
    }
    a = sw.create(url, shape=(4,), dtype="uint8", chunks=(2,), storage_options=upper)
    a[...] = [1, 2, 3, 4]
    mixed = {
        "Endpoint": s3_server.endpoint,
        "aws_region": s3.REGION,
        "ALLOW_HTTP": "true",
        "Access_Key_Id": s3.KEY_ID,
        "secret_access_key": s3.SECRET,
    }
    assert sw.open(url, storage_options=mixed)[...].tolist() == [1, 2, 3, 4]
    with pytest.raises(sw.UnsupportedError, match="AWS_NO_SUCH_OPTION"):
        sw.open(url, storage_options=dict(upper, AWS_NO_SUCH_OPTION="1"))
