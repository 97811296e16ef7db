"""``sw.pyramid``: a multiscale OME-Zarr 0.5 pyramid in one pass over the source, and
``sw.copy``: re-chunk and re-shard any array into a sharded Zarr v3 array. Both run the
engine's one-pass driver (the same as ``shardwright pyramid`` / ``shardwright copy``)."""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _core
from ._array import Array
from ._errors import ShapeError
from ._image_metadata import ChannelSpec, physical_settings
from ._location import Location, resolve
from ._overlap import (
    is_local_pattern,
    refuse_overwriting_matches,
    refuse_overwriting_the_source,
)
from ._progress import Progress
from ._sources import engine_source_of, side_options

Shapes = Sequence[int] | Sequence[Sequence[int]]


class Levels(list[Array]):
    """The arrays a :func:`pyramid` (or :func:`copy`) wrote, level 0 first, with what the
    build did in ``stats``: ``bytes_read`` (raw bytes read from the source: each element
    once), ``bytes_written``, ``shards_written`` and ``shards_skipped`` (per level; skipped:
    found stored by a resumed run), ``puts``, ``gets``, ``seconds``."""

    stats: dict[str, Any]


def _ints(values: Sequence[int], what: str, minimum: int) -> list[int]:
    try:
        out = [operator.index(v) for v in values]
    except TypeError as err:
        raise ShapeError(f"{what} must be a sequence of integers; got {values!r}") from err
    if any(v < minimum for v in out):
        raise ShapeError(f"{what} must be integers of at least {minimum}; got {tuple(out)}")
    return out


def _shapes(given: Shapes | None, what: str) -> list[list[int]] | None:
    """One shape for every level, or a list of shapes, one per level."""
    if given is None:
        return None
    items = list(given)
    if items and all(isinstance(s, Sequence) and not isinstance(s, str) for s in items):
        return [_ints(s, what, 1) for s in items]  # type: ignore[arg-type]
    return [_ints(items, what, 1)]  # type: ignore[arg-type]


def engine_place(where: Location) -> tuple[Any, ...]:
    """Where the engine writes, as ``_core.build``, ``_core.Image`` and
    ``_core.add_levels`` take it: the folder, the URL and its options, a zarr store's
    adapter, the key inside it."""
    adapter = None
    if where.store is not None:
        from ._adapter import StoreAdapter  # imports zarr, which shardwright does not need

        adapter = StoreAdapter(where.store)
    folder = str(where.path) if where.path is not None else None
    return (folder, where.url, where.options, adapter, where.key)


def engine_settings(
    *,
    factors: list[int],
    levels: int | None,
    method: str,
    chunks: list[list[int]] | None,
    shards: list[list[int]] | None,
    compressor: str | None,
    compression_level: int | None,
    axes: Sequence[str] | None,
    name: str | None,
    physical: dict[str, Any],
) -> dict[str, Any]:
    """The one settings dict the engine's pyramid, image and add-levels entry points
    take (shapes already checked; ``physical`` from :func:`physical_settings`).

    >>> engine_settings(factors=[2], levels=None, method="mean", chunks=None, shards=None,
    ...                 compressor=None, compression_level=None, axes="yx", name=None,
    ...                 physical={})["axes"]
    ['y', 'x']
    """
    return {
        "factors": factors,
        "levels": levels,
        "method": method,
        "chunks": chunks,
        "shards": shards,
        "compressor": "none" if compressor is None else compressor,
        "compression_level": compression_level,
        "axes": None if axes is None else [str(a) for a in axes],
        "name": name,
        **physical,
    }


def _progress_handler(
    progress: bool | Callable[[dict[str, Any]], Any],
) -> tuple[Callable[[dict[str, Any]], None] | None, Callable[[], None]]:
    if callable(progress):
        return progress, lambda: None
    if not progress:
        return None, lambda: None
    state: dict[str, Progress] = {}

    def update(event: dict[str, Any]) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = Progress(event["shards_total"], "shards", show=True)
        bar.update(event["shards_done"] - bar.done, bytes=event["bytes_read"])

    def close() -> None:
        if "bar" in state:
            state["bar"].close()

    return update, close


