"""The block protocol shared by shard writers and transactions: commit when the block
exits normally, abort when it raises — with ``with`` and ``async with`` alike."""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar

from . import _async

_T = TypeVar("_T", bound="CommitOnExit")


class CommitOnExit:
    """Mixin for objects with ``closed``, ``commit()`` and ``abort()``.

    Leaving the block normally commits (in a worker thread for ``async with``, after the
    pending ``write_async`` calls, so the event loop keeps running); leaving it with an
    exception aborts, so nothing is stored. A block that already committed or aborted
    explicitly just ends.
    """

    @property
    def closed(self) -> bool:
        raise NotImplementedError

    def commit(self) -> Any:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def _leave(self, exc_type: type[BaseException] | None) -> bool:
        """Whether leaving the block should commit: aborts if it raised, and does nothing
        when the block already committed or aborted."""
        if self.closed:
            return False
        if exc_type is not None:
            self.abort()
            return False
        return True

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._leave(exc_type):
            self.commit()

    async def __aenter__(self: _T) -> _T:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Leaving ``async with``: once the pending ``write_async`` calls are done, commit
        (or abort, if the block raised) on a worker thread."""
        await _async.leave(self, exc_type, exc, tb)

    @_async.coroutine_function
    def commit_async(self) -> _async.Pending[Any]:
        """The awaitable ``commit()``, queued after the ``write_async`` calls made before
        it, on a worker thread. Returns the commit's stats.

        >>> import asyncio, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/c.zarr", shape=(4, 4), dtype="int8",
        ...               chunks=(2, 2), shards=(4, 4))
        >>> async def main():
        ...     w = a.write_shard((0, 0))
        ...     await w.write_async(..., 3)
        ...     return await w.commit_async()
        >>> asyncio.run(main())["puts"], int(a[3, 3])
        (1, 3)
        """
        return _async.commit(self)
