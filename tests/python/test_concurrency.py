"""Concurrent writers of the same shard never lose each other's updates.

Processes (``subprocess``, released together through a start file) merge their own
unaligned region of one shard, over and over; the regions share inner chunks. A merge
is a conditional put: when another writer replaced the shard since it was read, the
writer re-reads and re-merges (``retries``), or raises :class:`ConflictError` naming the
shard key. Whole-shard writes need no read: they are unconditional (no get, no conflict)
and a concurrent reader sees one writer's shard whole, never a mix.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import shard_bytes as sb
import shardwright as sw
from conftest import reference

SHAPE = (16, 24)
CHUNKS = (4, 4)
SHARDS = (16, 16)
DTYPE = np.dtype("uint16")
SHARD_KEY = "c/0/0"


def region(p: int) -> tuple[slice, slice]:
    """Process ``p``'s region: two rows, columns 1..15 — unaligned, sharing inner chunks
    with its neighbours (rows 1-2 | 4-5 | 7-8 | 10-11 | 13-14 | ...)."""
    return (slice(3 * p + 1, 3 * p + 3), slice(1, 15))


def value(r: int, p: int) -> int:
    return 1000 + r * 10 + p


CHILD = r"""
import json, os, sys, time
import numpy as np
import shardwright as sw

args = json.loads(sys.argv[1])
root, p, rounds, mode = args["root"], args["p"], args["rounds"], args["mode"]
retries, go = args["retries"], args["go"]
a = sw.open(root)
rows, cols = slice(*args["rows"]), slice(*args["cols"])
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.0005)
out = {"stats": [], "failures": [], "own_ok": [], "last": None, "torn": 0}
for r in range(rounds):
    v = 1000 + r * 10 + p
    try:
        with a.write_shard((0, 0), retries=retries) as w:
            if mode == "whole":
                for c in w.inner_chunks():
                    w[c] = np.full(c.shape, v, a.dtype)
            else:
                w[rows, cols] = np.full((rows.stop - rows.start, cols.stop - cols.start), v,
                                        a.dtype)
    except Exception as exc:
        out["failures"].append([r, type(exc).__name__, str(exc),
                                isinstance(exc, sw.ConflictError)])
    else:
        out["stats"].append(w.stats)
        out["last"] = v
    if mode == "whole":
        shard = a[0:16, 0:16]
        out["torn"] += int(len(np.unique(shard)) != 1)
    else:
        own = a[rows, cols]
        expected = out["last"]
        out["own_ok"].append(bool(expected is None or (own == expected).all()))
print(json.dumps(out), flush=True)
"""

READER = r"""
import json, os, sys, time
import numpy as np
import shardwright as sw

root, go, stop = sys.argv[1], sys.argv[2], sys.argv[3]
a = sw.open(root)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.0005)
reads, torn, seen = 0, 0, set()
while not os.path.exists(stop):
    shard = a[0:16, 0:16]
    values = np.unique(shard)
    reads += 1
    torn += int(len(values) != 1)
    seen.update(int(v) for v in values)
