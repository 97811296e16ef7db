"""``sw.add_levels`` (issue 24, items 2 and 3): the levels over a level 0 that exists,
made from it read once and never written, and extended after level 0 grew, rewriting only
the upper-level shards the new data reaches. Every level must equal TensorStore's
``ts.downsample`` of the level below."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr
from zarr.storage import MemoryStore, WrapperStore

FACTORS = (1, 1, 1, 2, 2)


class Recording(WrapperStore):
    """Records the keys of every put and delete."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.puts: list[str] = []
        self.deletes: list[str] = []

    async def set(self, key, value, *args, **kwargs):
        self.puts.append(key)
        return await self._store.set(key, value, *args, **kwargs)

    async def set_if_not_exists(self, key, value):
        self.puts.append(key)
        return await self._store.set_if_not_exists(key, value)

    async def delete(self, key):
        self.deletes.append(key)
        return await self._store.delete(key)

    def reset(self) -> None:
        self.puts.clear()
        self.deletes.clear()


def ts_level(data: np.ndarray, factors, k: int) -> np.ndarray:
    out = data
    for _ in range(k):
        out = ts.downsample(ts.array(out), list(factors), "mean").read().result()
    return out


def assert_levels(levels: sw.Levels, factors=FACTORS) -> None:
    level0 = levels[0][...]
    for k, level in enumerate(levels):
        want = ts_level(level0, factors, k)
        got = level[...]
        assert got.shape == want.shape and np.array_equal(got, want), f"level {k}"


def tczyx(rng: np.random.Generator, t: int, shape=(2, 3, 37, 45)) -> np.ndarray:
    return rng.integers(0, 65535, (t, *shape), dtype="uint16", endpoint=True)


def level0_in(store: Any, data: np.ndarray) -> sw.Array:
    a = sw.create(
        store,
        path="img/0",
        shape=data.shape,
        dtype="uint16",
        chunks=(1, 1, 3, 8, 8),
        shards=(1, 1, 3, 16, 16),
        dimension_names=["t", "c", "z", "y", "x"],
    )
    a[...] = data
    return a


def test_levels_over_a_level0_read_it_once_and_never_write_it():
    store = Recording(MemoryStore())
    data = tczyx(np.random.default_rng(1), 2)
    level0_in(store, data)
    before = {k: v for k, v in store._store._store_dict.items() if k.startswith("img/0/")}
    store.reset()
    levels = sw.add_levels(store, path="img", factors=FACTORS, levels=3)
    assert [a.shape for a in levels] == [data.shape, (2, 2, 3, 19, 23), (2, 2, 3, 10, 12)]
    assert levels.stats["bytes_read"] == data.nbytes
    assert_levels(levels)
    assert not [k for k in store.puts + store.deletes if k.startswith("img/0/")]
    after = {k: v for k, v in store._store._store_dict.items() if k.startswith("img/0/")}
    assert before.keys() == after.keys()
    assert all(before[k].to_bytes() == after[k].to_bytes() for k in before)
    assert store.puts[-1] == "img/zarr.json"  # the group metadata last
    ome = json.loads(store._store._store_dict["img/zarr.json"].to_bytes())["attributes"]["ome"]
    assert [d["path"] for d in ome["multiscales"][0]["datasets"]] == ["0", "1", "2"]


def test_appended_time_points_rewrite_only_their_shards_and_match_tensorstore():
    rng = np.random.default_rng(2)
    store = Recording(MemoryStore())
    level0 = level0_in(store, tczyx(rng, 2))
    sw.add_levels(store, path="img", factors=FACTORS, levels=3)
    level0.append(tczyx(rng, 3), axis=0)
    store.reset()
    levels = sw.add_levels(store, path="img")  # factors, levels, method: the levels' own
    assert levels[0].shape[0] == 5
    assert_levels(levels)
    upper = [k for k in store.puts if k.split("/")[1] in ("1", "2") and "/c/" in k]
    # the new time points are 2, 3, 4: their shards only (c/T/…, T the time index)
    times = {int(k.split("/c/")[1].split("/")[0]) for k in upper}
    assert times == {2, 3, 4}, sorted(upper)
    # level 1 (5, 2, 3, 19, 23) in shards (1, 1, 3, 16, 16): 2 x 2 per time point and
    # channel; level 2 (5, 2, 3, 10, 12): 1
    assert levels.stats["shards_written"] == [0, 3 * 2 * 4, 3 * 2 * 1]
    assert not [k for k in store.deletes if k.startswith("img/0/")]


