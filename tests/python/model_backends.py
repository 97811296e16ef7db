"""The storage backends of the model-based test (test_model_based.py), and the second
process that writes to them.

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
from pathlib import Path
from typing import Any

import numpy as np
import shardwright as sw
import zarr
from model_helpers import Geometry

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

    def sizes(self) -> dict[str, int] | None:
        """Every stored key (temporaries excluded) and its size (``None``: cannot tell)."""
        return None

    def shard_present(self, key: str) -> bool | None:
        """Whether ``key`` is stored (``None``: cannot tell)."""
        sizes = self.sizes()
        return None if sizes is None else key in sizes

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

    def sizes(self) -> dict[str, int]:
        out = {}
        for folder, _, files in os.walk(self.root):
            for name in files:
                if not name.endswith(".shardwright-tmp"):
                    path = Path(folder) / name
                    out[str(path.relative_to(self.root))] = path.stat().st_size
        return out

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

    def sizes(self) -> dict[str, int]:
        return {
            k[2:]: len(v.to_bytes()) for k, v in self.store._store_dict.items() if k[:2] == "a/"
        }

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

    def _objects(self, field: str = "ETag") -> dict[str, Any]:
        out = {}
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + "/"):
            for item in page.get("Contents", []):
                out[item["Key"][len(self.prefix) + 1 :]] = item[field]
        return out

    def sizes(self) -> dict[str, int]:
        return self._objects("Size")

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
