"""What ``sw.pyramid``, ``sw.copy`` and ``sw.convert`` read: the engine's view of a
source (a path or URL of a Zarr array or a TIFF, a ``zarr.Array``, a shardwright
``Array``, or any object with numpy-style slicing), and which storage options serve
which side."""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _core
from ._array import Array
from ._dtypes import numpy_dtype, spec_of
from ._errors import DTypeError, ShapeError
from ._location import resolve
from ._values import fit


def _block_bytes(part: Any, shape: list[int], dtype: str, region: str) -> bytes:
    """The raw bytes of one block a sliceable source gave for ``region`` (``[a:b, ...]``;
    called by the engine), cast to the source's declared ``dtype`` by the rule of every
    write (:func:`shardwright._values.fit`): a value the dtype does not hold exactly
    stops the build with :class:`DTypeError` naming it and its coordinate.

    >>> _block_bytes(np.array([1, 2], "int64"), [2], "uint8", "[4:6]")
    b'\\x01\\x02'
    >>> _block_bytes(np.array([1, 300], "int64"), [2], "uint8", "[4:6]")
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 300 at array coordinate (5,) (index (1,) of the int64 block the source gave for [4:6]) does not fit uint8 (0..255); the source's .dtype says uint8; the shards stored before stay (fix the source, then rerun with resume=True)
    """  # noqa: E501
    data = np.asarray(part)
    if data.shape != tuple(shape):
        raise ShapeError(
            f"the source gave an array of shape {data.shape} for {region}; expected "
            f"{tuple(shape)} (the source must support numpy-style slicing)"
        )
    target = numpy_dtype(dtype)
    origin = [int(n) for n in re.findall(r"(\d+):", region)]
    data = fit(
        data,
        target,
        what=f"the {data.dtype} block the source gave for {region}",
        region=(origin, shape) if len(origin) == len(shape) else None,
        then=f"the source's .dtype says {target}; the shards stored before stay (fix the "
        "source, then rerun with resume=True)",
    )
    return np.ascontiguousarray(data).tobytes()


def _dtype_name(dtype: Any) -> str:
    """The engine's name (spec) of a source's dtype.

    >>> _dtype_name(np.dtype(">u2")), _dtype_name("U2")
    ('uint16', '{"name":"fixed_length_utf32","configuration":{"length_bytes":8}}')
    """
    dtype = getattr(dtype, "numpy_dtype", dtype)  # TensorStore's dtypes
    try:
        return spec_of(np.dtype(dtype).newbyteorder("="))
    except TypeError as err:
        raise DTypeError(f"the source's dtype {dtype!r} is not a numpy dtype") from err


def options_for(target: Any, storage_options: Mapping[str, Any] | None) -> Any:
    """``storage_options`` where ``target`` is an object-store URL (they serve the source
    and the destination alike), else ``None``."""
    text = os.fspath(target) if isinstance(target, (str, os.PathLike)) else ""
    is_url = isinstance(text, str) and "://" in text and not text.startswith("file://")
    return storage_options if is_url else None


def side_options(
    source: Any,
    dest: Any,
    storage_options: Mapping[str, Any] | None,
    source_storage_options: Mapping[str, Any] | None,
) -> tuple[Any, Any]:
    """The storage options of the source and of the destination: each side that is an
    object-store URL gets ``storage_options`` (the source ``source_storage_options``
    instead, when given), the other side ``None``. Options that serve neither side are
    refused with ``TypeError``.

    >>> side_options("/data/a.zarr", "s3://b/p.zarr", {"region": "x"}, None)
    (None, {'region': 'x'})
    >>> side_options("s3://a/a.zarr", "s3://b/p.zarr", {"region": "x"}, {"region": "y"})
    ({'region': 'y'}, {'region': 'x'})
    """
    if source_storage_options is not None:
        src = options_for(source, source_storage_options)
        if src is None:
            raise TypeError(
                "source_storage_options are for a source that is an object-store URL "
                f"(s3://, gs://, az://, ...); the source is {_described(source)}"
            )
        dst = options_for(dest, storage_options)
        if storage_options and dst is None:
            raise TypeError(
                "storage_options are for an object-store URL destination when "
                "source_storage_options are given (the source's own); the destination is "
                f"{_described(dest)}"
            )
        return src, dst
    src, dst = options_for(source, storage_options), options_for(dest, storage_options)
    if storage_options and src is None and dst is None:
        raise TypeError("storage_options are for object-store URLs (s3://, gs://, az://, ...)")
    return src, dst


def _described(target: Any) -> str:
    if isinstance(target, (str, os.PathLike)):
        return f"'{os.fspath(target)}'"
    return f"a {type(target).__name__}"


def engine_source_of(source: Any, storage_options: Mapping[str, Any] | None) -> Any:
    """The engine's view of ``source``: native when it is a path, URL, shardwright or
    zarr array the engine reads itself (a TIFF file, folder or glob of them included),
    otherwise sliced through Python."""
    if isinstance(source, _core.Source):
        return source
    if isinstance(source, Array):
        return _core.Source.of_array(source._core)
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if "://" not in text and _core.is_tiff_spec(text):
            return _core.open_tiff(text)[0]
        where = resolve(source, options_for(source, storage_options), None)
    elif type(source).__module__.startswith("zarr") and type(source).__name__ == "Array":
        if source.metadata.zarr_format == 2 and not _is_local(source):
            return _sliced(source)
        where = resolve(source, None, None)
    else:
        return _sliced(source)
    if where.store is not None:
        from ._adapter import StoreAdapter  # imports zarr, which shardwright does not need

        try:
            return _core.Source.open_adapter(StoreAdapter(where.store), where.key, where.url)
        except Exception:
            if not isinstance(source, (str, os.PathLike)):
                return _sliced(source)  # e.g. codecs the engine does not read
            raise
    if where.url is not None:
        return _core.Source.open_url(where.url, where.options)
    assert where.path is not None
    if where.path.is_file():
        from ._open import not_a_folder

        raise not_a_folder(where.path)
    return _core.Source.open_path(str(where.path))


def _is_local(array: Any) -> bool:
    return type(array.store).__name__ == "LocalStore"


def _sliced(source: Any) -> Any:
    shape = getattr(source, "shape", None)
    dtype = getattr(source, "dtype", None)
    if shape is None or dtype is None or not hasattr(source, "__getitem__"):
        raise TypeError(
            "source must be a path or URL of a Zarr array, a zarr.Array, a shardwright "
            "Array, or an object with .shape, .dtype and numpy-style slicing (numpy, "
            f"TensorStore, dask, h5py); got {type(source).__name__}"
        )
    try:
        dims = [operator.index(n) for n in tuple(shape)]
    except TypeError as err:
        raise TypeError(f"source.shape must be integers; got {shape!r}") from err
    return _core.Source.of_object(source, dims, _dtype_name(dtype), _read_grain(source, len(dims)))


def _read_grain(source: Any, ndim: int) -> list[int] | None:
    """The chunk shape ``source`` reads whole, where it says one: ``.chunks`` as a tuple of
    ints (zarr-python: the inner chunks of a sharded array; h5py), dask's ``.chunksize``,
    TensorStore's read chunk."""
    candidates = [getattr(source, "chunksize", None), getattr(source, "chunks", None)]
    layout = getattr(source, "chunk_layout", None)
    if layout is not None:
        candidates.append(getattr(getattr(layout, "read_chunk", None), "shape", None))
    for found in candidates:
        try:
            grain = [operator.index(n) for n in found]  # type: ignore[union-attr]
        except TypeError:
            continue
        if len(grain) == ndim and all(n > 0 for n in grain):
            return grain
    return None
