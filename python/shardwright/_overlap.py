"""Whether a source and a destination overlap, so that ``overwrite=True`` never deletes
the source it is about to read: both sides are resolved to a *place* (the storage they live
in and the parts of their path there) whatever they were given as: a path, a URL, a
``zarr.Array`` or zarr-python store, a shardwright ``Array``, a TensorStore or h5py dataset.
"""

from __future__ import annotations

import glob
import os
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._location import Location, resolve
from ._redact import redact

Place = tuple[str, ...]

# A place that holds data but cannot be named: a store of a kind shardwright cannot see
# into (compared only with the same store object), or an obstore LocalStore with a relative
# prefix (resolved by obstore against the folder current when it was made).
_OPAQUE = "opaque"


def _file(path: str | os.PathLike[str]) -> Place:
    """A local path's place: absolute, links resolved as far as it exists."""
    return ("file", *Path(os.path.realpath(os.fspath(path))).parts[1:])


def _parts(*texts: str) -> tuple[str, ...]:
    return tuple(p for t in texts for p in t.split("/") if p)


def _scheme(name: str) -> str:
    """A URL scheme, with the other spellings of a service as its main one."""
    name = name.lower()
    return {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az", "adl": "az", "azure": "az"}.get(
        name, name
    )


def _url(url: str) -> Place:
    """A URL's place: ``file://`` as the local path it names (links resolved), the other
    spellings of a service's URLs as its main one (``abfs://container@account…/``,
    ``https://bucket.s3…amazonaws.com/``, ``https://account.blob.core.windows.net/c/``,
    ``https://storage.googleapis.com/bucket/``).

    >>> _url("abfs://c@acct.dfs.core.windows.net/img") == _url("az://c/img")
    True
    >>> _url("https://b.s3.eu-west-1.amazonaws.com/img") == _url("s3://b/img")
    True
    """
    parts = urllib.parse.urlsplit(url)
    scheme, host = _scheme(parts.scheme), parts.hostname or ""
    path = _parts(urllib.parse.unquote(parts.path))
    if scheme == "file":
        return _file(urllib.request.url2pathname(parts.path) or "/")
    if scheme == "az" and "@" in parts.netloc:  # abfs://container@account.dfs…
        return ("az", parts.netloc.split("@", 1)[0], *path)
    if scheme in ("http", "https"):
        if host.endswith(".amazonaws.com"):
            first = host.split(".", 1)[0]
            if first == "s3" or first.startswith("s3-"):
                return ("s3", *path)  # path style: s3.region.amazonaws.com/bucket/key
            return ("s3", host.split(".s3", 1)[0], *path)  # virtual host style
        if host.endswith((".blob.core.windows.net", ".dfs.core.windows.net")):
            return ("az", *path)
        if host == "storage.googleapis.com":
            return ("gs", *path)
    return (scheme, *_parts(parts.netloc), *path)


def _store(store: Any, key: str) -> Place:
    """The place of ``key`` in a zarr-python store."""
    kind = type(store).__name__
    while kind != "LocalStore" and hasattr(store, "_store") and kind.endswith("WrapperStore"):
        store, kind = store._store, type(store._store).__name__
    if kind == "LocalStore" and hasattr(store, "root"):
        return _file(Path(store.root) / key)
    if kind == "MemoryStore":
        return ("zarr-memory", str(id(getattr(store, "_store_dict", store))), *_parts(key))
    if kind == "FsspecStore":
        fs = store.fs
        protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
        if "file" in protocols or "local" in protocols:
            return _file(Path(store.path) / key)
        base = _parts(str(store.path), key)
        if "memory" in protocols:
            return ("fsspec-memory", *base)
        return (_scheme(str(protocols[0])), *base)
    inner = getattr(store, "store", None)
    inner_kind = type(inner).__name__ if inner is not None else ""
    if kind == "ObjectStore" and inner_kind in ("S3Store", "GCSStore", "AzureStore"):
        config = dict(getattr(inner, "config", None) or {})
        bucket = config.get("bucket") or config.get("container_name") or ""
        scheme = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "az"}[inner_kind]
        return (scheme, *_parts(str(bucket), str(getattr(inner, "prefix", None) or ""), key))
    if kind == "ObjectStore" and inner_kind == "LocalStore":
        prefix = getattr(inner, "prefix", None)
        if prefix is None:
            return _file(Path("/") / key)
        if Path(prefix).is_absolute():
            return _file(Path(prefix) / key)
        return (_OPAQUE, f"obstore LocalStore({str(prefix)!r})", *_parts(key))
    return (_OPAQUE, f"{kind} {id(store)}", *_parts(key))


