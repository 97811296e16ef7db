"""How an :class:`Array` travels to another process (a Dask worker): pickled as where it
is and the ``zarr.json`` it had, never its data. Unpickling does no I/O: the array opens
on first use, inside the task (an error there is the task's error, not a worker that
cannot read its messages), and once per process for all the tasks that use it (a cache
keyed by where, checked against that ``zarr.json``). An array in this process's memory
(``memory:///``, a zarr ``MemoryStore``, fsspec's ``memory://``) refuses to be pickled.
"""

from __future__ import annotations

import copyreg
import dataclasses
import json
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ._array import Array
from ._location import Location, refuse_process_local
from ._open import open_at

T = TypeVar("T")

#: How many opened arrays (and prepared pyramids) a process keeps for later tasks.
CACHE_SIZE = 32


class _Slot:
    """One cache entry: its value and the lock its opening holds (one open at a time
    per key: the tasks of one worker process running at once wait for the first)."""

    __slots__ = ("lock", "value")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value: Any = None


_lock = threading.Lock()
_slots: OrderedDict[Hashable, _Slot] = OrderedDict()  # keys hold credentials: never shown


def cached(key: Hashable | None, fresh: Callable[[T], bool], make: Callable[[], T]) -> T:
    """The value cached at ``key`` if ``fresh(value)``, else ``make()``'s (cached, the
    :data:`CACHE_SIZE` last used kept); ``key=None``: ``make()``'s, not cached. Safe
    from several threads; an error of ``make`` is raised and nothing is cached.

    >>> cached(("doc", 1), bool, lambda: "opened"), cached(("doc", 1), bool, lambda: "again")
    ('opened', 'opened')
    """
    if key is None:
        return make()
    with _lock:
        slot = _slots.get(key)
        if slot is None:
            slot = _slots[key] = _Slot()
            while len(_slots) > CACHE_SIZE:
                _slots.popitem(last=False)
        else:
            _slots.move_to_end(key)
    with slot.lock:
        if slot.value is not None and fresh(slot.value):
            return slot.value
        slot.value = None
        slot.value = make()
        return slot.value


def store_token(store: Any) -> bytes | None:
    """A zarr-python store as part of a cache key: its pickle (the same bytes for the
    same store settings and credentials), or None when it does not pickle."""
    try:
        return pickle.dumps(store)
    except Exception:  # any failure to pickle: the store is not cached
        return None


def _same_metadata(a: str, b: str) -> bool:
    return a == b or json.loads(a) == json.loads(b)


@dataclasses.dataclass(frozen=True)
class Opener:
    """Opens the array at ``where`` as it was pickled (its ``zarr.json`` was
    ``metadata``), through the process's cache: the core of an array at the same place,
    opened by an earlier task, is taken if its ``zarr.json`` is the same, else the array
    is opened again (one read of its ``zarr.json``). ``scope``: the computation (a
    graph's token) the cached core is kept for, or None: for the process."""

    where: Location
    read_only: bool
    metadata: str = dataclasses.field(repr=False)
    scope: str | None = None

    def key(self) -> Hashable | None:
        """Where, as a cache key (options and store settings included: credentials,
        held in memory only)."""
        w = self.where
        if w.store is None:
            return ("array", self.scope, str(w.path), w.url, tuple(w.options), self.read_only)
        token = store_token(w.store)
        return None if token is None else ("array", self.scope, w.key, token, self.read_only)

    def __call__(self) -> Any:
        """The opened array's engine core (``_core.Array``)."""
        return cached(
            self.key(),
            lambda core: _same_metadata(core.metadata_json, self.metadata),
            lambda: open_at(self.where, self.read_only)._core,
        )


def travelling(array: Array, scope: str | None) -> Array:
    """``array``, to be pickled into the tasks of the computation ``scope``: a worker
    process opens it once for them all (and again for another computation, seeing what
    changed in between: a deleted array, a new ``zarr.json``).

    >>> import pickle, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(4,), dtype="int8", chunks=(2,))
    >>> pickle.loads(pickle.dumps(travelling(a, "graph-1")))._opener.scope
    'graph-1'
    """
    out = Array(array._core, read_only=array.read_only, where=array._where)
    out._scope = scope
    return out


def reduce_array(array: Array) -> tuple[Any, tuple[Any, ...]]:
    """Pickle an :class:`Array` as where it is and its ``zarr.json`` (never its data):
    unpickled, it opens on first use (:class:`Opener`), in any process that reaches it.
    Refused (:class:`TypeError`) for an array not opened from a location, or in this
    process's memory only.

    >>> import pickle, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/p.zarr", shape=(4,), dtype="int8", chunks=(2,))
    >>> a[:] = 3
    >>> b = pickle.loads(pickle.dumps(a))       # nothing read yet
    >>> b.path == a.path, b[:].tolist()         # opened here, on first use
    (True, [3, 3, 3, 3])
    """
    where = array._where
    if where is None:
        raise TypeError(
            f"this shardwright Array ({array.path}) cannot be pickled: it was not opened "
            "from a path, URL or zarr store (sw.open / sw.create give ones that can)"
        )
    refuse_process_local(where, f"the shardwright Array '{where.url or where.path}'")
    if where.path is not None and not where.path.is_absolute():
        # a worker's working folder may be another
        where = dataclasses.replace(where, path=where.path.absolute())
    opener = array.__dict__.get("_opener")
    if "_core" in array.__dict__ or opener is None:
        metadata = array._core.metadata_json
    else:  # unpickled and never used: pickled on as it came
        metadata = opener.metadata
    scope = array.__dict__.get("_scope")
    return shipped_array, (where, array.read_only, metadata, scope)


def shipped_array(
    where: Location, read_only: bool, metadata: str, scope: str | None = None
) -> Array:
    """An :class:`Array` unpickled: nothing opened yet (no I/O); its first use opens it."""
    array = Array.__new__(Array)
    array._read_only = read_only
    array._where = where
    array._scope = scope
    array._opener = Opener(where, read_only, metadata, scope)
    return array


copyreg.pickle(Array, reduce_array)
