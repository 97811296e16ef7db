"""The block protocol shared by shard writers and transactions: commit when the block
exits normally, abort when it raises — with ``with`` and ``async with`` alike."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, TypeVar

_T = TypeVar("_T", bound="CommitOnExit")


class CommitOnExit:
    """Mixin for objects with ``closed``, ``commit()`` and ``abort()``.

    Leaving the block normally commits (in a worker thread for ``async with``, so the event
    loop keeps running); leaving it with an exception aborts, so nothing is stored. A block
    that already committed or aborted explicitly just ends.
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
        if self._leave(exc_type):
            await asyncio.to_thread(self.commit)
