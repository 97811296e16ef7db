"""Scale out on Dask: the shard is the unit of distributed work.

>>> import dask.array as da, tempfile, shardwright as sw, shardwright.dask as swd
>>> darr = da.arange(100 * 60, dtype="int32", chunks=1000).reshape(100, 60)  # any chunks
>>> stats = swd.to_zarr(darr, tempfile.mkdtemp() + "/x.zarr", chunks=(10, 10),
...                     shards=(50, 30), scheduler="sync")
>>> stats["shards_written"], stats["puts"]
(4, 4)

Each target shard is written by exactly one task, which takes the dask blocks that meet it
as its inputs (the scheduler computes them wherever it likes), writes the shard through a
shard writer and stores it with one put. How this differs from ``dask.array.to_zarr``
(and ``da.store``):

- *Exact whatever the chunking.* ``dask.array.to_zarr`` writes one task per dask block:
  when blocks and shards do not line up, several tasks read, change and write the same
  shard at once and all but one lose their part (dask #12583, zarr-python #3682; see
  BENCHMARKS.md for the element counts). Here no two tasks write one shard, for any
  chunking: aligned, misaligned, irregular. No lock is needed or taken.
- *One put per shard, never a read*: a shard is stored once, whole; nothing is read back.
- *Safe to retry*: a task that fails stores nothing; one that runs again (a retry, a
  worker lost mid-run) writes the same shard again, whole, atomically.
- *The graph*: the source's tasks, one task per target shard (keys
  ``('shardwright-shard-<token>', i, j, …)``: the shard's grid index, which the dashboard
  and ``distributed.progress`` show), and one that sums their stats. The result is those
  stats (``shards_written``, ``puts``, ``bytes_written``, …), not an array.
- *Memory per task*: the shard's encoded bytes and the dask blocks it needs, never the
  array.

Tasks carry the target as where it is (a path every worker can reach, or an
object-store URL) and a worker process opens it once, on the first task that needs it
(an error there is that task's error). An array in this process's memory
(``memory:///``, a zarr ``MemoryStore``, fsspec's ``memory://`` filesystem) is refused
with a :class:`TypeError` when the tasks are pickled (a distributed ``Client``,
``"processes"``), before any is sent, and with ``compute=True`` at the call, before
anything is created: use the threaded or synchronous scheduler for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

try:
    import dask.array as da
    from dask._task_spec import Task  # noqa: F401  (the task spec of dask >= 2025)
except ImportError as err:  # pragma: no cover - dask is a test dependency
    raise ImportError(
        "shardwright.dask needs dask 2026.8 or newer with dask.array (and distributed for "
        "a cluster): pip install 'shardwright[dask]'"
    ) from err

from . import _dask_graph as graph
from ._array import Array, Within
from ._domain import Domain
from ._errors import NotAnArrayError, ShapeError
from ._image_metadata import ChannelSpec
from ._location import refuse_process_local, refuse_to_pickle
from ._open import create
from ._open import open as open_array
from ._overlap import refuse_overwriting_the_source
from ._pyramid import Levels, Shapes, prepare
from ._sources import options_for, side_options
from ._values import refuse_by_dtype

__all__ = ["map_chunks", "pyramid", "to_zarr"]


def _dask_array(darr: Any) -> da.Array:
    if not isinstance(darr, da.Array):
        raise TypeError(
            f"expected a dask array, got {type(darr).__name__}; wrap it with "
            "dask.array.from_array(x, chunks=...) (or write it with sw.copy)"
        )
    if any(np.isnan(c) for axis in darr.chunks for c in axis):
        raise ValueError(
            "the dask array has unknown chunk sizes (nan), so which blocks meet which "
            "shard is unknown; call darr.compute_chunk_sizes() first"
        )
    return darr


def _target(
    darr: da.Array,
    target: Any,
    storage_options: Mapping[str, Any] | None,
    create_kwargs: dict[str, Any],
    ships: bool,
) -> Array:
    """The array to write: ``target`` opened, or created with ``create_kwargs``; when
    the tasks are pickled (``ships``), one every worker process can open (checked before
    anything is created)."""
    if ships:
        graph.refuse_to_ship(target, storage_options)
    if create_kwargs.get("overwrite"):  # never delete the array the dask array reads
        refuse_overwriting_the_source(darr, target, storage_options, options_for)
    if create_kwargs:
        if isinstance(target, Array):
            raise TypeError(
                f"create arguments ({', '.join(sorted(create_kwargs))}) make a new array; "
                "the target is an open shardwright Array"
            )
        shape = tuple(create_kwargs.pop("shape", darr.shape))
        if shape != darr.shape:
            raise ShapeError(f"shape={shape} differs from the dask array's {darr.shape}")
        dtype = create_kwargs.pop("dtype", darr.dtype)
        return create(
            target, shape=darr.shape, dtype=dtype, storage_options=storage_options, **create_kwargs
        )
    array = _opened(target, storage_options)
    if array.shape != darr.shape:
        raise ShapeError(
            f"the dask array's shape {darr.shape} differs from the target's {array.shape} "
            f"({array.path})"
        )
    return array


def _opened(target: Any, storage_options: Mapping[str, Any] | None) -> Array:
    """``target`` itself when it is an open Array, else the array it names, opened."""
    if isinstance(target, Array):
        if storage_options:
            raise TypeError("storage_options are for a path or URL; the target is open")
        return target
    return open_array(target, storage_options=storage_options)


def _check_dtype(source: np.dtype, array: Array) -> None:
    """Refuse a dask array of a dtype the array's does not take (text into numbers,
    numbers into dates…) before computing anything; values are
    checked block by block as each shard's task writes them (int64 blocks whose values
    all fit a uint16 target are written)."""
    refuse_by_dtype(source, array.dtype, "nothing was computed or written")


def _run(delayed: Any, compute: bool, compute_kwargs: dict[str, Any]) -> Any:
    return delayed.compute(**compute_kwargs) if compute else delayed


def to_zarr(
    darr: Any,
    target: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    compute: bool = True,
    scheduler: Any = None,
    **create_kwargs: Any,
) -> Any:
    """Write the dask array ``darr`` into a sharded Zarr array: ``target`` is an
    existing array (a path, a URL, a ``zarr.Array`` or a shardwright ``Array``) of the
    same shape, or, with :func:`shardwright.create`'s arguments (``chunks=``,
    ``shards=``, ``compressor=``, ``overwrite=``, …; ``shape`` and ``dtype`` default to
    the dask array's), a new one. Exactly one task writes each target shard, whatever
    the dask chunking: it computes the dask blocks it needs and stores the shard with one
    put. Returns the summed stats (``shards_written``, ``puts``, ``bytes_written``, …);
    ``compute=False`` returns a ``dask.delayed.Delayed`` that computes them.
    ``scheduler`` is passed to ``compute`` (``"sync"``, ``"threads"``, a
    ``distributed.Client``; default: dask's, which is the client's when one exists).

    >>> import dask.array as da, numpy as np, tempfile, shardwright as sw, shardwright.dask as swd
    >>> darr = da.from_array(np.arange(36, dtype="uint8").reshape(6, 6), chunks=(5, 4))
    >>> path = tempfile.mkdtemp() + "/t.zarr"
    >>> task = swd.to_zarr(darr, path, chunks=(2, 2), shards=(4, 4), compute=False)
    >>> task.compute(scheduler="threads")["shards_written"]
    4
    >>> bool((sw.open(path)[...] == darr.compute()).all())
    True
    """
    darr = _dask_array(darr)
    ships = compute and graph.ships(scheduler)
    array = _target(darr, target, storage_options, dict(create_kwargs), ships)
    array._check_writable("swd.to_zarr")
    _check_dtype(darr.dtype, array)
    token = graph.new_token()
    layer, keys = graph.shard_layer(darr, array, f"{graph.SHARD_TASK}-{token}", array.iter_shards())
    total = f"{graph.TOTAL_TASK}-{token}"
    layer[total] = graph.total_task(total, keys)
    delayed = graph.delayed_of(total, layer, [darr])
    return _run(delayed, compute, {"scheduler": scheduler} if scheduler is not None else {})


def map_chunks(
    fn: Callable[[Domain], Any],
    target: str | os.PathLike[str] | Any,
    *,
    within: Within = None,
    compute: bool = True,
    storage_options: Mapping[str, Any] | None = None,
    scheduler: Any = None,
) -> Any:
    """Fill ``target`` (an existing array: a path, URL, ``zarr.Array`` or shardwright
    ``Array``), or the shards meeting ``within``, as :meth:`Array.map_chunks` does, with
    one dask task per shard: each calls ``fn(chunk)`` for the shard's inner chunks (in C
    order; an array of ``chunk.shape`` or a scalar) and stores the shard with one put.
    ``fn`` must be picklable for a cluster of processes (dask uses cloudpickle: lambdas
    and closures are). Returns the summed stats, or with ``compute=False`` a
    ``dask.delayed.Delayed``.

    >>> import tempfile, shardwright as sw, shardwright.dask as swd
    >>> a = sw.create(tempfile.mkdtemp() + "/m.zarr", shape=(6, 6), dtype="int32",
    ...               chunks=(2, 2), shards=(4, 4))
    >>> swd.map_chunks(lambda c: c.index[0] * 10 + c.index[1], a, scheduler="sync")["puts"]
    4
    >>> int(a[5, 3])
    21
    """
    array = _opened(target, storage_options)
    if compute and graph.ships(scheduler):
        graph.refuse_to_ship(array)
    array._check_writable("swd.map_chunks")
    if not callable(fn):
        raise TypeError(f"fn must be callable (fn(chunk) -> data), got {type(fn).__name__}")
    token = graph.new_token()
    layer, keys = graph.chunks_layer(
        array, fn, f"{graph.CHUNKS_TASK}-{token}", array.iter_shards(within)
    )
    total = f"{graph.TOTAL_TASK}-{token}"
    layer[total] = graph.total_task(total, keys)
    delayed = graph.delayed_of(total, layer)
    return _run(delayed, compute, {"scheduler": scheduler} if scheduler is not None else {})


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
    overwrite: bool = False,
    resume: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    source_storage_options: Mapping[str, Any] | None = None,
    compute: bool = True,
    scheduler: Any = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    channels: Sequence[ChannelSpec] | None = None,
) -> Any:
    """:func:`shardwright.pyramid` with the shards of each level as dask tasks. Level 0
    is written one task per shard: from a dask array's blocks, as :func:`to_zarr` does,
    or, for a path, URL, shardwright or zarr ``Array``, each task reading its shard's
    region of the source itself (no blocks move between workers); anything else
    :func:`shardwright.pyramid` reads is wrapped with ``dask.array.from_array``. Each
    shard of level ``k`` is a task that waits for the shards of level ``k - 1`` it reads
    and downsamples them as stored (the same blocks and kernels: every level equals
    :func:`shardwright.pyramid`'s bit for bit); a last task writes the OME group
    metadata (with the channels' windows from the stored top level: the same document as
    :func:`shardwright.pyramid` writes). Arguments as :func:`shardwright.pyramid`'s
    (``scale``, ``translation``, ``units`` and ``channels`` included; ``resume=True``
    leaves the shards already stored out of the graph). Returns the level arrays (a ``list`` with
    ``.stats``), or with ``compute=False`` a ``dask.delayed.Delayed`` that computes the
    stats.

    >>> import dask.array as da, tempfile, shardwright as sw, shardwright.dask as swd
    >>> darr = da.arange(64 * 64, dtype="uint16", chunks=1000).reshape(64, 64)
    >>> levels = swd.pyramid(darr, tempfile.mkdtemp() + "/img.zarr", factors=(2, 2),
    ...                      levels=3, chunks=(16, 16), scheduler="threads")
    >>> [a.shape for a in levels], int(levels[1][0, 0]), levels.stats["shards_written"]
    ([(64, 64), (32, 32), (16, 16)], 32, [1, 1, 1])
    """
    source_options, _ = side_options(source, dest, storage_options, source_storage_options)
    direct = None if isinstance(source, da.Array) else _direct_source(source, source_options)
    darr = None
    if direct is None:
        given = source if isinstance(source, da.Array) else da.from_array(source, chunks="auto")
        darr = _dask_array(given)
    # the settings are checked against the source as given (a URL with its options, a
    # path that overlaps the destination), as sw.pyramid checks them
    core_source, where, arguments = prepare(
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
        overwrite=overwrite,
        resume=resume,
        storage_options=storage_options,
        source_storage_options=source_storage_options,
        scale=scale,
        translation=translation,
        channels=channels,
    )
    if where.path is not None:  # the tasks reopen it where a worker's working folder is
        arguments = (str(where.path.absolute()), *arguments[1:])
    if compute and graph.ships(scheduler):  # before the destination is cleared or created
        _refuse_local_source(direct)
        refuse_process_local(where, f"the pyramid '{where.url or where.path}'")
    from . import _core

    tasks = _core.PyramidTasks.prepare(core_source, *arguments)
    arrays = [Array(a, where=where.child(str(k))) for k, a in enumerate(tasks.levels())]
    delayed = _pyramid_graph(darr, direct, tasks, arrays, resume=resume)
    if not compute:
        return delayed
    out = Levels(arrays)
    out.stats = delayed.compute(**({"scheduler": scheduler} if scheduler is not None else {}))
    return out


def _direct_source(source: Any, storage_options: Mapping[str, Any] | None) -> Any:
    """The source level 0's tasks read their shard from themselves (no dask blocks to
    move between workers): a path or URL opened read-only, a shardwright or zarr
    ``Array``; ``None`` for anything else (numpy, h5py…: wrapped with
    ``dask.array.from_array``)."""
    if isinstance(source, (str, os.PathLike)):
        try:
            return open_array(source, mode="r", storage_options=storage_options)
        except NotAnArrayError:
            local = Path(os.fspath(source))
            if "://" in os.fspath(source) or not (local / ".zarray").is_file():
                raise  # a group, or a Zarr v2 array in an object store
            import zarr  # a local Zarr v2 array, read through zarr-python

            return zarr.open_array(str(local.absolute()), mode="r")
    if isinstance(source, Array) or type(source).__module__.startswith("zarr"):
        return source
    return None


def _refuse_local_source(direct: Any) -> None:
    """Refuse a source the level-0 tasks read that no worker process sees: a
    shardwright ``Array`` that does not pickle, a ``zarr.Array`` on fsspec's or
    obstore's in-memory store (a worker would read the fill value; a zarr
    ``MemoryStore`` is pickled as a copy, which reads the same)."""
    if isinstance(direct, Array):
        graph.refuse_to_ship(direct)
    elif direct is not None and hasattr(direct, "store"):
        from ._adapter import process_local

        kind = process_local(direct.store)
        if kind not in (None, "a zarr MemoryStore"):
            refuse_to_pickle(f"the source {direct!r}", kind)


def _pyramid_graph(
    darr: da.Array | None, direct: Any, tasks: Any, arrays: list[Array], *, resume: bool
) -> Any:
    from dask._task_spec import Task, TaskRef

    token = graph.new_token()
    stored = [set(map(tuple, s)) for s in tasks.stored()] if resume else [set()] * len(arrays)
    name = f"{graph.LEVEL_TASK}-{token}"  # keys (name, level, *shard index)
    prepared = graph.PreparedPyramid(tasks, name)  # each worker process reopens it once
    if isinstance(direct, Array):
        direct = graph.travelling(direct, name)
    level0 = [s for s in arrays[0].iter_shards() if tuple(s.index) not in stored[0]]
    if darr is not None:
        layer, keys = graph.shard_layer(darr, arrays[0], name, level0, level=0)
    else:
        level0_array = graph.travelling(arrays[0], name)
        layer = {
            (name, 0, *s.index): Task(
                (name, 0, *s.index),
                graph.copy_from_source,
                graph.ShardFromSource(direct, level0_array, tuple(s.index)),
            )
            for s in level0
        }
        keys = list(layer)
    written = [len(keys)]
    for k in range(1, len(arrays)):
        for shard in arrays[k].iter_shards():
            index = tuple(shard.index)
            if index in stored[k]:
                continue
            waits = [
                TaskRef((name, k - 1, *i))
                for i in map(tuple, tasks.inputs(k, list(index)))
                if i not in stored[k - 1]
            ]
            key = (name, k, *index)
            layer[key] = Task(key, graph.downsample_shard, prepared, k, index, *waits)
            keys.append(key)
        written.append(len(keys) - sum(written))
    skipped = [len(s) for s in stored]
    total = f"{graph.TOTAL_TASK}-{token}"
    layer[total] = graph.total_task(total, keys, graph.finish_pyramid, prepared, written, skipped)
    return graph.delayed_of(total, layer, [] if darr is None else [darr])
