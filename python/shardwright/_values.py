"""The value of an assignment ``w[key] = value`` made into the data written, by numpy's
assignment rules: scalars, (nested) lists, arrays and anything with ``__array__``, cast
to the array's dtype when it holds every value exactly (:func:`fit`, the one cast rule
of every write) and broadcast to the region."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._errors import DTypeError, ShapeError
from ._values_fixed import fit_fixed, limits, named, refuse_by_dtype, shown, times_of

if TYPE_CHECKING:
    from ._domain import Domain

_SCALARS = (bool, int, float, complex, np.generic)

# Python numbers, weakest first: a (nested) list of them is taken as an array of the
# dtype of its strongest kind (bool, int64, float64, complex128), then cast by fit().
_RANK = {bool: 0, int: 1, float: 2, complex: 3}
_NUMBERS = "biufc"  # the dtype kinds fit() converts: bool, integers, floats, complex
_THEN = "nothing was written"
_Region = tuple[Sequence[int], Sequence[int]]  # an origin and a shape


def coerce(
    data: Any,
    dtype: np.dtype,
    shape: tuple[int, ...],
    *,
    element: bool = False,
    region: Domain | None = None,
) -> np.ndarray | bytes:
    """``data`` for a region whose ``array[key]`` has ``shape``: a numpy array of
    ``dtype`` broadcast to ``shape`` (any memory layout; a broadcast is a view, not a
    copy), or, for a scalar or a one-element value, the bytes of one element.
    ``element``: the key names one element by integers alone (see :func:`is_element`),
    where numpy takes a scalar (or a 0-d array) only. ``region``: the box of the array
    written, to name the array coordinate of a value that does not fit.

    Follows numpy's assignment ``x[key] = data`` except for the cast: every value must
    fit the dtype exactly (:func:`fit`: no wrapping, no truncated fractions), else
    :class:`DTypeError` names the first value that does not and where it is. Python
    numbers, alone or in (nested) lists, are taken as numpy takes them (bool, int64 or
    uint64, float64, complex128; exact Python ints beyond), then cast by the same rule:
    ``[300]`` is refused for ``uint8``, ``3.0`` accepted for ``int16``. Broadcasting is
    numpy's: leading dimensions of size 1 beyond the region's are dropped first from an
    array, as numpy's assignment does, but a list may not have more dimensions than the
    region; :class:`ShapeError` names both shapes when it fails.

    >>> coerce([1, 2, 3], np.dtype("uint8"), (2, 3)).tolist()
    [[1, 2, 3], [1, 2, 3]]
    >>> coerce(7.0, np.dtype("int16"), (4,))
    b'\\x07\\x00'
    >>> coerce([300], np.dtype("uint8"), (2,))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 300 at index (0,) of the list does not fit uint8 (0..255); nothing was written
    >>> coerce(np.zeros(3), np.dtype("float32"), (2, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardwright._errors.ShapeError: data of shape (3,) does not broadcast to the region's ...
    """  # noqa: E501
    if dtype.kind in "Mm":
        data = times_of(data, dtype)  # date strings, datetime objects
    if isinstance(data, _SCALARS) or (isinstance(data, np.ndarray) and data.ndim == 0):
        return _scalar(data, dtype)
    if isinstance(data, list | tuple):
        if element:
            raise ShapeError(_ELEMENT.format(what=f"a {type(data).__name__}"))
        array = _from_sequence(data, dtype, shape, region)
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
        array = fit(array, dtype, region=_laid_out(array.shape, shape, region))
    return _broadcast(array, shape)


def _laid_out(
    given: tuple[int, ...], shape: tuple[int, ...], region: Domain | None
) -> _Region | None:
    """``region``'s origin and shape when data of shape ``given`` fills it element for
    element in C order (``shape``, the region's, but for axes of size 1), else ``None``."""
    if region is None or math.prod(given) != math.prod(shape):
        return None
    if [n for n in given if n != 1] != [n for n in shape if n != 1]:
        return None
    return tuple(region.origin), tuple(region.shape)


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


def fit(
    data: np.ndarray,
    dtype: np.dtype,
    *,
    what: str | None = None,
    region: _Region | None = None,
    then: str = _THEN,
) -> np.ndarray:
    """``data`` as ``dtype`` if ``dtype`` holds every value of it exactly, else
    :class:`DTypeError` naming the first value (in C order) that does not fit, its index
    in ``data`` (``what`` names the data: "the uint32 data" by default) and, given
    ``region`` (origin and shape of the array region that ``data`` fills in C order), its
    array coordinate; the message ends with ``then``. ``data`` itself is never changed, and
    callers write nothing before it returns. This is the one rule of every write: ``w[c] = v``, ``tx[...] = v``,
    ``a[...] = v`` (and ``oindex``, ``vindex``, ``blocks``, ``append``), the results of
    ``map_chunks``, Dask blocks, and the blocks a ``sw.pyramid`` or ``sw.copy`` source
    gives. The rule, from the dtype of ``data``:

    - the same dtype: ``data`` itself, unchecked. Numbers (bool, integer, float,
      complex) are cast among themselves: text, objects or dates are refused by their
      dtype. Dates, times, text and bytes are cast among themselves by numpy's
      ``same_kind`` rule, each value stored exactly (see ``_values_fixed``: a longer
      string, a finer time, NaT's integer are refused).
    - into an integer or bool dtype: every value in its range (bool: 0 or 1), never
      wrapped; a float must also be finite and integral (NaN, inf and 2.5 are refused).
    - integers into a float or complex dtype: every value exactly representable (an int64
      above 2**53 into float64, or 70000 into float16, is refused).
    - floats into a narrower float: each value rounded to the nearest of the dtype, as
      numpy and zarr-python store float64 data into a float32 array (0.1 is accepted,
      stored as float32's 0.1); a finite value beyond the dtype's range (that would
      become inf) is refused; NaN and ±inf are kept.
    - complex into a real dtype: every imaginary part 0, then the real parts as above.

    Casts numpy calls ``safe`` and whose values cannot round (uint8 → uint16, int16 →
    float32, float32 → float64) are not checked; the others cost a vectorized min/max
    over ``data`` (and one comparison pass for floats into integers or narrower floats,
    which numpy's cast needs anyway).

    >>> fit(np.array([3.0, -2.0]), np.dtype("int8")).tolist()
    [3, -2]
    >>> fit(np.array([0.1, np.nan]), np.dtype("float32")).tolist()  # rounded, NaN kept
    [0.10000000149011612, nan]
    >>> fit(np.array([[1, 2], [3, 70000]], "uint32"), np.dtype("uint16"))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 70000 at index (1, 1) of the uint32 data does not fit uint16 (0..65535); nothing was written
    >>> fit(np.array([0.5, 2.5]), np.dtype("int8"), region=((10,), (2,)))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 0.5 at array coordinate (10,) (index (0,) of the float64 data) does not fit int8 (integers -128..127), nor does 1 other value; nothing was written
    >>> fit(np.array([2**53 + 1]), np.dtype("float64"))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 9007199254740993 at index (0,) of the int64 data does not fit float64 exactly (it would be stored as 9007199254740992.0); nothing was written
    >>> fit(np.array(1e300), np.dtype("float32"), what="a float64 scalar")
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 1e+300 (a float64 scalar) does not fit float32 (its largest finite value is 3.4028235e+38); nothing was written
    """  # noqa: E501
    source = data.dtype
    if source == dtype:
        return data
    refuse_by_dtype(source, dtype, then)
    with np.errstate(all="ignore"):
        if data.size == 0:
            return data.astype(dtype)
        numbers = source.kind in _NUMBERS and dtype.kind in _NUMBERS
        cast, bad = _checked(data, dtype) if numbers else fit_fixed(data, dtype)
        if bad is None:
            assert cast is not None
            return cast
        message = _refusal(data, bad, dtype, what, region, then)
    raise DTypeError(message)


def _may_round(source: np.dtype, dtype: np.dtype) -> bool:
    """Whether integers of ``source`` may not be exact in the float (or complex)
    ``dtype`` although numpy calls the cast ``safe`` (int64 → float64: 63 bits, 53
    digits; int32 → float64 is exact)."""
    if source.kind not in "iu" or dtype.kind not in "fc":
        return False
    bits = source.itemsize * 8 - (source.kind == "i")
    return bool(bits > np.finfo(dtype).nmant + 1)


def _checked(data: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(data cast, None)`` when every value fits ``dtype``, else ``(None, bad)``: the
    mask of the values that do not."""
    if data.dtype.kind == "c" and dtype.kind != "c":
        imag = data.imag
        if not (imag.min() == 0 and imag.max() == 0):  # NaN fails both
            return None, imag != 0
        data = data.real
    if np.can_cast(data.dtype, dtype, "safe") and not _may_round(data.dtype, dtype):
        return data.astype(dtype), None  # unchecked: no value can fail
    if dtype.kind in "biu":
        return _to_integer(data, dtype)
    if data.dtype.kind in "iu":
        return _int_to_float(data, dtype)
    return _float_to_float(data, dtype)


def _bounds(dtype: np.dtype) -> tuple[int, int]:
    """The least and greatest value of the integer or bool ``dtype``."""
    if dtype.kind == "b":
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _to_integer(data: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Integers or floats into the integer or bool ``dtype``: in range, and for floats
    finite and integral."""
    lo, hi = _bounds(dtype)
    if data.dtype.kind in "iu":
        if lo <= int(data.min()) and int(data.max()) <= hi:
            return data.astype(dtype), None
        return None, (data < lo) | (data > hi)
    # floats: min and max as Python floats, compared exactly with Python ints (a
    # longdouble may round, but never across lo or hi + 1, which float64 holds)
    low, high = float(data.min()), float(data.max())
    if math.isfinite(low) and math.isfinite(high) and lo <= low and high < hi + 1:
        cast = data.astype(dtype)
        if (cast == data).all():  # integral: compared in a float that holds both exactly
            return cast, None
    x = data if data.dtype.itemsize >= 8 else data.astype(np.float64)
    return None, ~np.isfinite(x) | (x < lo) | (x >= hi + 1) | (x != np.trunc(x))


def _int_to_float(data: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Integers into the float or complex ``dtype``: each exactly representable."""
    if max(-int(data.min()), int(data.max())) <= 2 ** (np.finfo(dtype).nmant + 1):
        return data.astype(dtype), None
    cast = data.astype(dtype)
    lo, hi = _bounds(data.dtype)
    real = cast.real if cast.dtype.kind == "c" else cast
    inside = np.isfinite(real) & (real >= lo) & (real < hi + 1)
    bad = ~inside | (np.where(inside, real, 0).astype(data.dtype) != data)
    return (cast, None) if not bad.any() else (None, bad)


def _float_to_float(
    data: np.ndarray, dtype: np.dtype
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Floats (or complex) into the narrower float (or complex) ``dtype``: rounded, but
    no finite value may become inf."""
    cast = data.astype(dtype)
    pairs = [(cast.real, data.real)]
    if cast.dtype.kind == "c" and data.dtype.kind == "c":
        pairs.append((cast.imag, data.imag))
    bad = None
    for made, given in pairs:
        if math.isfinite(made.min()) and math.isfinite(made.max()):
            continue
        over = np.isinf(made) & np.isfinite(given)
        bad = over if bad is None else bad | over
    return (cast, None) if bad is None or not bad.any() else (None, bad)


def _limits(value: Any, dtype: np.dtype) -> str:
    """What ``dtype`` holds, said for ``value`` (a numpy scalar or Python number that
    does not fit it)."""
    if dtype.kind not in _NUMBERS:
        return limits(value, dtype)
    if isinstance(value, complex | np.complexfloating) and dtype.kind != "c":
        if value.imag != 0:
            return f"{dtype} (a real dtype: the imaginary part must be 0)"
        value = value.real
    integral = isinstance(value, int | np.integer | np.bool_)
    if dtype.kind in "biu":
        lo, hi = _bounds(dtype)
        span = "0 or 1" if dtype.kind == "b" else f"{lo}..{hi}"
        return f"{dtype} ({span})" if integral else f"{dtype} (integers {span})"
    if integral:
        try:
            exact = value if isinstance(value, np.generic) else float(value)
            stored = np.asarray(exact).astype(dtype)[()]
        except OverflowError:
            stored = np.inf
        return f"{dtype} exactly (it would be stored as {stored!s})"
    return f"{dtype} (its largest finite value is {np.finfo(dtype).max!s})"


def _refusal(
    data: np.ndarray,
    bad: np.ndarray,
    dtype: np.dtype,
    what: str | None,
    region: _Region | None,
    then: str,
) -> str:
    """The message of :func:`fit`'s :class:`DTypeError`: the first value that does not
    fit, where it is, what the dtype holds, how many others do not fit."""
    flat = int(np.argmax(bad.reshape(-1)))
    index = tuple(int(i) for i in np.unravel_index(flat, bad.shape)) if bad.ndim else ()
    value = data[index]
    what = f"the {named(data.dtype)} data" if what is None else what
    if data.ndim == 0:
        place = f" ({what})" if what else ""
    elif region is None:
        place = f" at index {index} of {what}"
    else:
        origin, shape = region
        local = np.unravel_index(flat, tuple(shape)) if len(shape) else ()
        at = tuple(int(o) + int(i) for o, i in zip(origin, local))
        place = f" at array coordinate {at} (index {index} of {what})"
    others = int(np.count_nonzero(bad)) - 1
    more = f", nor do {others} other values" if others > 1 else ""
    more = ", nor does 1 other value" if others == 1 else more
    return f"value {_shown(value)}{place} does not fit {_limits(value, dtype)}{more}; {then}"


def _shown(value: Any) -> str:
    """``value`` as numpy prints it (float32's 0.1 as 0.1), but an integral float in full
    (float16's 65504 is not 6.55e+04)."""
    if isinstance(value, np.floating) and np.isfinite(value) and value == np.trunc(value):
        return f"{int(value)}.0" if abs(float(value)) < 2**64 else str(value)
    return shown(value)


def _scalar(data: Any, dtype: np.dtype) -> bytes:
    """The bytes of one element of ``dtype`` holding the scalar ``data`` (a Python
    number, a numpy scalar or a 0-d array), by :func:`fit`."""
    if isinstance(data, np.ndarray | np.generic):
        array = np.asarray(data)
        article = "an" if array.dtype.name[0] in "aeio" else "a"  # a uint8, an int8
        return fit(array, dtype, what=f"{article} {named(array.dtype)} scalar").tobytes()
    if type(data) is int and not -(2**63) <= data < 2**64:
        return _python_values(np.array(data, dtype=object), dtype).tobytes()
    return fit(np.asarray(data), dtype, what="").tobytes()


def _python_values(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An object array of Python numbers (holding an int beyond 64 bits, or one beyond
    2**53 among floats: no numpy dtype holds them all exactly) as ``dtype``, each value
    checked by :func:`fit`'s rule (an int beyond 64 bits fits no integer dtype, and a
    float dtype only if it is exactly representable there)."""
    bad = np.zeros(values.shape, dtype=bool)
    for flat, value in enumerate(values.flat):
        if type(value) is int and not -(2**63) <= value < 2**64:
            fits = dtype.kind in "fc" and _big_int_exact(value, dtype)
        else:
            try:
                fit(np.asarray(value), dtype)
                fits = True
            except DTypeError:
                fits = False
        if not fits:
            bad.flat[flat] = True
    if bad.any():
        with np.errstate(all="ignore"):
            message = _refusal(values, bad, dtype, "the list" if values.ndim else "", None, _THEN)
        raise DTypeError(message)
    return np.asarray(values.tolist(), dtype=dtype)


def _big_int_exact(value: int, dtype: np.dtype) -> bool:
    """Whether the float (or complex) ``dtype`` holds the Python int ``value`` exactly."""
    try:
        with np.errstate(over="ignore"):
            made = np.asarray(float(value)).astype(dtype)[()].real
    except OverflowError:
        return False
    return bool(np.isfinite(made)) and int(made) == value


def _python_kind(data: list[Any] | tuple[Any, ...]) -> tuple[int | None, bool]:
    """The rank in ``_RANK`` of the strongest Python number among the leaves of a nested
    list (-1 when it has none), or ``None`` when a leaf is anything else (a numpy scalar
    or array, a string, ``None``...); and whether an int leaf is beyond ±2**53 (float64
    would round it)."""
    best = -1
    big = False
    stack = [data]
    while stack:
        for item in stack.pop():
            kind = type(item)
            rank = _RANK.get(kind)
            if rank is not None:
                best = max(best, rank)
                big = big or (rank == 1 and not -(2**53) <= item <= 2**53)
            elif kind is list or kind is tuple:
                stack.append(item)
            else:
                return None, big
    return best, big


def _from_sequence(
    data: list[Any] | tuple[Any, ...],
    dtype: np.dtype,
    shape: tuple[int, ...],
    region: Domain | None,
) -> np.ndarray:
    """A (nested) list or tuple as an array of ``dtype``, by :func:`fit`: taken as an
    array of the dtype of its strongest Python number (numpy's dtype when numpy values
    are inside); Python ints no 64-bit dtype holds (alone, or beyond 2**53 among
    floats) are checked one by one."""
    rank, big = _python_kind(data)
    try:
        if rank == -1:  # no numbers: empty lists
            return np.asarray(data, dtype=dtype)
        if rank is None:  # numpy values inside: numpy decides the list's dtype
            array = np.asarray(data)
        elif rank == 1:
            array = _python_ints(data)
        elif big:
            array = np.array(data, dtype=object)
        else:
            array = np.asarray(data, dtype=(np.bool_, None, np.float64, np.complex128)[rank])
    except ValueError as err:
        raise ShapeError(f"the list is not rectangular (as an array): {err}") from None
    if array.dtype == object and rank is not None:
        return _python_values(array, dtype)
    at = _laid_out(array.shape, shape, region)
    return fit(array, dtype, what="the list", region=at)


def _python_ints(data: list[Any] | tuple[Any, ...]) -> np.ndarray:
    """A nested list of Python ints (and bools) as int64, or uint64 where that holds
    them all, or else as Python objects."""
    for wide in (np.int64, np.uint64):
        try:
            return np.asarray(data, dtype=wide)
        except OverflowError:
            continue
    return np.array(data, dtype=object)


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
