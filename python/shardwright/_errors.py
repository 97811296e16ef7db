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
    """Data of a dtype that cannot be cast to the array's under numpy's ``same_kind`` rule."""


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