print(json.dumps({"reads": reads, "torn": torn, "seen": sorted(seen)}), flush=True)
"""


def run_writers(
    tmp_path: Path, root: Path, n: int, rounds: int, mode: str, retries: int, reader=False
) -> tuple[list[dict], dict | None]:
    script = tmp_path / "writer.py"
    script.write_text(CHILD)
    go = tmp_path / f"go-{time.monotonic_ns()}"
    stop = tmp_path / f"stop-{time.monotonic_ns()}"
    procs = []
    for p in range(n):
        rows, cols = region(p)
        args = {
            "root": str(root),
            "p": p,
            "rounds": rounds,
            "mode": mode,
            "retries": retries,
            "go": str(go),
            "rows": [rows.start, rows.stop],
            "cols": [cols.start, cols.stop],
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script), json.dumps(args)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    reader_proc = None
    if reader:
        reader_script = tmp_path / "reader.py"
        reader_script.write_text(READER)
        reader_proc = subprocess.Popen(
            [sys.executable, str(reader_script), str(root), str(go), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    for proc in procs + ([reader_proc] if reader_proc else []):
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    reader_result = None
    if reader_proc:
        stop.touch()
        out, err = reader_proc.communicate(timeout=60)
        assert reader_proc.returncode == 0, err[-3000:]
        reader_result = json.loads(out.strip().splitlines()[-1])
    return results, reader_result


def make_base(tmp_path: Path) -> tuple[sw.Array, np.ndarray]:
    data = reference(SHAPE, DTYPE, seed=3) % 1000  # below every written value
    array = sb.make_array("zarr", tmp_path / "a.zarr", data, CHUNKS, SHARDS)
    return array, data


def test_no_lost_updates_four_processes(tmp_path):
    array, data = make_base(tmp_path)
    n, rounds = 4, 20
    results, _ = run_writers(tmp_path, array.path, n, rounds, "partial", retries=10)
    model = data.copy()
    conflicts = 0
    for p, res in enumerate(results):
        assert res["failures"] == [], res["failures"]
        assert len(res["stats"]) == rounds
        assert all(res["own_ok"]), f"process {p} saw its own committed write undone"
        for st in res["stats"]:
            assert st["puts"] == 1 and st["gets"] == 1 + st["conflicts"]
        conflicts += sum(st["conflicts"] for st in res["stats"])
        model[region(p)] = value(rounds - 1, p)
    print(f"\n[concurrency] {n} processes x {rounds} merges: {conflicts} conflicts retried")
    np.testing.assert_array_equal(sw.open(array.path)[...], model)
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)
    np.testing.assert_array_equal(sb.read_ts(array.path), model)
    assert sb.temp_leftovers(array.path) == []


def test_no_lost_updates_four_threads(tmp_path):
    """The same with threads of one process, each with its own writer."""
    array, data = make_base(tmp_path)
    n, rounds = 4, 20
    errors: list[BaseException] = []
    conflicts = [0] * n
    start = threading.Barrier(n)

    def work(p: int) -> None:
        try:
            start.wait()
            for r in range(rounds):
                with array.write_shard((0, 0)) as w:
                    w[region(p)] = value(r, p)
                conflicts[p] += w.stats["conflicts"]
                assert (array[region(p)] == value(r, p)).all()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(p,)) for p in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    model = data.copy()
    for p in range(n):
        model[region(p)] = value(rounds - 1, p)
    print(f"\n[concurrency] {n} threads x {rounds} merges: {sum(conflicts)} conflicts retried")
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)


def test_retries_zero_conflicts_are_errors_and_successes_are_kept(tmp_path):
    """With ``retries=0`` a merge that loses the race raises ConflictError naming the shard
    key and stores nothing; every write that succeeded is there."""
    n, rounds = 5, 25
    for attempt in range(3):
        work = tmp_path / f"try{attempt}"
        work.mkdir()
        array, data = make_base(work)
        results, _ = run_writers(work, array.path, n, rounds, "partial", retries=0)
        model = data.copy()
        failures = 0
        for p, res in enumerate(results):
            for _round, name, message, is_conflict in res["failures"]:
                assert is_conflict and name == "ConflictError", (name, message)
                assert f"'{SHARD_KEY}'" in message, message
                failures += 1
            assert len(res["stats"]) + len(res["failures"]) == rounds
            for st in res["stats"]:
                assert (st["puts"], st["gets"], st["conflicts"]) == (1, 1, 0)
            assert all(res["own_ok"]), f"process {p}: a failed merge changed its region"
            if res["last"] is not None:
                model[region(p)] = res["last"]
        np.testing.assert_array_equal(sb.read_zarr(array.path), model)
        np.testing.assert_array_equal(sw.open(array.path)[...], model)
        print(f"\n[concurrency] retries=0, {n} processes x {rounds}: {failures} ConflictErrors")
        if failures:
            break
    assert failures > 0, "no conflict in three runs: the test did not exercise conflicts"


def test_whole_shard_writes_are_unconditional_and_never_torn(tmp_path):
    array, _ = make_base(tmp_path)
    with array.write_shard((0, 0)) as w:  # uniform, as every later version of the shard
        w[0:16, 0:16] = 1
    n, rounds = 4, 20
    results, reader = run_writers(tmp_path, array.path, n, rounds, "whole", retries=0, reader=True)
    finals = set()
    for res in results:
        assert res["failures"] == []
        assert res["torn"] == 0
        for st in res["stats"]:
            assert (st["gets"], st["puts"], st["conflicts"], st["bytes_read"]) == (0, 1, 0, 0)
            assert st["chunks_written"] == 16
        finals.add(res["last"])
    final = sb.read_zarr(array.path, (slice(0, 16), slice(0, 16)))
    values = np.unique(final)
    assert len(values) == 1 and int(values[0]) in finals
    assert reader["torn"] == 0, reader
    print(f"\n[concurrency] whole-shard: reader saw {reader['reads']} consistent shards")


@pytest.mark.parametrize("retries", [0, 10])
def test_two_writers_in_one_process(tmp_path, retries):
    """Two open writers of the same shard in one thread: the later commit merges with the
    earlier one's result (its read happens at commit), so neither update is lost."""
    array, data = make_base(tmp_path)
    w1 = array.write_shard((0, 0), retries=retries)
    w2 = array.write_shard((0, 0), retries=retries)
    w1[region(0)] = 5000
    w2[region(1)] = 6000
    w1.commit()
    w2.commit()
    model = data.copy()
    model[region(0)] = 5000
    model[region(1)] = 6000
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)