def prepare(
    kind: str,
    source: Any,
    dest: Any,
    *,
    factors: Sequence[int],
    levels: int | None,
    method: str,
    chunks: Shapes | None,
    shards: Shapes | None,
    compressor: str | None,
    compression_level: int | None,
    axes: Sequence[str] | None,
    units: Sequence[str | None] | None,
    name: str | None,
    overwrite: bool,
    resume: bool,
    storage_options: Mapping[str, Any] | None,
    source_storage_options: Mapping[str, Any] | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    channels: Sequence[ChannelSpec] | None = None,
    overlap_source: Any = None,
) -> tuple[Any, Location, tuple[Any, ...]]:
    """What the engine needs to build ``kind`` (``"pyramid"`` or ``"copy"``) of
    ``source`` at ``dest``, checked: the engine's source, where ``dest`` is, and the
    arguments ``_core.build`` and ``_core.PyramidTasks.prepare`` take after the source
    (the destination, the settings as one dict, ``resume`` and ``overwrite``).
    ``overlap_source``: what the user named as the source, when ``source`` is the
    engine's reader of it already (``overwrite`` must not delete it)."""
    named = source if overlap_source is None else overlap_source
    if overwrite and resume:
        raise ValueError("overwrite=True and resume=True contradict each other: choose one")
    if levels is not None and (not isinstance(levels, int) or levels < 1):
        raise ShapeError(f"levels must be an integer of at least 1 (or None); got {levels!r}")
    if not isinstance(method, str):
        raise TypeError(f"method must be a string such as 'mean'; got {method!r}")
    src_options, dst_options = side_options(named, dest, storage_options, source_storage_options)
    core_source = engine_source_of(source, src_options)
    if overwrite and is_local_pattern(named):
        refuse_overwriting_matches(named, dest, dst_options)
    elif overwrite:
        refuse_overwriting_the_source(
            named, dest, None, lambda t, _: src_options if t is named else dst_options
        )
    where = resolve(dest, dst_options, None)
    settings = engine_settings(
        factors=_ints(factors, "factors", 1) if kind == "pyramid" else [],
        levels=levels,
        method=method,
        chunks=_shapes(chunks, "chunks"),
        shards=_shapes(shards, "shards"),
        compressor=compressor,
        compression_level=compression_level,
        axes=axes,
        name=name,
        physical=physical_settings(scale, translation, units, channels),
    )
    arguments = (*engine_place(where), settings, bool(resume), bool(overwrite))
    return core_source, where, arguments


def build_levels(
    kind: str,
    source: Any,
    dest: Any,
    *,
    progress: bool | Callable[[dict[str, Any]], Any],
    **settings: Any,
) -> Levels:
    """Build ``kind`` (``"pyramid"`` or ``"copy"``) of ``source`` at ``dest`` with the
    settings :func:`prepare` takes, showing ``progress``; the level arrays with ``.stats``.
    """
    core_source, where, arguments = prepare(kind, source, dest, **settings)
    callback, close = _progress_handler(progress)
    try:
        arrays, stats = _core.build(core_source, kind, *arguments, callback)
    finally:
        close()
    out = Levels(
        Array(a, where=where.child(str(k)) if kind == "pyramid" else where)
        for k, a in enumerate(arrays)
    )
    out.stats = stats
    return out


