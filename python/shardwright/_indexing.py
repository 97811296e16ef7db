"""numpy basic indexing (integers, slices, Ellipsis) turned into a bounding Domain."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ._domain import Domain
from ._errors import BoundsError, ShapeError
from ._selection import _short


def expand_key(key: Any, ndim: int) -> tuple[Any, ...]:
    """The key as one entry per dimension (Ellipsis expanded, missing ones filled)."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ellipsis = sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    explicit = len(key) - n_ellipsis
    if explicit > ndim:
        raise BoundsError(f"too many indices: array is {ndim}-dimensional, got {explicit}")
    if n_ellipsis:
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (ndim - explicit) + key[at + 1 :]
    return key + (slice(None),) * (ndim - len(key))


def parse_key(key: Any, shape: tuple[int, ...]) -> tuple[Domain, tuple[slice | int, ...]]:
    """The bounding box of ``key`` in an array of ``shape``, and the index that, applied to
    an array of that box, gives numpy's result for ``array[key]``.

    >>> parse_key((1, slice(0, 4, 2)), (3, 5))
    (Domain(origin=(1, 0), shape=(1, 3)), (0, slice(0, 3, 2)))
    """
    key = expand_key(key, len(shape))
    origin, extent, local = [], [], []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            r = range(*k.indices(n))
            if len(r) == 0:
                origin.append(min(r.start, n))
                extent.append(0)
                local.append(slice(0, 0))
                continue
            lo, hi = min(r[0], r[-1]), max(r[0], r[-1]) + 1
            origin.append(lo)
            extent.append(hi - lo)
            end = r[-1] - lo + (1 if r.step > 0 else -1)
            local.append(slice(r[0] - lo, None if end < 0 else end, r.step))
        else:
            if isinstance(k, bool | np.bool_):
                raise ShapeError(
                    f"a boolean ({k!r}) is not an index here: writers and transactions take "
                    "integers, slices and Ellipsis (a mask goes to a.vindex[...] or a[mask])"
                )
            try:
                i = operator.index(k)
            except TypeError as err:
                raise ShapeError(
                    f"only integers, slices and Ellipsis are supported, got {_short(k)}"
                ) from err
            if not -n <= i < n:
                raise BoundsError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            origin.append(i)
            extent.append(1)
            local.append(0)
    return Domain(origin, extent), tuple(local)


def parse_write_key(key: Any, shape: tuple[int, ...]) -> tuple[Domain, tuple[int, ...]]:
    """The region a write to ``array[key]`` covers, and the shape numpy gives
    ``array[key]`` (what the data must have). Slices need a step of 1.

    >>> parse_write_key((2, slice(1, 4)), (5, 6))
    (Domain(origin=(2, 1), shape=(1, 3)), (3,))
    """
    if isinstance(key, Domain):
        return key, key.shape
    region, local = parse_key(key, shape)
    result = []
    for axis, k in enumerate(local):
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise ShapeError(f"writes need slices with step 1; axis {axis} has {k.step}")
            result.append(region.shape[axis])
    return region, tuple(result)


def is_plain(key: Any) -> bool:
    """Whether ``key`` is basic indexing a transaction writes directly: integers, slices
    of step 1 and Ellipsis."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if isinstance(k, slice):
            if k.step not in (None, 1):
                return False
        elif k is not Ellipsis and (
            not isinstance(k, int | np.integer) or isinstance(k, bool | np.bool_)
        ):
            return False
    return True
