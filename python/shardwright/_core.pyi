"""Type stubs of the native module ``shardwright._core`` (crates/shardwright-py).

The public API is the ``shardwright`` package; these classes are its engine.
"""

from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__version__: str

def num_threads() -> int:
    """The number of threads in the encoding pool."""

def set_num_threads(threads: int) -> None:
    """Size the encoding pool, before its first use."""

def remove_folder_to_overwrite(path: str | PathLike[str]) -> None:
    """Remove ``path`` to overwrite it; refuses '', '.', '/', the home and current folders."""

def run_cli(argv: list[str | bytes]) -> int:
    """Run the ``shardwright`` command line (program name first); returns the exit code.
    An exception a signal handler raises during a long command stops it cleanly and is then
    raised again."""

_Cell = tuple[list[int], list[int], list[int]]

class GridIter(Iterator[_Cell]):
    """Grid cells as ``(origin, shape, index)`` tuples, in C order."""

    def __iter__(self) -> GridIter: ...
    def __next__(self) -> _Cell: ...
    def __len__(self) -> int: ...

class Array:
    """An array on a local filesystem (its folder is the store root) or in an object store."""

    @staticmethod
    def open(root: str | PathLike[str]) -> Array: ...
    @staticmethod
    def open_url(url: str, options: list[tuple[str, str]]) -> Array: ...
    @staticmethod
    def create_url(
        url: str, json: str, options: list[tuple[str, str]], overwrite: bool
    ) -> Array: ...
    @staticmethod
    def open_adapter(adapter: Any, path: str, url: str) -> Array: ...
    @staticmethod
    def create_adapter(adapter: Any, path: str, json: str, url: str) -> Array: ...
    @staticmethod
    def spec_json(
        shape: list[int],
        dtype: str,
        chunks: list[int],
        shards: list[int] | None,
        fill_value_json: str,
        compressor: str,
        level: int | None,
        index_location: str,
        dimension_names: list[str] | None,
        attributes_json: str | None = None,
        grid_cells: list[int | list[int]] | None = None,
    ) -> str: ...
    @staticmethod
    def create(root: str | PathLike[str], json: str) -> Array: ...
    @property
    def root(self) -> Path | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def key(self) -> str: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def dtype(self) -> str:
        """The data type's spec: its Zarr v3 name, or the compact JSON of the data type
        object of a type with a configuration (``numpy.datetime64``, ``raw_bytes``…)."""
    @property
    def chunks(self) -> list[int]: ...
    @property
    def shards(self) -> list[int] | None: ...
    @property
    def shard_shape(self) -> list[int]: ...
    @property
    def regular_shards(self) -> bool: ...
    @property
    def shard_sizes(self) -> list[list[int]]: ...
    @property
    def chunk_sizes(self) -> list[list[int]]: ...
    @property
    def shard_grid_shape(self) -> list[int]: ...
    @property
    def chunk_grid_shape(self) -> list[int]: ...
    def shard_index_at(self, point: list[int]) -> list[int]: ...
    @property
    def fill_value_bytes(self) -> bytes: ...
    @property
    def metadata_json(self) -> str: ...
    def iter_shards(
        self, within_region: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    ) -> GridIter: ...
    def iter_chunks(
        self, within_region: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    ) -> GridIter: ...
    def shard(self, index: list[int]) -> tuple[list[int], list[int]]: ...
    def update_attributes(
        self, replace_json: str | None, set_json: str, remove: list[str]
    ) -> Array: ...
    def resize(self, shape: list[int]) -> Array: ...
    def shard_writer(
        self,
        index: list[int],
        max_in_flight: int | None = None,
        retries: int | None = None,
        overwrite_corrupt: bool = False,
    ) -> ShardWriter: ...
    def transaction(
        self,
        memory_limit: int | None = None,
        early_commit: bool = False,
        retries: int | None = None,
        overwrite_corrupt: bool = False,
    ) -> Transaction: ...
    def read(self, origin: list[int], shape: list[int]) -> npt.NDArray[np.uint8]: ...

class Appender:
    @staticmethod
    def open(array: Array, axis: int, near_end: bool = False) -> Appender: ...
    def append(self, data: np.ndarray) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> Array | None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def length(self) -> int: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def shown_shape(self) -> list[int]: ...

class ImageAppender:
    @staticmethod
    def open(levels: list[Array], factors: list[int], method: str, axis: int) -> ImageAppender: ...
    def append(self, data: np.ndarray) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> list[Array] | None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def length(self) -> int: ...
    @property
    def shapes(self) -> list[list[int]]: ...

