"""The cast rule of every write (:func:`shardwright._values.fit`) for the dtypes that
are not numbers: dates and times (``M8``, ``m8``), text (``U``) and bytes (``S``,
``V``). What numpy's ``same_kind`` casting converts is converted, and only when every
value is stored exactly (numpy would truncate or wrap silently):

- into ``datetime64[unit]``: datetime64 data of any unit whose values the array's unit
  holds (``2020-01-01`` into ``[s]``; not ``00:00:00.5``, nor a value beyond the range);
  NaT stays NaT. Date strings and ``datetime`` objects are read by numpy first.
- into ``timedelta64[unit]``: timedelta64 data as above (numpy does not mix the ``Y`` and
  ``M`` units with the others), integers and bools (counts of the array's unit; not
  -2**63, which is NaT), ``timedelta`` objects.
- into ``U<n>``: str data (``U``) and ASCII bytes (``S``, decoded as numpy does) of at
  most ``n`` characters (numpy would cut the rest off).
- into ``S<n>``: bytes data (``S``) of at most ``n`` bytes (trailing NULs do not count,
  as in numpy); text is refused, as numpy's ``same_kind`` refuses it: encode it first.
- into ``V<n>``: raw bytes of exactly ``n`` bytes (``V<n>``), or bytes data (``S``) of
  at most ``n`` bytes (NUL-padded).

Numbers are never made text, bytes or dates (but counts of a ``timedelta64`` unit).

>>> fit_fixed(np.array(["2020-01-01", "NaT"], "M8[D]"), np.dtype("M8[s]"))[0].tolist()
[datetime.datetime(2020, 1, 1, 0, 0), None]
>>> fit_fixed(np.array(["abc", "abcdef"]), np.dtype("U5"))[1]
array([False,  True])
"""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np

from ._errors import DTypeError

_NAT = np.iinfo(np.int64).min
_TIME_WORDS = {"M": "datetime64", "m": "timedelta64"}


def refuse_by_dtype(source: np.dtype, dtype: np.dtype, then: str = "nothing was written") -> None:
    """:class:`DTypeError` when :func:`fit` refuses data of ``source`` for ``dtype`` by
    the dtypes alone, before looking at any value: numbers and non-numbers are not
    converted into each other (but integers into ``timedelta64``), nor are text and
    bytes, dates and times (``shardwright.dask`` checks it before computing a block).

    >>> refuse_by_dtype(np.dtype("<U3"), np.dtype("uint16"))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: cannot write data of dtype <U3 into the array's dtype uint16: only numbers (bool, integer, float, complex) are converted; nothing was written
    """  # noqa: E501
    if source.kind in "biufc" and dtype.kind in "biufc":
        return
    why = refusal(source, dtype)
    if why is not None:
        raise DTypeError(
            f"cannot write data of dtype {named(source)} into the array's dtype "
            f"{named(dtype)}: {why}; {then}"
        )


def refusal(source: np.dtype, dtype: np.dtype) -> str | None:
    """Why :func:`fit_fixed` never converts data of ``source`` into ``dtype`` (at least
    one of them not a number), or ``None`` when it converts the values that fit.

    >>> refusal(np.dtype("U3"), np.dtype("S5"))  # doctest: +ELLIPSIS
    "it takes bytes data (numpy 'S') of at most 5 bytes; encode text first ..."
    >>> refusal(np.dtype("int64"), np.dtype("m8[s]")) is None
    True
    """
    k, t = source.kind, dtype.kind
    if t == "M":
        fits = k == "M" and np.can_cast(source, dtype, "same_kind")
    elif t == "m":
        fits = (k == "m" and np.can_cast(source, dtype, "same_kind")) or k in "biu"
    elif t == "U":
        fits = k in "US"
    elif t == "S":
        fits = k == "S"
    elif t == "V":
        plain = source.fields is None and source.subdtype is None
        fits = (k == "V" and plain and source.itemsize == dtype.itemsize) or k == "S"
    else:  # a number dtype: the data are not numbers
        return "only numbers (bool, integer, float, complex) are converted"
    return None if fits else f"it takes {_takes(dtype)}"


def _takes(dtype: np.dtype) -> str:
    """What an array of the non-number ``dtype`` takes, for messages."""
    n = dtype.itemsize
    if dtype.kind == "M":
        if np.datetime_data(dtype)[0] == "generic":
            return "datetime64 data of generic unit (NaT only)"
        return (
            "datetime64 data (of any unit: converted when exact), date strings and datetime objects"
        )
    if dtype.kind == "m":
        return (
            "timedelta64 data (of any unit: converted when exact; the Y and M units only into "
            "Y and M), integers (counts of its unit) and timedelta objects"
        )
    if dtype.kind == "U":
        return f"text (numpy 'U') and ASCII bytes ('S') of at most {n // 4} characters"
    if dtype.kind == "S":
        return (
            f"bytes data (numpy 'S') of at most {n} bytes; encode text first "
            "(np.char.encode(data, 'utf-8'))"
        )
    return f"raw bytes of {n} bytes (numpy 'V{n}') or bytes data ('S') of at most {n} bytes"


