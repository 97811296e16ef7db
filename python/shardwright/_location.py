"""Where an array lives: a local folder, an object-store URL with its options, or the
store of a ``zarr.Array`` (a LocalStore, or zarr-python's ``ObjectStore`` over an obstore
S3, GCS, Azure or local store), resolved to what the engine opens natively."""

from __future__ import annotations

import datetime
import os
import re
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ._errors import UnsupportedError
from ._redact import redact


@dataclass(frozen=True)
class Location:
    """A local folder (``path``), an object-store ``url`` with its ``options``, or a
    zarr-python ``store`` (for the adapter) with the array's ``key`` in it (``url`` then
    names it in messages).

    >>> resolve("memory:///x.zarr", None)
    Location(path=None, url='memory:///x.zarr', key='')
    >>> resolve("s3://b/a", {"secret_access_key": "hush"}).options
    [('secret_access_key', 'hush')]
    >>> resolve("/data/a.zarr", None).path
    PosixPath('/data/a.zarr')
    """

    path: Path | None
    url: str | None
    options: list[tuple[str, str]] = field(default_factory=list, repr=False)  # credentials
    store: Any = field(default=None, repr=False)
    key: str = ""

    def child(self, name: str) -> Location:
        """The location of ``name`` below this one (a pyramid's level ``"0"``, …).

        >>> resolve("s3://b/img.zarr", None).child("1").url
        's3://b/img.zarr/1'
        >>> resolve("/data/img.zarr", None).child("0").path
        PosixPath('/data/img.zarr/0')
        """
        return Location(
            None if self.path is None else self.path / name,
            None if self.url is None else f"{self.url.rstrip('/')}/{name}",
            self.options,
            self.store,
            _join(self.key, name) if self.store is not None else self.key,
        )


def process_local(where: Location) -> str | None:
    """What keeps the array at ``where`` in this process's memory, which no other
    process (a Dask worker) shares, or None: object_store's ``memory:///`` store, or a
    zarr-python store that does (``_adapter.process_local``).

    >>> process_local(resolve("memory:///x.zarr", None))
    "object_store's memory:/// store"
    >>> process_local(resolve("s3://bucket/x.zarr", None)) is None
    True
    """
    if where.store is not None:
        from ._adapter import process_local as of_store  # a zarr store: zarr is installed

        return of_store(where.store)
    if where.url is not None and where.url.lower().startswith("memory:"):
        return "object_store's memory:/// store"
    return None


def refuse_to_pickle(what: str, kind: str) -> NoReturn:
    """The :class:`TypeError` for pickling ``what``, which is in ``kind`` (in this
    process's memory): a worker process would find nothing there."""
    raise TypeError(
        f"{what} cannot be pickled: it is in {kind}, in this process's memory, which a "
        "worker process does not share (it would find no array there); use the threaded "
        "or synchronous scheduler (nothing is pickled there), or a folder or object store "
        "every worker reaches"
    )


def refuse_process_local(where: Location, what: str) -> None:
    """Raise :class:`TypeError` if the array at ``where`` (``what``, in the message) is
    in this process's memory only (:func:`process_local`): what a task pickled for a
    worker process must never hold.

    >>> refuse_process_local(resolve("memory:///x.zarr", None), "the array")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: the array cannot be pickled: it is in object_store's memory:/// store, ...
    """
    if where.store is not None:
        from ._adapter import refuse_process_local as refuse_store

        refuse_store(where.store, what)
        return
    kind = process_local(where)
    if kind is not None:
        refuse_to_pickle(what, kind)


def _is_zarr_store(target: Any) -> bool:
    return any(
        c.__module__.startswith("zarr.abc.store") and c.__name__ == "Store"
        for c in type(target).__mro__
    )


def resolve(
    target: Any, storage_options: Mapping[str, Any] | None, path: str | None = None
) -> Location:
    """The location of ``target``: a path, a ``file://`` or object-store URL, a
    ``zarr.Array``, or a zarr-python store (with ``path``, the array's path in it; for a
    path or URL, ``path`` is joined onto it). A ``path`` with a ``.`` or ``..`` part is
    refused (zarr's rule): it could name a place outside the store.

    >>> resolve("/data", None, "a/../../etc")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: path 'a/../../etc' has a '.' or '..' part: ...
    """
    if path is not None and any(part in (".", "..") for part in str(path).split("/")):
        raise ValueError(
            f"path {path!r} has a '.' or '..' part: give the array's path inside the store "
            "as names separated by '/'"
        )
    if isinstance(target, str | os.PathLike):
        if path:
            target = f"{os.fspath(target).rstrip('/')}/{path.strip('/')}"
        url = _url_of(target)
        options = _options(storage_options, url)
        if url is not None:
            return Location(None, url, options)
        return Location(path_of(target), None, [])
    if storage_options:
        raise TypeError("storage_options are for URLs; a zarr store brings its own")
    if _is_zarr_store(target):
        return _of_zarr_store(target, (path or "").strip("/"))
    store = getattr(target, "store", None)
    if store is None or not hasattr(target, "path"):
        raise TypeError(
            f"expected a path, a URL, a zarr.Array or a zarr store, got {type(target).__name__}"
        )
    if path is not None:
        raise TypeError("path= is for a zarr store; a zarr.Array has its own")
    return _of_zarr_store(store, str(target.path))


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


