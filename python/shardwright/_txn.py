"""``Transaction``: writes of any regions across many shards, committed shard by shard."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from . import _async
from ._context import CommitOnExit
from ._domain import Domain
from ._errors import BoundsError, ShapeError
from ._indexing import parse_key, parse_write_key
from ._values import is_element
from ._writer import ShardWriter, coerce, hold, run_commit, settled, write_region

# A broadcast value over more bytes than this is written shard by shard.
_SPLIT_BYTES = 16 << 20


class Transaction(CommitOnExit):
    """Stages writes of any regions of an array — across any number of shards, aligned to
    inner chunks or not — and stores every touched shard once when the block exits.

    The guarantee: nothing is stored before the commit (except shards committed early, see
    below), and an exception inside the block stores nothing. The commit is atomic per
    shard, not across shards: shards are committed in parallel, each with one put (plus
    one get when it was written only in part, to merge with what is stored; that merge is
    conditional, retried on conflicts, and raises :class:`ConflictError` after
    ``retries``).

    Staged data is kept encoded (whole inner chunks) or raw (inner chunks written in part).
    With ``memory_limit`` (bytes), the write that takes staged memory past it raises
    :class:`TransactionTooLarge` (a ``MemoryError``) and nothing is stored — unless
    ``early_commit=True``, where each shard is committed as soon as all its inner chunks
    are written whole, so a transaction streaming through an array runs in bounded memory.
    Those early commits are not undone if the transaction later fails.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(8, 8), dtype="int16",
    ...               chunks=(2, 2), shards=(4, 4))
    >>> with a.transaction() as tx:
    ...     tx[3:5, 3:5] = np.array([[1, 2], [3, 4]])   # four shards
    ...     tx[4, :] = 9
    ...     tx[3:5, 3:5].tolist()                       # read-your-writes
    [[1, 2], [9, 9]]
    >>> tx.stats["shards_written"], a[4, 7]
    (4, np.int16(9))
    """

    def __init__(
        self,
        core: Any,
        shape: tuple[int, ...],
        dtype: np.dtype,
        shard_index: Callable[[Domain | Sequence[int]], tuple[int, ...]],
        *,
        limited: bool = False,
        shard_shape: tuple[int, ...] | None = None,
    ) -> None:
        self._core = core
        self._shape = shape
        self._dtype = dtype
        self._shard_index = shard_index
        self._limited = limited
        self._stats: dict[str, int] | None = None
        self._settled = threading.Event()  # see ShardWriter: the outcome reached Python
        self._background = False
        self._aborted = False
        # The shard indices written to, for repr(); the shard shape from the array that
        # made this transaction when not given.
        self._touched: set[tuple[int, ...]] = set()
        if shard_shape is None:
            shard_shape = getattr(getattr(shard_index, "__self__", None), "_shard_shape", None)
        self._shard_shape = None if shard_shape is None else tuple(shard_shape)

    @property
    def closed(self) -> bool:
        """Whether the transaction was committed or aborted (not yet while its commit
        runs)."""
        return bool(self._core.closed)

    @property
    def staged_memory(self) -> int:
        """Bytes staged now: encoded chunks, raw chunks being encoded, partial chunks."""
        return int(self._core.staged_memory)

    @property
    def stats(self) -> dict[str, int]:
        """After commit: ``puts``, ``gets``, ``bytes_read``, ``bytes_written``,
        ``shards_written``, ``shards_committed_early``, chunk counts and ``conflicts``.
        Before: only ``staged_memory``."""
        settled(self)
        if self._stats is None:
            return {"staged_memory": self.staged_memory}
        return dict(self._stats)

    def __setitem__(self, key: Any, data: Any) -> None:
        """Stage ``data`` at ``key`` (a Domain, or basic indexing: integers, slices of step
        1, Ellipsis). ``data`` is what numpy assigns to ``array[key]`` (an array, a nested
        list, a scalar, broadcast and cast as :meth:`ShardWriter.__setitem__` says).

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(3, 3), dtype="int8",
        ...               chunks=(2, 2), shards=(2, 2))
        >>> with a.transaction() as tx:
        ...     tx[:, 1:] = [[1], [2], [3]]   # a column, broadcast across
        >>> a[...].tolist()
        [[0, 1, 1], [0, 2, 2], [0, 3, 3]]
        """
        hold(data)
        region, shape = parse_write_key(key, self._shape)
        if region.ndim != len(self._shape):
            raise ShapeError(
                f"region {region} has rank {region.ndim}, the array {len(self._shape)}"
            )
        if region not in Domain((0,) * len(self._shape), self._shape):
            raise BoundsError(f"{region} is not inside the array of shape {self._shape}")
        value = coerce(data, self._dtype, shape, element=is_element(key, shape), region=region)
        for part, piece in self._pieces(region, value):
            write_region(self._core, part, piece)
        self._touch(region)

    def _pieces(
        self, region: Domain, value: np.ndarray | bytes
    ) -> Iterator[tuple[Domain, np.ndarray | bytes]]:
        """``region`` and ``value``, or, for a broadcast value (a zero stride) over more
        than 16 MiB, shard by shard: the engine makes each piece contiguous, so a row
        broadcast over a huge region never takes the region's size in memory."""
        big = region.size * self._dtype.itemsize > _SPLIT_BYTES
        if isinstance(value, bytes) or not big or 0 not in value.strides or not self._shard_shape:
            yield region, value
            return
        value = value.reshape(region.shape)
        grid = [
            range(o // s, -(-(o + n) // s))
            for o, n, s in zip(region.origin, region.shape, self._shard_shape)
        ]
        for index in itertools.product(*grid):
            shard = Domain([i * s for i, s in zip(index, self._shard_shape)], self._shard_shape)
            part = shard.intersect(region)
            if part is not None and part.size:
                local = tuple(
                    slice(a - o, b - o) for a, b, o in zip(part.origin, part.stop, region.origin)
                )
                yield part, value[local]

    def _touch(self, region: Domain) -> None:
        """Count the shards ``region`` meets as touched (for repr)."""
        if self._shard_shape is None or region.size == 0:
            return
        ranges = [
            range(o // s, (o + n - 1) // s + 1)
            for o, n, s in zip(region.origin, region.shape, self._shard_shape)
        ]
        if all(len(r) == 1 for r in ranges):
            self._touched.add(tuple(r.start for r in ranges))
        else:
            self._touched.update(itertools.product(*ranges))

    def __getitem__(self, key: Any) -> np.ndarray:
        """Read with basic indexing: the stored data with this transaction's staged data
        on top."""
        region, local = parse_key(key, self._shape)
        flat = self._core.read(list(region.origin), list(region.shape))
        return flat.view(self._dtype).reshape(region.shape)[local]

    def write_shard(self, shard: Domain | tuple[int, ...]) -> ShardWriter:
        """A :class:`ShardWriter` for one shard whose commit stages into this transaction
        (no I/O); if its block raises, what it wrote is dropped. Its data counts against
        the transaction's ``memory_limit`` as it is written."""
        index = self._shard_index(shard)
        core = self._core.shard_writer(list(index))
        return _StagingShardWriter(
            core, self._dtype, self._shape, self._core, self._limited, self._touched
        )

    def commit(self) -> dict[str, int]:
        """Store every touched shard (in parallel). Returns :attr:`stats`.

        Threads: as :meth:`ShardWriter.commit`. While it runs, other threads may read
        :attr:`closed`, :attr:`staged_memory` (as when it began), :attr:`stats` and
        ``repr``; their writes, reads (``tx[key]``), :meth:`write_shard`, a second commit
        and :meth:`abort` raise :class:`ShardwrightError` ("... is committing ...").
        """
        return run_commit(self, self._core.commit)

    def abort(self) -> None:
        """Drop every staged write; nothing (more) is stored. (Raises
        :class:`ShardwrightError` while a commit runs in another thread.)"""
        self._core.abort()
        self._aborted = True
        self._settled.set()

    def __repr__(self) -> str:
        """What the transaction holds: open, with the shards touched and the bytes staged;
        committed, with the shards written; or aborted.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(8, 8), dtype="uint8",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> with a.transaction() as tx:
        ...     tx[0:6, 0:2] = 1
        ...     print(repr(tx))  # doctest: +ELLIPSIS
        <shardwright.Transaction open: 2 shards touched, ... B staged>
        >>> tx
        <shardwright.Transaction committed: 2 shards written>
        """
        if self._stats is not None:
            return (
                f"<shardwright.Transaction committed: {self._stats.get('shards_written', 0)} "
                "shards written>"
            )
        if self._aborted:
            return "<shardwright.Transaction aborted>"
        if self._core.committing:  # in another thread
            return f"<shardwright.Transaction committing: {_size(self.staged_memory)} staged>"
        if self.closed:
            return "<shardwright.Transaction closed>"
        touched = "" if self._shard_shape is None else f"{len(self._touched)} shards touched, "
        return f"<shardwright.Transaction open: {touched}{_size(self.staged_memory)} staged>"

    @_async.coroutine_function
    def write_async(self, key: Any, data: Any) -> _async.Pending[None]:
        """The awaitable twin of ``tx[key] = data``: the same conversion, checks and errors
        (raised from the ``await``; :class:`TransactionTooLarge` too), with the blocking
        part on a worker thread so the event loop keeps running. Queued at the call: the
        calls on one transaction run one at a time in call order, and :meth:`commit_async`
        and the end of an ``async with`` block come after the calls made before them.
        ``tx[key]`` reads see a call's data once its ``await`` returned. The rules are
        those of :meth:`ShardWriter.write_async`.

        >>> import asyncio, numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(8, 8), dtype="int16",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> async def main():
        ...     async with a.transaction() as tx:
        ...         await tx.write_async(np.s_[3:5, 3:5], np.array([[1, 2], [3, 4]]))
        ...         await tx.write_async(np.s_[4, :], 9)
        ...         return tx[3:5, 3:5].tolist()
        >>> asyncio.run(main())
        [[1, 2], [9, 9]]
        >>> int(a[4, 0])
        9
        """
        return _async.write(self, key, data)


class _StagingShardWriter(ShardWriter):
    """A shard writer whose commit merges into a transaction instead of storing."""

    def __init__(
        self,
        core: Any,
        dtype: np.dtype,
        shape: tuple[int, ...],
        tx: Any,
        limited: bool,
        touched: set[tuple[int, ...]] | None = None,
    ) -> None:
        super().__init__(core, dtype, shape)
        self._tx = tx
        self._limited = limited
        self._touched = touched

    def __setitem__(self, key: Any, data: Any) -> None:
        super().__setitem__(key, data)
        if self._limited:
            # Past the transaction's memory limit: TransactionTooLarge, and the
            # transaction fails for good (as a write to it would).
            self._tx.check_writer(self._core)

    def commit(self) -> dict[str, int]:
        """Stage what was written into the transaction (no I/O)."""
        written = self.stats
        try:
            self._tx.absorb(self._core)
        except BaseException:
            if self._core.closed:  # taken: no outcome will come (stats never wait on it)
                self._settled.set()
            raise
        self._stats = written
        self._settled.set()
        if self._touched is not None:  # the transaction commits the shard, even empty
            self._touched.add(self._shard.index or ())
        return dict(written)


def _size(n: int) -> str:
    """``n`` bytes for people: ``512 B``, ``1.5 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} TiB"
