"""``sw.check`` on a Zarr group or an OME-Zarr image in a local folder: every array in it
(an image's levels, nested groups' arrays) checked, one :class:`CheckReport` each; a member
whose zarr.json does not parse, or a level the image lists that is missing, is damage
(``broken``); an array check cannot read (Zarr v2, an unsupported codec) is ``not_checked``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._check import CheckReport, DamagedShard
from ._errors import NotAnArrayError, ShardwrightError
from ._location import resolve


@dataclass(frozen=True)
class GroupCheckReport:
    """What :func:`shardwright.check` found in every array of a group: ``arrays`` maps each
    array's path in the group (``"0"``, ``"labels/cells/0"``) to its :class:`CheckReport`.
    ``broken`` maps each member that is damaged beyond what check can repair (a zarr.json
    that does not parse, a level the image's metadata lists that is missing) to what is
    wrong; ``not_checked`` maps each array check cannot read (Zarr v2, an unsupported codec)
    to why. ``ok``: every member checked and no damage in any of them; ``complete``: every
    member checked, every shard of every array; ``damaged``, ``repaired`` and
    ``lost_chunks`` list ``(array path, …)`` pairs.
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
    broken: dict[str, str] = field(default_factory=dict)
    not_checked: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every member checked, and no damage found in any of them."""
        return not self.broken and not self.not_checked and all(r.ok for r in self.arrays.values())

    @property
    def complete(self) -> bool:
        """Every member was checked, every shard of every array."""
        return not self.not_checked and all(r.complete for r in self.arrays.values())

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
        return (
            f"GroupCheckReport(ok={self.ok}, arrays={list(self.arrays)}, damaged={damaged}, "
            f"broken={list(self.broken)}, not_checked={list(self.not_checked)})"
        )

    def __str__(self) -> str:
        lines = []
        members = {**self.arrays, **self.broken, **self.not_checked}
        for path in sorted(members, key=_natural):
            lines.append(f"array '{path}':")
            if path in self.broken:
                lines.append(
                    f"  damaged: {self.broken[path]}; check cannot repair it: restore it, "
                    "or write it again"
                )
            elif path in self.not_checked:
                lines.append(f"  not checked: {self.not_checked[path]}")
            else:
                lines += [f"  {line}" for line in str(self.arrays[path]).splitlines()]
        with_damage = len(self.broken) + sum(not r.ok for r in self.arrays.values())
        skipped = f", {len(self.not_checked)} not checked" if self.not_checked else ""
        lines.append(
            f"check: {len(members)} arrays in '{self.path}', {with_damage} with damage{skipped}"
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


def _natural(path: str) -> list[tuple[int, int, str]]:
    """The sort key putting ``"2"`` before ``"10"`` and numbers before names, part by part."""
    return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in path.split("/")]


def _levels(group: dict[str, Any]) -> list[str]:
    """The paths of the levels an OME-Zarr image's metadata lists (none for a plain group)."""
    attributes = group.get("attributes") or {}
    ome = attributes.get("ome") if isinstance(attributes, dict) else None
    multiscales = (ome or {}).get("multiscales") if isinstance(ome, dict) else None
    try:
        datasets = multiscales[0]["datasets"]  # type: ignore[index]
        return [d["path"] for d in datasets if isinstance(d.get("path"), str)]
    except (TypeError, KeyError, IndexError, AttributeError):
        return []


def _members(group: Path, depth: int = 16) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """The arrays below ``group``, its broken members and its Zarr v2 arrays (by path)."""
    arrays: list[str] = []
    broken: dict[str, str] = {}
    v2: dict[str, str] = {}

    def visit(folder: Path, meta: dict[str, Any], prefix: str, left: int) -> None:
        listed = _levels(meta)
        try:
            names = {p.name for p in folder.iterdir() if p.is_dir()} | set(listed)
        except OSError:
            names = set(listed)
        for name in sorted(names, key=_natural):
            child, path = folder / name, f"{prefix}{name}"
            try:
                node = json.loads((child / "zarr.json").read_text())
            except FileNotFoundError:
                if name in listed:
                    broken[path] = (
                        "missing: the image's multiscales metadata lists it, no zarr.json there"
                    )
                elif (child / ".zarray").is_file():
                    v2[path] = (
                        "a Zarr v2 array; check reads Zarr v3 arrays (copy it with "
                        "`shardwright copy` to make one)"
                    )
                continue
            except (ValueError, OSError) as err:
                broken[path] = f"its zarr.json does not parse as JSON ({err})"
                continue
            kind = node.get("node_type") if isinstance(node, dict) else None
            if kind == "array":
                arrays.append(path)
            elif kind == "group":
                if left > 1:
                    visit(child, node, path + "/", left - 1)
            else:
                broken[path] = f'its zarr.json has node_type {kind!r}, not "array" or "group"'

    visit(group, json.loads((group / "zarr.json").read_text()), "", depth)
    return arrays, broken, v2


def check_group(folder: Path, check_one: Callable[[Path], CheckReport]) -> GroupCheckReport:
    """Check every array below the group ``folder`` with ``check_one``; a member that does
    not open is reported ``not_checked`` with the reason, the rest still checked."""
    arrays, broken, not_checked = _members(folder)
    if not arrays and not broken and not not_checked:
        raise NotAnArrayError(f"'{folder}' is a Zarr group holding no arrays to check")
    reports: dict[str, CheckReport] = {}
    for path in arrays:
        try:
            reports[path] = check_one(folder / path)
        except ShardwrightError as err:
            not_checked[path] = str(err)
    return GroupCheckReport(str(folder), reports, broken, not_checked)
