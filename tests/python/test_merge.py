"""Merging region writes into an existing shard.

The cost of a partly rewritten shard that exists is one get of the shard and one put
(checked through the stats, and from outside with ``strace``). Inner chunks not touched
are copied as encoded bytes — their bytes in the stored shard are identical before and
after (the shard index is parsed here, independently of the library) — and only chunks
covered in part are decoded (``chunks_decoded``). Shards written by shardwright,
zarr-python and TensorStore merge the same way, and the result reads back identically in
zarr-python, TensorStore and shardwright, equal to a numpy model of the array.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw
from conftest import reference

# 3 x 3 x 1 shards of 2 x 2 x 2 inner chunks; the last shard row (rows 16..19) is
# clipped, so its inner chunks at rows 20..24 lie wholly outside the array, and the last
# shard column (cols 20..27) ends with a clipped inner chunk of 2 columns.
SHAPE = (19, 27, 8)
CHUNKS = (4, 5, 4)
SHARDS = (8, 10, 8)
DTYPE = np.dtype("uint16")

# A whole inner chunk of the fill value (0): every producer leaves that slot empty.
ZERO_CHUNK = (slice(0, 4), slice(10, 15), slice(4, 8))


def base_data() -> np.ndarray:
    data = reference(SHAPE, DTYPE, seed=1)
    data[data == 0] = 1  # no stray fill values: only ZERO_CHUNK is empty
    data[ZERO_CHUNK] = 0
    return data


@dataclass
class Op:
    """One write of a scenario: ``w[key] = value`` (value: array, scalar, or a callable
    giving an array of the shape numpy gives ``model[key]``)."""

    key: Any
    value: Any


def rand(seed: int) -> Callable[[tuple[int, ...]], np.ndarray]:
    def make(shape: tuple[int, ...]) -> np.ndarray:
        return np.random.default_rng(seed).integers(1, 60000, size=shape, dtype=DTYPE)

    return make


# scenario name -> (shard index, writes inside one write_shard block)
SCENARIOS: dict[str, tuple[tuple[int, ...], list[Op]]] = {
    # one inner chunk covered in part, seven untouched
    "unaligned_one_chunk": ((1, 1, 0), [Op((slice(9, 11), slice(11, 14), slice(1, 3)), rand(1))]),
    # every inner chunk of the shard covered in part
    "unaligned_all_chunks": (
        (1, 1, 0),
        [Op((slice(9, 14), slice(11, 17), slice(1, 7)), rand(2))],
    ),
    # four chunks covered whole by one region across chunk boundaries, one in part
    "whole_and_partial": (
        (0, 0, 0),
        [
            Op((slice(0, 4), slice(0, 10), slice(0, 8)), rand(3)),
            Op((slice(5, 7), slice(2, 3), slice(5, 6)), rand(4)),
        ],
    ),
    # two partial writes that together cover one chunk whole (it is then not decoded)
    "partials_completing_a_chunk": (
        (1, 0, 0),
        [
            Op((slice(8, 10), slice(0, 5), slice(0, 4)), rand(5)),
            Op((slice(10, 12), slice(0, 5), slice(0, 4)), rand(6)),
            Op((slice(13, 14), slice(6, 8), slice(4, 5)), rand(7)),
        ],
    ),
    # scalars: a Python int over an unaligned region, a numpy scalar over a whole chunk,
    # a partial write into the empty (fill value) slot, the fill value over a whole chunk
    "scalars": (
        (0, 1, 0),
        [
            Op((slice(5, 8), slice(11, 19), slice(2, 5)), 4242),
            Op((slice(4, 8), slice(15, 20), slice(0, 4)), np.uint16(777)),
            Op((slice(1, 2), slice(12, 13), slice(5, 7)), np.array(9, dtype=DTYPE)),
            Op((slice(4, 8), slice(10, 15), slice(4, 8)), 0),
        ],
    ),
    # integer keys, Ellipsis, missing trailing dimensions, negative indices
    "ints_and_ellipsis": (
        (1, 0, 0),
        [
            Op((9, slice(3, 7), Ellipsis), rand(8)),
            Op((10, 4, ...), rand(9)),
            Op((11, 2, 6), 31337),
            Op((Ellipsis, 12, 9, slice(0, 8)), rand(10)),
            Op((13, slice(1, 9)), rand(11)),
            Op((-6, -25, -1), np.uint16(5)),  # row 13, col 2, z 7
        ],
    ),
    # edge shard: clipped rows (16..19) and a clipped inner chunk (cols 25..27)
    "edge_partial": (
        (2, 2, 0),
        [Op((slice(17, 19), slice(21, 27), slice(0, 8)), rand(12))],
    ),
    "edge_clipped_chunk_whole": (
        (2, 2, 0),
        [
            Op((slice(16, 19), slice(25, 27), slice(0, 4)), rand(13)),
            Op((-1, -4, ...), rand(14)),
        ],
    ),
    "edge_negative_ints": ((2, 0, 0), [Op((-1, -27, -8), 1), Op((-2, 9, ...), rand(15))]),
    # a clipped inner chunk completed by two partial writes: encoded whole, not decoded
    "edge_partials_completing_clipped_chunk": (
        (2, 2, 0),
        [
            Op((slice(16, 17), slice(25, 27), slice(4, 8)), rand(16)),
            Op((slice(17, 19), slice(25, 27), slice(4, 8)), rand(17)),
            Op((18, 21, 1), 2),
        ],
    ),
    # a whole chunk written (fill value, then data), then written over in part
    "whole_then_partial_same_chunk": (
        (0, 1, 0),
        [
            Op((slice(0, 4), slice(15, 20), slice(0, 4)), 0),
            Op((slice(1, 3), slice(16, 18), slice(1, 2)), 55),
            Op((slice(4, 8), slice(15, 20), slice(4, 8)), rand(18)),
            Op((5, 17, ...), 66),
        ],
    ),
}


def apply_model(model: np.ndarray, covered: np.ndarray, ops: list[Op]) -> list[Any]:
    """Apply ``ops`` to the model; returns the value each op writes."""
    values = []
    for op in ops:
        value = op.value(np.shape(model[op.key])) if callable(op.value) else op.value
        model[op.key] = value
        covered[op.key] = True
        values.append(value)
    return values


@dataclass
class Expected:
    whole: list[int]
    partial: list[int]
    untouched: list[int]
    empty_written: int


def classify(array: sw.Array, shard: sw.Domain, covered: np.ndarray, model: np.ndarray):
    """Slots of the shard's inner chunks (inside the array) by how the writes covered them."""
    whole, partial, untouched, empty_written = [], [], [], 0
    for chunk in array.iter_chunks(within=shard):
        slot = sb.slot_of(array, chunk)
        c = covered[chunk.slices]
        if c.all():
            whole.append(slot)
            empty_written += int((model[chunk.slices] == array.fill_value).all())
        elif c.any():
            partial.append(slot)
        else:
            untouched.append(slot)
    return Expected(whole, partial, untouched, empty_written)


