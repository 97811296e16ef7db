"""The selections of zarr-python's and numpy's indexing, read from an array: what
``a[key]``, ``a.oindex[key]`` and ``a.vindex[key]`` (:mod:`shardwright._selectors`)
select, and its reading; :mod:`shardwright._assign` writes the same selections.

The rules are zarr-python 3's (``zarr.Array.__getitem__``, ``.oindex``, ``.vindex``),
with two extensions where zarr-python refuses a key that numpy takes: slices with a
negative step, and ``None``/``np.newaxis`` (each a new axis of length 1, placed as numpy
places it). Sparse selections are read chunk by chunk: only boxes inside the inner chunks
that hold selected elements are read, never the bounding box of the selection.
"""

from __future__ import annotations

import itertools
import math
import numbers
import reprlib
from typing import Any, Protocol

import numpy as np

from ._domain import Domain
from ._errors import BoundsError, ShapeError

# Along one axis, neighbouring runs of selected indices are read as one box when no
# whole inner chunk lies between them and the box holds at least 1 selected index in
# _DENSITY: a few reads more than needed, never a bounding box of a sparse selection.
_DENSITY = 4
# Above this many bytes, a read whose boxes hold mostly unselected elements is split.
_BOX_BYTES = 64 << 20

_SUPPORTED = (
    "integers, slices, Ellipsis, None (np.newaxis), integer arrays or lists, boolean "
    "masks and a Domain"
)


class _Readable(Protocol):
    """What reading needs of an array (``shardwright.Array`` has it)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def chunks(self) -> tuple[int, ...]: ...
    def read(self, region: Domain) -> np.ndarray: ...


def _grain(array: _Readable) -> tuple[int, ...]:
    """The chunk shape reads are planned along: a shardwright Array's inner chunks (for an
    unsharded rectilinear grid, whose ``chunks`` is undefined, the first chunk's), else the
    object's ``chunks``."""
    grain = getattr(array, "_chunks", None)
    return tuple(array.chunks if grain is None else grain)


# --------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------

_repr = reprlib.Repr()
_repr.maxlist = _repr.maxtuple = 8
_repr.maxother = _repr.maxstring = 200
_repr.maxlevel = 3


