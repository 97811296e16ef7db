"""Credentials never appear in error messages: not a SAS token in a URL's query, not the
``user:password@`` of a URL or an endpoint, not a secret storage option, not the URLs the
object-store client's errors repeat. Endpoints are loopback ports where nothing listens
(port 9, discard), so a request fails with a connection error after object_store's short
retries."""

from __future__ import annotations

from typing import Any

import pytest
import shardwright as sw
from shardwright._adapter import store_name
from shardwright._redact import redact


def message(target: Any, exception: type[BaseException], **options: str) -> str:
    with pytest.raises(exception) as info:
        sw.open(target, storage_options=options or None)
    assert type(info.value) is exception, info.value
    return str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "az://container/a.zarr?sv=2022-11-02&sig=SECRETSIG%3D",
        "https://acct.blob.core.windows.net/container/a.zarr?sv=2022-11-02&sig=SECRETSIG",
        "s3://bucket/a.zarr#SECRETSIG",
    ],
)
def test_a_sas_token_in_a_url_is_not_echoed(url):
    text = message(url, sw.UnsupportedError)
    assert "SECRET" not in text
    assert "/a.zarr" in text  # the URL is still named


@pytest.mark.parametrize(
    "url",
    [
        "s3://AKIDEXAMPLE:SECRETPW@bucket/a.zarr",
        "https://user:SECRETPW@acct.blob.core.windows.net/container/a.zarr",
    ],
)
def test_credentials_in_a_url_are_refused_and_not_echoed(url):
    text = message(url, sw.UnsupportedError)
    assert "SECRET" not in text
    assert "give them as storage options" in text


def test_an_endpoints_password_is_not_echoed():
    endpoint = "http://user:SECRETPW@127.0.0.1:9"
    text = message("s3://bucket/a.zarr", sw.UnsupportedError, endpoint=endpoint)
    assert "plain HTTP" in text and "SECRETPW" not in text
    text = message(
        "s3://bucket/a.zarr",
        sw.ShardwrightError,
        endpoint=endpoint,
        allow_http="true",
        region="us-east-1",
        access_key_id="AKIDEXAMPLE",
        secret_access_key="SECRETKEY",
        token="SECRETSESSION",
    )
    assert "a.zarr/zarr.json" in text and "127.0.0.1:9" in text
    assert "SECRET" not in text


def test_urls_python_refuses_are_not_echoed():
    text = message("ftp://user:SECRETPW@host/x.zarr?sig=SECRETSIG", sw.UnsupportedError)
    assert "'ftp://host/x.zarr'" in text and "SECRET" not in text
    text = message("file://user:SECRETPW@host/x.zarr", sw.UnsupportedError)
    assert "names the host 'host'" in text and "SECRET" not in text
    text = message("file:///x.zarr?sig=SECRETSIG", sw.UnsupportedError)
    assert "query or fragment" in text and "SECRET" not in text


def test_a_zarr_stores_name_loses_its_credentials():
    class Named:
        def __str__(self) -> str:
            return "http://user:SECRETPW@host/bucket/a.zarr?sig=SECRETSIG"

    assert store_name(Named()) == "http://host/bucket/a.zarr"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("s3://bucket/a.zarr", "s3://bucket/a.zarr"),
        ("http://a:b@c@host/x", "http://host/x"),
        ("http://user:pw@host?q=1 and gs://c/k#f", "http://host and gs://c/k"),
        ("'http://h/p?x=1', \"s3+x://u:p@b\"", "'http://h/p', \"s3+x://b\""),
        ("not a URL: ://x?y=1 and 3://x?y", "not a URL: ://x?y=1 and 3://x?y"),
        ("éhttp://ü:ß@hôst/ä?ö=1 ø", "éhttp://hôst/ä ø"),
    ],
)
def test_redact_matches_the_engines_rules(given, expected):
    assert redact(given) == expected