def assert_everyone_reads(path: Path, model: np.ndarray) -> None:
    np.testing.assert_array_equal(sw.open(path)[...], model)
    np.testing.assert_array_equal(sb.read_zarr(path), model)
    np.testing.assert_array_equal(sb.read_ts(path), model)


def merge_and_check(
    array: sw.Array,
    model: np.ndarray,
    shard_index: tuple[int, ...],
    ops: list[Op],
    location: str,
) -> dict[str, int]:
    """Run ``ops`` in one write_shard block, checking stats and bytes against the model."""
    shard = next(s for s in array.iter_shards() if s.index == shard_index)
    path = sb.shard_path(array, shard)
    slots = sb.n_slots(array)
    old = path.read_bytes() if path.exists() else None
    old_chunks = sb.chunk_bytes(old, slots, location) if old is not None else [None] * slots

    covered = np.zeros(model.shape, dtype=bool)
    values = apply_model(model, covered, ops)
    exp = classify(array, shard, covered, model)

    with array.write_shard(shard) as w:
        for op, value in zip(ops, values):
            w[op.key] = value
    stats = w.stats

    needs_read = bool(exp.partial or exp.untouched)
    stored = [s for s in range(slots) if old_chunks[s] is not None]
    assert stats["gets"] == (1 if needs_read else 0), stats
    assert stats["conflicts"] == 0
    assert stats["bytes_read"] == (len(old) if needs_read and old is not None else 0)
    assert stats["chunks_written"] == len(exp.whole), (stats, exp)
    assert stats["chunks_empty"] == exp.empty_written, (stats, exp)
    assert stats["chunks_partial"] == len(exp.partial), (stats, exp)
    # Only chunks covered in part and stored are decoded; untouched ones are copied.
    assert stats["chunks_decoded"] == len([s for s in exp.partial if s in stored]), (stats, exp)
    assert stats["chunks_kept"] == len([s for s in exp.untouched if s in stored]), (stats, exp)

    shard_model = model[shard.slices]
    if (shard_model == array.fill_value).all():
        assert (stats["puts"], stats["deletes"]) == (0, 1)
        assert not path.exists()
    else:
        assert (stats["puts"], stats["deletes"]) == (1, 0)
        new = path.read_bytes()
        assert stats["bytes_written"] == len(new)
        new_chunks = sb.chunk_bytes(new, slots, location)
        # untouched chunks: the very same encoded bytes (an empty slot stays empty)
        for s in exp.untouched:
            assert new_chunks[s] == old_chunks[s], f"slot {s} was re-encoded"
        # slots outside the array stay empty; nothing but chunks and the index is stored
        inside = set(exp.whole + exp.partial + exp.untouched)
        for s in set(range(slots)) - inside:
            assert new_chunks[s] is None
        n_data = sum(len(c) for c in new_chunks if c is not None)
        assert n_data + sb.index_nbytes(slots) == len(new)
        for s in exp.whole + exp.partial:
            chunk_model_empty = new_chunks[s] is None
            chunk = next(c for c in array.iter_chunks(within=shard) if sb.slot_of(array, c) == s)
            assert chunk_model_empty == bool((model[chunk.slices] == array.fill_value).all())
    # other shards untouched
    np.testing.assert_array_equal(array[...], model)
    return stats


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_merge_scenario(tmp_path, producer, location, scenario):
    data = base_data()
    array = sb.make_array(producer, tmp_path / "a.zarr", data, CHUNKS, SHARDS, location)
    assert_everyone_reads(array.path, data)
    shard_index, ops = SCENARIOS[scenario]
    model = data.copy()
    merge_and_check(array, model, shard_index, ops, location)
    assert_everyone_reads(array.path, model)
    assert (
        not sb.tree_bytes(array.path).keys()
        - {"zarr.json"}
        - {sb.shard_key(s) for s in array.iter_shards()}
    ), "stray files"


