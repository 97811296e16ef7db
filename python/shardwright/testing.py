"""Test helpers: :class:`FaultyStore`, a store whose planned calls fail, return damaged
bytes or stall (the engine's fault injection), to test what a job does when storage
misbehaves."""

from __future__ import annotations

from typing import Any

from . import _core
from ._array import Array


class FaultyStore:
    """A local folder (or memory, with ``root=None``) whose planned calls fail.

    ``inject(op, nth, kind, arg=None)`` plans a fault for call ``nth`` (from 0) of ``op``
    (``get``, ``get_range``, ``size``, ``put``, ``put_if``, ``delete``, ``delete_if``,
    ``begin_upload``, ``append``, ``upload_read``, ``truncate``, ``complete``); ``kind``:
    ``fail``, ``fail_after`` (the call is made, then fails), ``truncate`` (keep ``arg``
    bytes), ``flip_bit`` (bit ``arg``), ``stall`` (``arg`` ms) or ``block`` (until
    :meth:`release`). Injected failures raise :class:`ShardwrightError` naming the key.

    >>> import tempfile, shardwright as sw
    >>> root = tempfile.mkdtemp()
    >>> _ = sw.create(root, shape=(4,), dtype="uint8", chunks=(2,), shards=(4,))
    >>> store = FaultyStore(root)
    >>> a = store.open()
    >>> store.inject("put", 0, "fail")
    >>> try:
    ...     a[:] = 1
    ... except sw.ShardwrightError as err:
    ...     print("c/0" in str(err), "injected fault" in str(err))
    True True
    >>> a[:] = 1  # the retry succeeds
    >>> a[:].tolist()
    [1, 1, 1, 1]
    """

    def __init__(self, root: str | None = None) -> None:
        self._core = _core.FaultyStore(None if root is None else str(root))

    def open(self, path: str = "") -> Array:
        """The array at ``path`` (in the store root), read and written through the faults."""
        return Array(self._core.open(path))

    def inject(self, op: str, nth: int, kind: str, arg: int | None = None) -> None:
        """Plan a fault (see the class)."""
        self._core.inject(op, nth, kind, arg)

    def reset(self) -> None:
        """Forget planned faults and counts."""
        self._core.reset()

    def release(self) -> None:
        """Let every blocked call, and every later one, proceed."""
        self._core.release()

    def blocked(self) -> int:
        """How many calls wait in a ``block`` fault now."""
        return int(self._core.blocked())

    def counts(self) -> dict[str, int]:
        """Calls of each operation so far: the fault points of a job run once."""
        return dict(self._core.counts())

    def fired(self) -> list[tuple[str, int, str]]:
        """The faults that fired: operation, call number, key."""
        return list(self._core.fired())

    def raw_get(self, key: str) -> bytes | None:
        """The stored value at ``key``, read past the faults (not counted)."""
        value: Any = self._core.raw_get(key)
        return value
