"""``sw.check`` on a Zarr group or an OME-Zarr image in a local folder: every array in it
(an image's levels, nested groups' arrays) checked, one :class:`CheckReport` each."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._check import CheckReport, DamagedShard
from ._errors import NotAnArrayError
from ._location import resolve


@dataclass(frozen=True)
class GroupCheckReport:
    """What :func:`shardwright.check` found in every array of a group: ``arrays`` maps each
    array's path in the group (``"0"``, ``"labels/cells/0"``) to its :class:`CheckReport`.
    ``ok``: no damage in any of them; ``complete``: every shard of every array was
    checked; ``damaged``, ``repaired`` and ``lost_chunks`` list ``(array path, …)`` pairs.
    ``str()`` is the text ``shardwright check`` prints for the group.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> image = tempfile.mkdtemp() + "/img.zarr"
    >>> _ = sw.pyramid(np.ones((32, 32), "uint8"), image, factors=(2, 2), levels=2)
    >>> report = sw.check(image)
    >>> list(report.arrays), report.ok
    (['0', '1'], True)
    """

    path: str
    arrays: dict[str, CheckReport]

    @property
    def ok(self) -> bool:
        """No damage found in any array."""
        return all(r.ok for r in self.arrays.values())

    @property
    def complete(self) -> bool:
        """Every shard of every array was checked."""
        return all(r.complete for r in self.arrays.values())

    @property
    def damaged(self) -> list[tuple[str, DamagedShard]]:
        """The damaged shards, with their array's path."""
        return [(p, d) for p, r in self.arrays.items() for d in r.damaged]

    @property
    def repaired(self) -> list[tuple[str, DamagedShard]]:
        """The damaged shards a repair mended, with their array's path."""
        return [(p, d) for p, r in self.arrays.items() for d in r.repaired]

    @property
    def lost_chunks(self) -> list[tuple[str, str, tuple[int, ...]]]:
        """Every chunk a repair lost: ``(array path, shard key, chunk coordinates)``."""
        return [(p, key, c) for p, r in self.arrays.items() for key, c in r.lost_chunks]

    def __repr__(self) -> str:
        damaged = [f"{p}/{d.key}" for p, d in self.damaged]
        return f"GroupCheckReport(ok={self.ok}, arrays={list(self.arrays)}, damaged={damaged})"

    def __str__(self) -> str:
        lines = []
        for path, report in self.arrays.items():
            lines.append(f"array '{path}':")
            lines += [f"  {line}" for line in str(report).splitlines()]
        with_damage = sum(not r.ok for r in self.arrays.values())
        lines.append(
            f"check: {len(self.arrays)} arrays in '{self.path}', {with_damage} with damage"
        )
        return "\n".join(lines)


def group_folder(target: Any, storage_options: Mapping[str, Any] | None) -> Path | None:
    """The local folder of ``target`` when it is a path (or ``file://`` URL) to a Zarr v3
    group, else ``None``."""
    if not isinstance(target, (str, os.PathLike)):
        return None
    where = resolve(target, storage_options)
    if where.path is None or not (where.path / "zarr.json").is_file():
        return None
    try:
        node = json.loads((where.path / "zarr.json").read_text()).get("node_type")
    except (ValueError, AttributeError, OSError):
        return None
    return where.path if node == "group" else None


def check_group(folder: Path, check_one: Callable[[Path], CheckReport]) -> GroupCheckReport:
    """Check every array below the group ``folder`` with ``check_one``."""
    from ._open import _arrays_in

    arrays = _arrays_in(folder, depth=16)
    if not arrays:
        raise NotAnArrayError(f"'{folder}' is a Zarr group holding no arrays to check")
    return GroupCheckReport(str(folder), {a: check_one(folder / a) for a in arrays})
