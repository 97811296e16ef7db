"""numpy dtypes and the Zarr v3 data types shardwright stores them as, the way
zarr-python stores them: numbers and bool by their names (``uint16``), ``M8[unit]`` and
``m8[unit]`` as ``numpy.datetime64`` / ``numpy.timedelta64`` (``unit`` and
``scale_factor``), ``U<n>`` as ``fixed_length_utf32``, ``S<n>`` as
``null_terminated_bytes``, ``V<n>`` as ``raw_bytes`` (``length_bytes``).

The engine names a data type by one string, its *spec*: the Zarr v3 name of a type
without a configuration, or the compact JSON of the ``data_type`` object of
``zarr.json`` (what ``Layout::data_type_spec`` gives, in Rust).

>>> spec_of(np.dtype("M8[10s]"))
'{"name":"numpy.datetime64","configuration":{"unit":"s","scale_factor":10}}'
>>> numpy_dtype(spec_of(np.dtype("U5"))), numpy_dtype("uint16")
(dtype('<U5'), dtype('uint16'))
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ._errors import UnsupportedError

_TIME_NAMES = {"M": "numpy.datetime64", "m": "numpy.timedelta64"}
_LENGTH_NAMES = {"U": "fixed_length_utf32", "S": "null_terminated_bytes", "V": "raw_bytes"}
_FIXED_HINT = (
    "shardwright writes fixed-size data types only: store text as a fixed-length dtype "
    "such as 'U16' (Zarr fixed_length_utf32), bytes as 'S16' (null_terminated_bytes) or "
    "'V16' (raw_bytes)"
)


def _compact(name: str, configuration: dict[str, Any]) -> str:
    return json.dumps({"name": name, "configuration": configuration}, separators=(",", ":"))


def spec_of(dtype: np.dtype) -> str:
    """The spec of the Zarr v3 data type shardwright (and zarr-python) store ``dtype``
    as, or :class:`UnsupportedError` for a dtype of variable length (``object``,
    ``StringDType``, ``str``), a structured or subarray dtype, or one of no size
    (``"S"``, ``"U"``).

    >>> spec_of(np.dtype(">i2")), spec_of(np.dtype("S3"))
    ('int16', '{"name":"null_terminated_bytes","configuration":{"length_bytes":3}}')
    >>> spec_of(np.dtype(object))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardwright._errors.UnsupportedError: data type object is variable-length (Python objects, ...
    """
    kind = dtype.kind
    if kind in "biufc":
        return dtype.name
    if kind in "OT":
        what = "Python objects, zarr-python's str" if kind == "O" else "numpy's StringDType"
        raise UnsupportedError(f"data type {dtype} is variable-length ({what}); {_FIXED_HINT}")
    if dtype.fields is not None or dtype.subdtype is not None:
        raise UnsupportedError(
            f"data type {dtype} is structured (fields or subarrays): shardwright writes "
            f"one value per element; store each field as its own array, or the records as "
            f"raw bytes 'V{dtype.itemsize}'"
        )
    if kind in _TIME_NAMES:
        unit, scale = np.datetime_data(dtype)
        return _compact(_TIME_NAMES[kind], {"unit": unit, "scale_factor": int(scale)})
    if kind in _LENGTH_NAMES:
        if dtype.itemsize == 0:
            raise UnsupportedError(
                f"data type {dtype!r} has no length: give one, e.g. '{kind}8' ({_FIXED_HINT})"
            )
        return _compact(_LENGTH_NAMES[kind], {"length_bytes": dtype.itemsize})
    raise UnsupportedError(f"data type {dtype} ({_FIXED_HINT})")


def numpy_dtype(spec: str) -> np.dtype:
    """The native numpy dtype of the Zarr v3 data type ``spec`` names, or
    :class:`UnsupportedError` when numpy has none (``bfloat16``, ``int4``, …).

    >>> numpy_dtype('{"name":"numpy.timedelta64","configuration":{"unit":"generic","scale_factor":1}}')
    dtype('<m8')
    >>> numpy_dtype("r24"), numpy_dtype('{"name":"raw_bytes","configuration":{"length_bytes":2}}')
    (dtype('V3'), dtype('V2'))
    """  # noqa: E501
    if spec.startswith("{"):
        data_type = json.loads(spec)
        name, config = data_type.get("name"), data_type.get("configuration") or {}
        kind = {v: k for k, v in {**_TIME_NAMES, **_LENGTH_NAMES}.items()}.get(name)
        if kind in ("M", "m"):
            unit, scale = config.get("unit"), config.get("scale_factor", 1)
            unit = "us" if unit == "μs" else unit
            if unit == "generic":
                return np.dtype(f"{kind}8")
            return np.dtype(f"{kind}8[{'' if scale == 1 else scale}{unit}]")
        if kind is not None:
            n = int(config.get("length_bytes", 0))
            return np.dtype(f"U{n // 4}" if kind == "U" else f"{kind}{n}")
        raise UnsupportedError(f"data type {spec} has no numpy equivalent here")
    raw = re.fullmatch(r"r(\d+)", spec)
    if raw and int(raw.group(1)) % 8 == 0:
        return np.dtype(f"V{int(raw.group(1)) // 8}")
    try:
        return np.dtype(spec)
    except TypeError as err:
        raise UnsupportedError(f"data type '{spec}' has no numpy equivalent here") from err


def dtype_of(dtype: Any) -> np.dtype:
    """``dtype`` as a native numpy dtype: :class:`UnsupportedError` for ``str``,
    ``bytes`` and ``object`` (variable-length: zarr-python's ``VariableLengthUTF8`` and
    ``VariableLengthBytes``), as :func:`spec_of` refuses what shardwright does not store.

    >>> dtype_of(">M8[ms]"), dtype_of("U3")
    (dtype('<M8[ms]'), dtype('<U3'))
    >>> dtype_of(str)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardwright._errors.UnsupportedError: data type str is variable-length (zarr-python's ...
    """
    if dtype is str or dtype is bytes or dtype == "str":
        name = getattr(dtype, "__name__", dtype)
        raise UnsupportedError(
            f"data type {name} is variable-length (zarr-python's VariableLengthUTF8 and "
            "VariableLengthBytes); shardwright writes fixed-size data types only: use a "
            "fixed-length dtype such as 'U16' for text (Zarr fixed_length_utf32), 'S16' "
            "(null_terminated_bytes) or 'V16' (raw_bytes) for bytes"
        )
    np_dtype = np.dtype(dtype)
    spec_of(np_dtype)  # refuses objects, structured and unsized dtypes
    return np_dtype.newbyteorder("=") if np_dtype.kind != "V" else np_dtype