def _short(obj: Any, limit: int = 80) -> str:
    """``repr(obj)`` on one line, cut to ``limit`` characters ("…" when cut)."""
    with np.printoptions(threshold=6, edgeitems=2, linewidth=10**6):
        text = " ".join(_repr.repr(obj).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_domain(d: Domain) -> str:
    return "[" + ", ".join(f"{o}:{o + s}" for o, s in zip(d.origin, d.shape)) + "]"


def _out_of_bounds(axis: int, index: Any, size: int) -> BoundsError:
    return BoundsError(f"index {index} is out of bounds for axis {axis} with size {size}")


def _unsupported(item: Any, key: Any, where: str) -> ShapeError:
    return ShapeError(
        f"unsupported index {_short(item, 40)} ({type(item).__name__}) {where} in key "
        f"{_short(key)}; supported are {_SUPPORTED}"
    )


# --------------------------------------------------------------------------------------
# What kind of index an item is (zarr-python's predicates, zarr/core/indexing.py)
# --------------------------------------------------------------------------------------


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and type(x) not in (bool, np.bool_)


def _is_int_list(x: Any) -> bool:
    return isinstance(x, list) and len(x) > 0 and all(_is_int(i) for i in x)


def _is_bool_list(x: Any) -> bool:
    return isinstance(x, list) and len(x) > 0 and all(type(i) in (bool, np.bool_) for i in x)


def _is_int_array(x: Any) -> bool:
    return (
        not np.isscalar(x)
        and hasattr(x, "shape")
        and hasattr(x, "dtype")
        and getattr(x.dtype, "kind", "") in "ui"
    )


def _is_bool_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and x.dtype == bool


def _is_fancy(x: Any) -> bool:
    return _is_int_list(x) or _is_int_array(x) or _is_bool_array(x) or _is_bool_list(x)


def _is_pure_fancy(key: Any, ndim: int) -> bool:
    """zarr's ``is_pure_fancy_indexing``: ``a[key]`` reads as ``a.vindex[key]``."""
    if _is_bool_array(key):
        return True
    if ndim == 1 and (_is_int_list(key) or _is_int_array(key) or _is_bool_list(key)):
        return True
    return (
        isinstance(key, tuple)
        and len(key) == ndim
        and not any(isinstance(k, slice) or k is Ellipsis for k in key)
        and all(_is_int(k) or _is_int_list(k) or _is_int_array(k) for k in key)
        and any(_is_int_list(k) or _is_int_array(k) for k in key)
    )


def _is_pure_orthogonal(key: Any, ndim: int) -> bool:
    """zarr's ``is_pure_orthogonal_indexing``: ``a[key]`` reads as ``a.oindex[key]``."""
    if not ndim:
        return False
    items = key if isinstance(key, tuple) else (key,)
    if len(items) == ndim and all(_is_fancy(k) for k in items):
        return True
    return (
        len(items) <= ndim
        and sum(_is_fancy(k) for k in items) <= 1
        and all(_is_fancy(k) or isinstance(k, int | slice) for k in items)
    )


# --------------------------------------------------------------------------------------
# Normalising a key
# --------------------------------------------------------------------------------------


def _split_newaxis(key: Any) -> tuple[tuple[Any, ...] | None, Any]:
    """The key's items with their ``None``s (``None`` if it has none), and the key
    without them."""
    if key is None:
        return (None,), ()
    if isinstance(key, tuple) and any(k is None for k in key):
        return key, tuple(k for k in key if k is not None)
    return None, key


def _pop_fields(key: Any) -> Any:
    """zarr's ``pop_fields`` for arrays without fields: strings are refused, a 1-tuple
    is unwrapped."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if isinstance(k, str):
            raise _unsupported(k, key, "(field names need a structured dtype)")
    return key[0] if isinstance(key, tuple) and len(key) == 1 else key


def _expand(key: Any, ndim: int) -> tuple[Any, ...]:
    """One item per axis: the Ellipsis expanded, missing trailing items filled."""
    key = key if isinstance(key, tuple) else (key,)
    at = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(at) > 1:
        raise ShapeError(f"an index can only have a single ellipsis ('...'), got {_short(key)}")
    explicit = len(key) - len(at)
    if explicit > ndim:
        raise BoundsError(
            f"too many indices: the array is {ndim}-dimensional, got {explicit} in {_short(key)}"
        )
    if at:
        key = key[: at[0]] + (slice(None),) * (ndim - explicit) + key[at[0] + 1 :]
    return key + (slice(None),) * (ndim - len(key))


def _as_array(item: Any, key: Any) -> np.ndarray:
    try:
        return np.asarray(item)
    except (TypeError, ValueError) as err:
        raise _unsupported(item, key, "(not an array)") from err


def _int(i: Any, axis: int, size: int) -> int:
    i = int(i)
    if not -size <= i < size:
        raise _out_of_bounds(axis, i, size)
    return i % size


def _int_array(x: np.ndarray, axis: int, size: int) -> np.ndarray:
    """``x`` as intp with negative indices wrapped; raises BoundsError naming the axis."""
    if x.dtype.kind == "u":
        bad = x >= size
    else:
        bad = (x < -size) | (x >= size)
    if bad.any():
        raise _out_of_bounds(axis, x[bad].flat[0], size)
    x = x.astype(np.intp, copy=False)
    return np.where(x < 0, x + size, x) if x.size and x.min() < 0 else x


def _range(s: slice, axis: int, key: Any, size: int) -> range:
    try:
        return range(*s.indices(size))
    except (TypeError, ValueError) as err:
        raise _unsupported(s, key, f"at axis {axis} ({err})") from err


# --------------------------------------------------------------------------------------
# Reading: orthogonal selections (basic indexing too) and points
# --------------------------------------------------------------------------------------

Piece = tuple[int, int, Any, Any, int]  # lo, hi, out, local, count


def _pieces(sel: range | np.ndarray, chunk: int, split: bool = False) -> list[Piece]:
    """How to read one axis's selection: boxes ``lo:hi`` inside the inner chunks holding
    selected indices, each with where its selected part goes in the output (``out``),
    where it lies in the box (``local``) and how many indices it serves. Neighbouring
    boxes at least 1 in ``_DENSITY`` selected are read as one, unless ``split`` (each box
    then stays within one inner chunk's extent)."""
    n = len(sel)
    if n == 0:
        return []
    if isinstance(sel, range):
        lo, hi = min(sel[0], sel[-1]), max(sel[0], sel[-1]) + 1
        step = abs(sel.step)
        dense = not split and step <= _DENSITY and step <= chunk
        if n == 1 or (lo // chunk == (hi - 1) // chunk) or dense:
            end = sel[-1] - lo + (1 if sel.step > 0 else -1)
            local = slice(sel[0] - lo, None if end < 0 else end, sel.step)
            return [(lo, hi, slice(0, n), local, n)]
        sel = np.arange(sel.start, sel.stop, sel.step, dtype=np.intp)
    if n == 1 or bool(np.all(sel[1:] >= sel[:-1])):
        order, s = None, sel
    else:
        order = np.argsort(sel, kind="stable")
        s = sel[order]
    cuts = (np.flatnonzero(s[1:] // chunk != s[:-1] // chunk) + 1).tolist()
    starts, stops = [0, *cuts], [*cuts, n]
    los, his = s[starts].tolist(), (s[np.array(stops) - 1] + 1).tolist()
    runs = []  # (a, b, lo, hi): the box lo:hi serves s[a:b]
    a, lo, hi = 0, los[0], his[0]
    for b, glo, ghi, gstop in zip(stops[:-1], los[1:], his[1:], stops[1:]):
        dense = not split and ghi - lo <= _DENSITY * (gstop - a)
        if glo - hi < chunk and (dense or ghi - lo <= chunk):
            hi = ghi
            continue
        runs.append((a, b, lo, hi))
        a, lo, hi = b, glo, ghi
    runs.append((a, n, lo, hi))
    pieces: list[Piece] = []
    for a, b, lo, hi in runs:
        part = s[a:b]
        if order is None and hi - lo == b - a and bool(np.all(part[1:] > part[:-1])):
            local: slice | np.ndarray = slice(0, b - a)
        else:
            local = part - lo
        pieces.append((lo, hi, slice(a, b) if order is None else order[a:b], local, b - a))
    return pieces


def _ix(sels: list[slice | np.ndarray], counts: list[int]) -> tuple[Any, ...]:
    """An index applying each axis's selection independently (numpy's ``ix_``, for
    slices and integer arrays)."""
    if sum(isinstance(s, np.ndarray) for s in sels) <= 1:
        return tuple(sels)
    return np.ix_(
        *(
            s if isinstance(s, np.ndarray) else np.arange(n) * (s.step or 1) + (s.start or 0)
            for s, n in zip(sels, counts)
        )
    )


def _read_selectors(
    array: _Readable, sels: list[range | np.ndarray], keep: list[bool]
) -> np.ndarray:
    """The orthogonal selection ``sels`` (one range or index array per axis), axes whose
    ``keep`` is False (integers) dropped."""
    shape = tuple(len(s) for s in sels)
    final = tuple(n for n, k in zip(shape, keep) if k)
    if 0 in shape:
        return np.empty(final, dtype=array.dtype)
    plans = [_pieces(s, c) for s, c in zip(sels, _grain(array))]
    spans = math.prod(sum(p[1] - p[0] for p in plan) for plan in plans)
    if spans * array.dtype.itemsize > _BOX_BYTES and spans > _DENSITY * math.prod(shape):
        # Sparse along several axes at once (1 in 4 per axis is 1 in 64 over three): read
        # box by box within the inner chunks, never the bounding box.
        plans = [_pieces(s, c, split=True) for s, c in zip(sels, _grain(array))]
    if all(len(p) == 1 for p in plans):
        parts = [p[0] for p in plans]
        if all(isinstance(p[2], slice) for p in parts):  # in order: no scatter needed
            box = array.read(Domain([p[0] for p in parts], [p[1] - p[0] for p in parts]))
            return box[_ix([p[3] for p in parts], [p[4] for p in parts])].reshape(final)
    out = np.empty(shape, dtype=array.dtype)
    for parts in itertools.product(*plans):
        box = array.read(Domain([p[0] for p in parts], [p[1] - p[0] for p in parts]))
        counts = [p[4] for p in parts]
        out[_ix([p[2] for p in parts], counts)] = box[_ix([p[3] for p in parts], counts)]
    return out.reshape(final)


def _read_points(array: _Readable, coords: list[np.ndarray], shape: tuple[int, ...]):
    """The elements at ``coords`` (one flat intp array per axis), read inner chunk by
    inner chunk, as an array of ``shape``."""
    if len(coords) == 1:
        return _read_selectors(array, coords, [True]).reshape(shape)
    n = coords[0].size
    out = np.empty(n, dtype=array.dtype)
    if n:
        cids = [c // k for c, k in zip(coords, _grain(array))]
        order = np.lexsort(cids[::-1])
        change = np.zeros(n - 1, dtype=bool)
        for c in cids:
            sc = c[order]
            change |= sc[1:] != sc[:-1]
        bounds = [0, *(np.flatnonzero(change) + 1).tolist(), n]
        points = [c[order] for c in coords]
        for a, b in itertools.pairwise(bounds):
            p = [x[a:b] for x in points]
            lo = [int(x.min()) for x in p]
            box = array.read(Domain(lo, [int(x.max()) + 1 - m for x, m in zip(p, lo)]))
            out[order[a:b]] = box[tuple(x - m for x, m in zip(p, lo))]
    return out.reshape(shape)


def _orthogonal(array: _Readable, key: Any, *, check_basic: bool = False) -> np.ndarray:
    """zarr's orthogonal selection (``check_basic``: its basic one, integers and slices
    only), with slices of any step."""
    sels, keep = orthogonal_selectors(tuple(array.shape), key, check_basic=check_basic)
    return _read_selectors(array, sels, keep)


def orthogonal_selectors(
    shape: tuple[int, ...], key: Any, *, check_basic: bool = False
) -> tuple[list[range | np.ndarray], list[bool]]:
    """Per axis, the indices an orthogonal (or, ``check_basic``, basic) ``key`` selects,
    and whether the axis stays in the result (an integer drops it)."""
    sels: list[range | np.ndarray] = []
    keep = []
    for axis, (k, n) in enumerate(zip(_expand(key, len(shape)), shape)):
        if isinstance(k, list) and not check_basic:
            k = _as_array(k, key)
        if _is_int(k):
            i = _int(k, axis, n)
            sels.append(range(i, i + 1))
            keep.append(False)
            continue
        keep.append(True)
        if isinstance(k, slice):
            sels.append(_range(k, axis, key, n))
        elif check_basic and _is_fancy(k):
            raise ShapeError(
                f"a[...] does not take {_short(key)}: as in zarr-python, an integer array "
                "or mask goes with slices and Python ints only when it is the only one (or "
                "when every axis has one, read orthogonally), and with no Ellipsis; integer "
                "arrays and ints, one per axis, are read pointwise. Use a.oindex[...] "
                "(orthogonal) or a.vindex[...] (pointwise)"
            )
        elif check_basic or np.ndim(k) == 0 or not (_is_int_array(k) or _is_bool_array(k)):
            raise _unsupported(k, key, f"at axis {axis}")
        elif (k := _as_array(k, key)).ndim != 1:
            raise ShapeError(
                f"an integer array or mask in an orthogonal selection must be 1-d; axis "
                f"{axis} has one of shape {k.shape} in {_short(key)}"
            )
        elif k.dtype == bool:
            if k.shape[0] != n:
                raise ShapeError(f"the mask for axis {axis} has length {k.shape[0]}, the axis {n}")
            sels.append(np.flatnonzero(k))
        else:
            sels.append(_int_array(k, axis, n))
    return sels, keep


def _pointwise(array: _Readable, key: Any) -> np.ndarray:
    """zarr's coordinate selection (one integer array or int per axis, broadcast) or
    mask selection (one boolean array of the array's shape)."""
    coords, out_shape = point_coordinates(tuple(array.shape), key)
    return _read_points(array, coords, out_shape)


def point_coordinates(shape: tuple[int, ...], key: Any) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """The coordinates a pointwise ``key`` selects (one flat array per axis, in selection
    order) and the shape of the result."""
    items = tuple(_as_array(k, key) if isinstance(k, list) else k for k in _tuple(key))
    if len(items) == len(shape) and all(_is_int(k) or _is_int_array(k) for k in items):
        coords = [
            np.asarray([_int(k, axis, n)], dtype=np.intp)
            if _is_int(k)
            else _int_array(np.asarray(k), axis, n)
            for axis, (k, n) in enumerate(zip(items, shape))
        ]
        try:
            coords = np.broadcast_arrays(*coords)
        except ValueError as err:
            raise ShapeError(
                f"the integer arrays of a pointwise selection must broadcast together; got "
                f"shapes {tuple(np.shape(c) for c in coords)} in {_short(key)}"
            ) from err
        out_shape = coords[0].shape or (1,)
        return [c.reshape(-1) for c in coords], out_shape
    if len(items) == 1 and _is_bool_array(items[0]):
        mask = np.asarray(items[0])
        if mask.shape != shape:
            raise ShapeError(
                f"a pointwise mask must have the array's shape {shape}; got one of shape "
                f"{mask.shape} (a mask per axis reads with a.oindex[...])"
            )
        coords = list(np.nonzero(mask))
        return coords, (coords[0].size,)
    raise ShapeError(
        "a pointwise (vindex) selection takes one integer array or int per axis (broadcast "
        f"together) or one boolean mask of the array's shape {shape}; got {_short(key)}"
    )


def _tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _with_new_axes(
    result: np.ndarray, items: tuple[Any, ...] | None, pointwise: bool, ndim: int
) -> np.ndarray:
    """``result`` with an axis of length 1 for each ``None`` of the key, where numpy puts
    it: between the other result axes in key order (orthogonal and basic reads); before
    or after the broadcast axes, or all after them when a None parts the arrays
    (pointwise reads)."""
    if items is None:
        return result
    shape = list(result.shape)
    if pointwise:
        where = [i for i, k in enumerate(items) if k is not None]
        if where and all(items[i] is not None for i in range(where[0], where[-1] + 1)):
            before = where[0]
            new = [1] * before + shape + [1] * (len(items) - len(where) - before)
        else:
            new = shape + [1] * (len(items) - len(where))
        return result.reshape(new)
    explicit = sum(1 for k in items if k is not None and k is not Ellipsis)
    new, at = [], 0
    for k in items:
        if k is None:
            new.append(1)
            continue
        take = max(ndim - explicit, 0) if k is Ellipsis else 0 if _is_int(k) else 1
        new.extend(shape[at : at + take])
        at += take
    return result.reshape(new + shape[at:])


# --------------------------------------------------------------------------------------
# The public entry points
# --------------------------------------------------------------------------------------
