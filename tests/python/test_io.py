"""Storage I/O checked from outside the library: a child process writes shards under
``strace``, and the system calls it made are read back from the log.

Markers: the child tries to open ``/nonexistent-shardwright-marker/<label>`` (which fails
with ENOENT but shows up as an ``openat`` in the log) right after entering a write block,
right before leaving it, and after it has exited. The shard's I/O must be one temp file
opened for writing in the shard's folder, then one rename onto the shard key after the
block's exit. The temp file is opened at the exit, or inside the block for a shard whose
encoded chunks pass the writer's 1 MiB staging buffer (they are streamed to it as they
are encoded); the shard key itself is never touched before the exit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
from conftest import reference, temp_files, tree_digest, write_all

STRACE = "/usr/bin/strace"
MARKER_DIR = "/nonexistent-shardwright-marker"
TRACED = "openat,open,creat,rename,renameat,renameat2,unlink,unlinkat"

CHILD = r"""
import json, sys
import numpy as np
import shardwright as sw

MARKER_DIR = "/nonexistent-shardwright-marker"

def mark(label):
    try:
        open(f"{MARKER_DIR}/{label}")
    except FileNotFoundError:
        pass

root, plan = sys.argv[1], json.loads(sys.argv[2])
a = sw.open(root)
results = {}
for step in plan:
    op, label = step["op"], step["label"]
    if op == "map":
        mark(f"{label}-enter")
        mark(f"{label}-exit")
        stats = a.map_chunks(lambda c: np.full(c.shape, 3, a.dtype), workers=step["workers"])
        mark(f"{label}-done")
        results[label] = {k: v for k, v in stats.items() if k != "seconds"}
        continue
    try:
        with a.write_shard(tuple(step["shard"])) as w:
            mark(f"{label}-enter")
            chunks = list(w.inner_chunks())
            if op == "partial":
                chunks = chunks[: step.get("n", 1)]
            rng = np.random.default_rng(0)
            for c in chunks:
                if op in ("noise", "noise_fail"):
                    w[c] = rng.integers(0, 2**16, size=c.shape, dtype=a.dtype)
                else:
                    w[c] = np.full(c.shape, step.get("value", 1), a.dtype)
            if op in ("fail", "noise_fail"):
                raise RuntimeError("failure inside the block")
            mark(f"{label}-exit")
    except RuntimeError:
        mark(f"{label}-exit")
        results[label] = "raised"
    except Exception as exc:
        mark(f"{label}-exit")
        results[label] = type(exc).__name__
    else:
        results[label] = w.stats
    mark(f"{label}-done")
