"""Regressions of issue 22 (data safety): overwrite=True never deletes the source or a
folder that is not the array's own, obstore's relative prefixes resolve where obstore
writes, a shard another process stored first is never taken for ours, and ``a.blocks``
addresses shards as zarr-python's does."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import obstore
import pytest
import shardwright as sw
import tensorstore as ts
import zarr
from zarr.core.buffer import cpu
from zarr.storage import LocalStore, ObjectStore, WrapperStore


def raw(folder: Path) -> zarr.Array:
    z = zarr.create_array(str(folder), shape=(64, 64), dtype="uint16", chunks=(16, 16))
    z[...] = 1
    return z


@pytest.mark.parametrize("build", ["pyramid", "copy"])
def test_overwrite_refuses_a_destination_holding_a_zarr_array_source(tmp_path, build):
    img = tmp_path / "img.zarr"
    raw(img / "raw")
    source = zarr.open_array(str(img / "raw"), mode="r")  # read-only: through the adapter
    run = {
        "pyramid": lambda s, d: sw.pyramid(s, d, factors=(2, 2), levels=2, overwrite=True),
        "copy": lambda s, d: sw.copy(s, d, chunks=(16, 16), overwrite=True),
    }[build]
    for dest in [img, LocalStore(str(img)), str(img / "raw"), tmp_path]:
        with pytest.raises(ValueError, match="overlap: overwrite=True would delete the source"):
            run(source, dest)
    assert (zarr.open_array(str(img / "raw"), mode="r")[...] == 1).all()
    writable = zarr.open_array(str(img / "raw"))  # a zarr LocalStore, native
    with pytest.raises(ValueError, match="overlap"):
        run(writable, LocalStore(str(img)))
    with pytest.raises(ValueError, match="overlap"):
        run(str(img / "raw"), LocalStore(str(tmp_path)))
    assert (zarr.open_array(str(img / "raw"), mode="r")[...] == 1).all()


def test_overwrite_refuses_tensorstore_and_unresolvable_sources(tmp_path):
    img = tmp_path / "img.zarr"
    raw(img / "raw")
    t = ts.open({"driver": "zarr3", "kvstore": f"file://{img}/raw/"}).result()
    with pytest.raises(ValueError, match="overlap"):
        sw.pyramid(t, img, factors=(2, 2), levels=2, overwrite=True)

    class Opaque(WrapperStore):  # a store kind shardwright cannot see into
        pass

    unknown = zarr.open_array(Opaque(LocalStore(str(img))), path="raw", mode="r")
    with pytest.raises(ValueError, match="cannot tell whether"):
        sw.copy(unknown, tmp_path / "elsewhere.zarr", chunks=(16, 16), overwrite=True)
    assert (zarr.open_array(str(img / "raw"), mode="r")[...] == 1).all()
    # a different folder is fine; data in memory overlaps nothing
    out = sw.copy(t, tmp_path / "other.zarr", chunks=(16, 16), overwrite=True)
    assert int(out[63, 63]) == 1
    out = sw.copy(np.ones((8, 8), "uint8"), img, chunks=(4, 4), overwrite=True)
    assert int(out[7, 7]) == 1


def test_places_compare_part_by_part():
    from shardwright._overlap import place_of, refuse_overwriting_the_source

    same = lambda t, o: o  # noqa: E731
    for dest in ["/", "/data", "/data/img.zarr"]:
        with pytest.raises(ValueError, match="overlap"):
            refuse_overwriting_the_source("/data/img.zarr/raw", dest, None, same)
    refuse_overwriting_the_source("/data/img.zarr/raw", "/data/img.zarr-2", None, same)
    refuse_overwriting_the_source("s3://b/img/raw", "s3://b2/img", {"region": "x"}, same)
    with pytest.raises(ValueError, match="overlap"):
        refuse_overwriting_the_source("s3a://b/img/raw", "s3://b/", None, same)
    for src, dst in [
        ("abfs://c@acct.dfs.core.windows.net/img/raw", "az://c/img"),
        ("https://acct.blob.core.windows.net/c/img/raw", "azure://c/img"),
        ("https://b.s3.eu-west-1.amazonaws.com/img/raw", "s3://b/img"),
        ("https://s3.eu-west-1.amazonaws.com/b/img/raw", "s3://b"),
        ("https://storage.googleapis.com/b/my%20img/raw", "gs://b/my img"),
        ("file:///data/img.zarr/raw", "/data/img.zarr"),
    ]:
        with pytest.raises(ValueError, match="overlap"):
            refuse_overwriting_the_source(src, dst, None, same)
    # the message never repeats a URL's query (a SAS token)
    with pytest.raises(ValueError, match="overlap") as err:
        refuse_overwriting_the_source("az://c/img/0", "az://c/img?sv=1&sig=SUPERSECRET", None, same)
    assert "SUPERSECRET" not in str(err.value)
    assert place_of(np.zeros(2)) is None
    assert place_of("file:///data/a.zarr") == ("file", "data", "a.zarr")


def test_obstore_local_store_with_a_relative_prefix_writes_where_obstore_does(
    tmp_path, monkeypatch
):
    rel = f"rel-{uuid.uuid4().hex}/target"
    monkeypatch.chdir(tmp_path)
    (tmp_path / rel).mkdir(parents=True)
    store = ObjectStore(obstore.store.LocalStore(rel))
    try:
        a = sw.create(store, path="a.zarr", shape=(8,), dtype="uint8", chunks=(4,))
        a[...] = 3
        assert (tmp_path / rel / "a.zarr" / "zarr.json").exists()
        assert not Path("/", rel).exists()
        unrelated = tmp_path / "keep"
        unrelated.mkdir()
        a = sw.create(store, path="a.zarr", shape=(8,), dtype="uint8", chunks=(4,), overwrite=True)
        assert unrelated.exists() and (tmp_path / rel / "a.zarr" / "zarr.json").exists()
        assert (zarr.open_array(str(tmp_path / rel / "a.zarr"))[...] == 0).all()
    finally:
        root = Path("/", rel.split("/")[0])
        if root.exists():
            import shutil

            shutil.rmtree(root)


@pytest.mark.parametrize("given", ["", ".", "./"])
def test_create_never_deletes_the_current_folder(tmp_path, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "thesis.txt").write_text("years of work")
    with pytest.raises(sw.ShardwrightError, match="overwrite would delete the current folder"):
        sw.create(given, shape=(4,), dtype="uint8", chunks=(2,), overwrite=True)
    assert (tmp_path / "thesis.txt").read_text() == "years of work"


def test_overwrite_never_deletes_home_or_a_folder_holding_the_current_one(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "keep.txt").write_text("x")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    for target, what in [(home, "the home folder"), (tmp_path, "a folder holding")]:
        with pytest.raises(sw.ShardwrightError, match=what):
            sw.create(target, shape=(4,), dtype="uint8", chunks=(2,), overwrite=True)
        with pytest.raises(sw.ShardwrightError, match=what):
            sw.pyramid(np.ones((4, 4), "uint8"), target, factors=(2, 2), overwrite=True)
    assert (work / "keep.txt").exists()
    sw.create(tmp_path / "src.zarr", shape=(4,), dtype="uint8", chunks=(2,))
    src = str(tmp_path / "src.zarr")
    out = subprocess.run(
        [sys.executable, "-m", "shardwright", "copy", src, ".", "--overwrite"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "overwrite would delete the current folder" in out.stderr
    assert (work / "keep.txt").exists()


class AnotherProcessStoresFirst(WrapperStore):
    """A LocalStore where, just before the engine creates a new shard, "another process"
    stores its own shard (of the same size) under the key."""

    def __init__(self, store, first: dict[str, bytes]) -> None:
        super().__init__(store)
        self.first = first

    async def set_if_not_exists(self, key, value):
        if key in self.first:
            await self._store.set(key, cpu.Buffer.from_bytes(self.first.pop(key)))
        await self._store.set_if_not_exists(key, value)


def other_process_shard(tmp_path: Path) -> bytes:
    other = sw.create(
        tmp_path / "other.zarr",
        shape=(8, 8),
        dtype="uint8",
        chunks=(4, 4),
        shards=(8, 8),
        compressor=None,
    )
    with other.write_shard((0, 0)) as w:
        w[sw.Domain((0, 4), (4, 4))] = np.full((4, 4), 7, "uint8")
    return (tmp_path / "other.zarr" / "c" / "0" / "0").read_bytes()


@pytest.mark.parametrize("retries", [0, 3])
def test_a_new_shard_another_process_stored_first_is_never_taken_for_ours(tmp_path, retries):
    settings = dict(shape=(8, 8), dtype="uint8", chunks=(4, 4), shards=(8, 8), compressor=None)
    sw.create(tmp_path / "a.zarr", **settings)
    theirs = other_process_shard(tmp_path)
    store = AnotherProcessStoresFirst(LocalStore(str(tmp_path)), {"a.zarr/c/0/0": theirs})
    a = sw.open(store, path="a.zarr")
    if retries == 0:
        with pytest.raises(sw.ConflictError):
            with a.write_shard((0, 0), retries=0) as w:
                w[sw.Domain((0, 0), (4, 4))] = np.full((4, 4), 5, "uint8")
        assert (tmp_path / "a.zarr" / "c" / "0" / "0").read_bytes() == theirs
        return
    with a.write_shard((0, 0), retries=retries) as w:
        w[sw.Domain((0, 0), (4, 4))] = np.full((4, 4), 5, "uint8")
    stored = zarr.open_array(str(tmp_path / "a.zarr"))[...]
    assert (stored[:4, :4] == 5).all() and (stored[:4, 4:] == 7).all()  # both writes kept
    assert (stored[4:] == 0).all()


def test_blocks_address_shards_as_zarr_python(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(30, 20), dtype="int16", chunks=(2, 3), shards=(10, 6))
    z = zarr.create_array({}, shape=(30, 20), dtype="int16", chunks=(2, 3), shards=(10, 6))
    for key, value in [((1, 1), -1), ((-1, slice(2, 4)), 5), ((0,), 9), ((slice(1, 3), 3), 2)]:
        a.blocks[key] = value
        z.blocks[key] = value
        np.testing.assert_array_equal(a[...], z[...])
        np.testing.assert_array_equal(a.blocks[key], z.blocks[key])
        np.testing.assert_array_equal(a.get_block_selection(key), z.get_block_selection(key))
    assert os.path.exists(tmp_path / "a.zarr" / "c" / "1" / "1")


def test_overwrite_refuses_a_dask_source_reading_the_destination(tmp_path):
    import dask.array as da
    import shardwright.dask as swd

    path = tmp_path / "a.zarr"
    a = sw.create(path, shape=(8, 8), dtype="int32", chunks=(4, 4))
    a[...] = np.arange(64, dtype="int32").reshape(8, 8)
    for darr in [da.from_array(sw.open(path), chunks=4) + 1, da.from_zarr(str(path)) * 2]:
        with pytest.raises(ValueError, match="overlap"):
            swd.to_zarr(darr, path, chunks=(4, 4), overwrite=True, scheduler="sync")
        with pytest.raises(ValueError, match="overlap"):
            sw.pyramid(darr, tmp_path, factors=(2, 2), levels=2, overwrite=True)
    assert (sw.open(path)[...] == np.arange(64).reshape(8, 8)).all()
    out = swd.to_zarr(
        da.from_array(sw.open(path), chunks=4) + 1,
        tmp_path / "b.zarr",
        chunks=(4, 4),
        overwrite=True,
        scheduler="sync",
    )
    assert out["shards_written"] == 4


def test_overwrite_resolves_a_tensorstore_source_through_links(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    raw(tmp_path / "real" / "img.zarr" / "0")
    t = ts.open({"driver": "zarr3", "kvstore": f"file://{tmp_path}/link/img.zarr/0/"}).result()
    with pytest.raises(ValueError, match="overlap"):
        sw.pyramid(t, tmp_path / "real" / "img.zarr", factors=(2, 2), levels=2, overwrite=True)
    assert (zarr.open_array(str(tmp_path / "real" / "img.zarr" / "0"))[...] == 1).all()


def test_a_path_inside_a_store_never_climbs_out_of_it(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "sibling.txt").write_text("keep")
    for path in ["..", "a/../..", "./a"]:
        with pytest.raises(ValueError, match=r"'\.' or '\.\.' part"):
            sw.create(
                LocalStore(str(tmp_path / "root")),
                path=path,
                shape=(4,),
                dtype="uint8",
                chunks=(2,),
                overwrite=True,
            )
    assert (tmp_path / "sibling.txt").read_text() == "keep"