# A merge whose result is the fill value everywhere deletes the shard. That delete must
# be as conditional as the put: if another writer committed to the shard after the merge
# read it, deleting would throw that commit away.

EMPTYING_WRITER = r"""
import sys, time
import numpy as np
import shardwright as sw

a = sw.open(sys.argv[1])
half = int(sys.argv[2])
end = time.monotonic() + float(sys.argv[3])
data = np.random.default_rng(0).integers(1, 60000, size=half, dtype=np.uint16)
n = deletes = 0
while time.monotonic() < end:
    with a.write_shard((0,), retries=1000) as w:
        w[0:half] = data  # half of inner chunk 0 (slow to decode and encode)
    with a.write_shard((0,), retries=1000) as w:
        w[0:half] = 0  # chunk 0 back to the fill value: if chunk 1 is empty, a delete
    deletes += w.stats["deletes"]
    n += 1
print(n, deletes)
"""

CHUNK_1_WRITER = r"""
import json, sys, time
import shardwright as sw

a = sw.open(sys.argv[1])
chunk = int(sys.argv[2])
end = time.monotonic() + float(sys.argv[3])
lost, n = [], 0
while time.monotonic() < end:
    v = n % 1000 + 1
    with a.write_shard((0,), retries=1000) as w:
        w[chunk + 5] = v  # one element of inner chunk 1: a merge
    time.sleep(0.003)
    got = int(a[chunk + 5])
    if got != v:
        lost.append([n, v, got])
    with a.write_shard((0,), retries=1000) as w:
        w[chunk : 2 * chunk] = 0  # chunk 1 back to the fill value
    n += 1
print(json.dumps({"rounds": n, "lost": lost}))
"""


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
def test_merge_that_empties_a_shard_never_deletes_a_concurrent_commit(tmp_path):
    """Writer A alternately fills half of inner chunk 0 and resets it to the fill value
    (a merge; when inner chunk 1 is empty too, the result is a delete of the shard).
    Writer B alternately sets one element of inner chunk 1 and resets chunk 1. After each
    of B's commits, B's element must hold B's value until B itself changes it: A may only
    delete the shard if nobody changed it since A read it."""
    chunk = 1 << 21
    array = sw.create(
        tmp_path / "a.zarr",
        shape=(2 * chunk,),
        dtype="uint16",
        chunks=(chunk,),
        shards=(2 * chunk,),
    )
    seconds = "8"
    (tmp_path / "a.py").write_text(EMPTYING_WRITER)
    (tmp_path / "b.py").write_text(CHUNK_1_WRITER)
    pa = subprocess.Popen(
        [sys.executable, str(tmp_path / "a.py"), str(array.path), str(chunk // 2), seconds],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pb = subprocess.Popen(
        [sys.executable, str(tmp_path / "b.py"), str(array.path), str(chunk), seconds],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out_a, err_a = pa.communicate(timeout=120)
    out_b, err_b = pb.communicate(timeout=120)
    assert pa.returncode == 0, err_a[-3000:]
    assert pb.returncode == 0, err_b[-3000:]
    a_rounds, a_deletes = map(int, out_a.split())
    b = json.loads(out_b.strip().splitlines()[-1])
    print(
        f"\n[concurrency] emptying merges: A {a_rounds} rounds ({a_deletes} deletes), "
        f"B {b['rounds']} rounds, B's committed writes lost: {len(b['lost'])}"
    )
    assert b["lost"] == [], (
        f"{len(b['lost'])} of B's committed writes were deleted by A's merge "
        f"(first [round, value, read back]: {b['lost'][:5]})"
    )
