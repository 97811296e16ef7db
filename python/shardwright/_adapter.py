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


def _kinds(obj: Any) -> set[tuple[str, str]]:
    """(top-level package, class name) of ``obj``'s class and its bases."""
    return {(c.__module__.split(".")[0], c.__name__) for c in type(obj).__mro__}


def _protocols(fs: Any) -> set[str]:
    protocol = getattr(fs, "protocol", ())
    return {protocol} if isinstance(protocol, str) else set(protocol)


def process_local(store: Any) -> str | None:
    """What ``store`` is when it keeps its data in this process's memory, which no
    other process (a Dask worker) shares, or None: a zarr ``MemoryStore`` (pickled, a
    copy), a zarr ``FsspecStore`` over fsspec's ``memory://`` filesystem (global to the
    process: a worker has its own, empty one), zarr's ``ObjectStore`` over an obstore
    ``MemoryStore``; seen through zarr ``WrapperStore`` s (``LoggingStore``, …).

    >>> import zarr
    >>> in_memory = zarr.storage.FsspecStore.from_url("memory://doc/x")
    >>> process_local(zarr.storage.LoggingStore(in_memory))
    "fsspec's memory:// filesystem"
    >>> process_local(zarr.storage.LocalStore("/tmp")) is None
    True
    """
    while ("zarr", "WrapperStore") in _kinds(store):
        store = store._store
    kinds = _kinds(store)
    if ("zarr", "MemoryStore") in kinds:  # and GpuMemoryStore, ManagedMemoryStore
        return "a zarr MemoryStore"
    if ("zarr", "FsspecStore") in kinds:
        fs = store.fs
        for _ in range(8):  # fsspec's wrappers: AsyncFileSystemWrapper, DirFileSystem
            if "memory" in _protocols(fs):
                return "fsspec's memory:// filesystem"
            fs = getattr(fs, "sync_fs", None) or getattr(fs, "fs", None)
            if fs is None:
                break
    if ("zarr", "ObjectStore") in kinds and ("obstore", "MemoryStore") in _kinds(store.store):
        return "an obstore MemoryStore"
    return None


def refuse_process_local(store: Any, what: str) -> None:
    """Raise :class:`TypeError` for a zarr-python store that keeps its data in this
    process's memory (:func:`process_local`): in another process an unpickled array
    would write into a copy of it (``MemoryStore``: the writes lost without an error) or
    find nothing there."""
    kind = process_local(store)
    if kind == "a zarr MemoryStore":
        raise TypeError(
            f"{what} on a zarr MemoryStore cannot be pickled: a copy of the store would be "
            "written in another process and the writes lost; use the threaded or "
            "synchronous scheduler (nothing is pickled there), or a folder or object "
            "store every worker reaches"
        )
    if kind is not None:
        from ._location import refuse_to_pickle

        refuse_to_pickle(what, kind)


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
        """Pickled as its store (refused for one in this process's memory:
        :func:`process_local`)."""
        refuse_process_local(self._store, f"an array in {self.name}")
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
        ``set_if_not_exists``); returns whether what is stored now is ``data``, byte for
        byte (read back: a writer in another process that stored a value first, even one
        of the same size, is a ``False``, never a silent loss). Atomic between processes
        where the store's ``set_if_not_exists`` is (LocalStore, obstore, MemoryStore);
        zarr-python's default for other stores checks, then sets, and a writer in
        another process between the two goes unnoticed when it stores after the read back.

        >>> import zarr
        >>> adapter = StoreAdapter(zarr.storage.MemoryStore())
        >>> adapter.set_if_absent("k", b"one"), adapter.set_if_absent("k", b"two")
        (True, False)
        >>> adapter.get("k")
        b'one'
        """
        sync(self._store.set_if_not_exists(key, cpu.Buffer.from_bytes(data)))
        if self.size(key) != len(data):  # cheap first: another value of another size
            return False
        return self.get(key) == data

    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        try:
            sync(self._store.delete(key))
        except FileNotFoundError:
            pass

    def list_prefix(self, prefix: str) -> list[str] | None:
        """The keys under the folder ``prefix`` (``""``: every key), from the store's own
        listing (one request per page on an object store), or None if the store cannot
        list (``supports_listing`` false): the engine then asks for each key it needs.

        >>> import zarr
        >>> adapter = StoreAdapter(zarr.storage.MemoryStore())
        >>> adapter.set("a/c/0", b"x"); adapter.set("ab/c/0", b"y")
        >>> adapter.list_prefix("a")
        ['a/c/0']
        """
        if not getattr(self._store, "supports_listing", False):
            return None
        folder = prefix.strip("/")
        start = f"{folder}/" if folder else ""

        async def collect() -> list[str]:
            return [key async for key in self._store.list_prefix(start)]

        return sync(collect())

    def delete_dir(self, prefix: str) -> None:
        """Remove everything under ``prefix`` (never the whole store)."""
        if not prefix.strip("/"):
            from ._errors import UnsupportedError

            raise UnsupportedError(
                f"overwrite=True at the root of {self.name} would delete everything in it; "
                "give the array a path inside the store"
            )
        sync(self._store.delete_dir(prefix.strip("/")))
