"""The task graphs of :mod:`shardwright.dask`: one task per target shard, whatever the
dask chunking, and the functions those tasks run on the workers.

A shard task's inputs are the dask blocks that meet its shard (by key: the scheduler
computes them wherever it likes and hands them over); it writes the shard with one
shard writer and stores it with one put. No two tasks write the same shard, so no lock is
needed and no write is lost; a task that runs again (a retry, a lost worker) writes the
same shard again, whole, atomically.

The tasks carry the target as where it is (``_reopen.py``): a worker process opens it on
the first task that uses it (no I/O while a task is unpickled: an error there is the
task's) and keeps it for the computation's other tasks.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import Array
from ._domain import Domain
from ._errors import DTypeError, ShapeError
from ._location import Location, refuse_process_local, resolve
from ._pipeline import fill_chunk
from ._reopen import cached, reduce_array, store_token, travelling

#: The key prefixes of the tasks, as the dashboard and ``distributed.progress`` group them.
SHARD_TASK = "shardwright-shard"
CHUNKS_TASK = "shardwright-chunks"
LEVEL_TASK = "shardwright-level"  # keys (name, level, *index)
TOTAL_TASK = "shardwright-total"


def new_token() -> str:
    """A fresh token for a graph's keys: writes are side effects, so two graphs that
    look the same must not share results on a cluster that still holds the first's.

    >>> len(new_token()) == 32 and new_token() != new_token()
    True
    """
    return uuid.uuid4().hex


def ships(scheduler: Any) -> bool:
    """Whether computing with ``scheduler`` (dask's default when None: a distributed
    ``Client``'s when one is active) pickles the tasks for other processes: a distributed
    ``Client``, dask's ``"processes"`` scheduler, a ``ProcessPoolExecutor``.

    >>> ships("threads"), ships("sync"), ships("processes")
    (False, False, True)
    """
    from concurrent.futures import ProcessPoolExecutor

    from dask.base import get_scheduler

    get = get_scheduler(scheduler=scheduler)
    if get is None:
        return False
    owner = getattr(get, "__self__", None)
    if owner is not None and type(owner).__module__.split(".")[0] == "distributed":
        return True
    if isinstance(get, functools.partial) and get.args:
        return isinstance(getattr(get.args[0], "__self__", None), ProcessPoolExecutor)
    return getattr(get, "__module__", None) == "dask.multiprocessing"


def refuse_to_ship(target: Any, storage_options: Any = None) -> None:
    """Raise :class:`TypeError` (naming it) for a target the tasks cannot carry to other
    processes: an :class:`Array` that does not pickle (in this process's memory, or
    not opened from a location), or a path, URL or zarr store in this process's memory.

    >>> refuse_to_ship("memory:///doc/x.zarr")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: the shardwright Array 'memory:///doc/x.zarr' cannot be pickled: it is in ...
    """
    if isinstance(target, Array):
        reduce_array(target)  # what pickling it checks, without pickling it
        return
    where = resolve(target, storage_options)
    refuse_process_local(where, f"the shardwright Array '{where.url or where.path}'")


# ---------------------------------------------------------------------------------------
# what the tasks run (on the workers)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardFromBlocks:
    """Shard ``index`` of ``array``, made of pieces of dask blocks: for each block (the
    task's inputs, in this order) the slices of the block to take and the region of the
    array they go to."""

    array: Array
    index: tuple[int, ...]
    pieces: tuple[tuple[tuple[slice, ...], Domain], ...]


def write_from_blocks(job: ShardFromBlocks, *blocks: Any) -> dict[str, int]:
    """Write the shard of ``job`` from ``blocks`` (one shard writer, one put); its stats.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(4,), dtype="int8", chunks=(2,))
    >>> job = ShardFromBlocks(a, (1,), (((slice(1, 3),), sw.Domain((2,), (2,))),))
    >>> write_from_blocks(job, np.array([0, 5, 6], "int8"))["puts"], a[:].tolist()
    (1, [0, 0, 5, 6])
    """
    if len(blocks) != len(job.pieces):
        raise ValueError(f"expected {len(job.pieces)} blocks, got {len(blocks)}")
    with job.array.write_shard(job.index) as w:
        for (take, region), block in zip(job.pieces, blocks):
            part = np.asarray(block[take])
            if part.shape != region.shape:
                raise ShapeError(
                    f"a dask block gave {part.shape} for {region} (expected {region.shape}): "
                    "the dask array's chunks do not match its blocks"
                )
            try:
                w[region] = part  # values checked by the rule of every write
            except DTypeError as err:
                raise DTypeError(
                    f"a dask block for {region} (shard {job.index}, not stored; shards "
                    f"whose tasks ran before stay stored): {err}"
                ) from None
    return _with_shard(w.stats)


@dataclass(frozen=True)
class ShardFromSource:
    """Shard ``index`` of ``array``, copied from the same region of ``source`` (anything
    sliceable and picklable: a shardwright ``Array``, a ``zarr.Array``)."""

    source: Any
    array: Array
    index: tuple[int, ...]


def copy_from_source(job: ShardFromSource) -> dict[str, int]:
    """Read the shard's region of ``job.source`` and write the shard (one put); its stats.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(4,), dtype="int8", chunks=(2,))
    >>> copy_from_source(ShardFromSource(np.arange(4, dtype="int8"), a, (1,)))["puts"]
    1
    >>> a[:].tolist()
    [0, 0, 2, 3]
    """
    with job.array.write_shard(job.index) as w:
        region = w.shard
        w[region] = np.asarray(job.source[region.slices])
    return _with_shard(w.stats)


@dataclass(frozen=True)
class ShardOfChunks:
    """Shard ``index`` of ``array``, each inner chunk ``fn(chunk)``."""

    array: Array
    index: tuple[int, ...]
    fn: Callable[[Domain], Any]


def write_chunks(job: ShardOfChunks) -> dict[str, int]:
    """Fill the shard of ``job`` chunk by chunk and store it (one put); its stats.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/c.zarr", shape=(4,), dtype="int8", chunks=(2,),
    ...               shards=(4,))
    >>> write_chunks(ShardOfChunks(a, (0,), lambda c: c.origin[0] + 1))["puts"], a[:].tolist()
    (1, [1, 1, 3, 3])
    """
    with job.array.write_shard(job.index) as w:
        for chunk in w.inner_chunks():
            fill_chunk(w, chunk, job.fn)
    return _with_shard(w.stats)


def _levels_json(tasks: Any) -> tuple[str, ...]:
    return tuple(a.metadata_json for a in tasks.levels())


class PreparedPyramid:
    """A prepared pyramid (``_core.PyramidTasks``) as its tasks carry it: the object
    itself in this process; pickled as where it writes and its levels' ``zarr.json``,
    reopened on first use (:meth:`get`), once per worker process for the computation
    ``scope``. Refuses to be pickled when it writes in this process's memory."""

    def __init__(self, tasks: Any, scope: str) -> None:
        self._tasks = tasks
        self._scope = scope
        self._shipped: tuple[tuple[Any, ...], tuple[str, ...]] | None = None

    def get(self) -> Any:
        """The ``_core.PyramidTasks`` (opened here, and cached, if unpickled)."""
        if self._tasks is None:
            assert self._shipped is not None
            args, levels = self._shipped
            self._tasks = cached(
                self._key(args),
                lambda tasks: _levels_json(tasks) == levels,
                lambda: _reopen_tasks(*args),
            )
        return self._tasks

    def _key(self, args: tuple[Any, ...]) -> Any:
        root, url, options, adapter, path = args[:5]
        token = None if adapter is None else store_token(adapter._store)
        if adapter is not None and token is None:
            return None
        return ("pyramid", self._scope, str(root), url, tuple(map(tuple, options)), token, path)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self._tasks is None:
            assert self._shipped is not None
            args, levels = self._shipped
        else:
            args, levels = tuple(self._tasks.__reduce__()[1]), _levels_json(self._tasks)
        root, url, options, adapter, path = args[:5]
        where = Location(root, url, options, None if adapter is None else adapter._store, path)
        named = url if adapter is None else adapter.name
        refuse_process_local(where, f"the pyramid '{named or root}'")
        return _unpickled_pyramid, (args, levels, self._scope)


