"""``sw.create_image`` / ``sw.open_image``: an OME-Zarr 0.5 image you write level 0 into,
whose coarser levels fill as you write. Each level-0 shard stored is downsampled into the
levels above on the fly (the engine's one-pass pyramid driver, fed from level 0's writers),
so every shard of every level is stored once and no level is read back."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _core, _pipeline
from ._appender import ImageAppender
from ._array import Array
from ._cells import Cells
from ._domain import Domain
from ._dtypes import dtype_of, spec_of
from ._errors import ShapeError
from ._fill import fill_value_json
from ._image_metadata import ChannelSpec, physical_settings
from ._location import Location, resolve
from ._pyramid import Levels, _ints, engine_place, engine_settings


class _ShardList:
    """The engine's list of ``(origin, shape, index)`` as the sized iterator
    :class:`Cells` takes."""

    def __init__(self, cells: list[tuple[list[int], list[int], list[int]]]) -> None:
        self._cells = cells
        self._next = 0

    def __next__(self) -> tuple[list[int], list[int], list[int]]:
        if self._next >= len(self._cells):
            raise StopIteration
        self._next += 1
        return self._cells[self._next - 1]

    def __len__(self) -> int:
        return len(self._cells) - self._next


class Image:
    """An image being written (from :func:`create_image` or :func:`open_image`): write
    level 0 (``img[0]``, or through ``img.write_shard`` / ``img.map_chunks``) and the
    coarser levels fill as level 0's shards are stored. Leaving the ``with`` block (or
    :meth:`close`) completes the coarser shards that unwritten parts of level 0 (the fill
    value) left open and writes the OME metadata last; an exception there stores nothing
    more, and every shard stored stays whole: :func:`open_image` continues.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> with sw.create_image(tempfile.mkdtemp() + "/img.ome.zarr", shape=(64, 64),
    ...                      dtype="uint8", chunks=(16, 16), shards=(32, 32),
    ...                      factors=(2, 2), levels=3) as img:
    ...     for shard in img.iter_shards():
    ...         with img.write_shard(shard) as w:
    ...             for c in w.inner_chunks():
    ...                 w[c] = np.full(c.shape, c.origin[0], "uint8")
    >>> [a.shape for a in img.levels], int(img[1][10, 0]), img.stats["shards_written"]
    ([(64, 64), (32, 32), (16, 16)], 16, [4, 1, 1])
    """

    stats: dict[str, Any]

    def __init__(self, core: Any, where: Location) -> None:
        self._core = core
        self._where = where
        self.levels: Levels = self._wrap(core.levels(), open_=True)
        self.stats = {}

    def _wrap(self, arrays: list[Any], open_: bool = False) -> Levels:
        # While the image is open, the coarser levels are the image's to write, and level
        # 0's shape is the one the levels were planned for.
        levels = Levels(
            Array(a, read_only=open_ and k > 0, where=self._where.child(str(k)))
            for k, a in enumerate(arrays)
        )
        for level in levels[1:] if open_ else []:
            level._read_only_why = (
                "a coarser level of an open image is written by the image, from level 0: "
                "write level 0 (img[0])"
            )
        if open_ and levels:
            levels[0]._fixed_shape = (
                "level 0 of an open image keeps the shape its levels were planned for; "
                "close the image, then grow level 0 and run sw.add_levels(image) to extend "
                "the levels"
            )
        return levels

    def __getitem__(self, level: int) -> Array:
        """Level ``level``'s array (``img[0]`` is level 0, which feeds the others)."""
        return self.levels[level]

    def __len__(self) -> int:
        return len(self.levels)

    def iter_shards(self) -> Cells:
        """Level 0's shards not stored yet, in the order that completes the coarser
        levels' blocks soonest (nested under their shards), which keeps one block per
        level in memory; any other order works too, holding more (C order: a row of
        blocks per level). A sized, single-use iterator, as :meth:`Array.iter_shards`."""
        return Cells(_ShardList(self._core.shards_in_order()), "shards", self)

    def write_shard(self, shard: Domain | Sequence[int], **options: Any) -> Any:
        """A writer of level 0's ``shard``, as :meth:`Array.write_shard` (its options
        too); when the block exits, the shard is stored and fed to the coarser levels."""
        return self.levels[0].write_shard(shard, **options)

    def map_chunks(
        self,
        fn: Callable[[Domain], Any],
        workers: int | None = None,
        progress: bool | Callable[[dict[str, Any]], Any] = False,
        *,
        threads: int = 1,
    ) -> dict[str, Any]:
        """Fill level 0 chunk by chunk as :meth:`Array.map_chunks` does, shard by shard
        in :meth:`iter_shards`'s order; the coarser levels fill as the shards are
        stored."""
        return _pipeline.map_chunks(
            self.levels[0],
            self.iter_shards(),
            fn,
            workers=workers,
            progress=progress,
            threads=threads,
        )

    def close(self) -> Levels:
        """Finish the image (see the class docs) and return its levels, with
        ``stats``: ``shards_written`` per level, ``bytes_written`` and ``puts`` of the
        coarser levels, ``rewritten`` (level-0 chunks written again after their levels
        were made, whose coarser shards were recomputed), ``seconds``."""
        arrays, stats = self._core.finish()
        self.levels = self._wrap(arrays)
        self.levels.stats = stats
        self.stats = stats
        return self.levels

    def appender(self, axis: int = 0) -> ImageAppender:
        """An :class:`ImageAppender` of frames along ``axis`` to level 0, every coarser
        level growing with it (each equal to the pyramid of the final level 0),
        continuing from level 0's shape. An open image is closed first (:meth:`close`:
        its coarser levels completed, its OME metadata written), so plan it with what is
        written before appending: an acquisition starts from ``shape`` 0 along the axis.
        A closed image is opened again for its recorded factors and method, then closed.
        The OME ``omero`` display windows are those computed when the image was closed
        (none for an image of no frames): viewers then scale by the data.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/a.ome.zarr", shape=(0, 16, 16),
        ...                       dtype="uint16", chunks=(2, 8, 8), shards=(4, 16, 16),
        ...                       factors=(1, 2, 2), levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     for t in range(3):
        ...         ap.append(np.full((16, 16), t, "uint16"))
        >>> [a.shape for a in img.levels], img.levels[1][:, 0, 0].tolist()
        ([(3, 16, 16), (3, 8, 8)], [0, 1, 2])
        """
        if self._core.closed:
            reopened = _core.Image.open(*engine_place(self._where))
            factors, method = reopened.plan_settings()
            arrays, self.stats = reopened.finish()
            self.levels = self._wrap(arrays)
            self.levels.stats = self.stats
        else:
            factors, method = self._core.plan_settings()
            self.close()
        return ImageAppender(self.levels, factors, method, axis)

    def abandon(self) -> None:
        """Stop without finishing: coarser shards being stored complete, nothing else
        is written; :func:`open_image` continues."""
        self._core.abandon()

    def __enter__(self) -> Image:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if self._core.closed:
            return
        if kind is None:
            self.close()
            return
        try:
            self.abandon()
        except Exception as err:  # the block's own error is the one to see
            value.add_note(f"abandoning the image also failed: {err!r}")

    def __repr__(self) -> str:
        shapes = [a.shape for a in self.levels]
        state = "closed" if self._core.closed else "open"
        return f"<shardwright.Image {state} levels={shapes}>"


