"""``sw.convert``: a microscope's TIFF, BigTIFF or OME-TIFF file, a folder or glob of TIFF
slices, or anything :func:`shardwright.pyramid` takes, to a sharded OME-Zarr 0.5 image in
one pass, with the file's axes, pixel sizes, units and channels carried over (the same
engine as ``shardwright convert``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _core
from ._errors import ShapeError
from ._image_metadata import ChannelSpec
from ._pyramid import Levels, Shapes, build_levels
from ._sources import engine_source_of, options_for

_OME_AXES = "tczyx"


def tiff_of(source: Any) -> tuple[Any, dict[str, Any]] | None:
    """The engine's reader of ``source`` and what the file says (``axes``, ``scale``,
    ``units``, ``channels``, ``pixel_sizes``) when ``source`` is a local path that is no
    Zarr array: a TIFF file, a folder of TIFF files or a glob pattern of them (a file that
    is not a TIFF, a folder or pattern without TIFF files: the reader's error says so);
    ``None`` for anything else.

    >>> tiff_of(12) is None
    True
    """
    if not isinstance(source, (str, os.PathLike)):
        return None
    text = os.fspath(source)
    if "://" in text:
        return None
    path = Path(text)
    zarr_folder = path.is_dir() and any(
        (path / name).exists() for name in ("zarr.json", ".zarray", ".zgroup")
    )
    pattern = any(c in text for c in "*?[") and not path.exists()
    missing_tiff = not path.exists() and path.suffix.lower() in (".tif", ".tiff", ".btf", ".tf8")
    tiff = _core.is_tiff_spec(text) or path.is_file() or pattern or missing_tiff
    if tiff or (path.is_dir() and not zarr_folder):
        return _core.open_tiff(text)
    return None


def for_axes(said: dict[str, Any], axes: list[str]) -> dict[str, Any]:
    """What a file ``said`` (per axis of the file) for the image's ``axes``: each axis takes
    the scale, unit and pixel size of the file's axis of the same name (none for a name the
    file lacks); the channels stay when both have a ``c`` axis.

    >>> said = {"axes": ["t", "y", "x"], "scale": [2.0, 0.5, 0.5],
    ...         "units": ["second", "micrometer", "micrometer"], "channels": None,
    ...         "pixel_sizes": [2.0, 0.5, 0.5]}
    >>> mine = for_axes(said, ["z", "y", "x"])
    >>> mine["scale"], mine["units"], mine["pixel_sizes"]
    ([1.0, 0.5, 0.5], [None, 'micrometer', 'micrometer'], [None, 0.5, 0.5])
    """
    file_axes = said.get("axes")
    if not file_axes or list(file_axes) == axes:
        return said
    where = [file_axes.index(a) if a in file_axes else None for a in axes]

    def pick(values: list[Any] | None, missing: Any) -> list[Any] | None:
        if values is None:
            return None
        return [missing if j is None else values[j] for j in where]

    both_have_c = "c" in axes and "c" in file_axes
    return {
        "axes": axes,
        "scale": pick(said.get("scale"), 1.0),
        "units": pick(said.get("units"), None),
        "pixel_sizes": pick(said.get("pixel_sizes"), None),
        "channels": said.get("channels") if both_have_c else None,
    }


def _default_axes(ndim: int) -> list[str]:
    if ndim > len(_OME_AXES):
        return [f"dim_{i}" for i in range(ndim)]
    return list(_OME_AXES[len(_OME_AXES) - ndim :])


def convert(
    source: Any,
    dest: str | os.PathLike[str] | Any,
    *,
    factors: Sequence[int] | None = None,
    levels: int | None = None,
    method: str = "mean",
    chunks: Shapes | None = None,
    shards: Shapes | None = None,
    compressor: str | None = "zstd",
    compression_level: int | None = None,
    axes: Sequence[str] | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    units: Sequence[str | None] | None = None,
    channels: Sequence[ChannelSpec] | None = None,
    name: str | None = None,
    progress: bool | Callable[[dict[str, Any]], Any] = False,
    resume: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> Levels:
    """Convert ``source`` to a multiscale OME-Zarr 0.5 image at ``dest`` in one pass, as
    :func:`pyramid` writes it: each shard of every level stored once, memory bounded by
    the chunk and shard shapes (a TIFF is read strip by strip or tile by tile, decoded in
    parallel, never whole), the group's metadata written last.

    A TIFF's metadata is carried: the axes and their order (OME-XML ``DimensionOrder``,
    an ImageJ hyperstack's ``channels``/``slices``/``frames``, else pages as ``z``), the
    pixel sizes and units (OME ``PhysicalSizeX/Y/Z`` and ``TimeIncrement``, ImageJ
    ``spacing``/``unit``/``finterval``, the TIFF resolution tags), channel names and
    colours (written as ``omero``). Each argument given overrides what the file says.

    Args:
        source: a TIFF, BigTIFF or OME-TIFF file (multi-page, tiled or striped; no
            compression, LZW, deflate, zstd, packbits, JPEG, CCITT); a folder of TIFF
            files or a glob pattern (``"slices/*.tif"``): sorted by name and stacked
            along a new leading axis (``z`` for 2-d files, ``t`` for 3-d ones); or anything
            :func:`pyramid` takes (a Zarr array's path or URL, a ``zarr.Array``, numpy,
            dask, ...).
        dest: a local path, an object-store URL, or a zarr-python store.
        factors: the downsampling factor per axis. Default: 2 along ``y`` and ``x``, and
            along ``z`` unless its pixel size is more than twice that of ``x``; 1 along
            ``t`` and ``c``.
        levels: the number of levels, level 0 included (``1``: a plain conversion); default
            as :func:`pyramid`: until the downsampled axes fit one inner chunk.
        method, chunks, shards, compressor, compression_level, progress, name: as for
            :func:`pyramid`.
        axes, scale, translation, units, channels: override the file's (as for
            :func:`pyramid`).
        resume: finish a conversion that was stopped or killed (the shards it stored are
            kept, each whole).
        overwrite: replace whatever is at ``dest``.
        storage_options: object-store options for ``dest`` (or a URL source).

    Returns:
        The level arrays (a ``list`` with ``.stats``).

    >>> import numpy as np, tempfile, tifffile, zarr, shardwright as sw
    >>> tif = tempfile.mkdtemp() + "/cells.ome.tif"
    >>> data = np.arange(2 * 64 * 64, dtype="uint16").reshape(2, 64, 64)
    >>> tifffile.imwrite(tif, data, ome=True, metadata={"axes": "CYX",
    ...     "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5, "Channel": {"Name": ["DAPI", "GFP"]}})
    >>> dest = tempfile.mkdtemp() + "/cells.zarr"
    >>> levels = sw.convert(tif, dest, levels=2, chunks=(1, 32, 32))
    >>> [a.shape for a in levels], bool((levels[0][...] == data).all())
    ([(2, 64, 64), (2, 32, 32)], True)
    >>> ome = zarr.open_group(dest).attrs["ome"]
    >>> ome["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"]
    [1.0, 0.5, 0.5]
    >>> [c["label"] for c in ome["omero"]["channels"]]
    ['DAPI', 'GFP']
    """
    tiff = tiff_of(source)
    if tiff is not None:
        engine_source, said = tiff
    else:
        engine_source, said = engine_source_of(source, options_for(source, storage_options)), {}
    ndim = len(engine_source.shape)
    named = [str(a) for a in axes] if axes is not None else said.get("axes") or _default_axes(ndim)
    if len(named) != ndim:
        raise ShapeError(
            f"axes {axes!r} name {len(named)} axes; the source has {ndim} (shape "
            f"{tuple(engine_source.shape)})"
        )
    said = for_axes(said, named)
    if factors is None:  # from the pixel sizes given, else those the file declares
        sizes = said.get("pixel_sizes") or [] if scale is None else [float(s) for s in scale]
        factors = _core.default_factors(named, sizes)
    scale = said.get("scale") if scale is None else scale
    units = said.get("units") if units is None else units
    channels = said.get("channels") if channels is None else channels
    return build_levels(
        "pyramid",
        engine_source,
        dest,
        progress=progress,
        factors=factors,
        levels=levels,
        method=method,
        chunks=chunks,
        shards=shards,
        compressor=compressor,
        compression_level=compression_level,
        axes=named,
        units=units,
        name=name,
        overwrite=overwrite,
        resume=resume,
        storage_options=storage_options,
        scale=scale,
        translation=translation,
        channels=channels,
        overlap_source=source,
    )
