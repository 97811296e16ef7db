"""One-shot writes of a big array outside any block (``a[key] = data``, ``a.append``):
the data is checked first, then written shard by shard from the caller's array (one
inner chunk's view at a time, cast or copied only there), each shard committing in the
background while the next one fills, so memory is bounded by the shards in flight, not
by the data."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._domain import Domain
from ._errors import BoundsError, DTypeError, ShapeError
from ._indexing import parse_write_key
from ._pipeline import BackgroundCommits
from ._values import (
    _SCALARS,
    _broadcast,
    _laid_out,
    _may_round,
    coerce,
    fit,
    is_element,
    refuse_by_dtype,
)
from ._values_fixed import times_of

# The source is checked against the array's dtype in blocks of at most this many bytes.
_CHECK_BYTES = 8 << 20
# Shards committing in the background at once: as many as hold this many raw bytes,
# at least 2 and at most 16 (each holds only what its encoders have not finished).
_IN_FLIGHT_BYTES = 64 << 20


def assign(array: Any, key: Any, data: Any) -> None:
    """``a[key] = data`` for a Domain or a basic key with steps of 1 (see
    :meth:`Array.__setitem__`): the key and every value checked first (nothing is stored
    on a refused one), then :func:`write_prepared`.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(3, 4), dtype="int16",
    ...               chunks=(2, 2), shards=(2, 4))
    >>> assign(a, (slice(1, 3), 1), np.array([5.0, 6.0]))
    >>> a[:, 1].tolist()
    [0, 5, 6]
    """
    region, shape = parse_write_key(key, array.shape)
    if region.ndim != array.ndim:
        raise ShapeError(f"region {region} has rank {region.ndim}, the array {array.ndim}")
    if region not in Domain((0,) * array.ndim, array.shape):
        raise BoundsError(f"{region} is not inside the array of shape {array.shape}")
    value = prepare(data, array.dtype, shape, element=is_element(key, shape), region=region)
    write_prepared(array, region, value)


def write_prepared(array: Any, region: Domain, value: np.ndarray | bytes) -> None:
    """Write ``value`` from :func:`prepare` into ``region``: one value (bytes) through a
    transaction (each chunk written as that value), an array by :func:`write_streamed`."""
    if isinstance(value, bytes):
        with array.transaction() as tx:
            tx[region] = np.frombuffer(value, dtype=array.dtype).reshape(())
    elif region.size:
        write_streamed(array, region, value.reshape(region.shape))


def prepare(
    data: Any,
    dtype: np.dtype,
    shape: tuple[int, ...],
    *,
    element: bool = False,
    region: Domain | None = None,
) -> np.ndarray | bytes:
    """:func:`~shardwright._values.coerce`'s value, with the same checks and errors, but an
    array of another dtype is not cast: every value is checked to fit (block by block,
    allocating at most a few MiB) and the array is returned as a view broadcast to
    ``shape`` (the writers cast each inner chunk as they take it).

    >>> v = prepare(np.arange(6, dtype="int64").reshape(2, 3), np.dtype("uint8"), (4, 2, 3))
    >>> v.dtype, v.shape, v[3, 1].tolist()
    (dtype('int64'), (4, 2, 3), [3, 4, 5])
    >>> prepare(np.array([1, -1]), np.dtype("uint8"), (2,))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value -1 at index (1,) of the int64 data does not fit uint8 (0..255); nothing was written
    """  # noqa: E501
    if dtype.kind in "Mm":
        data = times_of(data, dtype)  # date strings, datetime objects
    if isinstance(data, (*_SCALARS, list, tuple)) or element:
        return coerce(data, dtype, shape, element=element, region=region)
    array = np.asarray(data)  # an ndarray, or anything with __array__ (dask, TensorStore)
    if array.size <= 1:
        return coerce(array, dtype, shape, element=element, region=region)
    check_fits(array, dtype, region=_laid_out(array.shape, shape, region))
    return _broadcast(array, shape)


def check_fits(
    array: np.ndarray, dtype: np.dtype, *, region: tuple[Any, Any] | None = None
) -> None:
    """Raise :func:`fit`'s :class:`DTypeError` (the same message) if a value of ``array``
    does not fit ``dtype``; no copy of ``array`` is made (the casts :func:`fit` does not
    check are not looked at, the others are checked block by block).

    >>> check_fits(np.array([1.0, 2.5]), np.dtype("int8"))
    Traceback (most recent call last):
    shardwright._errors.DTypeError: value 2.5 at index (1,) of the float64 data does not fit int8 (integers -128..127); nothing was written
    """  # noqa: E501
    source = array.dtype
    if source == dtype:
        return
    refuse_by_dtype(source, dtype)
    complex_to_real = source.kind == "c" and dtype.kind != "c"
    numbers = source.kind in "biufc" and dtype.kind in "biufc"  # times may overflow
    if numbers and np.can_cast(source, dtype, "safe") and not _may_round(source, dtype):
        if not complex_to_real:
            return
    for block in blocks(array.shape, array.itemsize, _CHECK_BYTES):
        try:
            fit(array[block], dtype)
        except DTypeError:
            fit(array, dtype, region=region)  # the whole array: the message names all of it
            raise


def blocks(shape: tuple[int, ...], itemsize: int, limit: int) -> Iterator[tuple[slice, ...]]:
    """Boxes (tuples of slices) covering an array of ``shape`` in C order, each of at
    most ``limit`` bytes (or one element).

    >>> [tuple((s.start, s.stop) for s in b) for b in blocks((2, 3), 1, 4)]
    [((0, 1), (0, 3)), ((1, 2), (0, 3))]
    """
    inner = itemsize
    for axis in range(len(shape) - 1, -1, -1):
        if inner * shape[axis] > limit:
            break
        inner *= shape[axis]
    else:
        yield tuple(slice(0, n) for n in shape)
        return
    step = max(1, limit // inner)
    rest = tuple(slice(0, n) for n in shape[axis + 1 :])
    for lead in itertools.product(*(range(n) for n in shape[:axis])):
        head = tuple(slice(i, i + 1) for i in lead)
        for start in range(0, shape[axis], step):
            yield (*head, slice(start, min(start + step, shape[axis])), *rest)


def write_streamed(array: Any, region: Domain, value: np.ndarray) -> None:
    """Write ``value`` (of ``region``'s shape, any strides, any dtype whose values were
    checked to fit) into ``region`` of ``array``, shard by shard in C order: each shard's
    writer takes the inner chunks' views of ``value`` and commits in the background while
    the next shard fills. A shard the region covers in part is merged with the stored one
    (one conditional get and put, as a :class:`Transaction` does).

    Atomic per shard: if a commit fails, no further shard is started, the commits in
    flight finish, and the first error is raised (notes say which shard failed and how
    many were stored); the shards already stored stay, each one whole.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/s.zarr", shape=(5, 5), dtype="uint8",
    ...               chunks=(2, 2), shards=(4, 4))
    >>> write_streamed(a, Domain((1, 1), (4, 3)), np.arange(12).reshape(4, 3))
    >>> a[1:3, :].tolist()
    [[0, 0, 1, 2, 0], [0, 3, 4, 5, 0]]
    """
    shards = list(array.iter_shards(within=region))
    raw = math.prod(array._shard_shape) * array.dtype.itemsize
    in_flight = max(2, min(16, _IN_FLIGHT_BYTES // raw))
    commits = BackgroundCommits(in_flight, "assignment")
    try:
        for shard in shards:
            with array.write_shard(shard) as w:
                for part, local in _parts(array, shard, region):
                    w[part] = value[local]
                commits.add(shard, w._commit_background())
            if commits.failed:
                break  # a shard could not be stored: start no more
        commits.finish_all()
    except BaseException as err:
        commits.finish_all_after_error()
        _note(err, commits.stored, len(shards), commits.failed)
        raise
    if commits.failed:
        _note(commits.failed[0], commits.stored, len(shards), commits.failed[1:])
        raise commits.failed[0]


def _parts(array: Any, shard: Domain, region: Domain) -> Iterator[tuple[Domain, tuple[slice, ...]]]:
    """The inner chunks of ``shard`` met by ``region``, each as the part of the region
    inside it and that part's slices in the region's data."""
    inside = shard.intersect(region)
    if inside is None:
        return
    for chunk in array.iter_chunks(within=inside):
        part = chunk.intersect(inside)
        if part is None or part.size == 0:
            continue
        yield (
            part,
            tuple(slice(a - o, b - o) for a, b, o in zip(part.origin, part.stop, region.origin)),
        )


def _note(err: BaseException, stored: int, total: int, others: list[BaseException]) -> None:
    err.add_note(f"assignment: {stored} of {total} shards were stored before it stopped")
    for other in others:
        if other is not err:
            err.add_note(f"assignment: also failed: {other!r}")
