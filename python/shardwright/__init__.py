"""shardwright: write sharded Zarr v3 arrays piece by piece.

Each shard is stored exactly once, atomically, in bounded memory, at the speed of the
compressor; the output is standard Zarr v3 that zarr-python and TensorStore read.

>>> import numpy as np, tempfile, shardwright as sw
>>> a = sw.create(tempfile.mkdtemp() + "/fish.zarr", shape=(64, 64, 64), dtype="uint16",
...               chunks=(16, 16, 16), shards=(32, 32, 32))
>>> for shard in a.iter_shards():
...     with a.write_shard(shard) as w:          # no I/O until the block exits
...         for c in w.inner_chunks():
...             w[c] = np.full(c.shape, sum(c.origin), dtype="uint16")
>>> int(a[16, 32, 0])
48
"""

from . import (
    _core,
    _reopen,  # noqa: F401  (registers how an Array pickles)
)
from ._add_levels import add_levels
from ._appender import Appender, ImageAppender
from ._array import Array
from ._check import CheckReport, check
from ._check_group import GroupCheckReport
from ._convert import convert
from ._domain import Domain
from ._errors import (
    ArrayNotFoundError,
    BoundsError,
    ConflictError,
    CorruptShardError,
    DTypeError,
    NotAnArrayError,
    NotDurableError,
    OutOfMemoryError,
    ReadOnlyError,
    ShapeError,
    ShardwrightError,
    TransactionTooLarge,
    UnsupportedError,
)
from ._image import Image, create_image, open_image
from ._open import create, create_array, open
from ._pyramid import Levels, copy, pyramid
from ._txn import Transaction
from ._writer import ShardWriter


def encoder_threads() -> int:
    """The number of threads that encode chunks (one per core unless set otherwise).
    Asking starts the pool, so its size is fixed from then on.

    >>> import shardwright as sw
    >>> sw.encoder_threads() >= 1
    True
    """
    return _core.num_threads()


def set_encoder_threads(threads: int) -> None:
    """Size the pool of threads that encode chunks; call it before the first write (the
    pool starts then). The default is one thread per core; the environment variable
    ``RAYON_NUM_THREADS`` sets it too. Raises :class:`ShardwrightError` once the pool runs
    with another size.

    >>> import shardwright as sw
    >>> sw.set_encoder_threads(sw.encoder_threads())   # the size it already has: no-op
    """
    _core.set_num_threads(threads)


__version__ = "0.1.0"

__all__ = [
    "Appender",
    "Array",
    "Image",
    "ArrayNotFoundError",
    "BoundsError",
    "CheckReport",
    "ConflictError",
    "CorruptShardError",
    "DTypeError",
    "Domain",
    "GroupCheckReport",
    "ImageAppender",
    "Levels",
    "NotAnArrayError",
    "NotDurableError",
    "OutOfMemoryError",
    "ReadOnlyError",
    "ShapeError",
    "ShardWriter",
    "ShardwrightError",
    "Transaction",
    "TransactionTooLarge",
    "UnsupportedError",
    "__version__",
    "add_levels",
    "check",
    "convert",
    "copy",
    "create",
    "create_array",
    "create_image",
    "encoder_threads",
    "open",
    "open_image",
    "pyramid",
    "set_encoder_threads",
]
