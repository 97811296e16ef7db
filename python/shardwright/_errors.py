"""The exceptions shardwright raises. Every one derives from :class:`ShardwrightError`.

>>> import shardwright as sw
>>> issubclass(sw.ShapeError, ValueError) and issubclass(sw.ShapeError, sw.ShardwrightError)
True
"""

from __future__ import annotations


class ShardwrightError(Exception):
    """Base of every error shardwright raises (I/O failures, closed writers, ...)."""


class ShapeError(ShardwrightError, ValueError):
    """Data or a region of the wrong shape, rank or size; the message names both shapes."""


class DTypeError(ShardwrightError, TypeError):
    """Data that the array's dtype does not hold exactly: a value out of range (70000 for
    uint16, -1 for uint8), a fraction, NaN or inf for an integer dtype, an integer a float
    dtype would round, a finite float a narrower float would make inf, a complex with an
    imaginary part for a real dtype, or data that are not numbers. The message names the
    first such value and where it is; nothing of that write is stored.

    >>> import tempfile, numpy as np, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/d.zarr", shape=(4,), dtype="uint16", chunks=(2,))
    >>> a[...] = np.array([1, 2, 3, 4], "int64")  # every value fits: stored
    >>> try:
    ...     a[2:] = np.array([5, 70000], "uint32")
    ... except sw.DTypeError as err:
    ...     print(err)
    value 70000 at array coordinate (3,) (index (1,) of the uint32 data) does not fit uint16 (0..65535); nothing was written
    >>> a[...].tolist()
    [1, 2, 3, 4]
    """  # noqa: E501


class BoundsError(ShardwrightError, IndexError):
    """A region, chunk or shard index outside the array, the shard or the grid."""


class UnsupportedError(ShardwrightError, NotImplementedError):
    """The array uses a codec, data type or layout shardwright does not support (named)."""


class CorruptShardError(ShardwrightError):
    """A stored shard whose index fails its checksum or points outside the shard."""


class ConflictError(ShardwrightError):
    """Another writer changed a shard this one was merging with; the message names the key."""


class TransactionTooLarge(ShardwrightError, MemoryError):
    """A transaction's staged data would pass its ``memory_limit``; the message gives both
    figures. Nothing is stored (shards already committed early stay stored)."""


class ArrayNotFoundError(ShardwrightError, FileNotFoundError):
    """No Zarr array (no ``zarr.json``) where one was expected."""


class OutOfMemoryError(ShardwrightError, MemoryError):
    """A buffer larger than the memory available was needed (a read of a huge region, a
    huge inner chunk); the message names its size. Nothing was changed."""


class NotDurableError(ShardwrightError):
    """The shard *was* stored (renamed into place, visible to readers), but flushing the
    change to disk failed: it may be lost if the machine loses power before the
    filesystem writes it. Writing the shard again is safe."""


class ReadOnlyError(ShardwrightError, PermissionError):
    """A write (a writer, a transaction, an assignment, a resize, an attribute change) to
    an array opened with ``mode="r"`` (or through a read-only zarr store).

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/r.zarr", shape=(2,), dtype="uint8", chunks=(2,))
    >>> path = a.path
    >>> try:
    ...     sw.open(path, mode="r").resize(4)
    ... except sw.ReadOnlyError as err:
    ...     print(type(err).__mro__[2].__name__)
    PermissionError
    """


class NotAnArrayError(ArrayNotFoundError):
    """A Zarr group (or a Zarr v2 array) where a Zarr v3 array was expected; the message
    says which arrays the group holds, or how to convert a v2 array.

    >>> import tempfile, numpy as np, shardwright as sw
    >>> image = tempfile.mkdtemp() + "/img.zarr"
    >>> _ = sw.pyramid(np.zeros((8, 8), "uint8"), image, factors=(2, 2), levels=2)
    >>> try:
    ...     sw.open(image)
    ... except sw.NotAnArrayError as err:
    ...     print(str(err).split("; ")[1].split(":")[0])
    it holds the arrays '0', '1'
    """
