"""``Array.append`` and ``Array.appender``, as a mixin of :class:`~shardwright.Array`:
growing an array along an axis, each new shard stored once, the shape grown only over
what is stored (see :class:`~shardwright.Appender`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _oneshot
from ._appender import Appender
from ._metadata import appended_shape


class Appending:
    """Appending along an axis, on top of ``_check_writable``, ``_check_resizable``,
    ``_shape`` and ``_dtype``.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/g.zarr", shape=(0,), dtype="int8", chunks=(2,))
    >>> a.append([1, 2, 3])
    (3,)
    """

    _shape: tuple[int, ...]
    _dtype: np.dtype

    def _check_writable(self, what: str) -> None: ...  # (Array's)

    def _check_resizable(self, what: str) -> None: ...  # (Array's)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow the array along ``axis`` by ``data``'s extent there, writing ``data`` into
        the new part (through an :meth:`appender`: each new shard stored once, and the
        shape in ``zarr.json`` grown only over what is stored, so a reader or a crash
        never sees fill values where ``data`` goes; refused data grows nothing); returns
        the new shape, as zarr-python's ``append``.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(0, 3), dtype="int16",
        ...               chunks=(1, 3), shards=(4, 3))
        >>> a.append(np.ones((2, 3), "int16")), a.append([[7, 8, 9]])
        ((2, 3), (3, 3))
        >>> a[2].tolist()
        [7, 8, 9]
        """
        self._check_writable("append")
        self._check_resizable("append")
        axis, _, grown = appended_shape(data, axis, self._shape)
        part = tuple(
            grown[axis] - self._shape[axis] if d == axis else g for d, g in enumerate(grown)
        )
        value = _oneshot.prepare(data, self._dtype, part)  # refused data grows nothing
        if isinstance(value, bytes):
            value = np.frombuffer(value, dtype=self._dtype).reshape(())
        # Without listing the array (a cost in proportion to its shards): only the slabs
        # past the end, where a killed append can leave shards, are swept.
        with Appender(self, axis, _near_end=True) as appender:
            appender._append_fitted(np.broadcast_to(value, part))
        return self._shape

    def appender(self, axis: int = 0) -> Appender:
        """An :class:`Appender` of frames along ``axis``, continuing from the stored
        shape: frames appended as they are acquired, each shard stored once, the shape
        grown only over whole stored slabs of shards (see :class:`Appender`).

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/acq.zarr", shape=(0, 4, 4), dtype="uint16",
        ...               chunks=(2, 4, 4), shards=(4, 4, 4))
        >>> with a.appender(axis=0) as ap:
        ...     for t in range(6):
        ...         ap.append(np.full((4, 4), t))
        >>> a.shape, sw.open(a.path)[:, 0, 0].tolist()
        ((6, 4, 4), [0, 1, 2, 3, 4, 5])
        """
        self._check_writable("appender")
        self._check_resizable("appender")
        return Appender(self, axis)
