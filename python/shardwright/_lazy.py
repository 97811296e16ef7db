"""``OpensOnFirstUse``: what lets an :class:`Array` unpickled in another process (a Dask
worker) open on first use, inside the task, rather than while it is unpickled
(``_reopen.py`` makes such arrays)."""

from __future__ import annotations

from typing import Any

# What an opened Array holds (what Array._set_core sets).
_OPENED = frozenset(
    (
        "_core",
        "_shape",
        "_dtype",
        "_chunks",
        "_shards",
        "_shard_shape",
        "_regular",
        "_fill_value",
        "_metadata",
    )
)


class OpensOnFirstUse:
    """Mixin of :class:`Array`: an instance with an ``_opener`` (a callable giving the
    engine's core) and none of what ``_set_core`` sets opens when one of those is first
    read.

    >>> import pickle, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/l.zarr", shape=(4,), dtype="int8", chunks=(2,))
    >>> b = pickle.loads(pickle.dumps(a))
    >>> "_core" in vars(b), b.shape, "_core" in vars(b)
    (False, (4,), True)
    """

    _set_core: Any

    def __getattr__(self, name: str) -> Any:
        opener = self.__dict__.get("_opener")
        if opener is None or name not in _OPENED:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._set_core(opener())  # raises what opening raises (not an AttributeError)
        return self.__dict__[name]

    def _unopened_repr(self) -> str | None:
        """The repr of an array not opened yet (no I/O to make it), or None."""
        opener = self.__dict__.get("_opener")
        if opener is None or "_core" in self.__dict__:
            return None
        where = opener.where
        return f"<shardwright.Array {str(where.url or where.path)!r} (not opened yet)>"
