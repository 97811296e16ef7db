"""The cast rule of every write, restated value by value in exact Python arithmetic: the
oracle the tests hold shardwright's vectorized rule (``shardwright._values.fit``) to.

A value fits a dtype when the dtype represents it exactly: integers in range, floats into
an integer dtype only when finite and integral, integers into a float dtype only when
exactly representable; floats into a float dtype are rounded, but a finite float may not
become inf (NaN and ±inf are kept); a complex fits a real dtype only with an imaginary
part of 0. Bools fit every dtype.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

PYTHON_NUMBERS = (bool, int, float, complex)


def _component(dtype: np.dtype) -> np.dtype:
    """The real dtype of one part of a complex dtype (the dtype itself otherwise)."""
    return np.dtype(f"f{dtype.itemsize // 2}") if dtype.kind == "c" else dtype


def fits(value: bool | int | float | complex, dtype: np.dtype) -> bool:
    """Whether the Python number ``value`` fits ``dtype`` by the rule."""
    if isinstance(value, bool):
        return True
    if isinstance(value, complex):
        if dtype.kind == "c":
            return fits(value.real, dtype) and fits(value.imag, dtype)
        if value.imag != 0 or math.isnan(value.imag):
            return False
        value = value.real
    if dtype.kind in "biu":
        lo, hi = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if isinstance(value, float):
            if not math.isfinite(value) or value != math.floor(value):
                return False
            value = int(value)
        return int(lo) <= value <= int(hi)
    part = _component(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf
        if isinstance(value, int):
            try:
                made = part.type(float(value))
            except OverflowError:
                return False
            return bool(np.isfinite(made)) and int(made) == value
        return not math.isfinite(value) or bool(np.isfinite(part.type(value)))


def leaves(value: Any) -> list[Any]:
    """The numbers an assignment value holds, as the rule sees them: a numpy array's (or
    scalar's) elements as Python numbers of its kind; a list's leaves, where a list of
    Python numbers holding a float (or complex) is float (complex) data, so its ints up
    to 2**53 are floats (numpy's ``np.array([0.5, 3])``); a list holding numpy values is
    numpy's array of it."""
    if isinstance(value, list | tuple):
        flat = _flatten(value)
        if not all(type(v) in PYTHON_NUMBERS for v in flat):
            return _flatten(np.asarray(value).tolist())
        strongest = max((PYTHON_NUMBERS.index(type(v)) for v in flat), default=0)
        if strongest >= 2:
            kind = PYTHON_NUMBERS[strongest]
            return [kind(v) if type(v) is int and abs(v) <= 2**53 else v for v in flat]
        return flat
    if type(value) in PYTHON_NUMBERS:
        return [value]
    return _flatten(np.asarray(value).tolist())


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def refused(value: Any, dtype: np.dtype) -> bool:
    """Whether the rule refuses writing ``value`` into an array of ``dtype``: some number
    does not fit, or the value is not numbers."""
    found = leaves(value)
    if not all(type(v) in PYTHON_NUMBERS for v in found):
        return True  # text, objects, dates
    return not all(fits(v, dtype) for v in found)