def _of_zarr_store(store: Any, path: str) -> Location:
    """The native location of a zarr-python store and a path in it."""
    if getattr(store, "read_only", False):
        # The adapter calls the store's own methods, which refuse writes as it says.
        return _through_adapter(store, path)
    if type(store).__name__ == "LocalStore":  # zarr.storage.LocalStore (not a wrapper)
        return Location(Path(store.root) / path, None, [])
    inner = getattr(store, "store", None)
    kind = type(inner).__name__ if inner is not None else ""
    if type(store).__name__ == "ObjectStore" and kind in _OBSTORE_SCHEMES:
        if getattr(inner, "credential_provider", None) is not None:
            raise UnsupportedError(
                f"an obstore {kind} with a credential_provider (a Python callable cannot be "
                "handed to the engine); give the credentials as config or in the environment"
            )
        if kind == "LocalStore":
            # obstore resolves a relative prefix against the folder that was current when
            # the store was made, which is not known here: such a store is written
            # through its own methods (the adapter), never guessed at.
            root = getattr(inner, "prefix", None)
            if root is None:
                return Location(Path("/") / path, None, [])
            if not Path(root).is_absolute():
                return _through_adapter(store, path)
            return Location(Path(root) / path, None, [])
        prefix = str(getattr(inner, "prefix", None) or "")
        config = dict(getattr(inner, "config", None) or {})
        config.update(getattr(inner, "client_options", None) or {})
        scheme, bucket_key = _OBSTORE_SCHEMES[kind]
        bucket = config.pop(bucket_key, None)
        if not bucket:
            raise UnsupportedError(f"an obstore {kind} without a {bucket_key!r} in its config")
        key = urllib.parse.quote(_join(prefix, path), safe="/")
        url = f"{scheme}://{bucket}/{key}"
        return Location(None, url, _options(config, url))
    # Any other zarr-python store: through the adapter, on the store's own methods.
    return _through_adapter(store, path)


def _through_adapter(store: Any, path: str) -> Location:
    """The location of ``path`` in a zarr-python ``store`` reached through the adapter."""
    from ._adapter import store_name  # imports zarr (installed: this is a zarr store)

    return Location(None, f"{store_name(store).rstrip('/')}/{path}", store=store, key=path)


# obstore store classes: (URL scheme, the config key naming the bucket or container)
_OBSTORE_SCHEMES = {
    "S3Store": ("s3", "bucket"),
    "GCSStore": ("gs", "bucket"),
    "AzureStore": ("az", "container_name"),
    "LocalStore": ("file", ""),
}


_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")  # two letters at least: not "C://"


# URL schemes of the object-store backend (object_store's names).
OBJECT_STORE_SCHEMES = frozenset(
    {"s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "memory", "https", "http"}
)


def _url_of(target: Any) -> str | None:
    """The object-store URL ``target`` names, or None for a local path or ``file://``
    URL. An unknown scheme is refused (never taken for a local folder named ``ftp:``)."""
    if not isinstance(target, str):
        return None
    url = _URL.match(target)
    if url is None:
        return None
    scheme = url.group(1).lower()
    if scheme == "file":
        return None
    if scheme not in OBJECT_STORE_SCHEMES:
        known = ", ".join(sorted(OBJECT_STORE_SCHEMES))
        raise UnsupportedError(
            f"'{scheme}://' URLs are not supported (given {redact(target)!r}): shardwright "
            f"writes to local paths, file:// URLs and object stores ({known})"
        )
    return target


def _options(storage_options: Mapping[str, Any] | None, url: str | None) -> list[tuple[str, str]]:
    """``storage_options`` as object_store's (key, string value) pairs."""
    if not storage_options:
        return []
    if url is None:
        raise TypeError("storage_options are for object-store URLs (s3://, gs://, az://, ...)")
    if not isinstance(storage_options, Mapping):
        raise TypeError(f"storage_options must be a dict, got {type(storage_options).__name__}")

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, datetime.timedelta):
            return f"{value.total_seconds():g}s"  # object_store's durations: "30s"
        return str(value)

    return [(str(k), text(v)) for k, v in storage_options.items() if v is not None]


def path_of(target: str | os.PathLike[str]) -> Path:
    """A local path, from a path or a ``file://`` URL; any other URL is refused (never
    taken for a local folder named ``s3:``)."""
    text = os.fspath(target)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    url = _URL.match(text)
    if url is None:
        return Path(text)
    scheme = url.group(1).lower()
    if scheme == "file":
        parts = urllib.parse.urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            host = parts.netloc.rpartition("@")[2]
            raise UnsupportedError(
                f"file:// URL {redact(text)!r} names the host {host!r}; a local path is "
                "file:///absolute/path (three slashes) or file://localhost/absolute/path"
            )
        if parts.query or parts.fragment:
            raise UnsupportedError(
                f"file:// URL {redact(text)!r} has a query or fragment ('?', '#')"
            )
        return Path(urllib.request.url2pathname(parts.path))
    raise UnsupportedError(f"{redact(text)!r} is a '{scheme}://' URL, not a local path")
