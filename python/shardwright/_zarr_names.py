"""zarr-python's other ``Array`` names, as a mixin of :class:`~shardwright.Array`: the
``get_*_selection`` / ``set_*_selection`` spellings of indexing, ``blocks``,
``update_attributes``, and the descriptive properties (``info``, ``nbytes``,
``nchunks``, ``nshards``, ``dimension_names``, ``compressors``, ``name``, ``len()``,
``basename``, ``cdata_shape``, ``filters``, ``serializer``, ``order``)."""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any

import numpy as np

from ._domain import Domain
from ._errors import BoundsError, ShapeError
from ._metadata import ArrayInfo, compressors_of, info_text


class ZarrNames:
    """The zarr-python spellings, on top of ``__getitem__``, ``__setitem__``, ``oindex``,
    ``vindex``, ``attrs``, ``read``, ``name``, ``shape`` and ``chunks``.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/z.zarr", shape=(6, 4), dtype="int8",
    ...               chunks=(2, 2), shards=(2, 4))
    >>> a.set_basic_selection(np.s_[:, :], np.arange(24, dtype="int8").reshape(6, 4))
    >>> a.get_orthogonal_selection(([0, 5], [1])).tolist(), a.blocks[2].tolist()
    ([[1], [21]], [[16, 17, 18, 19], [20, 21, 22, 23]])
    >>> a.cdata_shape, a.basename, a.order, a.filters
    ((3, 2), 'z.zarr', 'C', ())
    """

    # The names the mixin uses, all given by Array.
    shape: tuple[int, ...]
    size: int
    metadata: dict[str, Any]
    _shape: tuple[int, ...]
    _chunks: tuple[int, ...]
    _shards: tuple[int, ...] | None
    _shard_shape: tuple[int, ...]
    _regular: bool
    _dtype: np.dtype
    _metadata: dict[str, Any]
    _core: Any
    attrs: Any
    oindex: Any
    vindex: Any
    read: Any
    __getitem__: Any
    __setitem__: Any

    @property
    def chunks(self) -> tuple[int, ...]:
        """The inner chunk shape (the chunk shape, for an unsharded array). As in
        zarr-python, an unsharded array with a rectilinear chunk grid (chunks of several
        shapes) has none: ``NotImplementedError``, see :attr:`read_chunk_sizes`."""
        if not self._regular and self._shards is None:
            raise NotImplementedError(
                "The `chunks` attribute is only defined for arrays using regular chunk grids. "
                "This array has a rectilinear chunk grid. Use `read_chunk_sizes` for general "
                "access."
            )
        return self._chunks

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape, or ``None`` for an unsharded array. As in zarr-python, a
        rectilinear shard grid (shards of several shapes) has none: ``NotImplementedError``,
        see :attr:`write_chunk_sizes`."""
        if not self._regular and self._shards is not None:
            raise NotImplementedError(
                "The `shards` attribute is only defined for arrays using regular chunk grids. "
                "This array has a rectilinear chunk grid. Use `write_chunk_sizes` for general "
                "access."
            )
        return self._shards

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The extents of the inner chunks along each dimension, clipped to the array
        (dask's ``chunks``; zarr-python's ``read_chunk_sizes``): any chunk grid, regular or
        rectilinear.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/r.zarr", shape=(10,), dtype="uint8",
        ...               chunks=(2,), shards=[[4, 6]])
        >>> a.read_chunk_sizes, a.write_chunk_sizes
        (((2, 2, 2, 2, 2),), ((4, 6),))
        """
        return tuple(tuple(int(n) for n in axis) for axis in self._core.chunk_sizes)

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The extents of the shards (the chunks, unsharded) along each dimension, clipped
        to the array (zarr-python's ``write_chunk_sizes``): any grid, regular or
        rectilinear; see :attr:`read_chunk_sizes`."""
        return tuple(tuple(int(n) for n in axis) for axis in self._core.shard_sizes)

    def _chunks_text(self) -> str:
        """The chunk shape for a repr (``<variable>`` for rectilinear chunks)."""
        return "<variable>" if not self._regular and self._shards is None else str(self._chunks)

    def _shards_text(self) -> str:
        """The shard shape for a repr (``<variable>`` for rectilinear shards)."""
        return "<variable>" if not self._regular and self._shards is not None else str(self._shards)

    @property
    def info(self) -> ArrayInfo:
        """A summary of the array, printed as zarr-python's ``Array.info`` is."""
        return ArrayInfo(info_text(self))

    @property
    def nbytes(self) -> int:
        """The bytes of the whole array, uncompressed (``size * itemsize``)."""
        return self.size * self._dtype.itemsize

    @property
    def nchunks(self) -> int:
        """The number of inner chunks (zarr-python's ``nchunks``)."""
        if not self._regular:
            return math.prod(int(n) for n in self._core.chunk_grid_shape)
        return math.prod(-(-n // c) for n, c in zip(self._shape, self._chunks))

    @property
    def nshards(self) -> int:
        """The number of shards (of chunks, for an unsharded array).

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(10, 12), dtype="uint16",
        ...               chunks=(2, 3), shards=(4, 6))
        >>> a.nchunks, a.nshards, a.nbytes, len(a)
        (20, 6, 240, 10)
        """
        if not self._regular:
            return math.prod(int(n) for n in self._core.shard_grid_shape)
        return math.prod(-(-n // s) for n, s in zip(self._shape, self._shard_shape))

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        """The dimension names, or ``None`` when the array has none.

        >>> import tempfile, shardwright as sw
        >>> sw.create(tempfile.mkdtemp() + "/d.zarr", shape=(2, 3), dtype="uint8", chunks=(1, 3),
        ...           dimension_names=["y", "x"]).dimension_names
        ('y', 'x')
        """
        names = self._metadata.get("dimension_names")
        return None if names is None else tuple(names)

    @property
    def compressors(self) -> tuple[dict[str, Any], ...]:
        """The compressors (bytes-to-bytes codecs) of the chunks, as their ``zarr.json``
        entries (zarr-python gives codec objects: ``zarr.codecs.ZstdCodec.from_dict(d)``
        builds one).

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(4,), dtype="uint8",
        ...               chunks=(2,), compressors="gzip")
        >>> a.compressors
        ({'name': 'gzip', 'configuration': {'level': 5}},)
        """
        return compressors_of(self._metadata)

    @property
    def name(self) -> str:
        """The array's path in its store with a leading ``/``, as zarr-python's ``name``
        (``"/"`` for an array at the root of its store, as a local folder is).

        >>> import shardwright as sw, zarr
        >>> store = zarr.storage.MemoryStore()
        >>> sw.create(store, path="g/raw", shape=(2,), dtype="uint8", chunks=(2,)).name
        '/g/raw'
        """
        return "/" + str(self._core.key).strip("/")

    def __len__(self) -> int:
        """The extent of the first axis, as ``len`` of a numpy array."""
        if not self._shape:
            raise TypeError("len() of a 0-dimensional array")
        return self._shape[0]

    @property
    def basename(self) -> str:
        """The last part of :attr:`name` (the folder's name for a local array)."""
        part = self.name.rstrip("/").rsplit("/", 1)[-1]
        if part:
            return part
        path = getattr(self, "path", "")
        return str(path).rstrip("/").rsplit("/", 1)[-1]

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """The shape of the inner-chunk grid (chunks per axis), as zarr-python's."""
        if not self._regular:
            return tuple(int(n) for n in self._core.chunk_grid_shape)
        return tuple(-(-n // c) for n, c in zip(self.shape, self._chunks, strict=True))

    @property
    def order(self) -> str:
        """The memory order of chunks: always ``"C"``."""
        return "C"

    @property
    def filters(self) -> tuple[dict[str, Any], ...]:
        """Array-to-array codecs: none (shardwright writes ``bytes`` + a compressor)."""
        return ()

    @property
    def serializer(self) -> dict[str, Any]:
        """The array-to-bytes codec inside the shards, as its ``zarr.json`` entry."""
        codecs = self.metadata["codecs"]
        first = codecs[0] if isinstance(codecs[0], dict) else {"name": codecs[0]}
        if first["name"] == "sharding_indexed":
            inner = first["configuration"]["codecs"][0]
            return inner if isinstance(inner, dict) else {"name": inner}
        return first

    def update_attributes(self, new_attributes: dict[str, Any]) -> ZarrNames:
        """Add or change attributes (one write), and return the array, as zarr-python."""
        self.attrs.update(new_attributes)
        return self

    def get_basic_selection(self, selection: Any = Ellipsis) -> Any:
        """``a[selection]`` with ints, slices and Ellipsis."""
        return self[selection]

    def get_orthogonal_selection(self, selection: Any) -> np.ndarray:
        """``a.oindex[selection]``."""
        return self.oindex[selection]

    def get_coordinate_selection(self, selection: Any) -> np.ndarray:
        """``a.vindex[selection]`` with one integer array per axis."""
        return self.vindex[selection]

    def get_mask_selection(self, mask: Any) -> np.ndarray:
        """``a.vindex[mask]`` with a boolean mask of the array's shape."""
        return self.vindex[mask]

    def set_basic_selection(self, selection: Any, value: Any) -> None:
        """``a[selection] = value`` (a one-shot transaction)."""
        self[selection] = value

    def set_orthogonal_selection(self, selection: Any, value: Any) -> None:
        """``a.oindex[selection] = value`` (a one-shot transaction)."""
        self.oindex[selection] = value

    def set_coordinate_selection(self, selection: Any, value: Any) -> None:
        """``a.vindex[selection] = value`` with one integer array per axis."""
        self.vindex[selection] = value

    def set_mask_selection(self, mask: Any, value: Any) -> None:
        """``a.vindex[mask] = value`` with a boolean mask of the array's shape."""
        self.vindex[mask] = value

    def set_block_selection(self, selection: Any, value: Any) -> None:
        """``a.blocks[selection] = value``."""
        self.blocks[selection] = value

    @property
    def blocks(self) -> _Blocks:
        """Reads and writes by block grid position, as zarr-python's ``blocks``: a block is
        a shard of a sharded array (an inner chunk of an unsharded one), so ``a.blocks[i,
        j]`` is shard ``(i, j)``; slices of grid positions (step 1) take several.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/b.zarr", shape=(30, 20), dtype="int16",
        ...               chunks=(2, 3), shards=(10, 6))
        >>> a.blocks[1, 1] = -1
        >>> [(int(lo), int(hi)) for lo, hi in zip(*np.nonzero(a[:] == -1))][::59]
        [(10, 6), (19, 11)]
        """
        return _Blocks(self)

    def get_block_selection(self, selection: Any) -> np.ndarray:
        """``a.blocks[selection]``."""
        return self.blocks[selection]


class _Blocks:
    """``a.blocks[key]`` (read) and ``a.blocks[key] = value`` (a one-shot transaction):
    ``key`` indexes the shard grid (the chunk grid of an unsharded array), as zarr-python's
    ``blocks`` does; an int keeps its axis."""

    def __init__(self, array: ZarrNames) -> None:
        self._array = array

    def __getitem__(self, key: Any) -> np.ndarray:
        return self._array.read(self._region(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        self._array[self._region(key)] = value

    def _region(self, key: Any) -> Domain:
        array = self._array
        if array._regular:
            block = array._shard_shape  # the shard shape; the chunk shape when unsharded
            grid = tuple(-(-n // b) for n, b in zip(array.shape, block, strict=True))

            def start(axis: int, i: int) -> int:  # where block i begins (or the array ends)
                return min(i * block[axis], array.shape[axis])
        else:  # a rectilinear grid: the blocks' extents as stored
            starts = [[0, *itertools.accumulate(s)] for s in array.write_chunk_sizes]
            grid = tuple(len(s) - 1 for s in starts)

            def start(axis: int, i: int) -> int:
                return starts[axis][i]

        items = key if isinstance(key, tuple) else (key,)
        if len(items) > len(grid):
            raise BoundsError(f"too many block indices: {len(items)} for {len(grid)} axes")
        items = items + (slice(None),) * (len(grid) - len(items))
        origin, stop = [], []
        for axis, (k, n) in enumerate(zip(items, grid, strict=True)):
            if isinstance(k, slice):
                lo, hi, step = k.indices(n)
                if step != 1:
                    raise ShapeError(f"block slices need step 1; axis {axis} has {step}")
                hi = max(lo, hi)
            else:
                try:
                    i = operator.index(k)
                except TypeError as err:
                    raise ShapeError(
                        f"blocks take ints and slices of grid positions, got {k!r} at axis {axis}"
                    ) from err
                if not -n <= i < n:
                    raise BoundsError(f"block {i} is out of bounds for axis {axis} with {n} blocks")
                lo, hi = i % n, i % n + 1
            origin.append(start(axis, lo))
            stop.append(start(axis, hi))
        return Domain(origin, [b - a for a, b in zip(origin, stop, strict=True)])
