"""The value of an assignment ``w[key] = value`` made into the data written, by numpy's
assignment rules: scalars, (nested) lists, arrays and anything with ``__array__``, cast
under ``same_kind`` and broadcast to the region."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ._errors import DTypeError, ShapeError

_SCALARS = (bool, int, float, complex, np.generic)

# Python numbers, weakest first, and one of each: numpy (NEP 50) casts a Python number to
# the array's dtype when ``result_type(dtype, number)`` is that dtype, as it does for the
# scalars of an expression such as ``uint8_array + 1``.
_RANK = {bool: 0, int: 1, float: 2, complex: 3}
_WEAK: tuple[bool | int | float | complex, ...] = (False, 0, 0.0, 0j)


def coerce(
    data: Any, dtype: np.dtype, shape: tuple[int, ...], *, element: bool = False
) -> np.ndarray | bytes:
    """``data`` for a region whose ``array[key]`` has ``shape``: a numpy array of
    ``dtype`` broadcast to ``shape`` (any memory layout; a broadcast is a view, not a
    copy), or, for a scalar or a one-element value, the bytes of one element.
    ``element``: the key names one element by integers alone (see :func:`is_element`),
    where numpy takes a scalar (or a 0-d array) only.

    Follows numpy's assignment ``x[key] = data`` except that casts must be ``same_kind``
    from the value's own dtype (:class:`DTypeError` otherwise). Python numbers, alone or in
    (nested) lists, are cast as numpy casts them in expressions: a list of ints suits any
    integer or float array, but one that does not fit the dtype (``[300]`` for ``uint8``)
    is refused, not wrapped. Broadcasting is numpy's: leading dimensions of size 1 beyond
    the region's are dropped first from an array, as numpy's assignment does, but a list
    may not have more dimensions than the region; :class:`ShapeError` names both shapes
    when it fails.

    >>> coerce([1, 2, 3], np.dtype("uint8"), (2, 3)).tolist()
    [[1, 2, 3], [1, 2, 3]]
    >>> coerce(7, np.dtype("int16"), (4,))
    b'\\x07\\x00'
    >>> coerce([300], np.dtype("uint8"), (2,))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardwright._errors.DTypeError: a value does not fit in the array's dtype uint8: ...
    >>> coerce(np.zeros(3), np.dtype("float32"), (2, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardwright._errors.ShapeError: data of shape (3,) does not broadcast to the region's ...
    """
    if isinstance(data, _SCALARS) or (isinstance(data, np.ndarray) and data.ndim == 0):
        return _scalar(data, dtype)
    if isinstance(data, list | tuple):
        if element:
            raise ShapeError(_ELEMENT.format(what=f"a {type(data).__name__}"))
        array = _from_sequence(data, dtype)
        if array.ndim > len(shape):
            raise ShapeError(
                f"a list of shape {array.shape} does not broadcast to the region's shape "
                f"{shape} (a list may not have more dimensions than the region)"
            )
    else:
        array = np.asarray(data)  # an ndarray, or anything with __array__ (dask, TensorStore)
        if array.ndim == 0:
            return _scalar(array, dtype)
        if element:
            raise ShapeError(_ELEMENT.format(what=f"data of shape {array.shape}"))
        array = _cast(array, dtype)
    return _broadcast(array, shape)


_ELEMENT = (
    "{what} for one element (a key of integers only): numpy takes a scalar there; "
    "write a region (a slice, or `...`) to broadcast"
)


def is_element(key: Any, shape: tuple[int, ...]) -> bool:
    """Whether ``key``, whose ``array[key]`` has ``shape``, names one element by integers
    alone (no slice, no Ellipsis, not a Domain): numpy assigns a scalar only there.

    >>> is_element((1, 2), ()), is_element((1, 2, ...), ()), is_element(1, (4,))
    (True, False, False)
    """
    if shape:
        return False
    return not isinstance(key, tuple) or all(k is not Ellipsis for k in key)


def _scalar(data: Any, dtype: np.dtype) -> bytes:
    """The bytes of one element of ``dtype`` holding the scalar ``data``."""
    value = data.item() if isinstance(data, np.ndarray | np.generic) else data
    source = data.dtype if isinstance(data, np.ndarray | np.generic) else None
    if source is not None and not np.can_cast(source, dtype, "same_kind"):
        raise DTypeError(f"cannot cast {source} to the array's dtype {dtype} (same_kind)")
    if source is None and np.result_type(dtype, value) != dtype:
        raise DTypeError(
            f"cannot cast {type(value).__name__} {value!r} to the array's dtype {dtype}"
        )
    try:
        return np.asarray(value, dtype=dtype).tobytes()
    except OverflowError as err:
        raise DTypeError(f"{value!r} does not fit in the array's dtype {dtype}") from err


def _cast(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``array`` as ``dtype``, if numpy's ``same_kind`` rule allows the cast."""
    if array.dtype == dtype:
        return array
    if not np.can_cast(array.dtype, dtype, "same_kind"):
        raise DTypeError(
            f"cannot cast data of dtype {array.dtype} to the array's dtype {dtype} "
            "(numpy's same_kind rule)"
        )
    return array.astype(dtype)


def _python_kind(data: list[Any] | tuple[Any, ...]) -> int | None:
    """The rank in ``_RANK`` of the strongest Python number among the leaves of a nested
    list (-1 when it has none), or ``None`` when a leaf is anything else (a numpy scalar
    or array, a string, ``None``...)."""
    best = -1
    stack = [data]
    while stack:
        for item in stack.pop():
            kind = type(item)
            rank = _RANK.get(kind)
            if rank is not None:
                best = max(best, rank)
            elif kind is list or kind is tuple:
                stack.append(item)
            else:
                return None
    return best


def _from_sequence(data: list[Any] | tuple[Any, ...], dtype: np.dtype) -> np.ndarray:
    """A (nested) list or tuple as an array of ``dtype``."""
    rank = _python_kind(data)
    try:
        if rank is None:  # numpy values inside: the cast from the dtype numpy gives the
            _cast(np.asarray(data), dtype)  # list must be same_kind; the conversion is
            return np.asarray(data, dtype=dtype)  # numpy's (Python ints that overflow raise)
        if rank >= 0 and np.result_type(dtype, _WEAK[rank]) != dtype:
            kind = type(_WEAK[rank]).__name__
            raise DTypeError(f"cannot cast a list of Python {kind}s to the array's dtype {dtype}")
        return np.asarray(data, dtype=dtype)
    except OverflowError as err:
        raise DTypeError(f"a value does not fit in the array's dtype {dtype}: {err}") from None
    except ValueError as err:
        raise ShapeError(f"the list is not rectangular (as an array): {err}") from None


def _broadcast(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | bytes:
    """``array`` broadcast to ``shape`` by numpy's assignment rule (a view), or the bytes
    of its one element."""
    if array.shape == shape:
        return array
    source = array.shape
    extra = array.ndim - len(shape)
    if extra > 0 and all(n == 1 for n in source[:extra]):
        array = array.reshape(source[extra:])  # as x[...] = value drops them
    try:
        view = np.broadcast_to(array, shape)
    except ValueError:
        raise ShapeError(
            f"data of shape {source} does not broadcast to the region's shape {shape}"
        ) from None
    if array.size == 1:
        return array.tobytes()  # one value for the whole region: written as a scalar is
    return view


_HOLD_BYTES = 16 << 20
_LAST = threading.local()  # the array last assigned on this thread (see hold())


def hold(data: Any) -> None:
    """Keep ``data`` until the next assignment on this thread, which drops it before it
    copies its own data (``_holdable`` arrays only). ``w[c] = calculation(c)`` would
    otherwise free each result right after the call, and glibc then gives the top of its
    heap back and faults it in again for the next computation (a page fault per 4 KiB:
    172k faults and +40% time measured on a 384**3 loop), as ``x = calculation(c)`` does
    not."""
    _LAST.value = data if _holdable(data) else None


def _holdable(data: Any) -> bool:
    """Whether to keep ``data`` until the next assignment: a numpy array whose memory (its
    own, or that of the array it views) is at most 16 MiB — an inner chunk's result, not a
    view of a whole volume or a memory map the caller expects to be freed."""
    if not isinstance(data, np.ndarray):
        return False
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root.base is None and root.nbytes <= _HOLD_BYTES
