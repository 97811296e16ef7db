"""An S3 server on loopback for the object-store tests, and a fault-injecting proxy.

:class:`MotoServer` runs moto's S3 (server mode, in this process, on a free port).
moto checks ``If-Match`` / ``If-None-Match`` and then stores the object with no lock
between the two, so two conditional PUTs racing on one key could in principle both pass
— which real S3 never allows (not observed in practice: the window is pure Python). The
server therefore runs every mutating request (PUT, POST, DELETE) under one lock; GET and
HEAD stay concurrent (an overwritten object stays readable by a GET already holding it).

:class:`FaultProxy` sits in front of it: every request is forwarded (bodies streamed in
blocks, chunked or not), logged as a :class:`ProxyRequest` (so tests count requests from
the server side), or — for the next N requests matching a method and a path fragment —
answered with an S3-style error status without being forwarded.

moto 5.2.5, as observed: PutObject returns an ``ETag``; it honours ``If-None-Match: *``
(412 when the key exists) and ``If-Match`` (412 on a different ETag, 404 ``NoSuchKey``
when the key is missing). CompleteMultipartUpload honours ``If-None-Match: *`` (412, and
the upload stays listed until aborted) but ignores ``If-Match``.
"""

from __future__ import annotations

import http.client
import logging
import threading
import urllib.parse
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

REGION = "us-east-1"
KEY_ID = "testing"
SECRET = "testing"
BLOCK = 1 << 20

# moto drops overwritten objects without closing their buffers; the GC then warns.
warnings.filterwarnings("ignore", message="S3 key was not disposed", category=ResourceWarning)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _serialize_writes(app: WsgiApp) -> WsgiApp:
    """``app`` with PUT, POST and DELETE run one at a time (conditional writes atomic)."""
    lock = threading.Lock()

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] not in ("PUT", "POST", "DELETE"):
            return app(environ, start_response)
        with lock:
            result = app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()

    return wrapped