def _reopen_tasks(*args: Any) -> Any:
    from . import _core

    return _core.PyramidTasks.reopen(*args)


def _unpickled_pyramid(
    args: tuple[Any, ...], levels: tuple[str, ...], scope: str
) -> PreparedPyramid:
    out = PreparedPyramid(None, scope)
    out._shipped = (args, levels)
    return out


def downsample_shard(
    tasks: PreparedPyramid, level: int, index: tuple[int, ...], *_inputs: Any
) -> dict:
    """Write shard ``index`` of pyramid level ``level`` from the level below (stored by
    the tasks this one waits for: ``_inputs`` are their stats, unused)."""
    return _with_shard(tasks.get().write_shard(level, list(index)))


def finish_pyramid(
    tasks: PreparedPyramid,
    written: list[int],
    skipped: list[int],
    parts: Sequence[dict[str, int]],
) -> dict[str, Any]:
    """Write the pyramid's group metadata (after every shard) and sum the stats, with
    ``shards_written`` and ``shards_skipped`` per level as :func:`shardwright.pyramid`
    gives them (the commits' stats: the reads of the level below are not counted)."""
    total = totals(parts)
    total["bytes_written"] = total.get("bytes_written", 0) + tasks.get().finish()
    total["shards_written"], total["shards_skipped"] = list(written), list(skipped)
    return total


def _with_shard(stats: dict[str, int]) -> dict[str, int]:
    out = dict(stats)
    out["shards_written"] = 1
    return out


