"""``Domain``: a half-open box of array elements (origin + shape)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._errors import BoundsError, ShapeError, UnsupportedError


def _ints(values: Iterable[int], what: str) -> tuple[int, ...]:
    try:
        out = tuple(operator.index(v) for v in values)
    except TypeError as err:
        raise ShapeError(f"{what} must be a sequence of integers, got {values!r}") from err
    if any(v < 0 for v in out):
        raise BoundsError(f"{what} must not be negative, got {out}")
    return out


class Domain:
    """A half-open box ``origin[d] <= i < origin[d] + shape[d]`` of array elements.

    Domains from :meth:`Array.iter_shards`, :meth:`Array.iter_chunks` and
    :meth:`ShardWriter.inner_chunks` carry their grid ``index``; others have ``None``.
    The shards :meth:`Array.iter_shards` (and :meth:`Image.iter_shards`) yields also
    remember their array: ``shard.write_context()`` is ``a.write_shard(shard)``
    (:meth:`write_context`). Equality and hashing ignore the index and the array.
    ``numpy_array[d.slices]`` selects the box. ``str(d)`` is the slices (``[2:4, 0:3]``
    below), the form messages use; ``d * (2, 2)`` and ``d // (2, 2)`` carry a box to a
    grid twice as fine or as coarse (:meth:`scale`).

    >>> import numpy as np
    >>> from shardwright import Domain
    >>> d = Domain((2, 0), (2, 3))
    >>> d.stop, d.size, d.ndim
    ((4, 3), 6, 2)
    >>> np.arange(20).reshape(4, 5)[d.slices].tolist()
    [[10, 11, 12], [15, 16, 17]]
    >>> d.intersect(Domain((3, 1), (5, 5)))
    Domain(origin=(3, 1), shape=(1, 2))
    >>> Domain((3, 1), (1, 1)) in d
    True
    >>> print(d, d * (2, 2), d // (2, 2))
    [2:4, 0:3] [4:8, 0:6] [1:2, 0:2]
    """

    __slots__ = ("_array", "_index", "_origin", "_shape")

    def __init__(self, origin: Sequence[int], shape: Sequence[int]) -> None:
        self._origin = _ints(origin, "origin")
        self._shape = _ints(shape, "shape")
        if len(self._origin) != len(self._shape):
            raise ShapeError(f"origin {self._origin} and shape {self._shape} have different ranks")
        self._index: tuple[int, ...] | None = None
        self._array: Any = None

    @classmethod
    def _from_grid(
        cls,
        origin: Sequence[int],
        shape: Sequence[int],
        index: Sequence[int],
        array: Any = None,
    ) -> Domain:
        # ``array``: what wrote the grid out (an Array or an Image), for write_context.
        d = object.__new__(cls)
        d._origin = tuple(origin)
        d._shape = tuple(shape)
        d._index = tuple(index)
        d._array = array
        return d

    def write_context(self, **options: Any) -> Any:
        """The writer of this shard: ``shard.write_context(**options)`` is
        ``a.write_shard(shard, **options)`` for a shard that ``a.iter_shards()`` yielded
        (the form zarr-python #3604 proposed; ``options`` as for
        :meth:`Array.write_shard`). Use it as a sync or async context manager (``with`` /
        ``async with``); its :meth:`~ShardWriter.inner_chunks` yields the shard's chunk
        domains. A domain made any other way (``Domain(...)``, an inner chunk, a copy
        through pickle) knows no array: :class:`UnsupportedError`, naming the call to make
        instead.

        >>> import numpy as np, tempfile, shardwright as sw
        >>> a = sw.create(tempfile.mkdtemp() + "/seed.zarr", shape=(8, 8), dtype="uint8",
        ...               chunks=(4, 4), shards=(4, 8))
        >>> for shard in a.iter_shards():
        ...     with shard.write_context() as shard_write:
        ...         for chunk in shard_write.inner_chunks():
        ...             shard_write[chunk] = np.full(chunk.shape, sum(chunk.index), "uint8")
        >>> a[::4, ::4].tolist(), shard_write.stats["puts"]
        ([[0, 1], [1, 2]], 1)
        """
        if self._array is None:
            raise UnsupportedError(
                f"{self} does not know its array: write_context() works on the shards that "
                "a.iter_shards() yields; for any other domain call a.write_shard(domain)"
            )
        return self._array.write_shard(self, **options)

    @classmethod
    def from_slices(cls, slices: Sequence[slice], shape: Sequence[int]) -> Domain:
        """The box selected by ``slices`` (steps of 1) in an array of ``shape``.

        >>> Domain.from_slices((slice(1, 3), slice(None)), (4, 5))
        Domain(origin=(1, 0), shape=(2, 5))
        """
        if len(slices) != len(shape):
            raise ShapeError(f"{len(slices)} slices for an array of rank {len(shape)}")
        origin, extent = [], []
        for s, n in zip(slices, shape):
            if not isinstance(s, slice):
                raise ShapeError(f"expected slices, got {s!r}")
            start, stop, step = s.indices(n)
            if step != 1:
                raise ShapeError(f"a region needs slices with step 1, got {s!r}")
            origin.append(start)
            extent.append(max(0, stop - start))
        return cls(origin, extent)

    @property
    def origin(self) -> tuple[int, ...]:
        """The first element of the box."""
        return self._origin

    @property
    def shape(self) -> tuple[int, ...]:
        """The extent of the box in each dimension."""
        return self._shape

    @property
    def stop(self) -> tuple[int, ...]:
        """One past the last element in each dimension."""
        return tuple(o + s for o, s in zip(self._origin, self._shape))

    @property
    def slices(self) -> tuple[slice, ...]:
        """``slice(origin, stop)`` per dimension, for numpy indexing."""
        return tuple(slice(o, o + s) for o, s in zip(self._origin, self._shape))

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        n = 1
        for s in self._shape:
            n *= s
        return n

    @property
    def index(self) -> tuple[int, ...] | None:
        """The grid index, for domains handed out by a grid iterator; else ``None``."""
        return self._index

    def intersect(self, other: Domain) -> Domain | None:
        """The common part of two boxes, or ``None`` when they share no element.

        >>> Domain((0,), (4,)).intersect(Domain((4,), (2,))) is None
        True
        """
        if self.ndim != other.ndim:
            raise ShapeError(f"cannot intersect rank {self.ndim} with rank {other.ndim}")
        origin, shape = [], []
        for o1, s1, o2, s2 in zip(self._origin, self._shape, other._origin, other._shape):
            lo, hi = max(o1, o2), min(o1 + s1, o2 + s2)
            if hi <= lo:
                return None
            origin.append(lo)
            shape.append(hi - lo)
        return Domain(origin, shape)

    def translate(self, offset: Sequence[int]) -> Domain:
        """The box moved by ``offset``; raises BoundsError if it would leave the origin.

        >>> Domain((4, 4), (2, 2)).translate((-4, 1))
        Domain(origin=(0, 5), shape=(2, 2))
        """
        offset = tuple(operator.index(v) for v in offset)
        if len(offset) != self.ndim:
            raise ShapeError(f"offset {offset} does not have rank {self.ndim}")
        origin = tuple(o + d for o, d in zip(self._origin, offset))
        if any(o < 0 for o in origin):
            raise BoundsError(f"{self} moved by {offset} has negative coordinates")
        return Domain(origin, self._shape)

    def scale(self, factors: Sequence[int]) -> Domain:
        """The box on a grid ``factors`` times finer: origin and shape multiplied per
        dimension (the same as ``self * factors``). With ``dst`` downsampled from ``src``
        by 2, ``(c * (2, 2)).intersect(src_domain)`` is the source region of the
        destination chunk ``c``. ``factors``: one positive int per dimension, else
        :class:`ShapeError`.

        >>> Domain((1, 3), (2, 2)).scale((2, 4))
        Domain(origin=(2, 12), shape=(4, 8))
        >>> whole = Domain((0, 0), (9, 9))                    # the source array
        >>> print((Domain((4, 0), (1, 4)) * (2, 2)).intersect(whole))
        [8:9, 0:8]
        """
        f = self._factors(factors, "*")
        return Domain(
            tuple(o * k for o, k in zip(self._origin, f)),
            tuple(s * k for s, k in zip(self._shape, f)),
        )

    def __mul__(self, factors: Sequence[int]) -> Domain:
        """``d * factors`` is :meth:`scale`: the box on a grid ``factors`` times finer.

        >>> print(Domain((0, 4), (4, 4)) * (2, 2))
        [0:8, 8:16]
        """
        return self.scale(factors)

    __rmul__ = __mul__

    def __floordiv__(self, factors: Sequence[int]) -> Domain:
        """``d // factors``: the box on a grid ``factors`` times coarser that covers ``d``
        (origin divided rounding down, stop divided rounding up); an empty extent stays
        empty. ``(d * f) // f == d``; ``(d // f) * f`` contains ``d``.

        >>> print(Domain((3, 4), (4, 4)) // (2, 2))
        [1:4, 2:4]
        >>> Domain((5,), (0,)) // (2,)
        Domain(origin=(2,), shape=(0,))
        """
        f = self._factors(factors, "//")
        origin = tuple(o // k for o, k in zip(self._origin, f))
        stop = tuple(
            o if s == 0 else -(-(b + s) // k)
            for o, s, b, k in zip(origin, self._shape, self._origin, f)
        )
        return Domain(origin, tuple(e - o for o, e in zip(origin, stop)))

    def _factors(self, factors: object, op: str) -> tuple[int, ...]:
        """``factors`` checked: one positive int per dimension."""
        expected = f"one positive int per dimension ({self.ndim} here)"
        if isinstance(factors, str | bytes) or not isinstance(factors, Sequence | np.ndarray):
            raise ShapeError(f"{self} {op} {factors!r}: the factors must be {expected}")
        values = []
        for k in factors:
            if isinstance(k, bool | np.bool_):
                raise ShapeError(f"{self} {op} {factors!r}: the factors must be {expected}")
            try:
                values.append(operator.index(k))
            except TypeError:
                raise ShapeError(
                    f"{self} {op} {factors!r}: the factors must be {expected}"
                ) from None
        if len(values) != self.ndim:
            raise ShapeError(
                f"{self} {op} {tuple(values)}: {len(values)} factors for a domain of rank "
                f"{self.ndim}"
            )
        if any(k < 1 for k in values):
            raise ShapeError(f"{self} {op} {tuple(values)}: the factors must be {expected}")
        return tuple(values)

    def __contains__(self, other: object) -> bool:
        if not isinstance(other, Domain):
            return False
        return other.ndim == self.ndim and all(
            o2 >= o1 and o2 + s2 <= o1 + s1
            for o1, s1, o2, s2 in zip(self._origin, self._shape, other._origin, other._shape)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Domain):
            return NotImplemented
        return self._origin == other._origin and self._shape == other._shape

    def __hash__(self) -> int:
        return hash((self._origin, self._shape))

    def __repr__(self) -> str:
        return f"Domain(origin={self._origin}, shape={self._shape})"

    def __str__(self) -> str:
        """``[start:stop, ...]`` per dimension, the form every shardwright message uses
        (``[]`` for rank 0); ``repr()`` gives the constructor form.

        >>> str(Domain((0, 24), (8, 16))), str(Domain((), ()))
        ('[0:8, 24:40]', '[]')
        """
        return "[" + ", ".join(f"{o}:{o + s}" for o, s in zip(self._origin, self._shape)) + "]"

    def __reduce__(self) -> tuple[object, ...]:
        if self._index is None:
            return (Domain, (self._origin, self._shape))
        return (Domain._from_grid, (self._origin, self._shape, self._index))