class ShardWriter:
    """The writer of one shard; any thread may call it while another writes or commits."""

    @property
    def shard(self) -> _Cell: ...
    @property
    def closed(self) -> bool: ...
    @property
    def committing(self) -> bool: ...
    @property
    def chunks_written(self) -> int: ...
    @property
    def staged_memory(self) -> int: ...
    def inner_chunks(self) -> GridIter: ...
    def write(
        self, origin: tuple[int, ...], shape: tuple[int, ...], data: npt.NDArray[np.generic]
    ) -> None: ...
    def write_value(
        self, origin: tuple[int, ...], shape: tuple[int, ...], value: bytes
    ) -> None: ...
    def commit(self) -> dict[str, int]: ...
    def commit_background(self) -> PendingCommit: ...
    def abort(self) -> None: ...

class PendingCommit:
    """A commit running on a background thread."""

    @property
    def done(self) -> bool: ...
    def wait(self) -> dict[str, int]: ...

class Transaction:
    """Region writes across shards, read-your-writes, parallel commit; any thread may call
    it while another writes or commits."""

    @property
    def closed(self) -> bool: ...
    @property
    def committing(self) -> bool: ...
    @property
    def staged_memory(self) -> int: ...
    def write(
        self, origin: tuple[int, ...], shape: tuple[int, ...], data: npt.NDArray[np.generic]
    ) -> None: ...
    def write_value(
        self, origin: tuple[int, ...], shape: tuple[int, ...], value: bytes
    ) -> None: ...
    def read(self, origin: list[int], shape: list[int]) -> npt.NDArray[np.uint8]: ...
    def shard_writer(self, index: list[int]) -> ShardWriter: ...
    def check_writer(self, writer: ShardWriter) -> None: ...
    def absorb(self, writer: ShardWriter) -> None: ...
    def commit(self) -> dict[str, int]: ...
    def abort(self) -> None: ...

class Source:
    """What a pyramid or copy reads: an array opened natively, or any sliceable object."""

    @staticmethod
    def open_path(root: str | PathLike[str]) -> Source: ...
    @staticmethod
    def open_url(url: str, options: list[tuple[str, str]]) -> Source: ...
    @staticmethod
    def open_adapter(adapter: Any, path: str, url: str) -> Source: ...
    @staticmethod
    def of_array(array: Array) -> Source: ...
    @staticmethod
    def of_object(
        object: Any, shape: list[int], dtype: str, grain: list[int] | None = None
    ) -> Source: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def dtype(self) -> str: ...
    def read(self, origin: list[int], shape: list[int]) -> npt.NDArray[np.uint8]:
        """The region's raw elements (C order, native endian) as a flat uint8 array."""

def open_tiff(spec: str) -> tuple[Source, dict[str, Any]]:
    """A TIFF / BigTIFF / OME-TIFF / ImageJ file, a folder of TIFF files or a glob pattern
    of them, as a ``Source``, with ``{"axes", "scale", "units", "channels",
    "pixel_sizes"}`` (``scale``, ``units`` and ``channels`` ``None`` when the files say
    nothing of them; ``channels``: a list of ``{"label", "color"}``; ``pixel_sizes``: per
    axis, a float where the files declare the axis's pixel size and ``None`` where they do
    not, where ``scale`` says 1.0). Errors: ``UnsupportedError`` (not a TIFF, a compression or
    sample layout not supported), ``ShapeError`` (pages or files that differ),
    ``ArrayNotFoundError`` (no TIFF files), ``ShardwrightError`` (I/O, bad metadata).

    >>> import os, tempfile
    >>> import numpy as np, tifffile
    >>> from shardwright import _core
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tif")
    >>> tifffile.imwrite(path, np.arange(12, dtype="uint16").reshape(3, 4))
    >>> source, info = _core.open_tiff(str(path))
    >>> info["axes"], source.shape, source.dtype
    (['y', 'x'], [3, 4], 'uint16')
    >>> info["pixel_sizes"]
    [None, None]
    >>> source.read([1, 0], [1, 4]).view("uint16").tolist()
    [4, 5, 6, 7]
    """