def totals(parts: Iterable[dict[str, int]]) -> dict[str, Any]:
    """The sum of the tasks' stats (``shards_written`` counts the shards committed; one
    holding only the fill value is committed without a put).

    >>> totals([{"puts": 1, "shards_written": 1}, {"puts": 1, "shards_written": 1}])
    {'shards_written': 2, 'puts': 2}
    """
    out: dict[str, Any] = {"shards_written": 0}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, 0) + value
    return out


# ---------------------------------------------------------------------------------------
# the graphs (where the graph is made)
# ---------------------------------------------------------------------------------------


def _bounds(chunks: Sequence[int]) -> list[int]:
    return [0, *itertools.accumulate(chunks)]


def pieces_of(
    shard: Domain, bounds: Sequence[Sequence[int]]
) -> list[tuple[tuple[int, ...], tuple[slice, ...], Domain]]:
    """The dask blocks meeting ``shard`` (``bounds``: per axis, the blocks' boundaries)
    and for each its block index, the slices of the block inside the shard and the
    region of the array they hold.

    >>> import shardwright as sw
    >>> [(b, t, str(r)) for b, t, r in pieces_of(sw.Domain((4,), (4,)), [[0, 3, 6, 9]])]
    [((1,), (slice(1, 3, None),), '[4:6]'), ((2,), (slice(0, 2, None),), '[6:8]')]
    """
    per_axis = []
    for start, stop, edges in zip(shard.origin, shard.stop, bounds):
        first = int(np.searchsorted(edges, start, side="right")) - 1
        axis = []
        for b in range(first, len(edges) - 1):
            lo, hi = edges[b], edges[b + 1]
            if lo >= stop:
                break
            if hi <= start or lo == hi:
                continue
            a, z = max(lo, start), min(hi, stop)
            axis.append((b, slice(a - lo, z - lo), a, z - a))
        per_axis.append(axis)
    out = []
    for combo in itertools.product(*per_axis):
        index = tuple(c[0] for c in combo)
        take = tuple(c[1] for c in combo)
        region = Domain(tuple(c[2] for c in combo), tuple(c[3] for c in combo))
        out.append((index, take, region))
    return out


def shard_layer(
    darr: Any, array: Array, name: str, shards: Iterable[Domain], level: int | None = None
) -> tuple[dict[Any, Any], list[Any]]:
    """The tasks writing ``shards`` of ``array`` from the dask array ``darr``: the
    layer (key → task) and the keys, one per shard: ``(name, *index)``, or with a
    pyramid's ``level`` ``(name, level, *index)``."""
    from dask._task_spec import Task, TaskRef

    bounds = [_bounds(c) for c in darr.chunks]
    target = travelling(array, name)
    layer: dict[Any, Any] = {}
    for shard in shards:
        assert shard.index is not None
        found = pieces_of(shard, bounds)
        job = ShardFromBlocks(
            target, tuple(shard.index), tuple((take, region) for _, take, region in found)
        )
        key = (name, *(() if level is None else (level,)), *shard.index)
        refs = [TaskRef((darr.name, *block)) for block, _, _ in found]
        layer[key] = Task(key, write_from_blocks, job, *refs)
    return layer, list(layer)


def chunks_layer(
    array: Array, fn: Callable[[Domain], Any], name: str, shards: Iterable[Domain]
) -> tuple[dict[Any, Any], list[Any]]:
    """The tasks filling ``shards`` of ``array`` with ``fn``, one per shard."""
    from dask._task_spec import Task

    target = travelling(array, name)
    layer: dict[Any, Any] = {}
    for shard in shards:
        assert shard.index is not None
        key = (name, *shard.index)
        layer[key] = Task(key, write_chunks, ShardOfChunks(target, tuple(shard.index), fn))
    return layer, list(layer)


def total_task(name: str, keys: Sequence[Any], fn: Callable[..., Any] = totals, *args: Any):
    """The task that waits for ``keys`` and sums their stats (``fn(*args, parts)``)."""
    from dask._task_spec import List, Task, TaskRef

    return Task(name, fn, *args, List(*(TaskRef(k) for k in keys)))


def delayed_of(name: str, layer: dict[Any, Any], sources: Sequence[Any] = ()) -> Any:
    """A ``dask.delayed.Delayed`` for the key ``name`` of ``layer``, over the graphs of
    the dask arrays in ``sources``, optimized as ``darr.compute()`` would (their blocks
    fused where dask fuses them; the block keys the tasks name are kept), as ``da.store``
    does: the same keys get the same tasks whichever computes them first. The layer
    depends on the sources' layers, so culling keeps them."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    layers: dict[str, Any] = {name: layer}
    dependencies: dict[str, set[str]] = {name: set()}
    for i, s in enumerate(sources):
        source = f"{name}-source{i}"
        layers[source] = dict(s.__dask_optimize__(s.__dask_graph__(), s.__dask_keys__()))
        dependencies[source] = set()
        dependencies[name].add(source)
    return Delayed(name, HighLevelGraph(layers, dependencies))