def test_producers_store_the_same_empty_slot(tmp_path, producer, location):
    """The premise of the scenarios: the fill-value chunk is an empty slot for everyone."""
    data = base_data()
    array = sb.make_array(producer, tmp_path / "a.zarr", data, CHUNKS, SHARDS, location)
    shard = next(s for s in array.iter_shards() if s.index == (0, 1, 0))
    chunk = next(c for c in array.iter_chunks(within=shard) if c.slices == ZERO_CHUNK)
    old = sb.chunk_bytes(sb.shard_path(array, shard).read_bytes(), 8, location)
    assert old[sb.slot_of(array, chunk)] is None
    assert sum(c is None for c in old) == 1


def test_many_random_merges(tmp_path, producer, location):
    """30 merges of random unaligned regions (one to three per block) into random shards,
    the model checked after each; the final array read by all three readers."""
    data = base_data()
    array = sb.make_array(producer, tmp_path / "a.zarr", data, CHUNKS, SHARDS, location)
    model = data.copy()
    rng = np.random.default_rng(7)
    shards = list(array.iter_shards())
    totals = {"gets": 0, "puts": 0}
    for step in range(30):
        shard = shards[rng.integers(len(shards))]
        ops = []
        for _ in range(rng.integers(1, 4)):
            key = []
            for o, n in zip(shard.origin, shard.shape):
                lo = int(rng.integers(0, n))
                hi = int(rng.integers(lo + 1, n + 1))
                key.append(slice(o + lo, o + hi))
            kind = rng.integers(3)
            value = int(rng.integers(0, 3)) if kind == 0 else rand(1000 + step)
            ops.append(Op(tuple(key), value))
        stats = merge_and_check(array, model, shard.index, ops, location)
        totals["gets"] += stats["gets"]
        totals["puts"] += stats["puts"] + stats["deletes"]
    assert totals["puts"] == 30
    assert_everyone_reads(array.path, model)