def fit_fixed(data: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(data cast to dtype, None)`` when every value fits, else ``(None, bad)``: the
    mask of the values that do not (:func:`refusal` of their dtypes is ``None``)."""
    source = data.dtype
    if not source.isnative:
        data = data.astype(source.newbyteorder("="))
        source = data.dtype
    k, t = source.kind, dtype.kind
    if t in "Mm" and k in "Mm":
        cast = data.astype(dtype)
        back = cast.astype(source)
        bad = back.view(np.int64) != data.view(np.int64)  # NaT is NaT both ways
    elif t == "m":  # integers and bools: counts of the unit, NaT's -2**63 excluded
        if k == "u":
            bad = data > np.iinfo(np.int64).max
        elif k == "i" and source.itemsize == 8:
            bad = data == _NAT
        else:
            bad = np.zeros(data.shape, bool)
        if not bad.any():
            return data.astype(np.int64).view(dtype), None
        return None, bad
    else:
        limit = dtype.itemsize // 4 if t == "U" else dtype.itemsize
        bad = np.char.str_len(data) > limit
        if t == "U" and k == "S":
            bad |= _non_ascii(data)
        cast = None if bad.any() else data.astype(dtype)
    return (None, bad) if bad.any() else (cast, None)


def _non_ascii(data: np.ndarray) -> np.ndarray:
    """Which bytes values (``S``) hold a byte above 127 (numpy decodes bytes as ASCII)."""
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(*data.shape, data.itemsize)
    return (raw > 127).any(axis=-1)


def named(dtype: np.dtype) -> str:
    """``dtype`` as messages name it: numpy's ``str`` without the ``|`` of byte-order-free
    dtypes (``S2``, ``V4``; ``<U3`` keeps its ``<``).

    >>> named(np.dtype("S2")), named(np.dtype("U3")), named(np.dtype("M8[s]"))
    ('S2', '<U3', 'datetime64[s]')
    """
    return str(dtype).removeprefix("|")


def limits(value: Any, dtype: np.dtype) -> str:
    """What the non-number ``dtype`` holds, said for ``value`` (a numpy scalar that does
    not fit it), for :func:`fit`'s message."""
    name = named(dtype)
    if dtype.kind in "Mm":
        if isinstance(value, np.datetime64 | np.timedelta64):
            stored = np.asarray(value).astype(dtype)[()]
            return f"{name} exactly (it would be stored as {stored})"
        return f"{name} (counts of its unit, -2**63 + 1..2**63 - 1; -2**63 is NaT)"
    if dtype.kind == "U" and isinstance(value, np.bytes_) and any(b > 127 for b in bytes(value)):
        return f"{name} (bytes are decoded as ASCII: encode text as str data instead)"
    if dtype.kind == "U":
        return f"{name} (at most {dtype.itemsize // 4} characters)"
    return f"{name} (at most {dtype.itemsize} bytes)"


def shown(value: Any) -> str:
    """A string or bytes value as Python writes it (quoted), others as numpy prints them."""
    if isinstance(value, np.str_ | np.bytes_):
        return repr(value.item())
    if isinstance(value, np.void):
        return repr(value.tobytes())
    return str(value)


def _has_time_objects(data: Any) -> bool:
    """Whether ``data`` (a value or a nested list) is or holds a string or a ``datetime``
    / ``date`` / ``timedelta`` object."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str | datetime.date | datetime.timedelta):
            return True
        if isinstance(item, list | tuple):
            stack.extend(item)
    return False


def times_of(data: Any, dtype: np.dtype) -> Any:
    """``data`` for a ``datetime64`` or ``timedelta64`` array: strings and ``datetime``,
    ``date`` and ``timedelta`` objects (alone or in lists) read by numpy into datetime64 or
    timedelta64 data of the unit they need, and so are numpy arrays of strings or
    objects; anything else as it is.

    >>> times_of(["2020-01-01", "NaT"], np.dtype("M8[s]"))
    array(['2020-01-01',        'NaT'], dtype='datetime64[D]')
    """
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "USO":
            return data
    elif not _has_time_objects(data):
        return data
    word = _TIME_WORDS[dtype.kind]
    try:
        return np.asarray(data, dtype=f"{dtype.kind}8")
    except (ValueError, TypeError, OverflowError) as err:
        raise DTypeError(
            f"{data!r} is not {word} data numpy reads ({err}); nothing was written"
        ) from None
