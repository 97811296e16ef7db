"""Frames appended along one axis of an array as they are acquired (see
:meth:`Array.appender`)."""

from __future__ import annotations

import math
from types import TracebackType
from typing import Any

import numpy as np

from . import _core
from ._errors import ShapeError
from ._values import coerce, fit

_THEN = "nothing was appended"
# Array.append hands its data to the appender in slices of at most this many bytes.
_SLICE_BYTES = 8 << 20


class Appender:
    """Appends frames along one axis of an :class:`~shardwright.Array`, made by
    :meth:`Array.appender`. Each :meth:`append` takes one frame (the array's shape
    without the axis) or a block of ``k`` frames (the array's shape with ``k`` along the
    axis). The frames fill the open *slab* (the shards whose index along the axis is the
    current one) in shard writers that keep encoded bytes only; a complete slab is stored
    (one put per shard) in the background while the next one fills, and only then does
    the shape in ``zarr.json`` grow over it: a reader, or a crash, only ever sees whole
    stored slabs. Memory holds one inner chunk's extent of frames plus the writers'
    encoded bytes, however many frames are appended.

    A slab stored in the background is shown by the first :meth:`append`, :meth:`flush`
    or :meth:`close` after its store completes. :meth:`flush` waits until every complete
    slab is stored and shown; :meth:`close` (leaving the ``with`` block) stores the last,
    partial slab and sets the exact shape. A process killed mid-run keeps the frames
    shown in ``zarr.json`` and loses the others: the open slab's, and those of the slab
    being stored, or stored but not yet shown (after a :meth:`flush`, only the open
    slab's). A new appender continues from the stored shape (merging into the slab it
    ends in) and first deletes whatever a killed run stored past it.

    A frame of the wrong shape raises :class:`ShapeError`, a value the dtype cannot hold
    :class:`DTypeError` (the rule of every write); neither appends anything and the
    appender stays usable. A failure to store a slab loses that slab's frames and every
    later call raises it again. Calls from several threads are serialized: each call's
    frames stay together, in the order the calls come. One appender per array at a time.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/acq.zarr", shape=(0, 2, 4), dtype="uint16",
    ...               chunks=(2, 2, 4), shards=(4, 2, 4))
    >>> with a.appender(axis=0) as ap:
    ...     for t in range(5):
    ...         ap.append(np.full((2, 4), t))         # one frame
    ...     ap.flush()                                # the first slab is stored and shown
    ...     print(sw.open(a.path).shape, ap.length)
    ...     ap.append(np.ones((2, 2, 4), "uint16"))   # a block of two frames
    (4, 2, 4) 5
    >>> a.shape, a[:, 0, 0].tolist()
    ((7, 2, 4), [0, 1, 2, 3, 4, 1, 1])
    """

    def __init__(self, array: Any, axis: int = 0, *, _near_end: bool = False) -> None:
        ndim = array.ndim
        if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
            raise ShapeError(f"cannot append along axis {axis}: the array has {ndim} dimensions")
        self._array = array
        self._axis = int(axis) % ndim
        self._dtype = array.dtype
        self._core = _core.Appender.open(array._core, self._axis, _near_end)
        shape = tuple(self._core.shape)
        self._frame = shape[: self._axis] + shape[self._axis + 1 :]

    @property
    def axis(self) -> int:
        """The axis appended along.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/x.zarr", shape=(2, 0), dtype="int8",
        ...               chunks=(2, 2))
        >>> with a.appender(axis=-1) as ap:
        ...     ap.axis
        1
        """
        return self._axis

    @property
    def length(self) -> int:
        """The frames along the axis so far (stored before, shown, or still open).

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/l.zarr", shape=(0, 3), dtype="int8",
        ...               chunks=(2, 3))
        >>> with a.appender() as ap:
        ...     ap.append([[1, 2, 3], [4, 5, 6]])
        ...     ap.length
        2
        """
        return int(self._core.length)

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape once every frame appended so far is stored (the shape
        shown in ``zarr.json`` lags behind until :meth:`flush` or :meth:`close`).

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(0, 2), dtype="int8",
        ...               chunks=(4, 2))
        >>> with a.appender() as ap:
        ...     ap.append([7, 8])
        ...     ap.shape, sw.open(a.path).shape
        ((1, 2), (0, 2))
        """
        return tuple(int(n) for n in self._core.shape)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/c.zarr", shape=(0,), dtype="int8",
        ...               chunks=(2,))
        >>> with a.appender() as ap:
        ...     pass
        >>> ap.closed
        True
        """
        return bool(self._core.closed)

    def append(self, data: Any) -> None:
        """Append one frame (the array's shape without the axis) or a block of ``k``
        frames (the array's shape with ``k`` along the axis): a numpy array, anything
        with ``__array__``, or nested lists. Values are checked against the dtype as
        every write checks them (:class:`DTypeError` names the first that does not fit).

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/f.zarr", shape=(2, 0), dtype="uint8",
        ...               chunks=(2, 2))
        >>> with a.appender(axis=1) as ap:
        ...     ap.append([1, 2])                   # one frame: shape (2,)
        ...     ap.append(np.zeros((2, 3)))         # three frames: shape (2, 3)
        ...     ap.append([1, 2, 3])
        Traceback (most recent call last):
        shardwright._errors.ShapeError: a frame appended along axis 1 must have shape [2] (a block of k frames: (2, k)); got shape [3]
        >>> a.shape
        (2, 4)
        """  # noqa: E501
        self._core.append(self._prepared(data))

    def _prepared(self, data: Any) -> np.ndarray:
        """``data`` as a frame or block of the array's dtype, checked."""
        given = tuple(np.shape(data))
        ndim = len(self._frame) + 1
        if given == self._frame:
            target = given
        elif len(given) == ndim and given[: self._axis] + given[self._axis + 1 :] == self._frame:
            target = given
        else:
            block = [str(n) for n in self._frame]
            block.insert(self._axis, "k")
            raise ShapeError(
                f"a frame appended along axis {self._axis} must have shape "
                f"{list(self._frame)} (a block of k frames: ({', '.join(block)})); got shape "
                f"{list(given)}"
            )
        if isinstance(data, (list, tuple)) or np.ndim(data) == 0:
            value = coerce(data, self._dtype, target)
            if isinstance(value, bytes):
                return np.frombuffer(value, dtype=self._dtype).reshape(target)
            return np.asarray(value)
        return fit(np.asarray(data), self._dtype, then=_THEN)

    def _append_fitted(self, value: np.ndarray) -> None:
        """Append a block already checked to fit the dtype, cast and copied a slice of at
        most a few MiB at a time (the appender's row holds the frames until a chunk's
        extent of them is complete)."""
        extent = value.shape[self._axis]
        frame = value.shape[: self._axis] + value.shape[self._axis + 1 :]
        frame_bytes = max(1, math.prod(frame) * self._dtype.itemsize)
        step = max(1, min(int(self._array._chunks[self._axis]), _SLICE_BYTES // frame_bytes))
        for start in range(0, extent, step):
            part = value[(slice(None),) * self._axis + (slice(start, start + step),)]
            self._core.append(np.asarray(part, dtype=self._dtype))

    def flush(self) -> None:
        """Wait until every complete slab is stored and shown in ``zarr.json``.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/w.zarr", shape=(0,), dtype="int8",
        ...               chunks=(2,), shards=(2,))
        >>> ap = a.appender()
        >>> ap.append([1, 2, 3])    # one whole slab, stored in the background
        >>> ap.flush()
        >>> sw.open(a.path).shape   # the open slab's frame is not shown
        (2,)
        >>> ap.close()
        """
        self._core.flush()

    def close(self) -> None:
        """Store the last, partial slab, wait for every slab, and set the exact shape
        (the array handle that made the appender shows it). A second call does nothing.

        >>> import tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/e.zarr", shape=(0,), dtype="int8",
        ...               chunks=(2,), shards=(4,))
        >>> ap = a.appender()
        >>> ap.append([5, 6, 7])
        >>> ap.close(); ap.close()
        >>> a.shape, sw.open(a.path)[:].tolist()
        ((3,), [5, 6, 7])
        """
        core = self._core.close()
        if core is not None:
            self._array._set_core(core)

    def __enter__(self) -> Appender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # On an exception too: the frames appended so far are kept.
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"length={self.length}"
        return f"<Appender along axis {self._axis} of {self._array.path!s}: {state}>"


class ImageAppender:
    """Appends frames to level 0 of an image (from :meth:`Image.appender`), every coarser
    level growing with it. A chain of appenders, one per level: level ``l + 1`` is fed by
    level ``l``'s frames, gathered ``factors[axis]`` at a time and reduced with the
    pyramid's own kernel, so each level equals :func:`sw.pyramid <shardwright.pyramid>`
    of the final level 0 (a partial group at :meth:`close` reduces what exists, as the
    pyramid does at an edge; a later appender remakes that frame when more come). Each
    level's shards are stored once, and each level's shape grows only over its stored
    slabs. Frames are checked as :meth:`Appender.append` checks them; :meth:`flush` and
    :meth:`close` as there. The OME metadata (which names no shapes) stays valid, and
    :func:`open_image` opens the result.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> img = sw.create_image(tempfile.mkdtemp() + "/t.ome.zarr", shape=(1, 8, 8),
    ...                       dtype="uint8", chunks=(2, 4, 4), shards=(4, 8, 8),
    ...                       factors=(2, 2, 2), levels=2, axes="tyx")
    >>> with img.appender(axis=0) as ap:
    ...     ap.append(np.full((2, 8, 8), 10, "uint8"))   # frames 1 and 2 (frame 0 is unwritten)
    >>> [a.shape for a in img.levels], img.levels[1][:, 0, 0].tolist()
    ([(3, 8, 8), (2, 4, 4)], [5, 10])
    """

    def __init__(self, levels: Any, factors: Any, method: str, axis: int) -> None:
        self._levels = levels
        self._checker = Appender.__new__(Appender)
        level0 = levels[0]
        ndim = level0.ndim
        if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
            raise ShapeError(f"cannot append along axis {axis}: the array has {ndim} dimensions")
        axis = int(axis) % ndim
        self._core = _core.ImageAppender.open(
            [a._core for a in levels], list(factors), method, axis
        )
        self._checker._axis = axis
        self._checker._dtype = level0.dtype
        shape = tuple(levels[0]._core.shape)
        self._checker._frame = shape[:axis] + shape[axis + 1 :]
        self._axis = axis

    @property
    def axis(self) -> int:
        """The axis appended along.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     ap.axis
        0
        """
        return self._axis

    @property
    def length(self) -> int:
        """The frames of level 0 along the axis so far.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     ap.append(np.ones((3, 4, 4), "uint8"))
        ...     ap.length
        5
        """
        return int(self._core.length)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        """Each level's shape once the frames so far are stored (the coarser levels
        without the frames their partial groups make at :meth:`close`).

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     ap.append(np.ones((3, 4, 4), "uint8"))
        ...     ap.shapes
        [(5, 4, 4), (2, 2, 2)]
        """
        return [tuple(int(n) for n in s) for s in self._core.shapes]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     ap.closed
        False
        >>> ap.closed
        True
        """
        return bool(self._core.closed)

    def append(self, data: Any) -> None:
        """Append one frame or a block of frames to level 0 (see
        :meth:`Appender.append`); the coarser levels follow. Once a level failed to
        store a slab, every later call raises its error and appends nothing.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     ap.append(np.full((4, 4), 2, "uint8"))      # one frame
        ...     ap.append(np.full((2, 4, 4), 4, "uint8"))   # a block of two
        >>> img.levels[1][:, 0, 0].tolist()
        [0, 3, 4]
        """
        self._core.append(self._checker._prepared(data))

    def flush(self) -> None:
        """Wait until every level's complete slabs are stored and shown.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> with img.appender(axis=0) as ap:
        ...     ap.append(np.ones((4, 4, 4), "uint8"))
        ...     ap.flush()
        ...     [sw.open(a.path).shape for a in img.levels]
        [(6, 4, 4), (3, 2, 2)]
        """
        self._core.flush()

    def close(self) -> None:
        """Reduce each level's partial group, store every level's last slab and set the
        exact shapes (the image's ``levels`` show them). A second call does nothing.
        When a level failed, every level that can is still finished (level 0 keeps
        every frame appended), then the first error is raised.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> img = sw.create_image(tempfile.mkdtemp() + "/i.ome.zarr", shape=(2, 4, 4),
        ...                       dtype="uint8", chunks=(2, 4, 4), shards=(2, 4, 4),
        ...                       factors=(2, 2, 2),
        ...                       levels=2, axes="tyx")
        >>> ap = img.appender(axis=0)
        >>> ap.append(np.full((3, 4, 4), 8, "uint8"))
        >>> ap.close(); ap.close()
        >>> [a.shape for a in img.levels]
        [(5, 4, 4), (3, 2, 2)]
        """
        cores = self._core.close()
        if cores is not None:
            for level, core in zip(self._levels, cores, strict=True):
                level._set_core(core)

    def __enter__(self) -> ImageAppender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"length={self.length}"
        return f"<ImageAppender along axis {self._axis}: {state}>"
