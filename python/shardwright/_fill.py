"""Fill values at creation: the ``fill_value=`` of :func:`shardwright.create` (and
``create_array``, ``create_image``) as zarr-python writes it in ``zarr.json``.

>>> fill_value_json(None, np.dtype("uint8")), fill_value_json("NaN", np.dtype("float32"))
(0, 'NaN')
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from ._errors import DTypeError
from ._values import coerce
from ._values_fixed import named

_NAT = np.iinfo(np.int64).min


def _same_number(value: Any, scalar: Any) -> bool:
    """Whether ``value`` is the number ``scalar`` (an exact integer, or a bool)."""
    try:
        given = np.asarray(value)
    except (ValueError, TypeError):
        return False
    if given.shape != () or given.dtype.kind not in "biuf":
        return False
    number = given.item()
    if isinstance(number, float) and not number.is_integer():
        return False
    return int(number) == int(scalar)


def fill_value_json(value: Any, dtype: np.dtype) -> Any:
    """The fill value ``value`` of an array of ``dtype`` as zarr-python writes it in
    ``zarr.json``; ``None``: the dtype's default (0, false, NaT, ``""``, zero bytes).
    A number must be the dtype's exactly (numpy would store 300 as 44 in uint8); text,
    bytes and times are taken by the rule of every write (``"2020-01-01"`` for
    ``M8[s]``; not ``"abcdef"`` for ``U5``), and integers too for ``M8`` (counts of its
    unit, as zarr-python stores them).

    >>> fill_value_json(None, np.dtype("M8[s]")), fill_value_json("2020-01-01", np.dtype("M8[s]"))
    (-9223372036854775808, 1577836800)
    >>> fill_value_json(b"ab", np.dtype("S4")), fill_value_json(1.5, np.dtype("float32"))
    ('YWI=', 1.5)
    """

    def number(x: float) -> Any:
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x

    if dtype.kind not in "biufc":
        if value is None:
            return _default_json(dtype)
        if (
            dtype.kind == "M"
            and isinstance(value, int | np.integer)
            and not isinstance(value, bool | np.bool_)
        ):
            value = np.int64(value).view(dtype) if -(2**63) <= value < 2**63 else value
        try:
            element = coerce(value, dtype, ())
        except DTypeError as err:
            why = str(err).removesuffix("; nothing was written")
            raise DTypeError(f"fill value {value!r} is not a {named(dtype)}: {why}") from None
        assert isinstance(element, bytes)
        return _element_json(element, dtype)
    if value is None:
        value = 0
    try:
        scalar = np.asarray(value, dtype=dtype).item()
    except (OverflowError, ValueError, TypeError) as err:
        raise DTypeError(f"fill value {value!r} is not a {dtype}: {err}") from err
    if dtype.kind in "biu" and not _same_number(value, scalar):
        # numpy casts 1.5 to 1 and 300 to 44 for uint8 without a word: the array would
        # say something else than what was asked.
        raise DTypeError(f"fill value {value!r} is not a {dtype}: it would be stored as {scalar!r}")
    if dtype.kind == "b":
        return bool(scalar)
    if dtype.kind in "iu":
        return int(scalar)
    if dtype.kind == "f":
        return number(float(scalar))
    return [number(scalar.real), number(scalar.imag)]


def _element_json(element: bytes, dtype: np.dtype) -> Any:
    """The fill value of ``element`` (its bytes, of the non-number ``dtype``) as
    zarr-python writes it in ``zarr.json``: times as integers (NaT -2**63), text as a
    string, bytes as base64 (``S`` without its trailing NULs).

    >>> _element_json(np.datetime64("NaT", "s").tobytes(), np.dtype("M8[s]"))
    -9223372036854775808
    >>> _element_json(b"ab\\x00", np.dtype("S3")), _element_json(b"ab\\x00", np.dtype("V3"))
    ('YWI=', 'YWIA')
    """
    value = np.frombuffer(element, dtype=dtype)[0]
    if dtype.kind in "Mm":
        return int(np.frombuffer(element, dtype=np.int64)[0])
    if dtype.kind == "U":
        return str(value)
    kept = bytes(value) if dtype.kind == "S" else element
    return base64.standard_b64encode(kept).decode("ascii")


def _default_json(dtype: np.dtype) -> Any:
    """zarr-python's default fill value of the non-number ``dtype``: NaT, ``""``, zero
    bytes.

    >>> _default_json(np.dtype("m8[ns]")), _default_json(np.dtype("V2"))
    (-9223372036854775808, 'AAA=')
    """
    if dtype.kind in "Mm":
        return int(_NAT)
    return _element_json(bytes(dtype.itemsize), dtype)