def pyramid(
    source: Any,
    dest: str | os.PathLike[str] | Any,
    *,
    factors: Sequence[int],
    levels: int | None = None,
    method: str = "mean",
    chunks: Shapes | None = None,
    shards: Shapes | None = None,
    compressor: str | None = "zstd",
    compression_level: int | None = None,
    axes: Sequence[str] | None = None,
    units: Sequence[str | None] | None = None,
    name: str | None = None,
    progress: bool | Callable[[dict[str, Any]], Any] = False,
    overwrite: bool = False,
    resume: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    source_storage_options: Mapping[str, Any] | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    channels: Sequence[ChannelSpec] | None = None,
) -> Levels:
    """Build the multiscale pyramid of ``source`` as an OME-Zarr 0.5 image at ``dest``, in
    one pass: every source element is read once, every level's shards are written once
    each (one put), and memory stays bounded by the shard and chunk shapes and the number of
    levels, never by the array size. ``dest/0`` is the full resolution (re-sharded as
    asked), ``dest/1``, ``dest/2``, … each downsampled by ``factors`` from the one before
    (as ``ts.downsample`` would: blocks start at 0, a partial block at an edge uses the
    elements present, integer means round half to even). The group's ``zarr.json`` (the
    OME ``multiscales``) is written last, so an image with it is complete.

    A job that was killed leaves only whole shards: rerun with ``resume=True`` to write
    only the missing ones (``stats["shards_skipped"]`` counts the others).

    Args:
        source: a path or URL of a Zarr v2/v3 array, a ``zarr.Array``, a shardwright
            ``Array``, or any object with ``.shape``, ``.dtype`` and numpy-style slicing
            (numpy, TensorStore, dask, h5py: sliced block by block).
        dest: a local path, an object-store URL, or a zarr-python store.
        factors: the downsampling factor per axis (1: that axis is kept).
        levels: levels including level 0, at most as many as it takes to make every
            downsampled axis 1 (more, which would downsample nothing, raise
            :class:`ShapeError` before anything is written); ``None``: add levels up to the
            first whose downsampled axes (factor above 1) each fit within one inner chunk
            (the ``chunks`` asked for, before clipping), as ngff-zarr and ome-zarr-py stop:
            a 1024 by 1024 plane with the default 256 by 256 chunks makes 3 levels.
        method: ``"mean"``, ``"min"``, ``"max"``, ``"mode"``, ``"median"`` (the lower
            median) or ``"stride"`` (the first element of each block).
        chunks, shards: the inner-chunk and shard shape, one for every level (clipped to a
            smaller level) or a list with one per level. Defaults: chunks 64 along z, y, x
            for 3-d images (256 along y, x for 2-d), 1 along time and channel; shards 4
            chunks along each space axis.
        compressor, compression_level: as for :func:`shardwright.create`.
        axes: OME axis names; default the last ``ndim`` of ``t, c, z, y, x``.
        units: an OME unit per axis (``"micrometer"``, ``"second"``, ``None``; ``"µm"``,
            ``"nm"``, ``"s"`` … are written by their OME names); a unit of the wrong kind
            for its axis, or any on ``c``, raises :class:`ShapeError`.
        name: the multiscale's name (default: the destination's last path part).
        scale: level 0's pixel size per axis (default 1); level ``k``'s is it times the
            factors so far.
        translation: level 0's offset per axis. Written on every level when given or when
            a level is downsampled by a method other than ``"stride"``: level ``k``'s is
            ``translation + scale * (F - 1) / 2`` (``F`` the factors so far: its first
            pixel's centre, as ngff-zarr); ``"stride"`` levels keep ``translation``.
        channels: one per element of the ``c`` axis (or one without it): a label, or a
            dict with ``"label"`` and ``"color"`` (``"RRGGBB"``, ``"#RRGGBB"``, a name such
            as ``"green"``). Written as OME ``omero`` (also, with defaults, for any ``c``
            axis), each with a ``window``: the top level's range (``min``, ``max``) and 2%
            and 98% quantiles (``start``, ``end``), computed as it is written.
        progress: ``True`` for a bar on stderr (tqdm when installed), or a callable that
            receives a dict after each shard: ``level``, ``shards_done``, ``shards_total``,
            per-level lists of both, ``bytes_read``, ``bytes_written``.
        overwrite: replace whatever is at ``dest`` (only after every setting was checked).
        resume: continue a job that stopped (the settings must be the same).
        storage_options: object-store options for whichever of ``source`` and ``dest`` is
            an object-store URL (both, when both are).
        source_storage_options: the source URL's own options, when they differ from the
            destination's (then ``storage_options`` serve the destination only).

    Returns:
        The level arrays (a ``list`` with ``.stats``).

    >>> import numpy as np, tempfile, shardwright as sw
    >>> data = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    >>> levels = sw.pyramid(data, tempfile.mkdtemp() + "/img.zarr", factors=(2, 2), levels=3,
    ...                     chunks=(16, 16))
    >>> [a.shape for a in levels]
    [(64, 64), (32, 32), (16, 16)]
    >>> int(levels[1][0, 0]), levels.stats["bytes_read"]
    (32, 8192)

    Pixel sizes and channels:

    >>> import zarr; dest = tempfile.mkdtemp() + "/cells.zarr"
    >>> _ = sw.pyramid(np.zeros((2, 64, 64), "uint16"), dest, factors=(1, 2, 2), levels=2,
    ...   axes="cyx", scale=(1, 0.5, 0.5), units=[None, "µm", "µm"], channels=["DAPI", "GFP"])
    >>> ome = zarr.open_group(dest).attrs["ome"]
    >>> scale, shift = ome["multiscales"][0]["datasets"][1]["coordinateTransformations"]
    >>> scale["scale"], shift["translation"], ome["omero"]["channels"][1]["label"]
    ([1.0, 1.0, 1.0], [0.0, 0.25, 0.25], 'GFP')
    """
    return build_levels(
        "pyramid",
        source,
        dest,
        factors=factors,
        levels=levels,
        method=method,
        chunks=chunks,
        shards=shards,
        compressor=compressor,
        compression_level=compression_level,
        axes=axes,
        units=units,
        name=name,
        progress=progress,
        overwrite=overwrite,
        resume=resume,
        storage_options=storage_options,
        source_storage_options=source_storage_options,
        scale=scale,
        translation=translation,
        channels=channels,
    )


def copy(
    source: Any,
    dest: str | os.PathLike[str] | Any,
    *,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    compressor: str | None = "zstd",
    compression_level: int | None = None,
    axes: Sequence[str] | None = None,
    progress: bool | Callable[[dict[str, Any]], Any] = False,
    overwrite: bool = False,
    resume: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    source_storage_options: Mapping[str, Any] | None = None,
) -> Array:
    """Copy ``source`` (as for :func:`pyramid`: a Zarr v2/v3 array or anything sliceable)
    into one sharded Zarr v3 array at ``dest``, re-chunked and re-sharded, in one pass and
    bounded memory; ``axes`` become its ``dimension_names``. Each shard is stored once; a
    killed copy resumes with ``resume=True``. ``storage_options`` and
    ``source_storage_options`` as for :func:`pyramid`. Returns the array.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.copy(np.ones((10, 10), "int8"), tempfile.mkdtemp() + "/c.zarr",
    ...             chunks=(4, 4), shards=(8, 8))
    >>> a.shards, int(a[9, 9])
    ((8, 8), 1)
    """
    levels = build_levels(
        "copy",
        source,
        dest,
        factors=[],
        levels=None,
        method="stride",
        chunks=chunks,
        shards=shards,
        compressor=compressor,
        compression_level=compression_level,
        axes=axes,
        units=None,
        name=None,
        progress=progress,
        overwrite=overwrite,
        resume=resume,
        storage_options=storage_options,
        source_storage_options=source_storage_options,
    )
    return levels[0]
