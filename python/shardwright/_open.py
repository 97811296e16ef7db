"""``open`` and ``create``: where an :class:`Array` comes from."""

from __future__ import annotations

import contextlib
import json
import math
import operator
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _core
from ._array import Array
from ._dtypes import dtype_of, spec_of
from ._errors import (
    ArrayNotFoundError,
    NotAnArrayError,
    ShapeError,
    ShardwrightError,
    UnsupportedError,
)
from ._fill import fill_value_json
from ._location import Location, resolve
from ._metadata import attributes_json, compressor_setting


def open(
    target: str | os.PathLike[str] | Any,
    *,
    path: str | None = None,
    mode: str = "r+",
    storage_options: Mapping[str, Any] | None = None,
) -> Array:
    """Open an existing Zarr v3 array: a local path to the array's folder (or a
    ``file://`` URL), an object-store URL (``s3://bucket/path``, ``gs://…``, ``az://…``,
    ``memory:///path`` for the process's in-memory store), or a ``zarr.Array`` on a
    ``LocalStore`` or on zarr-python's ``ObjectStore`` over obstore's ``S3Store``,
    ``GCSStore``, ``AzureStore`` or ``LocalStore`` (opened natively, with the same bucket,
    prefix and config), or on any other zarr-python store (``MemoryStore``,
    ``FsspecStore``, an Icechunk session's store, a ``WrapperStore``…: the engine calls
    the store's own ``get`` / ``set`` / ``delete`` on zarr-python's event loop). ``target``
    may also be a zarr-python store itself, with ``path`` the array's path in it; for a
    path or URL, ``path`` is joined onto it (``sw.open(root, path="raw")``).
    ``mode``: ``"r+"`` (default: read and write) or ``"r"`` (read-only: writers,
    transactions, assignments, resizes and attribute changes raise
    :class:`ReadOnlyError`). ``storage_options``: object_store configuration keys
    (``endpoint``, ``region``, ``access_key_id``, ``secret_access_key``, ``allow_http``,
    …, in any case, with or without the service's prefix: ``AWS_REGION`` is ``region``;
    values are turned into strings); what is not given comes from the environment
    (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``, as object_store reads it; options win).
    Raises :class:`ArrayNotFoundError` (a ``FileNotFoundError``) when there is no
    ``zarr.json``, :class:`NotAnArrayError` (one) for a Zarr group, naming the arrays it
    holds, or a Zarr v2 array, :class:`UnsupportedError` naming an unsupported
    codec, data type or URL scheme.

    >>> import tempfile, shardwright as sw
    >>> path = tempfile.mkdtemp() + "/a.zarr"
    >>> _ = sw.create(path, shape=(4,), dtype="int16", chunks=(2,), shards=(4,))
    >>> sw.open(path).shape
    (4,)
    >>> try:
    ...     sw.open(path, mode="r")[:] = 1
    ... except sw.ReadOnlyError as err:
    ...     print(str(err).split(";")[0])  # doctest: +ELLIPSIS
    assignment: the array '...a.zarr' is read-only (opened with mode='r', or ...)
    >>> _ = sw.create("memory:///doc/open.zarr", shape=(4,), dtype="int16", chunks=(2,))
    >>> sw.open("memory:///doc/open.zarr").url
    'memory:///doc/open.zarr'
    """
    if mode not in ("r", "r+"):
        raise ValueError(
            f"mode must be 'r' (read-only) or 'r+' (read and write), got {mode!r}; "
            "sw.create makes new arrays"
        )
    read_only = mode == "r"
    read_only = read_only or bool(getattr(getattr(target, "store", None), "read_only", False))
    return open_at(resolve(target, storage_options, path), read_only)


def open_at(where: Location, read_only: bool = False) -> Array:
    """The array at ``where`` (a resolved :class:`Location`); what :func:`open` does once
    it knows where, and how a pickled :class:`Array` is opened again (``_reopen.py``).

    >>> import tempfile, shardwright as sw
    >>> from shardwright._location import resolve
    >>> path = tempfile.mkdtemp() + "/p.zarr"
    >>> _ = sw.create(path, shape=(4,), dtype="int8", chunks=(2,))
    >>> open_at(resolve(path, None), read_only=True).read_only
    True
    """
    if where.store is not None:
        from ._adapter import StoreAdapter  # imports zarr, which shardwright does not need

        read_only = read_only or bool(getattr(where.store, "read_only", False))
        with _group_error(where.url or ""):
            core = _core.Array.open_adapter(StoreAdapter(where.store), where.key, where.url)
        return Array(core, read_only=read_only, where=where)
    if where.url is not None:
        with _group_error(where.url):
            core = _core.Array.open_url(where.url, where.options)
        return Array(core, read_only=read_only, where=where)
    folder = where.path
    assert folder is not None
    _refuse_what_is_not_an_array(folder)
    return Array(_core.Array.open(str(folder)), read_only=read_only, where=where)