class Image:
    """An image being written; ``finish`` or ``abandon`` ends it."""

    @staticmethod
    def create(
        root: str | None,
        url: str | None,
        options: list[tuple[str, str]],
        adapter: Any | None,
        path: str,
        shape: list[int],
        dtype: str,
        fill_json: str,
        settings: dict[str, Any],
        resume: bool,
        overwrite: bool,
    ) -> Image: ...
    @staticmethod
    def open(
        root: str | None,
        url: str | None,
        options: list[tuple[str, str]],
        adapter: Any | None,
        path: str,
    ) -> Image: ...
    def levels(self) -> list[Array]: ...
    def shards_in_order(self) -> list[tuple[list[int], list[int], list[int]]]: ...
    def plan_settings(self) -> tuple[list[int], str]: ...
    def finish(self) -> tuple[list[Array], dict[str, Any]]: ...
    def abandon(self) -> None: ...
    @property
    def closed(self) -> bool: ...

def build(
    source: Source,
    kind: str,
    root: str | None,
    url: str | None,
    options: list[tuple[str, str]],
    adapter: Any | None,
    path: str,
    settings: dict[str, Any],
    resume: bool,
    overwrite: bool,
    progress: Any | None,
) -> tuple[list[Array], dict[str, Any]]:
    """Build a pyramid (``kind="pyramid"``) or a copy of ``source``; returns the written
    arrays and the build's report. ``settings``: every key of ``_pyramid.prepare``'s dict
    (``factors``, ``levels``, ``method``, ``chunks``, ``shards``, ``compressor``,
    ``compression_level``, ``axes``, ``name``, ``units``, ``scale``, ``translation``,
    ``channels`` as ``(label, color)`` pairs)."""

def default_factors(axes: list[str], sizes: list[float | None]) -> list[int]:
    """The downsampling factors ``sw.convert`` uses when none are given (``sizes``: the
    pixel size per axis, ``None`` where unknown): 2 along ``y``
    and ``x``, along ``z`` unless its pixel size is more than twice ``x``'s, 1 elsewhere.

    >>> default_factors(["z", "y", "x"], [2.0, 0.406, 0.406])
    [1, 2, 2]
    """

def is_tiff_spec(text: str) -> bool:
    """Whether ``text`` names a TIFF file, a folder of TIFF files or a glob of them.

    >>> is_tiff_spec("/no/such/file.zarr")
    False
    """

def add_levels(
    root: str | None,
    url: str | None,
    options: list[tuple[str, str]],
    adapter: Any | None,
    path: str,
    settings: dict[str, Any],
    method_named: bool,
    progress: Any | None,
) -> tuple[list[Array], dict[str, Any]]:
    """Write the levels above level 0 of the image at the destination (level 0 only read),
    then its group metadata; empty ``factors`` and ``None`` settings come from the image
    (``method_named`` false: the levels' own method). Returns the level arrays and the
    report."""

class PyramidTasks:
    """A pyramid built as one task per shard of each level (``shardwright.dask``);
    pickled as where it writes, reopened on a worker without creating anything."""
    @staticmethod
    def prepare(
        source: Source,
        root: str | None,
        url: str | None,
        options: list[tuple[str, str]],
        adapter: Any | None,
        path: str,
        settings: dict[str, Any],
        resume: bool,
        overwrite: bool,
    ) -> PyramidTasks: ...
    @staticmethod
    def reopen(
        root: str | None,
        url: str | None,
        options: list[tuple[str, str]],
        adapter: Any | None,
        path: str,
        levels: int,
        group: bytes,
    ) -> PyramidTasks: ...
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]: ...
    def levels(self) -> list[Array]: ...
    def stored(self) -> list[list[list[int]]]: ...
    def inputs(self, level: int, index: list[int]) -> list[list[int]]: ...
    def write_shard(self, level: int, index: list[int]) -> dict[str, int]: ...
    def finish(self) -> int: ...

def check(array: Array, quick: bool, repair: bool, progress: Any | None = None) -> str:
    """Check (and with ``repair``, mend) every stored shard of ``array``; returns the report
    as JSON text. ``progress`` receives a dict after each batch of shards."""

class FaultyStore:
    def __init__(self, root: str | None = None) -> None: ...
    def inject(self, op_name: str, nth: int, kind: str, arg: int | None = None) -> None: ...
    def reset(self) -> None: ...
    def release(self) -> None: ...
    def blocked(self) -> int: ...
    def counts(self) -> list[tuple[str, int]]: ...
    def fired(self) -> list[tuple[str, int, str]]: ...
    def raw_get(self, key: str) -> bytes | None: ...
    def open(self, path: str = "") -> Array: ...