def _of_location(where: Location) -> Place:
    if where.store is not None:
        return _store(where.store, where.key)
    if where.url is not None:
        return _url(where.url)
    assert where.path is not None
    return _file(where.path)


def place_of(target: Any, storage_options: Mapping[str, Any] | None = None) -> Place | None:
    """Where ``target`` stores its data, or ``None`` for data held in memory (a numpy
    array, a dask array, a zarr ``MemoryStore``'s array is a place: the store object).

    >>> place_of("/data/a.zarr/0")
    ('file', 'data', 'a.zarr', '0')
    >>> place_of("s3a://bucket/img.zarr/"), place_of(__import__("numpy").zeros(3))
    (('s3', 'bucket', 'img.zarr'), None)
    """
    if _is_shardwright_array(target):
        if target._where is not None:
            return _of_location(target._where)
        return _file(target.path) if isinstance(target.path, Path) else _url(target.path)
    if isinstance(target, str | os.PathLike):
        url = isinstance(target, str) and "://" in target and not target.startswith("file://")
        return _of_location(resolve(target, storage_options if url else None))
    module = type(target).__module__
    if module.startswith("dask") and hasattr(target, "__dask_graph__"):
        return _of_dask(target)
    if module.startswith("zarr") and hasattr(target, "store") and hasattr(target, "path"):
        return _store(target.store, str(target.path))
    if any(c.__name__ == "Store" and c.__module__.startswith("zarr") for c in type(target).__mro__):
        return _store(target, "")
    if module.startswith("tensorstore"):
        url = str(target.kvstore.url)
        return None if url.startswith("memory:") else _url(url) if "://" in url else None
    filename = getattr(getattr(target, "file", None), "filename", None)
    if module.startswith("h5py") and isinstance(filename, str):
        return _file(filename)
    if hasattr(target, "store") and not module.startswith(("numpy", "dask")):
        return (_OPAQUE, f"{type(target).__name__} {id(target)}")
    return None


def _is_shardwright_array(target: Any) -> bool:
    cls = type(target)
    return cls.__name__ == "Array" and cls.__module__.startswith("shardwright")


def _of_dask(darr: Any) -> Place | None:
    """The place of the stored array a dask array reads (``da.from_array`` /
    ``da.from_zarr`` of a zarr, shardwright, TensorStore or h5py array: found among the
    graph's data nodes), ``None`` when it reads none; a graph too large to search is
    opaque."""
    found: list[Place] = []
    seen = 0
    for layer in darr.__dask_graph__().layers.values():
        mapping = getattr(layer, "mapping", None)
        if not isinstance(mapping, Mapping):
            continue  # a layer computed from its blocks: it holds no array object
        for value in mapping.values():
            seen += 1
            if seen > 100_000:
                return (_OPAQUE, f"a dask graph of over {seen - 1} tasks")
            held = getattr(value, "value", value)  # a DataNode holds its object
            if isinstance(held, tuple | list | dict) or not hasattr(held, "shape"):
                continue
            if type(held).__module__.startswith(("numpy", "dask")):
                continue
            place = place_of(held)
            if place is not None:
                found.append(place)
    if not found:
        return None
    if len(found) > 1 and any(f != found[0] for f in found):
        return (_OPAQUE, "a dask array reading several stored arrays")
    return found[0]


def _holds(a: Place, b: Place) -> bool:
    return a[: len(b)] == b or b[: len(a)] == a


def is_local_pattern(source: Any) -> bool:
    """Whether ``source`` is a local glob pattern (``*``, ``?`` or ``[`` in a path that does
    not exist as written), as TIFF sources may be.

    >>> is_local_pattern("slices/*.tif"), is_local_pattern("s3://b/a*"), is_local_pattern(3)
    (True, False, False)
    """
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or "://" in source:
        return False
    return any(c in source for c in "*?[") and not os.path.exists(source)