@contextlib.contextmanager
def _group_error(where: str) -> Iterator[None]:
    """The engine's refusal of a group's ``zarr.json`` as a :class:`NotAnArrayError`."""
    try:
        yield
    except ShardwrightError as err:
        if "is a Zarr group, not an array" in str(err):
            raise NotAnArrayError(
                f"'{where}' is a Zarr group, not an array: open one of its arrays with path='…'"
            ) from err
        raise


def not_a_folder(path: Path) -> NotAnArrayError:
    """The error for a file (a TIFF, say) named where an array's folder was expected, with
    how a TIFF converts.

    >>> print(not_a_folder(Path("stack.tif")))  # doctest: +ELLIPSIS
    'stack.tif' is a file, not a Zarr array (a folder holding zarr.json or .zarray); ...
    """
    return NotAnArrayError(
        f"'{path}' is a file, not a Zarr array (a folder holding zarr.json or .zarray); a "
        "TIFF converts with sw.convert(path, dest) (sw.copy and sw.pyramid read TIFFs too)"
    )


def _refuse_what_is_not_an_array(folder: Path) -> None:
    """A clear error for a local folder holding no Zarr v3 array: a group (naming its
    arrays), a Zarr v2 array or group, a file, or nothing."""
    if folder.is_file():
        raise not_a_folder(folder)
    metadata = folder / "zarr.json"
    if metadata.is_file():
        try:
            node = json.loads(metadata.read_text()).get("node_type")
        except (ValueError, AttributeError, OSError):
            return  # the engine names what is wrong with it
        if node == "group":
            arrays = _arrays_in(folder)
            held = ", ".join(repr(a) for a in arrays[:12]) + (" …" if len(arrays) > 12 else "")
            hint = (
                f"it holds the arrays {held}: open one with sw.open({str(folder)!r}, "
                f"path={arrays[0]!r})"
                if arrays
                else "it holds no arrays"
            )
            raise NotAnArrayError(f"'{folder}' is a Zarr group, not an array; {hint}")
        return
    if (folder / ".zarray").is_file() or (folder / ".zgroup").is_file():
        what = "array" if (folder / ".zarray").is_file() else "group"
        raise NotAnArrayError(
            f"'{folder}' is a Zarr v2 {what}: Zarr v2 is not supported for writing; convert "
            f"it with `shardwright copy {folder} NEW.zarr` (or sw.copy), which writes a "
            "sharded Zarr v3 array"
        )
    raise ArrayNotFoundError(f"no Zarr v3 array at '{folder}' (no zarr.json)")


def _arrays_in(group: Path, depth: int = 3) -> list[str]:
    """The paths of the Zarr v3 arrays below ``group`` (a few levels deep), sorted."""
    found: list[str] = []

    def visit(folder: Path, prefix: str, left: int) -> None:
        try:
            children = sorted(p for p in folder.iterdir() if p.is_dir())
        except OSError:
            return
        for child in children:
            name = f"{prefix}{child.name}"
            try:
                node = json.loads((child / "zarr.json").read_text()).get("node_type")
            except (ValueError, AttributeError, OSError):
                continue
            if node == "array":
                found.append(name)
            elif node == "group" and left > 1:
                visit(child, name + "/", left - 1)

    visit(group, "", depth)
    return sorted(
        found, key=lambda p: [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in p.split("/")]
    )


def _dims(values: Sequence[int], what: str, least: int = 0) -> list[int]:
    """``values`` as a list of extents in ``least`` .. 2**64, or a ShapeError naming them
    (chunks and shards have no zero extent: ``least=1``)."""
    try:
        dims = [operator.index(v) for v in values]
    except TypeError as err:
        raise ShapeError(f"{what} must be a sequence of integers, got {values!r}") from err
    if any(not least <= d < 2**64 for d in dims):
        raise ShapeError(
            f"{what} must hold integers from {least} to 2**64 - 1, got {tuple(dims)}"
            + (" (a chunk or shard has no zero extent)" if least else "")
        )
    return dims


