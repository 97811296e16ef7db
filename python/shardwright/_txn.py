"""``Transaction``: writes of any regions across many shards, committed shard by shard."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._context import CommitOnExit
from ._domain import Domain
from ._errors import BoundsError
from ._indexing import parse_key, parse_write_key
from ._writer import ShardWriter, coerce, hold, write_region


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
    ) -> None:
        self._core = core
        self._shape = shape
        self._dtype = dtype
        self._shard_index = shard_index
        self._limited = limited
        self._stats: dict[str, int] | None = None

    @property
    def closed(self) -> bool:
        """Whether the transaction was committed or aborted."""
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
        if self._stats is None:
            return {"staged_memory": self.staged_memory}
        return dict(self._stats)

    def __setitem__(self, key: Any, data: Any) -> None:
        """Stage ``data`` (an array shaped as numpy gives ``array[key]``, or a scalar) at
        ``key`` (a Domain, or basic indexing: integers, slices of step 1, Ellipsis)."""
        hold(data)
        region, shape = parse_write_key(key, self._shape)
        if region not in Domain((0,) * len(self._shape), self._shape):
            raise BoundsError(f"{region!r} is not inside the array of shape {self._shape}")
        write_region(self._core, region, coerce(data, self._dtype, shape))

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
        return _StagingShardWriter(core, self._dtype, self._shape, self._core, self._limited)

    def commit(self) -> dict[str, int]:
        """Store every touched shard (in parallel). Returns :attr:`stats`."""
        self._stats = dict(self._core.commit())
        return dict(self._stats)

    def abort(self) -> None:
        """Drop every staged write; nothing (more) is stored."""
        self._core.abort()


class _StagingShardWriter(ShardWriter):
    """A shard writer whose commit merges into a transaction instead of storing."""

    def __init__(
        self, core: Any, dtype: np.dtype, shape: tuple[int, ...], tx: Any, limited: bool
    ) -> None:
        super().__init__(core, dtype, shape)
        self._tx = tx
        self._limited = limited

    def __setitem__(self, key: Any, data: Any) -> None:
        super().__setitem__(key, data)
        if self._limited:
            # Past the transaction's memory limit: TransactionTooLarge, and the
            # transaction fails for good (as a write to it would).
            self._tx.check_writer(self._core)

    def commit(self) -> dict[str, int]:
        """Stage what was written into the transaction (no I/O)."""
        written = self.stats
        self._tx.absorb(self._core)
        self._stats = written
        return dict(written)
