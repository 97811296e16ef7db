"""Writing zarr-python's fancy selections: ``a.oindex[key] = value`` (orthogonal),
``a.vindex[key] = value`` (coordinates or a full mask), and ``a[key] = value`` for the
keys ``a[key]`` reads that way. The selection is cut into boxes (runs of consecutive
indices along each axis, runs of neighbouring points along the last axis), each written
into one transaction in selection order, so a repeated index takes the last value, as in
numpy."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ._domain import Domain
from ._errors import ShapeError
from ._selection import (
    _is_pure_fancy,
    _is_pure_orthogonal,
    _pop_fields,
    orthogonal_selectors,
    point_coordinates,
)
from ._values import coerce


def cast_value(data: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """``data`` cast and broadcast to ``shape`` as numpy's assignment does (a view where
    it can be).

    >>> cast_value(3, np.dtype("uint8"), (2,)).tolist()
    [3, 3]
    """
    value = coerce(data, dtype, shape)
    if isinstance(value, bytes):  # a scalar: its one element
        return np.broadcast_to(np.frombuffer(value, dtype=dtype).reshape(()), shape)
    return value


def _runs(sel: range | np.ndarray) -> list[tuple[int, int, int, int]]:
    """The runs of consecutive indices in one axis's selection, in selection order:
    ``(first position, last position + 1, lowest index, direction)``."""
    idx = np.asarray(sel, dtype=np.intp)
    if idx.size == 0:
        return []
    steps = np.diff(idx)
    out = []
    start = 0
    for p in range(1, idx.size + 1):
        ends = p == idx.size or steps[p - 1] not in (1, -1)
        ends = ends or (p - start > 1 and steps[p - 1] != steps[start])
        if ends:
            direction = 1 if p - start == 1 else int(steps[start])
            out.append((start, p, int(min(idx[start], idx[p - 1])), direction))
            start = p
    return out


def write_orthogonal(
    tx: Any,
    dtype: np.dtype,
    shape: tuple[int, ...],
    key: Any,
    data: Any,
    *,
    check_basic: bool = False,
) -> None:
    """``a.oindex[key] = data`` (``check_basic``: ``a[key] = data`` for a basic key with
    any slice steps) into transaction ``tx``.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/o.zarr", shape=(3, 5), dtype="int8", chunks=(2, 2))
    >>> a.oindex[[0, 2], [4, 0, 1]] = [[1, 2, 3], [4, 5, 6]]
    >>> a[...].tolist()
    [[2, 3, 0, 0, 1], [0, 0, 0, 0, 0], [5, 6, 0, 0, 4]]
    """
    sels, keep = orthogonal_selectors(shape, _pop_fields(key), check_basic=check_basic)
    result = tuple(len(s) for s, k in zip(sels, keep, strict=True) if k)
    value = cast_value(data, dtype, result).reshape([len(s) for s in sels])
    for boxes in itertools.product(*(_runs(s) for s in sels)):
        region = Domain([b[2] for b in boxes], [b[1] - b[0] for b in boxes])
        part = value[tuple(slice(b[0], b[1], None) for b in boxes)]
        flips = tuple(slice(None, None, -1) if b[3] < 0 else slice(None) for b in boxes)
        tx[region] = part[flips]


def write_points(tx: Any, dtype: np.dtype, shape: tuple[int, ...], key: Any, data: Any) -> None:
    """``a.vindex[key] = data`` (one integer array per axis, or a mask of the array's
    shape) into transaction ``tx``.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/v.zarr", shape=(3, 3), dtype="int8", chunks=(2, 2))
    >>> a.vindex[[0, 1, 2], [0, 1, 2]] = 7
    >>> a.vindex[np.eye(3, dtype=bool)[::-1]] = [1, 2, 3]
    >>> a[...].tolist()
    [[7, 0, 1], [0, 2, 0], [3, 0, 7]]
    """
    coords, result = point_coordinates(shape, _pop_fields(key))
    values = np.asarray(cast_value(data, dtype, result)).reshape(-1)
    n = values.size
    if not coords or n == 0:
        return
    start = 0
    last = coords[-1]
    for p in range(1, n + 1):
        joined = p < n and last[p] == last[p - 1] + 1
        joined = joined and all(c[p] == c[p - 1] for c in coords[:-1])
        if not joined:
            origin = [int(c[start]) for c in coords]
            extent = [1] * (len(coords) - 1) + [p - start]
            tx[Domain(origin, extent)] = values[start:p].reshape(extent)
            start = p


def write_key(tx: Any, dtype: np.dtype, shape: tuple[int, ...], key: Any, data: Any) -> None:
    """``a[key] = data`` for any key ``a[key]`` reads: pointwise, orthogonal or basic, as
    zarr-python decides (see :func:`shardwright._selectors.read_key`)."""
    if key is None or (isinstance(key, tuple) and any(k is None for k in key)):
        raise ShapeError("None (np.newaxis) in an assignment key adds nothing to write: drop it")
    key = _pop_fields(key)
    if _is_pure_fancy(key, len(shape)):
        write_points(tx, dtype, shape, key, data)
    else:
        basic = not _is_pure_orthogonal(key, len(shape))
        write_orthogonal(tx, dtype, shape, key, data, check_basic=basic)