class MotoServer:
    """moto's S3 on ``127.0.0.1`` (a free port), threaded, writes serialized."""

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = _serialize_writes(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(
            "127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` the server listens on."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def endpoint(self) -> str:
        """The server's URL, ``http://127.0.0.1:PORT``."""
        host, port = self.address
        return f"http://{host}:{port}"

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def storage_options(endpoint: str) -> dict[str, str]:
    """shardwright's ``storage_options`` (object_store keys) for an S3 at ``endpoint``."""
    return {
        "endpoint": endpoint,
        "region": REGION,
        "access_key_id": KEY_ID,
        "secret_access_key": SECRET,
        "allow_http": "true",
    }


def s3_client(endpoint: str) -> Any:
    """A boto3 S3 client for the server at ``endpoint`` (path-style addressing)."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )


def new_bucket(client: Any) -> str:
    """Create a bucket with a fresh name and return the name."""
    name = f"sw-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=name)
    return name


def list_keys(client: Any, bucket: str, prefix: str = "") -> list[str]:
    """Every key in ``bucket`` under ``prefix``, sorted."""
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return sorted(keys)


def multipart_uploads(client: Any, bucket: str) -> list[str]:
    """Keys of the multipart uploads started but neither completed nor aborted."""
    return sorted(u["Key"] for u in client.list_multipart_uploads(Bucket=bucket).get("Uploads", []))


def read_objects(client: Any, bucket: str, prefix: str) -> dict[str, bytes]:
    """The bytes of every object under ``prefix/`` (the whole bucket for ``""``), keyed
    by the key relative to it."""
    base = prefix.rstrip("/") + "/" if prefix else ""
    return {
        key[len(base) :]: client.get_object(Bucket=bucket, Key=key)["Body"].read()
        for key in list_keys(client, bucket, base)
    }


class _Forbid(BaseHTTPRequestHandler):
    def _refuse(self) -> None:
        body = b"Forbidden"
        self.send_response(403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _refuse

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ForbiddingServer:
    """An HTTP server on loopback that answers 403 to every request: the EC2 instance
    metadata endpoint (``metadata_endpoint``) as a machine that is no instance answers,
    without contacting ``169.254.169.254``."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Forbid)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """The server's URL, ``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


# --------------------------------------------------------------------------------------
# the proxy
# --------------------------------------------------------------------------------------

HOP_BY_HOP = frozenset(
    "connection keep-alive proxy-connection te trailer transfer-encoding upgrade expect"
    " proxy-authorization proxy-authenticate".split()
)
LOGGED_HEADERS = ("if-match", "if-none-match", "range", "content-length", "transfer-encoding")
ERROR_CODES = {
    400: "BadRequest",
    403: "AccessDenied",
    404: "NoSuchKey",
    409: "OperationAborted",
    412: "PreconditionFailed",
    429: "SlowDown",
    500: "InternalError",
    503: "ServiceUnavailable",
}


@dataclass
class ProxyRequest:
    """One request seen by the proxy: ``path`` is percent-decoded (``/bucket/key``),
    ``headers`` holds the LOGGED_HEADERS sent (lower-case names), ``etag`` the ETag
    answered, ``injected`` whether the proxy answered itself (a fault)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body_size: int
    status: int
    etag: str | None = None
    injected: bool = False
    response_size: int = 0  # bytes of the response body sent back

    def key(self, bucket: str) -> str | None:
        """The object key inside ``bucket``, or None for a request on another bucket."""
        head = f"/{bucket}/"
        return self.path[len(head) :] if self.path.startswith(head) else None


@dataclass
class _Fault:
    remaining: int
    status: int
    method: str | None
    path_contains: str | None

    def matches(self, method: str, path: str) -> bool:
        return (
            self.remaining > 0
            and (self.method is None or self.method == method)
            and (self.path_contains is None or self.path_contains in path)
        )


@dataclass
class FaultProxy:
    """A logging, fault-injecting HTTP proxy on loopback in front of ``upstream``."""

    upstream: tuple[str, int]
    requests: list[ProxyRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        handler = type("Handler", (_ProxyHandler,), {"proxy": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """The proxy's URL, ``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fail_next(
        self, n: int, status: int, method: str | None = None, path_contains: str | None = None
    ) -> None:
        """Answer the next ``n`` requests with ``method`` (any if None) whose decoded path
        contains ``path_contains`` (any if None) with ``status`` and an S3 error body,
        without forwarding them."""
        with self._lock:
            self._faults.append(_Fault(n, status, method and method.upper(), path_contains))

    def clear(self) -> None:
        """Forget the logged requests and the faults not yet used."""
        with self._lock:
            self.requests.clear()
            self._faults.clear()

    def matching(
        self, method: str | None = None, path_contains: str | None = None
    ) -> list[ProxyRequest]:
        """The logged requests with ``method`` whose path contains ``path_contains``."""
        with self._lock:
            logged = list(self.requests)
        return [
            r
            for r in logged
            if (method is None or r.method == method.upper())
            and (path_contains is None or path_contains in r.path)
        ]

    def for_key(self, bucket: str, key: str) -> list[ProxyRequest]:
        """The logged requests on exactly ``bucket``/``key``."""
        with self._lock:
            logged = list(self.requests)
        return [r for r in logged if r.key(bucket) == key]

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _take_fault(self, method: str, path: str) -> int | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.remaining -= 1
                    return fault.status
        return None

    def _log(self, entry: ProxyRequest) -> None:
        with self._lock:
            self.requests.append(entry)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: FaultProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._relay()

    do_PUT = do_POST = do_HEAD = do_DELETE = do_GET

    def _body(self) -> Iterator[bytes]:
        """The request body in blocks: de-chunked, or Content-Length bytes."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return
                while size > 0:
                    block = self.rfile.read(min(size, BLOCK))
                    if not block:
                        raise ConnectionError("request body ended early")
                    size -= len(block)
                    yield block
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left > 0:
                block = self.rfile.read(min(left, BLOCK))
                if not block:
                    raise ConnectionError("request body ended early")
                left -= len(block)
                yield block

    def _entry(self, status: int, size: int, **extra: Any) -> ProxyRequest:
        split = urllib.parse.urlsplit(self.path)
        headers = {h: self.headers[h] for h in LOGGED_HEADERS if self.headers.get(h) is not None}
        return ProxyRequest(
            self.command, urllib.parse.unquote(split.path), split.query, headers, size, status,
            **extra,
        )  # fmt: skip

    def _relay(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        status = self.proxy._take_fault(self.command, path)
        if status is not None:
            size = sum(len(block) for block in self._body())
            self.proxy._log(self._entry(status, size, injected=True))
            self._answer_error(status, path)
            return
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        conn = http.client.HTTPConnection(*self.proxy.upstream, timeout=120)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    conn.putheader(name, value)
            if chunked:
                conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            size = 0
            for block in self._body():
                size += len(block)
                conn.send(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
            if chunked:
                conn.send(b"0\r\n\r\n")
            response = conn.getresponse()
            entry = self._entry(response.status, size, etag=response.getheader("ETag"))
            self.proxy._log(entry)  # before answering: a test reads the log right after
            entry.response_size = self._answer(response)
        finally:
            conn.close()

    def _answer(self, response: http.client.HTTPResponse) -> int:
        """Send ``response`` on to the client, its body streamed in blocks; returns the
        bytes of the body."""
        self.send_response_only(response.status, response.reason)
        length = response.getheader("Content-Length")
        bodiless = self.command == "HEAD" or response.status in (204, 304)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if length is None and not bodiless:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if bodiless:
            return 0
        sent = 0
        while block := response.read1(BLOCK):
            sent += len(block)
            self.wfile.write(block if length is not None else b"%x\r\n%s\r\n" % (len(block), block))
        if length is None:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return sent

    def _answer_error(self, status: int, path: str) -> None:
        """An S3-style error of ``status`` (the proxy's own answer, a fault)."""
        code = ERROR_CODES.get(status, "InjectedError")
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>injected by the test proxy</Message>"
            f"<Resource>{path}</Resource><RequestId>fault-proxy</RequestId></Error>"
        ).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-request-id", "fault-proxy")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()