def test_y_grown_from_an_odd_length_recomputes_the_partial_edge_block(tmp_path):
    rng = np.random.default_rng(3)
    data = tczyx(rng, 1, shape=(1, 2, 37, 20))
    level0 = level0_in(zarr.storage.LocalStore(tmp_path), data)
    sw.add_levels(tmp_path / "img", factors=FACTORS, levels=3)
    level0.resize(1, 1, 2, 52, 20)
    level0[:, :, :, 37:] = rng.integers(0, 65535, (1, 1, 2, 15, 20), dtype="uint16")
    levels = sw.add_levels(tmp_path / "img")
    assert levels[1].shape == (1, 1, 2, 26, 10)
    assert_levels(levels)


def test_a_group_written_by_zarr_python_gets_its_multiscale_kept_and_extended(tmp_path):
    data = np.random.default_rng(4).integers(0, 255, (40, 30), dtype="uint8")
    group = zarr.open_group(tmp_path / "img.zarr", mode="w")
    group.attrs["ome"] = {
        "version": "0.5",
        "multiscales": [
            {
                "name": "mine",
                "axes": [
                    {"name": "y", "type": "space", "unit": "micrometer"},
                    {"name": "x", "type": "space", "unit": "micrometer"},
                ],
                "datasets": [
                    {
                        "path": "0",
                        "coordinateTransformations": [
                            {"type": "scale", "scale": [0.5, 0.25]},
                            {"type": "translation", "translation": [10.0, 20.0]},
                        ],
                    }
                ],
            }
        ],
    }
    group.create_array("0", shape=data.shape, dtype="uint8", chunks=(16, 16))[...] = data
    levels = sw.add_levels(tmp_path / "img.zarr", levels=2)
    assert_levels(levels, (2, 2))
    ms = zarr.open_group(tmp_path / "img.zarr").attrs["ome"]["multiscales"][0]
    assert ms["name"] == "mine" and ms["axes"][0]["unit"] == "micrometer"
    one = ms["datasets"][1]["coordinateTransformations"]
    assert one == [
        {"type": "scale", "scale": [1.0, 0.5]},
        {"type": "translation", "translation": [10.25, 20.125]},
    ]


def test_bad_targets_and_settings_raise_typed_errors(tmp_path):
    zarr.open_group(tmp_path / "empty.zarr", mode="w")
    with pytest.raises(sw.ArrayNotFoundError, match=r"no level 0 in '.*empty\.zarr'"):
        sw.add_levels(tmp_path / "empty.zarr")
    level0_in(zarr.storage.LocalStore(tmp_path), tczyx(np.random.default_rng(5), 1))
    with pytest.raises(sw.ArrayNotFoundError, match="that is an array: give the group holding"):
        sw.add_levels(tmp_path / "img" / "0")
    with pytest.raises(sw.ShapeError, match=r"factors \(2, 2\) must have 5 values"):
        sw.add_levels(tmp_path / "img", factors=(2, 2))
    sw.add_levels(tmp_path / "img", factors=FACTORS, levels=2)
    with pytest.raises(sw.ShardwrightError, match="delete the arrays above level 0"):
        sw.add_levels(tmp_path / "img", method="max")


def test_the_cli_adds_levels(tmp_path):
    level0_in(zarr.storage.LocalStore(tmp_path), tczyx(np.random.default_rng(6), 1))
    run = subprocess.run(
        [sys.executable, "-m", "shardwright", "add-levels", str(tmp_path / "img"),
         "--factors", "1,1,1,2,2", "--levels", "3", "-q"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "add-levels: 3 level(s)" in run.stdout
    assert_levels(sw.add_levels(tmp_path / "img"))


def test_a_pyramid_whose_level0_was_appended_to_gets_its_levels_extended(tmp_path):
    rng = np.random.default_rng(7)
    image = tmp_path / "p.zarr"
    sw.pyramid(tczyx(rng, 2), image, factors=FACTORS, levels=3, chunks=(1, 1, 3, 8, 8))
    sw.open(image / "0").append(tczyx(rng, 2), axis=0)
    levels = sw.add_levels(image)  # the pyramid's own settings, from its levels' records
    assert [a.shape[0] for a in levels] == [4, 4, 4]
    assert_levels(levels)
    ms = zarr.open_group(image).attrs["ome"]["multiscales"][0]
    assert [d["path"] for d in ms["datasets"]] == ["0", "1", "2"]