def test_merge_into_missing_shard(tmp_path, location):
    """A shard never stored: one get (finding nothing), no chunk decoded, the rest of
    the shard is the fill value."""
    array = sw.create(
        tmp_path / "a.zarr",
        shape=SHAPE,
        dtype=DTYPE,
        chunks=CHUNKS,
        shards=SHARDS,
        fill_value=3,
        index_location=location,
    )
    model = np.full(SHAPE, 3, DTYPE)
    ops = [Op((slice(9, 14), slice(11, 17), slice(1, 7)), rand(20)), Op((8, 10, 0), 3)]
    stats = merge_and_check(array, model, (1, 1, 0), ops, location)
    assert (stats["gets"], stats["bytes_read"], stats["chunks_decoded"]) == (1, 0, 0)
    assert_everyone_reads(array.path, model)


def test_partial_write_of_fill_value_into_missing_shard_stores_nothing(tmp_path):
    array = sw.create(tmp_path / "a.zarr", shape=SHAPE, dtype=DTYPE, chunks=CHUNKS, shards=SHARDS)
    with array.write_shard((1, 1, 0)) as w:
        w[9:11, 11:14, 1:3] = 0
    assert w.stats["puts"] == 0
    assert not (array.path / "c").exists() or not any((array.path / "c").rglob("*"))
    assert_everyone_reads(array.path, np.zeros(SHAPE, DTYPE))


def test_region_covering_whole_shard_needs_no_read(tmp_path, producer, location):
    """Regions covering every inner chunk whole (not aligned to one chunk) replace the
    shard with one unconditional put and no get; the fill value everywhere deletes it."""
    data = base_data()
    array = sb.make_array(producer, tmp_path / "a.zarr", data, CHUNKS, SHARDS, location)
    model = data.copy()
    ops = [
        Op((slice(0, 3), slice(0, 10), slice(0, 8)), rand(30)),
        Op((slice(3, 8), slice(0, 10), Ellipsis), rand(31)),
    ]
    stats = merge_and_check(array, model, (0, 0, 0), ops, location)
    assert (stats["gets"], stats["puts"], stats["chunks_written"]) == (0, 1, 8)
    stats = merge_and_check(
        array, model, (2, 2, 0), [Op((slice(16, 19), slice(20, 27)), 0)], location
    )
    assert (stats["gets"], stats["puts"], stats["deletes"]) == (0, 0, 1)
    assert_everyone_reads(array.path, model)


@pytest.mark.parametrize("dtype,fill", [("float32", -1.5), ("int8", -3), ("complex64", 2 + 1j)])
def test_merge_other_dtypes(tmp_path, dtype, fill, location):
    """Other element sizes and non-zero fill values merge the same way."""
    dt = np.dtype(dtype)
    data = reference(SHAPE, dt, seed=5)
    data[ZERO_CHUNK] = fill
    array = sb.make_array("zarr", tmp_path / "a.zarr", data, CHUNKS, SHARDS, location, fill)
    model = data.copy()
    key = (slice(9, 14), slice(11, 17), slice(1, 7))
    new = reference(model[key].shape, dt, seed=6)
    shard = next(s for s in array.iter_shards() if s.index == (1, 1, 0))
    old = sb.chunk_bytes(sb.shard_path(array, shard).read_bytes(), 8, location)
    with array.write_shard(shard) as w:
        w[key] = new
        w[8, 10, 0] = fill
    model[key] = new
    model[8, 10, 0] = fill
    assert w.stats["chunks_partial"] == 8 and w.stats["chunks_decoded"] == 8
    assert sb.chunk_bytes(sb.shard_path(array, shard).read_bytes(), 8, location) != old
    np.testing.assert_array_equal(sw.open(array.path)[...], model)
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)
    np.testing.assert_array_equal(sb.read_ts(array.path), model)