def create_image(
    dest: str | os.PathLike[str] | Any,
    *,
    shape: Sequence[int],
    dtype: Any,
    chunks: Sequence[int],
    shards: Sequence[int],
    factors: Sequence[int],
    levels: int | None = None,
    method: str = "mean",
    axes: Sequence[str] | str | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    units: Sequence[str | None] | None = None,
    channels: Sequence[ChannelSpec] | None = None,
    name: str | None = None,
    compressor: str | None = "zstd",
    compression_level: int | None = None,
    fill_value: Any = None,
    overwrite: bool = False,
    resume: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    path: str | None = None,
) -> Image:
    """Create an OME-Zarr 0.5 image at ``dest`` (a path, URL or zarr store; ``path``
    inside a store, as :func:`open`) whose level 0 has ``shape``, ``dtype``, inner
    ``chunks`` and ``shards``, and whose coarser levels (``levels`` in all, level 0
    included; ``None``: down to the first that fits one inner chunk) are level 0
    downsampled by ``factors`` per axis with ``method`` (as :func:`pyramid`). Write level
    0 and use the image as a context manager: see :class:`Image`. ``axes``: the axis
    names (default the last ``ndim`` of ``t, c, z, y, x``; a string such as ``"tczyx"``
    works too). ``scale``, ``translation``, ``units`` and ``channels`` are the physical
    metadata, as for :func:`pyramid`: level 0's pixel size and offset per axis (each
    level's scale is it times the factors so far, its translation shifted to the centre
    of its first pixel), OME unit names (``"µm"`` is written ``"micrometer"``), and a
    label (and colour) per element of the ``c`` axis, written as OME ``omero`` channels
    with display windows computed from the data as it is written. ``resume=True``
    continues an image that stopped (as :func:`open_image`), or creates it if nothing is
    there.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> img = sw.create_image(tempfile.mkdtemp() + "/a.ome.zarr", shape=(32, 32),
    ...                       dtype="uint16", chunks=(8, 8), shards=(16, 16), factors=(2, 2))
    >>> stats = img.map_chunks(lambda c: np.uint16(c.index[1]))
    >>> [a.shape for a in img.close()]
    [(32, 32), (16, 16), (8, 8)]
    """
    np_dtype = dtype_of(dtype)
    if overwrite and resume:
        raise ValueError("overwrite=True and resume=True contradict each other: choose one")
    if levels is not None and (not isinstance(levels, int) or levels < 1):
        raise ShapeError(f"levels must be an integer of at least 1 (or None); got {levels!r}")
    dims = _ints(shape, "shape", 0)
    if isinstance(axes, str):
        axes = list(axes)
    where = resolve(dest, storage_options, path)
    settings = engine_settings(
        factors=_ints(factors, "factors", 1),
        levels=levels,
        method=method,
        chunks=[_ints(chunks, "chunks", 1)],
        shards=[_ints(shards, "shards", 1)],
        compressor=compressor,
        compression_level=compression_level,
        axes=axes,
        name=name,
        physical=physical_settings(scale, translation, units, channels),
    )
    core = _core.Image.create(
        *engine_place(where),
        dims,
        spec_of(np_dtype),
        json.dumps(fill_value_json(fill_value, np_dtype)),
        settings,
        bool(resume),
        bool(overwrite),
    )
    return Image(core, where)


def open_image(
    dest: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    path: str | None = None,
) -> Image:
    """Continue the image at ``dest`` that :func:`create_image` made (after an error or a
    crash, or to write more of a finished image's level 0), with the settings it
    recorded; :meth:`Image.iter_shards` then gives the level-0 shards not stored yet.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> dest = tempfile.mkdtemp() + "/b.ome.zarr"
    >>> img = sw.create_image(dest, shape=(16, 16), dtype="uint8", chunks=(4, 4),
    ...                       shards=(8, 8), factors=(2, 2), levels=2)
    >>> with img.write_shard((0, 0)) as w:
    ...     w[0:8, 0:8] = 1
    >>> img.abandon()
    >>> with sw.open_image(dest) as img:
    ...     len(img.iter_shards())
    3
    """
    where = resolve(dest, storage_options, path)
    return Image(_core.Image.open(*engine_place(where)), where)
