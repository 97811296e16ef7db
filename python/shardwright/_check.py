"""``sw.check``: an fsck for stored arrays, whatever wrote them (the same check as
``shardwright check``): every stored shard's index (length, CRC-32C, byte ranges) and,
unless ``quick``, every inner chunk decoded; ``repair`` mends the damaged shards."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _core
from ._array import Array
from ._errors import ReadOnlyError
from ._progress import Progress

_MIB = float(1 << 20)


def _coordinates(chunk: tuple[int, ...]) -> str:
    return ",".join(str(c) for c in chunk)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a stored shard: in the inner chunk at ``chunk`` (its
    coordinates in the array's chunk grid) or, with ``chunk`` ``None``, in the shard as a
    whole (e.g. its index). ``str()`` reads ``chunk 3,1: what is wrong``."""

    chunk: tuple[int, ...] | None
    message: str

    def __str__(self) -> str:
        if self.chunk is None:
            return self.message
        return f"chunk {_coordinates(self.chunk)}: {self.message}"


@dataclass(frozen=True)
class DamagedShard:
    """A damaged stored shard (for an unsharded array: a damaged chunk). ``key``: its
    storage key; ``shard``: its grid index; ``size``: its stored bytes; ``problems``: what
    is wrong; ``index_unreadable``: no entry of its index could be read. After a repair,
    ``repair`` says what was done — ``"rewritten"`` (the ``kept`` chunks that decode, their
    bytes copied verbatim), ``"removed"`` (nothing could be kept), ``"skipped"`` (changed
    since it was checked: a live writer's shard is never overwritten) or ``"failed"``
    (``repair_message`` says why) — and ``lost`` lists the chunks that are the fill value
    now; ``None`` without a repair."""

    key: str
    shard: tuple[int, ...]
    size: int
    problems: tuple[Problem, ...]
    index_unreadable: bool
    repair: str | None
    kept: int
    lost: tuple[tuple[int, ...], ...]
    repair_message: str | None

    @property
    def repaired(self) -> bool:
        """Whether the damage is gone (rewritten or removed)."""
        return self.repair in ("rewritten", "removed")

    def lines(self, what: str = "shard") -> list[str]:
        """The shard (``what``: ``"chunk"`` in an unsharded array), each problem, and the
        repair, as ``shardwright check`` prints them."""
        out = [f"damaged {what} {self.key} ({self.size} bytes):"]
        out += [f"  {p}" for p in self.problems]
        lost = " ".join(_coordinates(c) for c in self.lost)
        if self.repair == "rewritten":
            gone = f"{len(self.lost)} lost (now the fill value): {lost}" if lost else "none lost"
            out.append(f"  repaired: {self.kept} chunk(s) kept, {gone}")
        elif self.repair == "removed":
            out.append(f"  removed: no chunk could be kept, {len(self.lost)} lost: {lost}")
        elif self.repair == "skipped":
            out.append("  skipped: changed since checked")
        elif self.repair == "failed":
            out.append(f"  repair failed: {self.repair_message}")
        return out


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check` found and did. ``ok``: no damage found; ``damaged``: the damaged
    shards (:class:`DamagedShard`); ``repaired``: those a repair mended; ``lost_chunks``:
    ``(key, chunk coordinates)`` of every chunk a repair made the fill value;
    ``complete``: every shard was checked. Totals: ``shards_total`` (the grid),
    ``shards_stored``, ``chunks_checked`` (listed by the indexes), ``chunks_decoded``,
    ``bytes_read``, ``seconds``. ``debris``: ``(key, what)`` of the crash debris found
    under the array (stale temporary files of dead writers, abandoned multipart uploads;
    not damage), removed when repairing. ``str()`` is the text ``shardwright check``
    prints."""

    ok: bool
    complete: bool
    sharded: bool
    quick: bool
    repairing: bool
    shards_total: int
    shards_stored: int
    chunks_checked: int
    chunks_decoded: int
    bytes_read: int
    seconds: float
    damaged: tuple[DamagedShard, ...]
    debris: tuple[tuple[str, str], ...] = ()

    @property
    def repaired(self) -> list[DamagedShard]:
        """The damaged shards a repair mended (rewritten or removed)."""
        return [d for d in self.damaged if d.repaired]

    @property
    def lost_chunks(self) -> list[tuple[str, tuple[int, ...]]]:
        """Every chunk a repair lost (now the fill value), with its shard's key."""
        return [(d.key, c) for d in self.damaged for c in d.lost]

    def __repr__(self) -> str:
        unit = "shards" if self.sharded else "chunks"
        text = (
            f"CheckReport(ok={self.ok}, {self.shards_stored} of {self.shards_total} {unit} "
            f"stored, {self.chunks_decoded} chunks decoded, damaged={[d.key for d in self.damaged]}"
        )
        if self.repairing:
            text += f", repaired={len(self.repaired)}, lost_chunks={len(self.lost_chunks)}"
        if not self.complete:
            text += ", complete=False"
        return text + ")"

    def __str__(self) -> str:
        what = "shard" if self.sharded else "chunk"
        lines = [line for d in self.damaged for line in d.lines(what)]
        done = "removed" if self.repairing else "left (--repair removes it)"
        lines += [f"debris {key}: {kind}: {done}" for key, kind in self.debris]
        damage = "no damage" if self.ok else f"{len(self.damaged)} damaged"
        if self.repairing and not self.ok:
            damage += (
                f", {len(self.repaired)} repaired ({len(self.lost_chunks)} chunks lost, now "
                f"the fill value), {len(self.damaged) - len(self.repaired)} left"
            )
        unit = "shards" if self.sharded else "chunks"
        lines.append(
            f"check: {self.shards_stored} of {self.shards_total} {unit} stored, "
            f"{self.chunks_decoded} chunks decoded, {self.bytes_read / _MIB:.1f} MiB read in "
            f"{self.seconds:.2f} s: {damage}"
        )
        return "\n".join(lines)


def _damaged(d: dict[str, Any]) -> DamagedShard:
    repair = d.get("repair") or {}
    return DamagedShard(
        key=d["key"],
        shard=tuple(d["shard"]),
        size=d["size"],
        problems=tuple(
            Problem(None if p["chunk"] is None else tuple(p["chunk"]), p["message"])
            for p in d["problems"]
        ),
        index_unreadable=d["index_unreadable"],
        repair=repair.get("status"),
        kept=repair.get("kept", 0),
        lost=tuple(tuple(c) for c in repair.get("lost", [])),
        repair_message=repair.get("message"),
    )


def _report(text: str) -> CheckReport:
    r = json.loads(text)
    return CheckReport(
        ok=r["ok"],
        complete=r["complete"],
        sharded=r["sharded"],
        quick=r["quick"],
        repairing=r["repair"],
        shards_total=r["shards_total"],
        shards_stored=r["shards_stored"],
        chunks_checked=r["chunks_checked"],
        chunks_decoded=r["chunks_decoded"],
        bytes_read=r["bytes_read"],
        seconds=r["seconds"],
        damaged=tuple(_damaged(d) for d in r["damaged"]),
        debris=tuple((d["key"], d["what"]) for d in r["debris"]),
    )


if TYPE_CHECKING:
    from ._check_group import GroupCheckReport


def check(
    target: str | os.PathLike[str] | Any,
    *,
    quick: bool = False,
    repair: bool = False,
    progress: bool | Callable[[dict[str, Any]], Any] = False,
    storage_options: Mapping[str, Any] | None = None,
) -> CheckReport | GroupCheckReport:
    """Check every stored shard of the array ``target`` (a path, an object-store URL, a
    ``zarr.Array`` or a shardwright :class:`Array`), whatever wrote it: each shard's index
    (long enough, its CRC-32C checksum, every entry the empty marker or a byte range inside
    the shard and off the index) and, unless ``quick``, every inner chunk decoded to its
    full size. Missing shards are the fill value, not damage. An unsharded array's chunks
    are decoded one by one. The stored shards are found with one listing of the array's
    folder where the store lists (a local folder, an object store, a zarr-python store
    with ``supports_listing``), so a check costs what is stored, not the grid's size;
    on a store without a listing every grid cell is asked for.

    ``repair=True`` rewrites each damaged shard keeping every chunk that still decodes
    (its bytes copied verbatim), the rest becoming the fill value (``lost_chunks``); a
    shard with nothing left is removed. Each rewrite is one atomic put conditional on the
    version checked: a shard a live writer replaced meanwhile is skipped, never
    overwritten (for a ``zarr.Array`` on a store that shardwright does not open natively,
    through the zarr-python store adapter, only writers in this process are seen: repair
    while no other process writes). ``progress``: ``True`` for a bar on stderr, or a
    callable that receives a dict per batch of shards (``shards_done``, ``shards_total``
    — the listed shards where the store lists, else the grid's cells —,
    ``shards_stored``, ``chunks_decoded``, ``bytes_read``, ``damaged``). Raises what
    :func:`shardwright.open` raises for a target that is not an array,
    :class:`ReadOnlyError` for ``repair`` on an array opened read-only.

    A local Zarr group or OME-Zarr image (its folder) is checked array by array (an
    image's levels, nested groups): the result is a :class:`GroupCheckReport` holding one
    :class:`CheckReport` per array, ``ok`` only if all of them are; a member whose zarr.json
    does not parse, or a level the image lists that is missing, is damage in ``broken``
    (check cannot repair it), an array check cannot read (Zarr v2, an unsupported codec) is
    in ``not_checked``, and either makes ``ok`` false.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> path = tempfile.mkdtemp() + "/a.zarr"
    >>> a = sw.create(path, shape=(8,), dtype="uint8", chunks=(2,), shards=(8,))
    >>> a[:] = np.arange(1, 9, dtype="uint8")
    >>> sw.check(path).ok
    True
    >>> with open(path + "/c/0", "r+b") as f:     # damage the first chunk's zstd frame
    ...     _ = f.write(b"\\xff")
    >>> report = sw.check(path, repair=True)
    >>> report.damaged[0].key, report.damaged[0].problems[0].chunk
    ('c/0', (0,))
    >>> report.lost_chunks
    [('c/0', (0,))]
    >>> a[:].tolist(), sw.check(path).ok
    ([0, 0, 3, 4, 5, 6, 7, 8], True)
    """
    if isinstance(target, Array):
        if storage_options:
            raise TypeError("storage_options are for URLs; an opened Array has its store")
        array = target
    else:
        from ._check_group import check_group, group_folder
        from ._open import open as open_array

        group = group_folder(target, storage_options)
        if group is not None:
            return check_group(
                group, lambda p: check(p, quick=quick, repair=repair, progress=progress)
            )
        mode = "r+" if repair else "r"
        array = open_array(target, storage_options=storage_options, mode=mode)
    if repair and array.read_only:
        raise ReadOnlyError(
            f"check(repair=True): the array '{array.path}' is read-only (opened with mode='r' "
            "or on a read-only store); open it with mode='r+' to repair it"
        )
    bar: Progress | None = None
    callback: Callable[[dict[str, Any]], Any] | None = None
    if callable(progress):
        callback = progress
    elif progress:

        def callback(event: dict[str, Any]) -> None:
            nonlocal bar
            if bar is None:
                bar = Progress(event["shards_total"], "shards", show=True)
            bar.update(event["shards_done"] - bar.done, bytes=event["bytes_read"])

    try:
        text = _core.check(array._core, bool(quick), bool(repair), callback)
    finally:
        if bar is not None:
            bar.close()
    return _report(text)