# --------------------------------------------------------------------------------------
# From outside: under strace, the merge opens the shard file for reading once, never for
# writing, and renames one temp file onto it.

STRACE = "/usr/bin/strace"

CHILD = r"""
import json, sys
import numpy as np
import shardwright as sw

root, index = sys.argv[1], tuple(json.loads(sys.argv[2]))
a = sw.open(root)
shard = next(s for s in a.iter_shards() if s.index == index)
o = shard.origin
with a.write_shard(shard) as w:
    w[o[0] + 1 : o[0] + 3, o[1] + 1 : o[1] + 4, 1:3] = 4321
    w[o[0] + 4 : o[0] + 8, o[1] : o[1] + 10, 4:8] = np.full((4, 10, 4), 99, a.dtype)
print(json.dumps(w.stats))
"""

OPENAT = re.compile(r'^\d+\s+openat\(AT_FDCWD, "([^"]*)", ([A-Z_|]+)(?:, \d+)?\)\s+=\s+(-?\d+)')
RENAME = re.compile(r'^\d+\s+rename(?:at2?)?\((?:AT_FDCWD, )?"([^"]*)", (?:AT_FDCWD, )?"([^"]*)"')


def test_merge_reads_shard_once_and_renames_once(tmp_path, producer, location):
    if not os.path.exists(STRACE):
        pytest.fail(f"{STRACE} is missing: this test needs strace")
    data = base_data()
    root = (tmp_path / "a.zarr").resolve()
    array = sb.make_array(producer, root, data, CHUNKS, SHARDS, location)
    shard = next(s for s in array.iter_shards() if s.index == (1, 1, 0))
    target = str(sb.shard_path(array, shard))
    old = Path(target).read_bytes()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    log = tmp_path / "strace.log"
    cmd = [STRACE, "-f", "-qq", "-s", "4096", "-e", "trace=openat,rename,renameat,renameat2"]
    cmd += ["-o", str(log), sys.executable, str(script), str(root), json.dumps(shard.index)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (stats["gets"], stats["puts"], stats["conflicts"]) == (1, 1, 0)
    assert stats["chunks_partial"] == 1 and stats["chunks_written"] == 2
    assert stats["chunks_decoded"] == 1 and stats["chunks_kept"] == 5

    reads, writes, renames, others = 0, 0, [], []
    for line in log.read_text().splitlines():
        m = OPENAT.match(line)
        if m:
            path, flags, ret = m.groups()
            if path == target:
                if "O_WRONLY" in flags or "O_RDWR" in flags or "O_TRUNC" in flags:
                    writes += 1
                elif int(ret) >= 0:
                    reads += 1
            elif path.startswith(str(root) + "/c/") and not path.endswith(".shardwright-tmp"):
                if not os.path.isdir(path):
                    others.append(path)
            continue
        m = RENAME.match(line)
        if m and m.group(2) == target:
            renames.append(m.group(1))
    assert reads == 1, f"shard opened for reading {reads} times"
    assert writes == 0, "the shard file itself was opened for writing"
    assert len(renames) == 1, renames
    assert re.fullmatch(r"\.0\.[0-9a-f]{16}\.shardwright-tmp", Path(renames[0]).name), renames
    assert Path(renames[0]).parent == Path(target).parent
    assert others == [], f"other shard files opened: {others}"

    model = data.copy()
    o = shard.origin
    model[o[0] + 1 : o[0] + 3, o[1] + 1 : o[1] + 4, 1:3] = 4321
    model[o[0] + 4 : o[0] + 8, o[1] : o[1] + 10, 4:8] = 99
    new = Path(target).read_bytes()
    assert stats["bytes_read"] == len(old) and stats["bytes_written"] == len(new)
    old_c, new_c = sb.chunk_bytes(old, 8, location), sb.chunk_bytes(new, 8, location)
    # every slot but the partial one (0) and the two written whole (5, 7)
    touched = {0, 5, 7}
    assert [old_c[s] == new_c[s] for s in range(8) if s not in touched] == [True] * 5
    assert_everyone_reads(root, model)