def _grid(values: Any, what: str) -> tuple[list[int], list[int | list[int]] | None]:
    """``chunks`` or ``shards`` as the first cell's extents, and, where a dimension lists
    its cells' extents (a rectilinear grid, as zarr-python's ``chunks=[[4, 6], 12]``), every
    dimension's (an extent, or the list); ``None`` for a regular grid."""
    try:
        items = list(values)
    except TypeError as err:
        raise ShapeError(f"{what} must be a sequence of integers, got {values!r}") from err
    if not any(isinstance(v, (list, tuple)) or hasattr(v, "__len__") for v in items):
        return _dims(items, what, least=1), None
    cells: list[int | list[int]] = []
    for axis, v in enumerate(items):
        if isinstance(v, (list, tuple)) or hasattr(v, "__len__"):
            edges = _dims(v, f"{what}[{axis}]", least=1)
            if not edges:
                raise ShapeError(
                    f"{what}[{axis}] lists no extent: a dimension has one cell or more"
                )
            cells.append(edges)
        else:
            cells.append(_dims([v], what, least=1)[0])
    first = [c[0] if isinstance(c, list) else c for c in cells]
    return first, cells


class _Unset:
    """The default of an argument not given."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET = _Unset()


def _compression(
    compressor: str | _Unset | None, compressors: Any, level: int | None, itemsize: int
) -> tuple[str, int | None]:
    """The compressor's name and level from ``create``'s ``compressor`` (shardwright's
    name) or ``compressors`` (zarr-python's), and ``compression_level``."""
    if not isinstance(compressor, _Unset) and not isinstance(compressors, _Unset):
        raise ValueError("give compressor= or compressors=, not both")
    if not isinstance(compressors, _Unset):
        name, codec_level = compressor_setting(compressors, itemsize)
        if codec_level is not None and level is not None and codec_level != level:
            raise ValueError(
                f"compression_level={level} contradicts the codec's level {codec_level}"
            )
        return name, level if level is not None else codec_level
    if isinstance(compressor, _Unset):
        return "zstd", level
    return ("none" if compressor is None else str(compressor)), level


def create(
    target: str | os.PathLike[str] | Any,
    *,
    shape: Sequence[int],
    dtype: Any,
    chunks: Sequence[int],
    shards: Sequence[int] | None = None,
    fill_value: Any = None,
    compressor: str | _Unset | None = _UNSET,
    compression_level: int | None = None,
    index_location: str = "end",
    dimension_names: Sequence[str] | None = None,
    attributes: Mapping[str, Any] | None = None,
    compressors: Any = _UNSET,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    path: str | None = None,
) -> Array:
    """Create a Zarr v3 array at ``target`` (a local path, a URL, or a zarr-python store
    with ``path`` the array's path in it; see :func:`open`) and open it. The ``zarr.json`` is what
    zarr-python writes for the same settings: ``bytes`` + the compressor inside
    ``sharding_indexed`` (when ``shards`` is given), a ``bytes`` + ``crc32c`` index.

    ``compressor``: ``"zstd"`` (default, level 0 = zstd's default), ``"blosc"`` (zstd
    inside, level 5), ``"gzip"`` (level 5) or ``None``; ``compression_level`` overrides
    the level. ``compressors`` (instead, zarr-python's name): the same, or a zarr-python
    codec object (``zarr.codecs.ZstdCodec(level=3)``, ``BloscCodec(cname="zstd")``,
    ``GzipCodec``), or a list of one; settings shardwright would not write as given are
    refused. ``chunks`` is the inner chunk shape; ``shards`` a multiple of it. A rectilinear
    grid (zarr-python 3.4's, no config flag needed): ``shards=[[4, 6], 12]`` lists the
    shard extents along a dimension (each a multiple of the chunk's, adding up to the
    shape) and a bare number keeps that dimension regular; unsharded, ``chunks=[[4, 6],
    [5, 7]]`` lists the chunks' extents (see :attr:`Array.write_chunk_sizes`).
    ``dtype``: a number or bool dtype, ``M8[unit]`` / ``m8[unit]`` (any unit and scale,
    as ``numpy.datetime64`` / ``numpy.timedelta64``), ``U<n>`` (``fixed_length_utf32``),
    ``S<n>`` (``null_terminated_bytes``) or ``V<n>`` (``raw_bytes``), stored as
    zarr-python stores them; variable-length (``str``, ``object``) and structured
    dtypes are refused with :class:`UnsupportedError`. ``fill_value``: a value of the
    dtype (``"NaT"``, ``"2020-01-01"``, ``"ab"``, ``b"ab"``…); ``None`` (default): the
    dtype's default as zarr-python's (0, false, NaT, ``""``, zero bytes).
    ``attributes``: user attributes (JSON values) for ``zarr.json``; ``dimension_names``:
    one name per dimension.
    ``overwrite=True`` removes whatever is at ``target`` first (never a whole bucket or
    store root). ``storage_options`` as for :func:`open`.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(64, 64), dtype="uint16",
    ...               chunks=(16, 16), shards=(32, 32), compressor="blosc")
    >>> a.metadata["codecs"][0]["configuration"]["codecs"][1]["name"]
    'blosc'
    >>> t = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(3,), dtype="M8[s]", chunks=(3,))
    >>> t[1] = "2020-01-01"
    >>> t.dtype, t[...].astype(str).tolist()
    (dtype('<M8[s]'), ['NaT', '2020-01-01T00:00:00', 'NaT'])
    """
    np_dtype = dtype_of(dtype)
    name, level = _compression(compressor, compressors, compression_level, np_dtype.itemsize)
    data_type = spec_of(np_dtype)
    if dimension_names is not None:
        if isinstance(dimension_names, str):
            raise ShapeError(
                f"dimension_names must be a sequence of names, one per dimension, got the "
                f"string {dimension_names!r}"
            )
        if len(dimension_names) != len(shape):
            raise ShapeError(
                f"dimension_names has {len(dimension_names)} names {tuple(dimension_names)} "
                f"for a {len(shape)}-dimensional shape {tuple(shape)}"
            )
    # Check every setting before touching the folder: a refused create (even with
    # overwrite=True) leaves whatever was there as it was.
    # a list of extents for a dimension makes the grid (the shards; the chunks when
    # unsharded) rectilinear
    chunk_dims, chunk_cells = _grid(chunks, "chunks")
    shard_dims, shard_cells = (None, None) if shards is None else _grid(shards, "shards")
    if chunk_cells is not None and shards is not None:
        raise ShapeError(
            f"chunks {chunks!r} list extents (a rectilinear grid) and shards are given: "
            "with sharding the inner chunks are regular; give the shards as lists instead "
            "(chunks=(2, 2), shards=[[4, 6], [6, 6]])"
        )
    dims = (_dims(shape, "shape"), chunk_dims, shard_dims)
    for what, given in (("chunks", dims[1]), ("shards", dims[2])):
        if given is not None and len(given) != len(dims[0]):
            raise ShapeError(
                f"{what} {tuple(given)} must have the array's rank {len(dims[0])} "
                f"(shape {tuple(dims[0])})"
            )
    fill_json = json.dumps(fill_value_json(fill_value, np_dtype))
    try:
        json_text = _core.Array.spec_json(
            dims[0],
            data_type,
            dims[1],
            dims[2],
            fill_json,
            name,
            level,
            index_location,
            None if dimension_names is None else [str(n) for n in dimension_names],
            None if attributes is None else attributes_json(attributes),
            shard_cells if shards is not None else chunk_cells,
        )
    except ShardwrightError as err:
        # The engine says "invalid zarr.json: ..." of metadata it was to write: here the
        # settings are at fault, not a file.
        text = str(err)
        if not text.startswith("invalid zarr.json: "):
            raise
        why = text.removeprefix("invalid zarr.json: ")
        raise type(err)(f"create: these settings make no valid array: {why}") from None
    where = resolve(target, storage_options, path)
    if where.store is not None:
        from ._adapter import StoreAdapter  # imports zarr, which shardwright does not need

        adapter = StoreAdapter(where.store)
        if overwrite:
            adapter.delete_dir(where.key)
        core = _core.Array.create_adapter(adapter, where.key, json_text, where.url)
        return Array(core, where=where)
    if where.url is not None:
        core = _core.Array.create_url(where.url, json_text, where.options, bool(overwrite))
        return Array(core, where=where)
    folder = where.path
    assert folder is not None
    if (folder / "zarr.json").exists() and not overwrite:
        raise ShardwrightError(f"an array already exists at '{folder}' (use overwrite=True)")
    if overwrite:
        # refuses '', '.', '/', the home folder and folders holding the current one
        _core.remove_folder_to_overwrite(str(folder))
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        core = _core.Array.create(str(folder), json_text)
    except BaseException:
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return Array(core, where=where)


def _auto_chunks(shape: Sequence[int], itemsize: int, shards: Sequence[int] | None) -> list[int]:
    """Chunks of about 1 MiB for ``chunks="auto"``: the shape (or the shard shape), its
    largest extent divided down until a chunk holds at most 1 MiB; with shards, each
    extent stays a divisor of the shard's.

    >>> _auto_chunks((4096, 4096), 2, None), _auto_chunks((3000, 3000), 4, (1000, 1000))
    ([512, 1024], [500, 500])
    """
    chunk = [max(1, int(n)) for n in (shards if shards is not None else shape)]
    while math.prod(chunk) * itemsize > 1 << 20 and max(chunk) > 1:
        axis = chunk.index(max(chunk))
        n = chunk[axis]
        if shards is None:
            chunk[axis] = -(-n // 2)
        else:
            factor = next(p for p in range(2, n + 1) if n % p == 0)
            chunk[axis] = n // factor
    return chunk


def create_array(
    store: str | os.PathLike[str] | Any,
    *,
    name: str | None = None,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    data: Any = None,
    chunks: Sequence[int] | str = "auto",
    shards: Sequence[int] | None = None,
    compressors: Any = "auto",
    fill_value: Any = None,
    attributes: Mapping[str, Any] | None = None,
    dimension_names: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    zarr_format: int = 3,
    filters: Any = None,
    order: str | None = None,
) -> Array:
    """:func:`create` with ``zarr.create_array``'s argument names: ``store`` (a path, URL
    or zarr-python store) and ``name`` (the array's path in it), ``chunks="auto"`` (about
    1 MiB, dividing ``shards``), ``compressors="auto"`` (zstd), ``fill_value=None``
    (the dtype's default), ``data=`` (an array whose shape and dtype are taken, written
    once created).
    What shardwright does not write is refused: ``zarr_format=2``, ``filters``, ``order="F"``.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create_array(tempfile.mkdtemp(), name="raw", data=np.arange(6, dtype="int32"),
    ...                     shards=(6,), attributes={"units": "nm"})
    >>> a.chunks, a[:].tolist(), a.attrs["units"]
    ((6,), [0, 1, 2, 3, 4, 5], 'nm')
    """
    if zarr_format != 3:
        raise UnsupportedError(f"zarr_format={zarr_format}: shardwright writes Zarr v3 only")
    if filters:
        raise UnsupportedError(f"filters {filters!r}: shardwright writes bytes + one compressor")
    if order not in (None, "C"):
        raise UnsupportedError(f"order={order!r}: shardwright writes C order only")
    values = None
    if data is not None:
        values = np.asarray(data)
        if shape is not None and tuple(shape) != values.shape:
            raise ShapeError(f"shape {tuple(shape)} contradicts data of shape {values.shape}")
        shape = values.shape
        dtype = values.dtype if dtype is None else dtype
    if shape is None or dtype is None:
        raise TypeError("create_array needs shape= and dtype= (or data=)")
    np_dtype = dtype_of(dtype)
    if isinstance(chunks, str):
        if chunks != "auto":
            raise ValueError(f"chunks must be a shape or 'auto', got {chunks!r}")
        chunks = _auto_chunks(_dims(shape, "shape"), np_dtype.itemsize, shards)
    array = create(
        store,
        path=name,
        shape=shape,
        dtype=np_dtype,
        chunks=chunks,
        shards=shards,
        fill_value=fill_value,
        compressors="zstd"
        if isinstance(compressors, str) and compressors == "auto"
        else compressors,
        attributes=attributes,
        dimension_names=dimension_names,
        storage_options=storage_options,
        overwrite=overwrite,
    )
    if values is not None and values.size:
        array[...] = values
    return array
