"""The entry points of zarr-python's indexing on an array: ``a[key]`` (:func:`read_key`),
``a.oindex[key]`` (:class:`OIndex`) and ``a.vindex[key]`` (:class:`VIndex`), over the
selections of :mod:`shardwright._selection`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._domain import Domain
from ._errors import BoundsError, ShapeError
from ._selection import (
    _format_domain,
    _is_pure_fancy,
    _is_pure_orthogonal,
    _orthogonal,
    _pointwise,
    _pop_fields,
    _Readable,
    _split_newaxis,
    _tuple,
    _with_new_axes,
)


class _Selector:
    """An ``a.<form>[key]`` object over ``array``."""

    __slots__ = ("_array",)

    def __init__(self, array: _Readable) -> None:
        self._array = array

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._array!r}>"


def read_domain(array: _Readable, domain: Domain) -> np.ndarray:
    """The elements of the box ``domain`` (``a[d]``): ``array.read(d)``, after checking
    that it has the array's rank and lies inside it.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/d.zarr", shape=(4, 6), dtype="uint8",
    ...               chunks=(2, 3), fill_value=5)
    >>> read_domain(a, sw.Domain((1, 2), (2, 3))).tolist()
    [[5, 5, 5], [5, 5, 5]]
    >>> read_domain(a, sw.Domain((0, 4), (4, 4)))
    Traceback (most recent call last):
    ...
    shardwright._errors.BoundsError: region [0:4, 4:8] is not inside the array of shape (4, 6): axis 1 ends at 8, past its size 6
    """  # noqa: E501
    shape = tuple(array.shape)
    if domain.ndim != len(shape):
        raise ShapeError(
            f"region {_format_domain(domain)} has rank {domain.ndim}, the array {len(shape)}"
        )
    for axis, (stop, n) in enumerate(zip(domain.stop, shape)):
        if stop > n:
            raise BoundsError(
                f"region {_format_domain(domain)} is not inside the array of shape {shape}: "
                f"axis {axis} ends at {stop}, past its size {n}"
            )
    return array.read(domain)


def read_key(array: _Readable, key: Any) -> np.ndarray:
    """What ``zarr.Array.__getitem__`` (zarr-python 3) gives for ``key``, read from
    ``array`` (anything with ``shape``, ``dtype``, ``chunks`` and ``read(Domain)``).

    As in zarr-python, ``key`` reads pointwise (as :class:`VIndex`) when it is a boolean
    array, or one integer array/list or int per axis (at least one an array); else
    orthogonally (as :class:`OIndex`) when every axis has an integer array/list or a
    mask, or when at most one has and the others are Python ints or slices (no
    Ellipsis); else as basic indexing (ints, slices, Ellipsis). A :class:`Domain` reads
    its box. Results are new numpy arrays (a numpy scalar for a single element, as numpy
    gives; zarr-python gives a 0-d array).

    Beyond zarr-python, which refuses them, slices may have a negative step and ``None``
    (``np.newaxis``) adds an axis of length 1 as numpy would. Sparse selections read only
    boxes inside the inner chunks that hold selected elements.

    Out-of-bounds indices raise :class:`BoundsError`; keys zarr-python refuses (floats,
    strings, masks of the wrong shape, mixed forms) raise :class:`ShapeError`.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/k.zarr", shape=(4, 6), dtype="int16",
    ...               chunks=(2, 2), shards=(4, 4))
    >>> with a.transaction() as tx:
    ...     tx[...] = np.arange(24, dtype="int16").reshape(4, 6)
    >>> read_key(a, ([0, 3], [5, 1])).tolist()          # pointwise
    [5, 19]
    >>> read_key(a, (slice(None, None, -2), [5, 1])).tolist()   # orthogonal
    [[23, 19], [11, 7]]
    >>> read_key(a, (None, 2, [True, False, False, False, False, True])).tolist()
    [[12, 17]]
    >>> read_key(a, 1.5)
    Traceback (most recent call last):
    ...
    shardwright._errors.ShapeError: unsupported index 1.5 (float) at axis 0 in key 1.5; supported are integers, slices, Ellipsis, None (np.newaxis), integer arrays or lists, boolean masks and a Domain
    """  # noqa: E501
    if isinstance(key, Domain):
        return read_domain(array, key)
    items, key = _split_newaxis(key)
    key = _pop_fields(key)
    ndim = len(array.shape)
    if _is_pure_fancy(key, ndim):
        return _with_new_axes(_pointwise(array, key), items, True, ndim)
    basic = not _is_pure_orthogonal(key, ndim)
    out = _with_new_axes(_orthogonal(array, key, check_basic=basic), items, False, ndim)
    # One element: a numpy scalar, as numpy gives (zarr-python gives a 0-d array; both
    # compare and convert alike, and a scalar is hashable).
    return out[()] if out.ndim == 0 else out


class OIndex(_Selector):
    """Orthogonal reads, ``a.oindex[key]`` as zarr-python's: each axis's index (an int,
    a slice, an integer array or list, a 1-d mask) applied independently; ints drop
    their axis. Slices may have a negative step and ``None`` adds an axis, as in numpy.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/o.zarr", shape=(4, 6), dtype="int16",
    ...               chunks=(2, 2))
    >>> with a.transaction() as tx:
    ...     tx[...] = np.arange(24, dtype="int16").reshape(4, 6)
    >>> OIndex(a)[[0, 3], [5, 1]].tolist()
    [[5, 1], [23, 19]]
    >>> OIndex(a)[np.array([False, True, True, False]), 2].tolist()
    [8, 14]
    """

    __slots__ = ()

    def __getitem__(self, key: Any) -> np.ndarray:
        items, key = _split_newaxis(key)
        _pop_fields(key)
        ndim = len(self._array.shape)
        return _with_new_axes(_orthogonal(self._array, _tuple(key)), items, False, ndim)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a.oindex[key] = value``: a one-shot transaction, as ``a[key] = value``."""
        self._array._write_selection(False, key, value)


class VIndex(_Selector):
    """Pointwise reads, ``a.vindex[key]`` as zarr-python's: one integer array (or list,
    or int) per axis, broadcast together, picks the elements at those coordinates; or a
    boolean mask of the array's shape picks its True elements in C order. ``None`` adds
    an axis as numpy would.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/v.zarr", shape=(4, 6), dtype="int16",
    ...               chunks=(2, 2))
    >>> with a.transaction() as tx:
    ...     tx[...] = np.arange(24, dtype="int16").reshape(4, 6)
    >>> VIndex(a)[[0, 3], [5, 1]].tolist()
    [5, 19]
    >>> VIndex(a)[np.arange(24).reshape(4, 6) % 7 == 0].tolist()
    [0, 7, 14, 21]
    """

    __slots__ = ()

    def __getitem__(self, key: Any) -> np.ndarray:
        items, key = _split_newaxis(key)
        _pop_fields(key)
        return _with_new_axes(_pointwise(self._array, key), items, True, len(self._array.shape))

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a.vindex[key] = value``: a one-shot transaction, as ``a[key] = value``."""
        self._array._write_selection(True, key, value)