def pattern_root(pattern: str) -> str:
    """The folder every match of glob ``pattern`` lies in: the part before its first part
    with a wildcard.

    >>> pattern_root("acq/pos*/img.tif"), pattern_root("/d/s/*.tif"), pattern_root("*.tif")
    ('acq', '/d/s', '.')
    """
    head = pattern[: min(pattern.find(c) for c in "*?[" if c in pattern)]
    slash = head.rfind("/")
    return "/" if slash == 0 else head[:slash] if slash > 0 else "."


def refuse_overwriting_matches(pattern: Any, dest: Any, storage_options: Any) -> None:
    """Raise ``ValueError`` when ``dest`` is or holds a file the local glob ``pattern``
    matches, or the folder all its matches lie in (``overwrite=True`` would delete them
    before they are read); a destination beside the matches, even in their folder, is fine.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "a").mkdir(); (d / "a" / "1.tif").touch()
    >>> refuse_overwriting_matches(f"{d}/*/1.tif", d / "out.zarr", None)
    >>> refuse_overwriting_matches(f"{d}/*/1.tif", d / "a", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the source pattern '...' and the destination '...' overlap: ...
    """
    pattern = os.fspath(pattern)
    dst = place_of(dest, storage_options)
    if dst is None:
        return
    for target in [pattern_root(pattern), *glob.glob(pattern)]:
        held = place_of(target)
        if held is not None and held[: len(dst)] == dst:
            raise ValueError(
                f"the source pattern '{pattern}' and the destination '{_name(dest, dst)}' "
                f"overlap: the destination holds '{target}', which the pattern reads; "
                "overwrite=True would delete it before it is read; write to another place"
            )


def refuse_overwriting_the_source(
    source: Any, dest: Any, storage_options: Mapping[str, Any] | None, options_for: Any
) -> None:
    """Raise ``ValueError`` when ``dest`` is, holds or lies inside ``source`` (so that
    ``overwrite=True`` would delete the source before reading it), or when one of them is
    a store shardwright cannot see into and the two may share storage.

    ``options_for(target, storage_options)`` gives a side's own storage options.

    >>> refuse_overwriting_the_source("/d/img.zarr/raw", "/d/img.zarr", None, lambda t, o: o)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the source '/d/img.zarr/raw' and the destination '/d/img.zarr' overlap: ...
    """
    src = place_of(source, options_for(source, storage_options))
    dst = place_of(dest, options_for(dest, storage_options))
    if src is None or dst is None:
        return
    name = {id(source): _name(source, src), id(dest): _name(dest, dst)}
    if _holds(src, dst):
        raise ValueError(
            f"the source '{name[id(source)]}' and the destination '{name[id(dest)]}' "
            "overlap: overwrite=True would delete the source before it is read; write to "
            "another place"
        )
    opaque = [p for p in (src, dst) if p[0] == _OPAQUE]
    if opaque and not (src[:2] == dst[:2] or _kinds_differ(src, dst)):
        raise ValueError(
            f"cannot tell whether the source '{name[id(source)]}' and the destination "
            f"'{name[id(dest)]}' overlap ({opaque[0][1]} cannot be resolved to a folder or "
            "URL), so overwrite=True is refused: it could delete the source before it is "
            "read; remove the destination yourself, or give both as paths or URLs"
        )


def _kinds_differ(a: Place, b: Place) -> bool:
    """Whether two places cannot share storage: in-process memory stores of different
    kinds, or such a store and anything else."""
    memory = ("zarr-memory", "fsspec-memory")
    return a[0] in memory or b[0] in memory


def _name(target: Any, place: Place) -> str:
    if isinstance(target, str | os.PathLike):
        return redact(os.fspath(target))  # type: ignore[arg-type]
    if place[0] == "file":
        return "/" + "/".join(place[1:])
    if place[0] == _OPAQUE:
        return "/".join((place[1], *place[2:]))
    return f"{place[0]}://" + "/".join(place[1:])
