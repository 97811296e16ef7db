"""``Cells``: the sized iterator of grid cells that ``iter_shards``, ``iter_chunks`` and
``inner_chunks`` return."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._domain import Domain


class Cells(Iterator[Domain]):
    """The cells of a grid (shards, or inner chunks), as :class:`Domain` objects carrying
    their grid ``index``, in C order, clipped to the array.

    An iterator, single-use as a generator is: ``for``, ``list()`` and ``next()`` take
    cells from it, and once exhausted it stays empty (call ``iter_shards()`` again for a
    new one). ``len()`` is the number of cells still to come, so before iterating it is the
    total: ``tqdm(a.iter_shards())`` shows it. Cells are made as they are taken, so the
    grid of a huge array costs nothing to hold.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(10, 7), dtype="uint8",
    ...               chunks=(2, 2), shards=(4, 4))
    >>> cells = a.iter_shards()
    >>> len(cells), next(cells), len(cells)
    (6, Domain(origin=(0, 0), shape=(4, 4)), 5)
    >>> len(list(cells)), len(cells), list(cells)
    (5, 0, [])
    """

    __slots__ = ("_array", "_cells", "_what")

    def __init__(self, cells: Any, what: str, array: Any = None) -> None:
        # ``cells``: the engine's grid iterator of (origin, shape, index) lists, which
        # knows how many it has left; ``array``: what the shards belong to (it has
        # ``write_shard``), for ``Domain.write_context``.
        self._cells = cells
        self._what = what
        self._array = array

    def __iter__(self) -> Cells:
        return self

    def __next__(self) -> Domain:
        origin, shape, index = next(self._cells)
        return Domain._from_grid(origin, shape, index, self._array)

    def __len__(self) -> int:
        return len(self._cells)

    def __repr__(self) -> str:
        return f"<shardwright.Cells: {len(self)} {self._what} to come>"
