"""``Array``, ``open`` and ``create``: the entry points of the Python API."""

from __future__ import annotations

import json
import math
import operator
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _core, _pipeline
from ._domain import Domain
from ._errors import (
    ArrayNotFoundError,
    BoundsError,
    DTypeError,
    ShapeError,
    ShardwrightError,
    UnsupportedError,
)
from ._indexing import parse_key
from ._location import resolve
from ._txn import Transaction
from ._writer import ShardWriter

Within = Domain | tuple[slice, ...] | None


def _numpy_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError as err:
        raise UnsupportedError(f"data type '{name}' has no numpy equivalent here") from err


class Array:
    """A sharded (or unsharded) Zarr v3 array on a local filesystem, opened for writing
    shard by shard and reading back. Get one from :func:`open` or :func:`create`.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(100, 60), dtype="float32",
    ...               chunks=(10, 10), shards=(50, 30), fill_value=-1)
    >>> a.shape, a.dtype, a.ndim, a.chunks, a.shards, float(a.fill_value)
    ((100, 60), dtype('float32'), 2, (10, 10), (50, 30), -1.0)
    >>> len(list(a.iter_shards())), len(list(a.iter_chunks(within=sw.Domain((0, 0), (11, 1)))))
    (4, 2)
    """

    def __init__(self, core: Any) -> None:
        self._core = core
        self._shape = tuple(core.shape)
        self._dtype = _numpy_dtype(core.dtype)
        self._chunks = tuple(core.chunks)
        shards = core.shards
        self._shards = None if shards is None else tuple(shards)
        self._shard_shape = tuple(core.shard_shape)
        self._fill_value = np.frombuffer(core.fill_value_bytes, dtype=self._dtype)[0]

    @property
    def path(self) -> Path | str:
        """The array's folder (a ``Path``), or its URL (a ``str``) in an object store."""
        root = self._core.root
        return Path(root) if root is not None else self._core.url

    @property
    def url(self) -> str:
        """The array's URL: ``file:///…`` for a local folder, the object-store URL, or,
        for an array on a zarr-python store through the adapter, a name for it (the
        store's ``str`` and the path: not something :func:`open` takes back)."""
        root = self._core.root
        return Path(root).absolute().as_uri() if root is not None else self._core.url

    @property
    def shape(self) -> tuple[int, ...]:
        """The array shape."""
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the elements."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._shape)

    @property
    def fill_value(self) -> np.generic:
        """The fill value, as a numpy scalar of :attr:`dtype`."""
        return self._fill_value

    @property
    def chunks(self) -> tuple[int, ...]:
        """The inner chunk shape (the chunk shape, for an unsharded array)."""
        return self._chunks

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape, or ``None`` for an unsharded array."""
        return self._shards

    @property
    def metadata(self) -> dict[str, Any]:
        """The array's ``zarr.json`` as a dict."""
        return json.loads(self._core.metadata_json)

    def _within(self, within: Within) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        if within is None:
            return None
        if not isinstance(within, Domain):
            within = Domain.from_slices(
                within if isinstance(within, tuple) else (within,), self._shape
            )
        if within.ndim != self.ndim:
            raise ShapeError(f"within has rank {within.ndim}, the array {self.ndim}")
        # Clip to the array here (exact integers): the cells met are the same, and the
        # engine never sees coordinates past the array (whose sums could overflow u64).
        inside = within.intersect(Domain((0,) * self.ndim, self._shape))
        if inside is None:
            return (0,) * self.ndim, (0,) * self.ndim
        return inside.origin, inside.shape

    def iter_shards(self, within: Within = None) -> Iterator[Domain]:
        """The shards (for an unsharded array, the chunks) in C order, clipped to the
        array; with ``within`` (a Domain or a tuple of slices), only those that meet it
        (clipped to the array, not to ``within``).

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(10, 10), dtype="uint8",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> [s.index for s in a.iter_shards(within=(slice(3, 5), slice(0, 1)))]
        [(0, 0), (1, 0)]
        >>> list(a.iter_shards())[-1]
        Domain(origin=(8, 8), shape=(2, 2))
        """
        make = Domain._from_grid
        for origin, shape, index in self._core.iter_shards(self._within(within)):
            yield make(origin, shape, index)

    def iter_chunks(self, within: Within = None) -> Iterator[Domain]:
        """The inner chunks in C order, clipped to the array; ``within`` as in
        :meth:`iter_shards`.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/c.zarr", shape=(5,), dtype="uint8",
        ...               chunks=(2,), shards=(4,))
        >>> [(c.origin, c.shape, c.index) for c in a.iter_chunks()]
        [((0,), (2,), (0,)), ((2,), (2,), (1,)), ((4,), (1,), (2,))]
        """
        make = Domain._from_grid
        for origin, shape, index in self._core.iter_chunks(self._within(within)):
            yield make(origin, shape, index)

    def _check_shard_index(self, index: tuple[int, ...]) -> None:
        if len(index) != self.ndim:
            raise BoundsError(f"shard index {index} does not have the array's rank {self.ndim}")
        grid = tuple(-(-n // s) for n, s in zip(self._shape, self._shard_shape))
        if any(not 0 <= i < g for i, g in zip(index, grid)):
            raise BoundsError(f"shard index {index} is outside the shard grid {grid}")

    def _shard_index(self, shard: Domain | Sequence[int]) -> tuple[int, ...]:
        if isinstance(shard, Domain):
            # Derive the index from the box (a Domain's own index may be that of another
            # grid, e.g. an inner chunk's), then check the box is that shard.
            if shard.ndim != self.ndim:
                raise BoundsError(f"{shard!r} does not have the array's rank {self.ndim}")
            index = tuple(o // s for o, s in zip(shard.origin, self._shard_shape))
            self._check_shard_index(index)
            expected = Domain(*self._core.shard(list(index)))
            if expected != shard:
                raise BoundsError(f"{shard!r} is not a shard; the shard there is {expected!r}")
            return index
        index = tuple(shard)
        self._check_shard_index(index)
        return index

    def write_shard(
        self,
        shard: Domain | Sequence[int],
        *,
        max_in_flight: int | None = None,
        retries: int = 10,
        overwrite_corrupt: bool = False,
    ) -> ShardWriter:
        """A :class:`ShardWriter` for ``shard``: a Domain from :meth:`iter_shards` or a
        shard grid index. Use it as a (sync or async) context manager: the shard is
        stored with one put when the block exits, and nothing is stored if it raises.

        ``w[region] = data`` also takes any region inside the shard; inner chunks covered
        only in part are completed at commit from the stored shard, which is then read
        once. Such a merge is conditional: if another writer changed the shard meanwhile,
        it is re-read and re-merged, up to ``retries`` times, then :class:`ConflictError`.
        ``overwrite_corrupt=True`` rewrites a stored shard whose index is corrupt (or a
        partly rewritten inner chunk that does not decode) from the staged data and the
        fill value instead of raising :class:`CorruptShardError`. ``max_in_flight`` bounds
        the raw chunks waiting for the encoders (default: twice the encoder threads).

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/w.zarr", shape=(8, 8), dtype="uint16",
        ...               chunks=(4, 4), shards=(8, 8))
        >>> with a.write_shard((0, 0)) as w:
        ...     w[2:6, 3] = np.arange(4, dtype="uint16")   # a region, not chunk-aligned
        >>> w.stats["chunks_partial"], a[2:6, 3].tolist()
        (2, [0, 1, 2, 3])
        """
        index = self._shard_index(shard)
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        if retries < 0:
            raise ValueError(f"retries must not be negative, got {retries}")
        core = self._core.shard_writer(list(index), max_in_flight, retries, overwrite_corrupt)
        return ShardWriter(core, self._dtype, self._shape)

    def transaction(
        self,
        memory_limit: int | None = None,
        early_commit: bool = False,
        *,
        retries: int = 10,
        overwrite_corrupt: bool = False,
    ) -> Transaction:
        """A :class:`Transaction`: write any regions (``tx[key] = data``), read them back
        (``tx[key]``), and store every touched shard once when the block exits. See
        :class:`Transaction` for ``memory_limit`` and ``early_commit``.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/x.zarr", shape=(6, 6), dtype="uint8",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> with a.transaction(memory_limit=1 << 20) as tx:
        ...     tx[1:5, 1:5] = 7
        >>> tx.stats["shards_written"], int(a[4, 4])
        (4, 7)
        """
        core = self._core.transaction(memory_limit, early_commit, retries, overwrite_corrupt)
        return Transaction(
            core, self._shape, self._dtype, self._shard_index, limited=memory_limit is not None
        )

    def read(self, region: Domain) -> np.ndarray:
        """The elements of ``region`` as a new numpy array of its shape.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/r.zarr", shape=(4, 4), dtype="int8",
        ...               chunks=(2, 2), fill_value=3)
        >>> a.read(sw.Domain((1, 1), (2, 3))).tolist()
        [[3, 3, 3], [3, 3, 3]]
        """
        flat = self._core.read(list(region.origin), list(region.shape))
        return flat.view(self._dtype).reshape(region.shape)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The whole array, read (``np.asarray(a)``, ``np.sum(a)``), as zarr-python does.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(4,), dtype="int8", chunks=(2,))
        >>> a.map_chunks(lambda c: c.index[0] + 1)["puts"]
        2
        >>> np.asarray(a).tolist(), int(np.sum(a))
        ([1, 1, 2, 2], 6)
        """
        if copy is False:
            raise ValueError("reading a shardwright Array always makes a new array (copy=False)")
        data = self[...]
        return data if dtype is None else data.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> np.ndarray:
        """Read with numpy basic indexing (integers, slices, Ellipsis): ``a[3, 0:8, :]``.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/g.zarr", shape=(4, 6), dtype="int32",
        ...               chunks=(2, 3), shards=(4, 6))
        >>> _ = a.map_chunks(lambda c: np.arange(c.size, dtype="int32").reshape(c.shape))
        >>> a[1, ::2].tolist(), a[..., -1].shape
        ([3, 5, 4], (4,))
        """
        region, local = parse_key(key, self._shape)
        return self.read(region)[local]

    def map_chunks(
        self,
        fn: Callable[[Domain], Any],
        within: Within = None,
        workers: int | None = None,
        progress: bool | Callable[[dict[str, Any]], Any] = False,
        *,
        threads: int = 1,
    ) -> dict[str, Any]:
        """Fill the array (or the shards meeting ``within``) chunk by chunk: ``fn(chunk)``
        returns the data of each inner chunk (an array of ``chunk.shape`` or a scalar).
        By default ``fn`` runs on the calling thread, chunk after chunk; encoding runs on
        all cores; each finished shard is stored (one put) on a background thread while
        the next one fills, with at most ``workers`` shards in flight (default 2). Returns
        summed stats plus ``shards_written`` and ``seconds``.

        ``threads=N`` (N > 1) runs ``fn`` on N threads instead, each filling a shard of
        its own and storing it when full (so N shards are in flight; ``workers`` is not
        used). Only for an ``fn`` that is safe to call from several threads at once
        (numpy releases the GIL in its loops, so numpy-heavy ``fn`` gain most); it is
        how the computation, not only the compression, uses every core. Chunks of one
        shard are still filled in C order by one thread.

        ``progress``: ``True`` shows a progress bar on stderr (tqdm when installed; else
        one line, redrawn on a terminal and one line per second otherwise); a callable
        receives a dict per stored shard (``done``, ``total``, ``bytes``, ``shard``).

        If ``fn`` raises, the shard being filled is not stored; shards already complete
        are, and the error's notes say how many. If a background commit fails, no further
        shard is started and its error is raised with a note naming the shard. When
        both happen, or several commits fail, the errors come together in an
        ``ExceptionGroup`` (``except*`` matches each), each naming its shard.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/m.zarr", shape=(6, 6), dtype="int32",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> stats = a.map_chunks(lambda c: c.index[0] * 10 + c.index[1])
        >>> stats["shards_written"], stats["puts"], int(a[5, 3])
        (4, 4, 21)
        """
        return _pipeline.map_chunks(
            self,
            self.iter_shards(within),
            fn,
            workers=workers,
            progress=progress,
            threads=threads,
        )

    def __repr__(self) -> str:
        return (
            f"<shardwright.Array {str(self.path)!r} shape={self._shape} dtype={self._dtype} "
            f"chunks={self._chunks} shards={self._shards}>"
        )


def open(
    target: str | os.PathLike[str] | Any,
    *,
    path: str | None = None,
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
    may also be a zarr-python store itself, with ``path`` the array's path in it.
    ``storage_options``: object_store configuration keys (``endpoint``,
    ``region``, ``access_key_id``, ``secret_access_key``, ``allow_http``, …; values are
    turned into strings); what is not given comes from the environment (``AWS_*``, …).
    Raises :class:`ArrayNotFoundError` (a ``FileNotFoundError``) when there is no
    ``zarr.json``, :class:`UnsupportedError` naming an unsupported codec, data type or
    URL scheme.

    >>> import tempfile, shardwright as sw
    >>> path = tempfile.mkdtemp() + "/a.zarr"
    >>> _ = sw.create(path, shape=(4,), dtype="int16", chunks=(2,), shards=(4,))
    >>> sw.open(path).shape
    (4,)
    >>> _ = sw.create("memory:///doc/open.zarr", shape=(4,), dtype="int16", chunks=(2,))
    >>> sw.open("memory:///doc/open.zarr").url
    'memory:///doc/open.zarr'
    """
    where = resolve(target, storage_options, path)
    if where.store is not None:
        from ._adapter import StoreAdapter  # imports zarr, which shardwright does not need

        return Array(_core.Array.open_adapter(StoreAdapter(where.store), where.key, where.url))
    if where.url is not None:
        return Array(_core.Array.open_url(where.url, where.options))
    folder = where.path
    assert folder is not None
    if not (folder / "zarr.json").is_file():
        raise ArrayNotFoundError(f"no Zarr v3 array at '{folder}' (no zarr.json)")
    return Array(_core.Array.open(str(folder)))


def _dims(values: Sequence[int], what: str) -> list[int]:
    """``values`` as a list of extents in 0 .. 2**64, or a ShapeError naming them."""
    try:
        dims = [operator.index(v) for v in values]
    except TypeError as err:
        raise ShapeError(f"{what} must be a sequence of integers, got {values!r}") from err
    if any(not 0 <= d < 2**64 for d in dims):
        raise ShapeError(f"{what} must hold integers from 0 to 2**64 - 1, got {tuple(dims)}")
    return dims


def _same_number(value: Any, scalar: Any) -> bool:
    """Whether ``value`` is the number ``scalar`` (an exact integer, or a bool)."""
    try:
        given = np.asarray(value)
    except (ValueError, TypeError):
        return False
    if given.shape != () or given.dtype.kind not in "biuf":
        return False
    number = given.item()
    if isinstance(number, float) and not number.is_integer():
        return False
    return int(number) == int(scalar)


def _fill_json(value: Any, dtype: np.dtype) -> Any:
    def number(x: float) -> Any:
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x

    try:
        scalar = np.asarray(value, dtype=dtype).item()
    except (OverflowError, ValueError, TypeError) as err:
        raise DTypeError(f"fill value {value!r} is not a {dtype}") from err
    if dtype.kind in "biu" and not _same_number(value, scalar):
        # numpy casts 1.5 to 1 and 300 to 44 for uint8 without a word: the array would
        # say something else than what was asked.
        raise DTypeError(f"fill value {value!r} is not a {dtype}: it would be stored as {scalar!r}")
    if dtype.kind == "b":
        return bool(scalar)
    if dtype.kind in "iu":
        return int(scalar)
    if dtype.kind == "f":
        return number(float(scalar))
    if dtype.kind == "c":
        return [number(scalar.real), number(scalar.imag)]
    raise UnsupportedError(f"data type {dtype}")


def create(
    target: str | os.PathLike[str] | Any,
    *,
    shape: Sequence[int],
    dtype: Any,
    chunks: Sequence[int],
    shards: Sequence[int] | None = None,
    fill_value: Any = 0,
    compressor: str | None = "zstd",
    compression_level: int | None = None,
    index_location: str = "end",
    dimension_names: Sequence[str] | None = None,
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
    the level. ``chunks`` is the inner chunk shape; ``shards`` a multiple of it.
    ``overwrite=True`` removes whatever is at ``target`` first (never a whole bucket or
    store root). ``storage_options`` as for :func:`open`.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(64, 64), dtype="uint16",
    ...               chunks=(16, 16), shards=(32, 32), compressor="blosc")
    >>> a.metadata["codecs"][0]["configuration"]["codecs"][1]["name"]
    'blosc'
    """
    np_dtype = np.dtype(dtype)
    if np_dtype.kind not in "biufc" or np_dtype.hasobject:
        raise UnsupportedError(f"data type {np_dtype} (fixed-size numeric or bool only)")
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
    json_text = _core.Array.spec_json(
        _dims(shape, "shape"),
        np_dtype.name,
        _dims(chunks, "chunks"),
        None if shards is None else _dims(shards, "shards"),
        json.dumps(_fill_json(fill_value, np_dtype)),
        "none" if compressor is None else str(compressor),
        compression_level,
        index_location,
        None if dimension_names is None else [str(n) for n in dimension_names],
    )
    where = resolve(target, storage_options, path)
    if where.store is not None:
        from ._adapter import StoreAdapter  # imports zarr, which shardwright does not need

        adapter = StoreAdapter(where.store)
        if overwrite:
            adapter.delete_dir(where.key)
        return Array(_core.Array.create_adapter(adapter, where.key, json_text, where.url))
    if where.url is not None:
        return Array(_core.Array.create_url(where.url, json_text, where.options, bool(overwrite)))
    folder = where.path
    assert folder is not None
    if (folder / "zarr.json").exists() and not overwrite:
        raise ShardwrightError(f"an array already exists at '{folder}' (use overwrite=True)")
    if overwrite and folder.exists():
        shutil.rmtree(folder)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        core = _core.Array.create(str(folder), json_text)
    except BaseException:
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return Array(core)
