"""The zarr-python store adapter: the engine's storage calls (made from Rust threads,
with the GIL taken only for the call) run as the store's own coroutines on zarr-python's
event loop. Used for stores the engine cannot open natively — MemoryStore, FsspecStore,
an Icechunk session's store, a WrapperStore around any of them."""

from __future__ import annotations

from typing import Any

from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import cpu, default_buffer_prototype
from zarr.core.sync import sync

from ._redact import redact


def store_name(store: Any) -> str:
    """A one-line name for ``store`` (its ``str`` when that is one line), without the
    credentials a URL in it may carry (userinfo, query, fragment).

    >>> import zarr
    >>> store_name(zarr.storage.MemoryStore()).startswith("memory://")
    True
    """
    text = str(store)
    if "\n" in text or not text:
        return f"{type(store).__name__}@{id(store):x}"
    return redact(text)


def refuse_copying(store: Any, what: str) -> None:
    """Raise :class:`TypeError` for a zarr-python store that pickles as a copy of its
    contents (``MemoryStore``): an unpickled array would write into the copy, in another
    process, and the writes would be lost without an error."""
    if type(store).__name__ == "MemoryStore" and type(store).__module__.startswith("zarr"):
        raise TypeError(
            f"{what} on a zarr MemoryStore cannot be pickled: a copy of the store would be "
            "written in another process and the writes lost; use the threaded or "
            "synchronous scheduler (nothing is pickled there), or a folder or object "
            "store every worker reaches"
        )


class StoreAdapter:
    """Blocking ``get`` / ``get_range`` / ``size`` / ``set`` / ``delete`` over a
    zarr-python ``Store`` (each one request of the store's own), as the engine calls them.
    Keys are relative to the store's root.

    >>> import zarr
    >>> adapter = StoreAdapter(zarr.storage.MemoryStore())
    >>> adapter.set("a/b", b"hello world")
    >>> adapter.get("a/b"), adapter.get_range("a/b", 6, 11), adapter.size("a/b")
    (b'hello world', b'world', 11)
    >>> adapter.delete("a/b"); adapter.get("a/b") is None
    True
    """

    def __init__(self, store: Any) -> None:
        self._store = store
        self._proto = default_buffer_prototype()
        self.name = store_name(store)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its store (refused for a ``MemoryStore``, which would be copied)."""
        refuse_copying(self._store, f"an array in {self.name}")
        return StoreAdapter, (self._store,)

    def get(self, key: str) -> bytes | None:
        """The value at ``key``, or None."""
        buf = sync(self._store.get(key, self._proto))
        return None if buf is None else buf.to_bytes()

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        """Bytes ``start:end`` of the value at ``key``, or None if there is none."""
        buf = sync(self._store.get(key, self._proto, RangeByteRequest(start, end)))
        return None if buf is None else buf.to_bytes()

    def exists(self, key: str) -> bool:
        """Whether there is a value at ``key``."""
        return bool(sync(self._store.exists(key)))

    def size(self, key: str) -> int | None:
        """The size of the value at ``key``, or None if there is none."""
        try:
            return int(sync(self._store.getsize(key)))
        except FileNotFoundError:
            return None

    def set(self, key: str, data: bytes) -> None:
        """Store ``data`` at ``key`` (the store's ``set``: one request)."""
        sync(self._store.set(key, cpu.Buffer.from_bytes(data)))

    def set_if_absent(self, key: str, data: bytes) -> bool:
        """Store ``data`` at ``key`` unless there is a value (the store's
        ``set_if_not_exists``, atomic where the store makes it so: LocalStore, obstore);
        returns whether what is stored now has ``data``'s size (a writer in another
        process that won with a value of the same size goes unnoticed: the adapter's
        writes are conditional within one process only).

        >>> import zarr
        >>> adapter = StoreAdapter(zarr.storage.MemoryStore())
        >>> adapter.set_if_absent("k", b"one"), adapter.set_if_absent("k", b"three")
        (True, False)
        """
        sync(self._store.set_if_not_exists(key, cpu.Buffer.from_bytes(data)))
        return self.size(key) == len(data)  # a size, not a read of the shard back

    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        try:
            sync(self._store.delete(key))
        except FileNotFoundError:
            pass

    def delete_dir(self, prefix: str) -> None:
        """Remove everything under ``prefix`` (never the whole store)."""
        if not prefix.strip("/"):
            from ._errors import UnsupportedError

            raise UnsupportedError(
                f"overwrite=True at the root of {self.name} would delete everything in it; "
                "give the array a path inside the store"
            )
        sync(self._store.delete_dir(prefix.strip("/")))