print(json.dumps(results))
"""


@dataclass
class Event:
    seq: int
    pid: int
    name: str
    args: str
    paths: list[str]
    ret: str

    @property
    def is_open(self) -> bool:
        return self.name in ("open", "openat", "creat")

    @property
    def writes(self) -> bool:
        return self.is_open and (
            "O_WRONLY" in self.args or "O_RDWR" in self.args or self.name == "creat"
        )

    @property
    def reads(self) -> bool:
        return self.is_open and not self.writes

    @property
    def is_rename(self) -> bool:
        return self.name.startswith("rename")

    @property
    def is_unlink(self) -> bool:
        return self.name.startswith("unlink")


LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(.*)$")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")


def parse_strace(text: str) -> list[Event]:
    """Events of an ``strace -f`` log, joining ``<unfinished ...>`` / ``resumed`` halves;
    each event keeps the position where its call started."""
    events: list[Event] = []
    pending: dict[int, tuple[int, str]] = {}
    for n, raw in enumerate(text.splitlines()):
        m = LINE.match(raw)
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        if rest.endswith("<unfinished ...>"):
            pending[pid] = (n, rest[: -len("<unfinished ...>")].rstrip())
            continue
        seq = n
        resumed = RESUMED.match(rest)
        if resumed:
            seq, start = pending.pop(pid, (n, resumed.group(1) + "("))
            rest = start + resumed.group(2)
        call = CALL.match(rest)
        if not call:
            continue
        name, args, ret = call.groups()
        paths = [p.encode().decode("unicode_escape") for p in QUOTED.findall(args)]
        events.append(Event(seq, pid, name, args, paths, ret))
    events.sort(key=lambda e: e.seq)
    return events


class Trace:
    def __init__(self, events: list[Event], root: Path):
        self.events = events
        self.root = str(root)

    def marker(self, label: str) -> int:
        path = f"{MARKER_DIR}/{label}"
        found = [e.seq for e in self.events if e.is_open and path in e.paths]
        assert len(found) == 1, f"marker {label!r} seen {len(found)} times"
        return found[0]

    def under_root(self, start: int, stop: int) -> list[Event]:
        """The events touching a path inside the array between two positions."""
        return [
            e
            for e in self.events
            if start < e.seq < stop
            and any(p == self.root or p.startswith(self.root + "/") for p in e.paths)
        ]

    def window(self, label: str) -> tuple[list[Event], list[Event]]:
        """(events inside the block, events from the block's exit until after it)."""
        enter, exit_, done = (self.marker(f"{label}-{k}") for k in ("enter", "exit", "done"))
        assert enter < exit_ < done
        return self.under_root(enter, exit_), self.under_root(exit_, done)


def run_traced(tmp_path: Path, root: Path, plan: list[dict]) -> tuple[Trace, dict]:
    """Run the child under strace; fail loudly when strace cannot trace."""
    if not os.path.exists(STRACE):
        pytest.fail(f"{STRACE} is missing: the I/O tests need strace")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    log = tmp_path / "strace.log"
    cmd = [
        STRACE,
        "-f",
        "-qq",
        "-s",
        "4096",
        "-e",
        f"trace={TRACED}",
        "-o",
        str(log),
        sys.executable,
        str(script),
        str(root),
        json.dumps(plan),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not log.exists():
        pytest.fail(
            "the traced child failed (is ptrace permitted?):\n"
            f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
        )
    text = log.read_text()
    if "PTRACE" in proc.stderr or "Operation not permitted" in proc.stderr:
        pytest.fail(f"strace could not attach:\n{proc.stderr[-3000:]}")
    events = parse_strace(text)
    assert any(e.is_open for e in events), "strace logged no open calls at all"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    return Trace(events, root.resolve()), results


def shard_key(root: Path, index) -> str:
    return str(root.resolve().joinpath("c", *map(str, index)))


def check_one_atomic_write(
    after: list[Event], key: str, *, existing: bool, inside: list[Event] | None = None
) -> None:
    """``inside`` (the events of a block, if it streamed) and ``after`` (from the block's
    exit on) hold exactly one atomic write of ``key``: one temp file opened for writing in
    its folder, then one rename onto it after the exit; the key itself read at most once
    (only when the shard existed), after the exit, and never written in place or removed."""
    folder = os.path.dirname(key)
    inside = inside or []
    assert all(e.writes and e.paths[0].endswith(".shardwright-tmp") for e in inside), [
        e.args for e in inside
    ]
    after = inside + after
    temp_opens = [e for e in after if e.writes]
    assert len(temp_opens) == 1, [e.args for e in temp_opens]
    temp = temp_opens[0].paths[0]
    assert os.path.dirname(temp) == folder
    assert temp != key
    assert temp.endswith(".shardwright-tmp"), temp
    assert "O_CREAT" in temp_opens[0].args
    assert int(temp_opens[0].ret) >= 0
    renames = [e for e in after if e.is_rename]
    assert len(renames) == 1, [e.args for e in renames]
    assert renames[0].paths == [temp, key]
    assert renames[0].ret.startswith("0")
    assert temp_opens[0].seq < renames[0].seq
    key_reads = [e for e in after if e.reads and key in e.paths]
    if existing:
        assert len(key_reads) == 1, [e.args for e in key_reads]
        assert key_reads[0].seq < renames[0].seq
    else:
        assert key_reads == [], [e.args for e in key_reads]
    assert not any(e.is_unlink and key in e.paths for e in after)
    # nothing else inside the array: the temp file, the key, and the folder (for fsync)
    allowed = {temp, key, *map(str, Path(key).parents)}
    for e in after:
        assert set(e.paths) <= allowed, e.args


def make_array(tmp_path: Path, **kwargs) -> tuple[Path, sw.Array]:
    root = tmp_path / "a.zarr"
    settings = {"shape": (20, 12), "dtype": "uint16", "chunks": (4, 4), "shards": (8, 8)}
    settings.update(kwargs)
    return root, sw.create(root, **settings)


# --------------------------------------------------------------------------------------


def test_parser_joins_unfinished_calls():
    log = "\n".join(
        [
            '10 openat(AT_FDCWD, "/a/b", O_RDONLY <unfinished ...>',
            '11 rename("/x/.t.shardwright-tmp", "/x/k") = 0',
            "10 <... openat resumed>) = -1 ENOENT (No such file or directory)",
            '12 openat(AT_FDCWD, "/x/y", O_WRONLY|O_CREAT|O_EXCL, 0666) = 3',
        ]
    )
    events = parse_strace(log)
    assert [(e.name, e.paths) for e in events] == [
        ("openat", ["/a/b"]),
        ("rename", ["/x/.t.shardwright-tmp", "/x/k"]),
        ("openat", ["/x/y"]),
    ]
    assert events[0].reads and events[2].writes and events[1].is_rename


def test_one_atomic_write_per_new_shard(tmp_path):
    root, a = make_array(tmp_path)
    plan = [
        {"op": "full", "shard": [0, 0], "label": "s00"},
        {"op": "full", "shard": [1, 1], "label": "s11"},
        {"op": "full", "shard": [2, 0], "label": "s20"},  # clipped at the array edge
    ]
    trace, results = run_traced(tmp_path, root, plan)
    for step in plan:
        inside, after = trace.window(step["label"])
        assert inside == [], [e.args for e in inside]  # nothing before the block exits
        check_one_atomic_write(after, shard_key(root, step["shard"]), existing=False)
        stats = results[step["label"]]
        assert stats["puts"] == 1 and stats["gets"] == 0
    # over the whole run: one rename per committed shard, onto the shard keys only
    renames = [e for e in trace.events if e.is_rename and e.paths[-1].startswith(str(root))]
    assert sorted(e.paths[-1] for e in renames) == sorted(shard_key(root, s["shard"]) for s in plan)
    assert temp_files(root) == []
    assert (a[0:8, 0:8] == 1).all() and (a[16:20, 0:8] == 1).all()


def _without_debris_sweeps(events: list[Event]) -> list[Event]:
    """``events`` but the folder listings of the crash-debris sweep (the first upload of a
    process into a folder lists it once, for stale temporaries of dead writers)."""
    return [e for e in events if "O_DIRECTORY" not in e.args]


def test_a_large_shard_streams_to_its_temp_file_inside_the_block(tmp_path):
    """4 MiB of noise per shard (64 chunks; the first MiB is staged after 16): encoded
    chunks reach the temp file while the block runs;
    the key appears only with the rename after the exit. A block that raises after
    streaming leaves no temp file and no shard."""
    settings = {"shape": (256, 128, 128), "chunks": (32, 32, 32), "shards": (128, 128, 128)}
    root, a = make_array(tmp_path, **settings)
    plan = [
        {"op": "noise", "shard": [0, 0, 0], "label": "big"},
        {"op": "noise_fail", "shard": [1, 0, 0], "label": "bigfail"},
    ]
    trace, results = run_traced(tmp_path, root, plan)
    inside, after = map(_without_debris_sweeps, trace.window("big"))
    assert len(inside) == 1, [e.args for e in inside]  # the temp file, opened while writing
    check_one_atomic_write(after, shard_key(root, (0, 0, 0)), existing=False, inside=inside)
    assert results["big"]["puts"] == 1 and results["big"]["bytes_written"] > 2**22
    assert results["bigfail"] == "raised"
    inside, after = map(_without_debris_sweeps, trace.window("bigfail"))
    events = inside + after  # the abort (in the block's __exit__) comes before the marker
    assert [e.name for e in events][:1] == ["openat"] and events[0].writes
    temp = events[0].paths[0]
    assert temp.endswith(".shardwright-tmp")
    assert [e.is_unlink for e in events[1:]] == [True] and events[1].paths == [temp]
    assert temp_files(root) == []
    assert not Path(shard_key(root, (1, 0, 0))).exists()
    assert not (root / "c" / "1").exists()  # the folders made for its temp file are gone
    rng = np.random.default_rng(0)
    expected = np.stack(
        [rng.integers(0, 2**16, size=(32, 32, 32), dtype="uint16") for _ in range(64)]
    )
    np.testing.assert_array_equal(a[0:32, 0:32, 0:32], expected[0])
    np.testing.assert_array_equal(a[96:128, 96:128, 96:128], expected[63])


def test_partial_write_of_existing_shard_reads_it_once(tmp_path):
    root, a = make_array(tmp_path)
    write_all(a, reference(a.shape, a.dtype) | 1)
    before = a[...]
    plan = [{"op": "partial", "shard": [0, 0], "label": "p", "n": 2, "value": 9}]
    trace, results = run_traced(tmp_path, root, plan)
    inside, after = trace.window("p")
    assert inside == []
    check_one_atomic_write(after, shard_key(root, (0, 0)), existing=True)
    assert results["p"]["gets"] == 1 and results["p"]["puts"] == 1
    assert results["p"]["chunks_written"] == 2 and results["p"]["chunks_kept"] == 2
    expected = before.copy()
    expected[0:4, 0:8] = 9  # the first two inner chunks of shard (0, 0)
    np.testing.assert_array_equal(a[...], expected)


def test_full_rewrite_of_existing_shard_reads_nothing(tmp_path):
    root, a = make_array(tmp_path)
    write_all(a, reference(a.shape, a.dtype) | 1)
    plan = [{"op": "full", "shard": [1, 0], "label": "r", "value": 4}]
    trace, _ = run_traced(tmp_path, root, plan)
    inside, after = trace.window("r")
    assert inside == []
    check_one_atomic_write(after, shard_key(root, (1, 0)), existing=False)
    assert (a[8:16, 0:8] == 4).all()


@pytest.mark.parametrize("existing", [False, True], ids=["new-shard", "existing-shard"])
def test_exception_inside_block_leaves_store_unchanged(tmp_path, existing):
    root, a = make_array(tmp_path)
    if existing:
        write_all(a, reference(a.shape, a.dtype) | 1)
    before = tree_digest(root)
    plan = [
        {"op": "fail", "shard": [0, 0], "label": "f1"},
        {"op": "partial", "shard": [1, 1], "label": "ok"},
        {"op": "fail", "shard": [2, 1], "label": "f2"},
    ]
    trace, results = run_traced(tmp_path, root, plan)
    assert results["f1"] == "raised" and results["f2"] == "raised"
    for label in ("f1", "f2"):
        inside, after = trace.window(label)
        assert inside == [] and after == [], [e.args for e in inside + after]
    after_digest = tree_digest(root)
    changed = {k for k in set(before) | set(after_digest) if before.get(k) != after_digest.get(k)}
    assert changed == {"c/1/1"}  # only the shard that committed
    assert temp_files(root) == []


def test_map_chunks_one_atomic_write_per_shard(tmp_path):
    root, a = make_array(tmp_path)
    plan = [{"op": "map", "label": "m", "workers": 2}]
    trace, results = run_traced(tmp_path, root, plan)
    start, stop = trace.marker("m-exit"), trace.marker("m-done")
    events = trace.under_root(start, stop)
    shards = list(a.iter_shards())
    assert results["m"]["shards_written"] == len(shards) == 6
    for shard in shards:
        key = shard_key(root, shard.index)
        folder = os.path.dirname(key)
        renames = [e for e in events if e.is_rename and e.paths[-1] == key]
        assert len(renames) == 1
        temp = renames[0].paths[0]
        assert os.path.dirname(temp) == folder and temp.endswith(".shardwright-tmp")
        opens = [e for e in events if e.writes and temp in e.paths]
        assert len(opens) == 1 and opens[0].seq < renames[0].seq
        assert not [e for e in events if e.reads and key in e.paths]
    assert len([e for e in events if e.is_rename]) == len(shards)
    assert len([e for e in events if e.writes]) == len(shards)
    assert (a[...] == 3).all()


def test_unsharded_chunk_write_is_atomic(tmp_path):
    root, a = make_array(tmp_path, shards=None)
    plan = [{"op": "full", "shard": [2, 1], "label": "u"}]
    trace, _ = run_traced(tmp_path, root, plan)
    inside, after = trace.window("u")
    assert inside == []
    check_one_atomic_write(after, shard_key(root, (2, 1)), existing=False)
    assert (a[8:12, 4:8] == 1).all()


# --------------------------------------------------------------------------------------
# No temp file remains, after normal and after failed writes (checked in-process)
# --------------------------------------------------------------------------------------


def test_no_temp_file_after_normal_writes(tmp_path):
    root, a = make_array(tmp_path)
    write_all(a, reference(a.shape, a.dtype))
    a.map_chunks(lambda c: 5, workers=3)
    with a.write_shard((0, 0)) as w:
        w[next(w.inner_chunks())] = 6
    assert temp_files(root) == []
    assert not [p for p in root.rglob("*") if "tmp" in p.name]


def test_no_temp_file_after_exception_in_block(tmp_path):
    root, a = make_array(tmp_path)
    with pytest.raises(ZeroDivisionError):
        with a.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                w[c] = 1
            1 / 0  # noqa: B018
    with pytest.raises(ValueError):
        a.map_chunks(lambda c: (_ for _ in ()).throw(ValueError("x")), workers=2)
    assert temp_files(root) == []
    assert not (root / "c").exists()


def test_no_temp_file_after_failed_put(tmp_path):
    """The shard key is a non-empty folder, so the rename at commit fails: the commit
    raises, the temp file is removed, and the folder is untouched."""
    root, a = make_array(tmp_path)
    blocker = root / "c" / "0" / "0"
    blocker.mkdir(parents=True)
    (blocker / "keep").write_bytes(b"keep")
    before = tree_digest(root)
    with pytest.raises(sw.ShardwrightError):
        with a.write_shard((0, 0)) as w:
            for c in w.inner_chunks():
                w[c] = 1
    assert temp_files(root) == []
    assert tree_digest(root) == before
    # a partial write must read the key first: that fails too, with nothing left behind
    with pytest.raises(sw.ShardwrightError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1
    assert temp_files(root) == []
    assert tree_digest(root) == before
    # once the obstacle is gone, the same write succeeds
    shutil.rmtree(blocker)
    with a.write_shard((0, 0)) as w:
        for c in w.inner_chunks():
            w[c] = 1
    assert (a[0:8, 0:8] == 1).all()
    assert temp_files(root) == []


def test_no_temp_file_after_failed_merge(tmp_path):
    root, a = make_array(tmp_path)
    write_all(a, reference(a.shape, a.dtype) | 1)
    shard = root / "c" / "0" / "0"
    shard.write_bytes(shard.read_bytes()[:-1] + b"\x00")  # break the index checksum
    before = tree_digest(root)
    with pytest.raises(sw.CorruptShardError):
        with a.write_shard((0, 0)) as w:
            w[next(w.inner_chunks())] = 1
    assert temp_files(root) == []
    assert tree_digest(root) == before
