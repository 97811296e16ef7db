"""``Array``: an opened array, its properties, reads, writers and edits."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _oneshot, _pipeline
from ._appending import Appending
from ._assign import write_key, write_orthogonal, write_points
from ._cells import Cells
from ._domain import Domain
from ._dtypes import numpy_dtype
from ._errors import (
    BoundsError,
    ReadOnlyError,
    ShapeError,
)
from ._indexing import is_plain
from ._lazy import OpensOnFirstUse
from ._metadata import (
    Attributes,
    new_shape,
)
from ._selectors import OIndex, VIndex, read_key
from ._txn import Transaction
from ._writer import ShardWriter
from ._zarr_names import ZarrNames

Within = Domain | tuple[slice, ...] | None


def _numpy_dtype(spec: str) -> np.dtype:
    """The numpy dtype of the engine's data type ``spec`` (see ``_dtypes``)."""
    return numpy_dtype(spec)


class Array(OpensOnFirstUse, ZarrNames, Appending):
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

    def __init__(self, core: Any, *, read_only: bool = False, where: Any = None) -> None:
        self._read_only = read_only
        # Why the shape may not change now (level 0 of an open image), or None.
        self._fixed_shape: str | None = None
        # Why the array is read-only, when not for the usual reasons.
        self._read_only_why: str | None = None
        # Where it was opened (a Location): how a pickled Array is opened again.
        self._where = where
        self._set_core(core)

    def _set_core(self, core: Any) -> None:
        self._core = core
        self._shape = tuple(core.shape)
        self._dtype = _numpy_dtype(core.dtype)
        self._chunks = tuple(core.chunks)
        shards = core.shards
        self._shards = None if shards is None else tuple(shards)
        self._shard_shape = tuple(core.shard_shape)
        # False for a rectilinear grid: shards (chunks, unsharded) of several shapes, and
        # `_shards` / `_shard_shape` (`_chunks`, unsharded) the first one's.
        self._regular = bool(core.regular_shards)
        self._fill_value = np.frombuffer(core.fill_value_bytes, dtype=self._dtype)[0]
        self._metadata = json.loads(core.metadata_json)

    def _check_resizable(self, what: str) -> None:
        if self._fixed_shape is not None:
            raise ShapeError(f"{what}: {self._fixed_shape}")

    def _check_writable(self, what: str) -> None:
        if self._read_only and self._read_only_why is not None:
            raise ReadOnlyError(f"{what}: {self._read_only_why}")
        if self._read_only:
            raise ReadOnlyError(
                f"{what}: the array {str(self.path)!r} is read-only (opened with mode='r', "
                "or its zarr store is read-only); open it with mode='r+' (the default) on a "
                "writable store to write"
            )

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
    def metadata(self) -> dict[str, Any]:
        """The array's ``zarr.json`` as a dict (a copy: change attributes through
        :attr:`attrs`)."""
        return json.loads(self._core.metadata_json)

    @property
    def read_only(self) -> bool:
        """Whether the array was opened with ``mode="r"``: writers, transactions,
        assignments, :meth:`resize` and attribute changes are refused."""
        return self._read_only

    @property
    def attrs(self) -> Attributes:
        """The user attributes (``zarr.json``'s ``attributes``), a mutable mapping: each
        change is written to ``zarr.json`` at once (see :class:`Attributes`).

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(4,), dtype="uint8",
        ...               chunks=(2,), attributes={"units": "nm"})
        >>> a.attrs["scale"] = 2.5
        >>> dict(sw.open(a.path).attrs)
        {'units': 'nm', 'scale': 2.5}
        """
        return Attributes(lambda: self._metadata.get("attributes", {}), self._write_attributes)

    def _write_attributes(self, replace: str | None, set_: str, remove: list[str]) -> None:
        self._check_writable("changing attributes")
        self._set_core(self._core.update_attributes(replace, set_, remove))

    def resize(self, *shape: int | Sequence[int]) -> None:
        """Change the shape (same rank): ``a.resize((20, 8))`` or ``a.resize(20, 8)``.
        Growing is a metadata change (stored chunks hold the fill value past the old edge).
        Shrinking stores the new shape, then deletes the shards wholly outside it and sets
        the elements past the new edge in the shards that stay to the fill value (one merge
        per edge shard): a later grow shows the fill value, not old data, even after a
        failure (the next resize finishes the clearing first). Only the stored shards are
        visited where the store lists (one listing), not every cell cut off. Like
        zarr-python's, a handle reads the shape when it is opened: a handle opened before
        another one shrank the array still writes past the new edge (and a later grow shows
        that data), so resize while no other handle writes, and reopen handles after it.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(6,), dtype="int8",
        ...               chunks=(2,), shards=(4,))
        >>> a[:] = 5
        >>> a.resize(3); a.resize(6)
        >>> a.shape, a[:].tolist()
        ((6,), [5, 5, 5, 0, 0, 0])
        """
        self._check_writable("resize")
        self._check_resizable("resize")
        self._set_core(self._core.resize(new_shape(shape, self._shape)))

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

    def iter_shards(self, within: Within = None) -> Cells:
        """The shards (for an unsharded array, the chunks) in C order, clipped to the
        array; with ``within`` (a Domain or a tuple of slices), only those that meet it
        (clipped to the array, not to ``within``). A single-use iterator with ``len()``
        (the shards still to come: ``tqdm(a.iter_shards())`` shows the total), see
        :class:`~shardwright._cells.Cells`; ``within`` is checked at the call.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(10, 10), dtype="uint8",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> [s.index for s in a.iter_shards(within=(slice(3, 5), slice(0, 1)))]
        [(0, 0), (1, 0)]
        >>> len(a.iter_shards()), list(a.iter_shards())[-1]
        (9, Domain(origin=(8, 8), shape=(2, 2)))
        """
        return Cells(self._core.iter_shards(self._within(within)), "shards", self)

    def iter_chunks(self, within: Within = None) -> Cells:
        """The inner chunks in C order, clipped to the array; ``within`` as in
        :meth:`iter_shards`. A single-use iterator with ``len()``, as there.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/c.zarr", shape=(5,), dtype="uint8",
        ...               chunks=(2,), shards=(4,))
        >>> [(c.origin, c.shape, c.index) for c in a.iter_chunks()]
        [((0,), (2,), (0,)), ((2,), (2,), (1,)), ((4,), (1,), (2,))]
        >>> len(a.iter_chunks()), len(a.iter_chunks(within=sw.Domain((1,), (2,))))
        (3, 2)
        """
        return Cells(self._core.iter_chunks(self._within(within)), "chunks")

    def _check_shard_index(self, index: tuple[int, ...]) -> None:
        if len(index) != self.ndim:
            raise BoundsError(f"shard index {index} does not have the array's rank {self.ndim}")
        if self._core.regular_shards:
            grid = tuple(-(-n // s) for n, s in zip(self._shape, self._shard_shape))
        else:
            grid = tuple(self._core.shard_grid_shape)
        if any(not 0 <= i < g for i, g in zip(index, grid)):
            raise BoundsError(f"shard index {index} is outside the shard grid {grid}")

    def _shard_index(self, shard: Domain | Sequence[int]) -> tuple[int, ...]:
        if isinstance(shard, Domain):
            # Derive the index from the box (a Domain's own index may be that of another
            # grid, e.g. an inner chunk's), then check the box is that shard.
            if shard.ndim != self.ndim:
                raise BoundsError(f"{shard} does not have the array's rank {self.ndim}")
            if self._core.regular_shards or any(o >= n for o, n in zip(shard.origin, self._shape)):
                index = tuple(o // s for o, s in zip(shard.origin, self._shard_shape))
            else:  # a rectilinear grid: the shard holding the box's origin
                index = tuple(self._core.shard_index_at(list(shard.origin)))
            self._check_shard_index(index)
            expected = Domain(*self._core.shard(list(index)))
            if expected != shard:
                raise BoundsError(f"{shard} is not a shard; the shard there is {expected}")
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
        self._check_writable("write_shard")
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
        self._check_writable("transaction")
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
        """Read as zarr-python's ``a[key]`` does: integers, slices (any step), Ellipsis,
        ``None``, integer arrays or lists and boolean masks (orthogonally, or pointwise for
        one integer array per axis or a full mask), or a :class:`Domain` (its box). Sparse
        selections read only the inner chunks holding selected elements.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/g.zarr", shape=(4, 6), dtype="int32",
        ...               chunks=(2, 3), shards=(4, 6))
        >>> _ = a.map_chunks(lambda c: np.arange(c.size, dtype="int32").reshape(c.shape))
        >>> a[1, ::2].tolist(), a[..., -1].shape, a[[0, 3], [5, 1]].tolist()
        ([3, 5, 4], (4,), [2, 4])
        """
        return read_key(self, key)

    @property
    def oindex(self) -> OIndex:
        """Orthogonal reads and writes, ``a.oindex[key]``, as zarr-python's: each axis's
        index (an int, a slice, an integer array or list, a 1-d mask) applied
        independently.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/o.zarr", shape=(3, 4), dtype="int8", chunks=(2, 2))
        >>> a.oindex[[0, 2], [1, 3]] = 5
        >>> a.oindex[[0, 2], :].tolist()
        [[0, 5, 0, 5], [0, 5, 0, 5]]
        """
        return OIndex(self)

    @property
    def vindex(self) -> VIndex:
        """Pointwise (coordinate or full-mask) reads and writes, ``a.vindex[key]``, as
        zarr-python's.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/v.zarr", shape=(3, 4), dtype="int8", chunks=(2, 2))
        >>> a.vindex[[0, 2], [1, 3]] = [7, 8]
        >>> a.vindex[[0, 2, 1], [1, 3, 0]].tolist()
        [7, 8, 0]
        """
        return VIndex(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Write ``value`` to ``a[key]``, the zarr-python habit (any key ``a[key]`` reads:
        slices of any step, integer arrays, masks, a Domain): each touched shard is
        stored once (merged, conditionally, with what is stored where the key covers it
        in part). Every value is checked first: a refused key or value stores nothing.
        For a box (integers, slices of step 1, a Domain) the shards are then written in
        C order from ``value`` itself (cast or copied one inner chunk at a time), each
        committed in the background while the next fills, in memory bounded by the
        shards in flight, not by ``value``. Atomic per shard, not across shards: if
        storage fails partway, no further shard is started and the shards already stored
        stay (each one whole). For many writes, one :meth:`transaction` or
        :meth:`write_shard` block stores each shard once for all of them.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(4, 4), dtype="uint8",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> a[1:3, :] = 7
        >>> a[0, 0] = 1
        >>> a[:2].tolist()
        [[1, 0, 0, 0], [7, 7, 7, 7]]
        """
        self._check_writable("assignment")
        if isinstance(key, Domain) or is_plain(key):
            _oneshot.assign(self, key, value)
            return
        with self.transaction() as tx:  # integer arrays, masks, slice steps: as zarr-python's
            write_key(tx, self._dtype, self._shape, key, value)

    def _write_selection(self, pointwise: bool, key: Any, value: Any) -> None:
        """``a.vindex[key] = value`` (``pointwise``) or ``a.oindex[key] = value``."""
        self._check_writable("assignment")
        with self.transaction() as tx:
            if pointwise:
                write_points(tx, self._dtype, self._shape, key, value)
            else:
                write_orthogonal(tx, self._dtype, self._shape, key, value)

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
        self._check_writable("map_chunks")
        return _pipeline.map_chunks(
            self,
            self.iter_shards(within),
            fn,
            workers=workers,
            progress=progress,
            threads=threads,
        )

    def __repr__(self) -> str:
        return self._unopened_repr() or (
            f"<shardwright.Array {str(self.path)!r} shape={self._shape} dtype={self._dtype} "
            f"chunks={self._chunks_text()} shards={self._shards_text()}>"
        )
