"""``sw.add_levels``: the levels above an existing level 0 (an OME-Zarr image, or any group
holding an array ``0``, written by anyone), made from level 0 read once and never written;
after level 0 grew, the same call extends every level with what it gained."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _core
from ._array import Array
from ._errors import ShapeError
from ._image_metadata import ChannelSpec, physical_settings
from ._location import resolve
from ._pyramid import Levels, _ints, _progress_handler, engine_place, engine_settings


def _one_shape(given: Sequence[int] | None, what: str) -> list[list[int]] | None:
    if given is None:
        return None
    items = list(given)
    if items and all(isinstance(s, Sequence) and not isinstance(s, str) for s in items):
        raise ShapeError(
            f"{what}: add_levels takes one shape for every level above 0 (such as (1, 64, 64)); "
            f"got {len(items)} shapes"
        )
    return [_ints(items, what, 1)]  # type: ignore[arg-type]


def add_levels(
    image: str | os.PathLike[str] | Any,
    *,
    factors: Sequence[int] | None = None,
    levels: int | None = None,
    method: str | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    compressor: str | None = "zstd",
    compression_level: int | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    units: Sequence[str | None] | None = None,
    channels: Sequence[ChannelSpec] | None = None,
    name: str | None = None,
    progress: bool | Callable[[dict[str, Any]], Any] = False,
    storage_options: Mapping[str, Any] | None = None,
    path: str | None = None,
) -> Levels:
    """Write the levels ``1, 2, …`` of the image ``image`` from its level 0 (array ``0``),
    in one pass: level 0 is read once (``stats["bytes_read"]`` is its raw size) and never
    written; each new shard is stored once. Levels found already, made with the same
    settings, are kept (their stored shards skipped: a run that stopped resumes). When
    level 0 grew (``Array.append``, ``resize``) or shrank since the levels were made, every
    level first gets what level 0 gained: only the upper-level shards the change reaches
    are rewritten. The group's OME-Zarr 0.5 metadata is written last (an existing
    multiscale keeps its axes, units, name, level 0's scale and translation, and
    ``omero``; the new levels are added to its datasets), with a ``shardwright`` record
    of the level-0 shape the levels were made from.

    Args:
        image: the group holding level 0 as array ``0``: a local path, an object-store
            URL, or a zarr-python store (with ``path=`` inside it) or ``zarr.Group``.
        factors: the downsampling factor per axis. Default: the existing levels' own,
            else the ratio of the OME scales of levels 1 and 0, else 2 along the space
            axes (``y``, ``x``, and ``z``) and 1 along the others.
        levels: levels including level 0. Default: as many as exist; with none yet, up to
            the first level whose downsampled axes each fit within one inner chunk.
        method: as for :func:`pyramid`; default the existing levels' own, else ``"mean"``.
        chunks, shards: one inner-chunk and shard shape for every level above 0 made
            new (default: level 0's, clipped to each level); levels found keep theirs.
        compressor, compression_level: as for :func:`shardwright.create`.
        scale, translation, units, channels, name: the physical metadata, as for
            :func:`pyramid`; given, they replace the group's multiscale (default: keep
            what the group says).
        progress: as for :func:`pyramid`.
        storage_options: object-store options for an ``image`` URL.
        path: the image group's path inside a zarr store ``image``.

    Returns:
        The level arrays, level 0 first (a ``list`` with ``.stats`` as :func:`pyramid`'s;
        ``shards_skipped[0]`` counts level 0's shards, which are only read).

    Raises:
        ArrayNotFoundError: there is no array ``0`` in ``image``.
        ShardwrightError: an existing level was made with other settings (the message
            says how to proceed).
        ShapeError: factors of the wrong length, too many levels.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> root = tempfile.mkdtemp() + "/img.zarr"
    >>> level0 = sw.create(root + "/0", shape=(64, 64), dtype="uint16", chunks=(16, 16),
    ...                    shards=(32, 32), dimension_names=["y", "x"])
    >>> level0[:] = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    >>> levels = sw.add_levels(root, levels=3)
    >>> [a.shape for a in levels], int(levels[1][0, 0]), levels.stats["bytes_read"]
    ([(64, 64), (32, 32), (16, 16)], 32, 8192)
    """
    if levels is not None and (not isinstance(levels, int) or levels < 1):
        raise ShapeError(f"levels must be an integer of at least 1 (or None); got {levels!r}")
    if method is not None and not isinstance(method, str):
        raise TypeError(f"method must be a string such as 'mean'; got {method!r}")
    where = resolve(image, storage_options, path)
    callback, close = _progress_handler(progress)
    try:
        arrays, stats = _core.add_levels(
            *engine_place(where),
            engine_settings(
                factors=[] if factors is None else _ints(factors, "factors", 1),
                levels=levels,
                method="mean" if method is None else method,
                chunks=_one_shape(chunks, "chunks"),
                shards=_one_shape(shards, "shards"),
                compressor=compressor,
                compression_level=compression_level,
                axes=None,
                name=name,
                physical=physical_settings(scale, translation, units, channels),
            ),
            method is not None,
            callback,
        )
    finally:
        close()
    out = Levels(Array(a, where=where.child(str(k))) for k, a in enumerate(arrays))
    out.stats = stats
    return out
