"""sw.create_image: level 0 written by the user's loop, the coarser levels filled as its
shards are stored (issue 24, item 1). Every level must equal TensorStore's
``ts.downsample`` chain of level 0 and ``sw.pyramid`` of the same data, whatever the
order, the write path (the seed loop, map_chunks on threads, a[...] = data, regions in
part), with shards written twice or never, and after an error and ``open_image``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shardwright as sw
from test_pyramid_tensorstore import assert_same, ts_levels

SHAPE = (2, 3, 20, 37, 45)
CHUNKS = (1, 1, 4, 8, 8)
SHARDS = (1, 1, 8, 16, 16)
FACTORS = (1, 1, 1, 2, 2)


def volume(shape=SHAPE, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4000, shape).astype("uint16")


def make(tmp_path, where="img.ome.zarr", **kw):
    settings = dict(
        shape=SHAPE,
        dtype="uint16",
        chunks=CHUNKS,
        shards=SHARDS,
        factors=FACTORS,
        levels=4,
        axes="tczyx",
    )
    settings.update(kw)
    return sw.create_image(tmp_path / where, **settings)


def check_levels(levels, data, method="mean"):
    want = ts_levels(data, FACTORS, len(levels), method)
    for k, (got, expected) in enumerate(zip(levels, want, strict=True)):
        assert_same(got[...], expected, f"level {k}")


def test_the_seed_loop_fills_every_level_as_tensorstore_downsamples(tmp_path):
    data = volume()
    with make(tmp_path) as img:
        for shard in img.iter_shards():
            with img.write_shard(shard) as w:
                for c in w.inner_chunks():
                    w[c] = data[c.slices]
    assert img.stats["shards_written"] == [a.nshards for a in img.levels]
    assert img.stats["rewritten"] == 0  # nothing recomputed: each shard stored once
    check_levels(img.levels, data)
    group = json.loads((tmp_path / "img.ome.zarr" / "zarr.json").read_text())
    datasets = group["attributes"]["ome"]["multiscales"][0]["datasets"]
    assert [d["path"] for d in datasets] == ["0", "1", "2", "3"]
    # and the same bytes as the one-pass pyramid of the data
    ref = sw.pyramid(
        data,
        tmp_path / "ref.ome.zarr",
        factors=FACTORS,
        levels=4,
        chunks=CHUNKS,
        shards=SHARDS,
        axes="tczyx",
    )
    for got, want in zip(img.levels, ref, strict=True):
        assert np.array_equal(got[...], want[...])


@pytest.mark.parametrize("how", ["map_chunks", "threads", "assign", "reversed", "regions"])
def test_every_write_path_and_order(tmp_path, how):
    data = volume(seed=1)
    img = make(tmp_path)
    level0 = img[0]
    if how == "map_chunks":
        img.map_chunks(lambda c: data[c.slices])
    elif how == "threads":
        img.map_chunks(lambda c: data[c.slices], threads=2)
    elif how == "assign":
        level0[...] = data
    elif how == "reversed":
        for shard in reversed(list(level0.iter_shards())):
            with img.write_shard(shard) as w:
                w[shard.slices] = data[shard.slices]
    else:
        # unaligned regions: chunks written in part, completed from what was stored
        for shard in level0.iter_shards():
            s = shard.slices
            cut = s[2].start + 3
            top = (*s[:2], slice(s[2].start, min(cut, s[2].stop)), *s[3:])
            rest = (*s[:2], slice(min(cut, s[2].stop), s[2].stop), *s[3:])
            for part in (top, rest):
                with img.write_shard(shard) as w:
                    w[part] = data[part]
    levels = img.close()
    check_levels(levels, data)


def test_unwritten_shards_read_as_the_fill_value_at_every_level(tmp_path):
    data = volume(seed=2)
    img = make(tmp_path, fill_value=7)
    shards = list(img.iter_shards())
    expected = np.full(SHAPE, 7, "uint16")
    for shard in shards[::3]:
        with img.write_shard(shard) as w:
            w[shard.slices] = data[shard.slices]
        expected[shard.slices] = data[shard.slices]
    levels = img.close()
    check_levels(levels, expected)


def test_a_shard_written_again_after_its_levels_were_made_is_recomputed(tmp_path):
    data = volume(seed=3)
    img = make(tmp_path)
    img.map_chunks(lambda c: data[c.slices])
    first = next(iter(img[0].iter_shards()))
    data[first.slices] = 1
    with img.write_shard(first) as w:
        w[first.slices] = data[first.slices]
    levels = img.close()
    assert levels.stats["rewritten"] > 0
    check_levels(levels, data)


def test_an_error_stores_whole_shards_and_open_image_continues(tmp_path):
    data = volume(seed=4)
    shards = list(make(tmp_path, "probe.zarr").iter_shards())
    with pytest.raises(RuntimeError, match="stop"):
        with make(tmp_path) as img:
            for n, shard in enumerate(img.iter_shards()):
                with img.write_shard(shard) as w:
                    for c in w.inner_chunks():
                        if n == len(shards) // 2 and c.index[-1] == shard.index[-1] * 2 + 1:
                            raise RuntimeError("stop")
                        w[c] = data[c.slices]
    group = json.loads((tmp_path / "img.ome.zarr" / "zarr.json").read_text())
    assert "ome" not in group["attributes"]  # not complete: no OME metadata yet
    with sw.open_image(tmp_path / "img.ome.zarr") as img:
        left = list(img.iter_shards())
        assert len(left) == len(shards) - len(shards) // 2
        for shard in left:
            with img.write_shard(shard) as w:
                w[shard.slices] = data[shard.slices]
    check_levels(img.levels, data)
    # create_image(resume=True) is the same as open_image
    again = make(tmp_path, resume=True)
    assert len(again.iter_shards()) == 0
    again.close()


def test_zarr_python_reads_the_image(tmp_path):
    zarr = pytest.importorskip("zarr")
    data = volume(seed=5)
    with make(tmp_path) as img:
        img.map_chunks(lambda c: data[c.slices])
    group = zarr.open_group(tmp_path / "img.ome.zarr", mode="r")
    want = ts_levels(data, FACTORS, 4, "mean")
    for k in range(4):
        assert np.array_equal(group[str(k)][...], want[k])


def test_settings_are_checked_before_anything_is_written(tmp_path):
    with pytest.raises(sw.ShapeError, match="factors"):
        make(tmp_path, factors=(2, 2))
    assert not (tmp_path / "img.ome.zarr").exists()
    with pytest.raises(sw.ShardwrightError, match="exists already"):
        make(tmp_path)
        make(tmp_path)
    closed = make(tmp_path, "c.zarr")
    closed.close()
    with pytest.raises(sw.ShardwrightError, match="closed"):
        closed.close()


def test_while_open_the_levels_are_the_images_and_level0_keeps_its_shape(tmp_path):
    img = make(tmp_path)
    with pytest.raises(sw.ReadOnlyError, match="coarser level of an open image"):
        img[1][0, 0, 0, 0, 0] = 1
    with pytest.raises(sw.ShapeError, match="keeps the shape its levels were planned for"):
        img[0].append(np.zeros((1, *SHAPE[1:]), "uint16"))
    levels = img.close()
    levels[1][0, 0, 0, 0, 0] = 1  # a finished image's levels are ordinary arrays


KILLED = """
import os, sys
import numpy as np, shardwright as sw
sys.path.insert(0, {tests!r})
from test_image import volume, SHAPE, CHUNKS, SHARDS, FACTORS
data = volume(seed=6)
img = sw.create_image({dest!r}, shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS,
                      factors=FACTORS, levels=4, axes="tczyx")
for n, shard in enumerate(img.iter_shards()):
    if n == {stop}:
        os._exit(3)  # killed: no abandon, no finish
    with img.write_shard(shard) as w:
        w[shard.slices] = data[shard.slices]
"""


def test_a_killed_writer_leaves_whole_shards_and_open_image_finishes(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    dest = tmp_path / "killed.ome.zarr"
    script = KILLED.format(tests=str(Path(__file__).parent), dest=str(dest), stop=17)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    data = volume(seed=6)
    with sw.open_image(dest) as img:
        for shard in img.iter_shards():
            with img.write_shard(shard) as w:
                w[shard.slices] = data[shard.slices]
    check_levels(img.levels, data)


def test_physical_metadata_is_what_sw_pyramid_writes_and_validates(tmp_path):
    data = volume(seed=7)
    physical = dict(
        scale=(1, 1, 2.0, 0.406, 0.406),
        translation=(0, 0, 10.0, -3.0, 5.0),
        units=[None, None, "µm", "um", "micrometer"],
        channels=[{"label": "DAPI", "color": "0000FF"}, "GFP", {"label": "RFP", "color": "red"}],
        name="fish",
    )
    with make(tmp_path, **physical) as img:
        img.map_chunks(lambda c: data[c.slices])
    sw.pyramid(
        data,
        tmp_path / "ref.ome.zarr",
        factors=FACTORS,
        levels=4,
        chunks=CHUNKS,
        shards=SHARDS,
        axes="tczyx",
        **physical,
    )
    got = json.loads((tmp_path / "img.ome.zarr" / "zarr.json").read_text())["attributes"]
    want = json.loads((tmp_path / "ref.ome.zarr" / "zarr.json").read_text())["attributes"]
    assert got["ome"] == want["ome"]
    scales = [
        d["coordinateTransformations"][0]["scale"] for d in got["ome"]["multiscales"][0]["datasets"]
    ]
    assert scales[3] == [1, 1, 2.0, 0.406 * 8, 0.406 * 8]
    windows = [c["window"] for c in got["ome"]["omero"]["channels"]]
    top = img.levels[3][...]
    assert [w["min"] for w in windows] == [int(top[:, c].min()) for c in range(3)]
    models = pytest.importorskip("ome_zarr_models.v05.image")
    models.Image.from_zarr(__import__("zarr").open_group(tmp_path / "img.ome.zarr", mode="r"))


def test_add_levels_over_a_loop_written_level0_makes_the_same_image(tmp_path):
    data = volume(seed=8)
    physical = dict(
        scale=(1, 1, 2.0, 0.406, 0.406),
        units=[None, None, "µm", "µm", "µm"],
        channels=["a", "b", "c"],
        name="same",
    )
    with make(tmp_path, **physical) as img:
        img.map_chunks(lambda c: data[c.slices])
    a = sw.create(
        tmp_path / "loop.ome.zarr" / "0",
        shape=SHAPE,
        dtype="uint16",
        chunks=CHUNKS,
        shards=SHARDS,
        dimension_names=list("tczyx"),
    )
    a.map_chunks(lambda c: data[c.slices])
    before = {
        p: p.read_bytes() for p in (tmp_path / "loop.ome.zarr" / "0").rglob("*") if p.is_file()
    }
    levels = sw.add_levels(tmp_path / "loop.ome.zarr", factors=FACTORS, levels=4, **physical)
    after = {
        p: p.read_bytes() for p in (tmp_path / "loop.ome.zarr" / "0").rglob("*") if p.is_file()
    }
    assert before == after  # level 0 untouched
    assert levels.stats["bytes_read"] == data.nbytes  # read once
    for got, want in zip(levels, img.levels, strict=True):
        assert np.array_equal(got[...], want[...])
    ome = [
        json.loads((tmp_path / d / "zarr.json").read_text())["attributes"]["ome"]
        for d in ("img.ome.zarr", "loop.ome.zarr")
    ]
    assert ome[0] == ome[1]


def test_a_rewrite_in_a_session_that_stops_is_recomputed_when_reopened(tmp_path):
    data = volume(seed=9)
    with make(tmp_path) as img:
        img.map_chunks(lambda c: data[c.slices])
    group = tmp_path / "img.ome.zarr" / "zarr.json"
    img = sw.open_image(tmp_path / "img.ome.zarr")
    first = next(iter(img[0].iter_shards()))
    data[first.slices] = 3
    with img.write_shard(first) as w:
        w[first.slices] = data[first.slices]
    # the levels no longer match level 0: the image is not complete until finished
    assert "ome" not in json.loads(group.read_text())["attributes"]
    img.abandon()  # (or a crash) before the levels were made again
    with sw.open_image(tmp_path / "img.ome.zarr") as again:
        pass
    assert again.stats["rewritten"] >= 1
    check_levels(again.levels, data)
    assert "ome" in json.loads(group.read_text())["attributes"]


def test_more_of_level0_into_a_finished_image_reaches_its_levels(tmp_path):
    data = volume(seed=10)
    written = np.zeros(SHAPE, "uint16")
    img = make(tmp_path)
    shards = list(img.iter_shards())
    for shard in shards[: len(shards) // 2]:
        with img.write_shard(shard) as w:
            w[shard.slices] = data[shard.slices]
        written[shard.slices] = data[shard.slices]
    img.close()
    img = sw.open_image(tmp_path / "img.ome.zarr")
    for shard in shards[len(shards) // 2 :]:
        with img.write_shard(shard) as w:
            w[shard.slices] = data[shard.slices]
    img.abandon()
    with sw.open_image(tmp_path / "img.ome.zarr") as img:
        pass
    check_levels(img.levels, data)


def test_a_commit_after_close_stores_nothing(tmp_path):
    img = make(tmp_path)
    writer = img.write_shard((0, 0, 0, 0, 0))
    writer[0:1, 0:1, 0:8, 0:16, 0:16] = 5
    img.close()
    with pytest.raises(sw.ShardwrightError, match="was not stored: the image is closed"):
        writer.commit()
    assert not img[0][0, 0, :8, :16, :16].any()


def test_add_levels_sees_growth_inside_a_level1_element(tmp_path):
    # level 0 grows from 37 to 38 rows: level 1 keeps 19 rows, its last one changes
    data = volume(seed=11)
    with make(tmp_path) as img:
        img.map_chunks(lambda c: data[c.slices])
    extra = volume((2, 3, 20, 1, 45), seed=12)
    level0 = sw.open(tmp_path / "img.ome.zarr" / "0")
    level0.append(extra, axis=3)
    sw.add_levels(tmp_path / "img.ome.zarr")
    check_levels(
        [sw.open(tmp_path / "img.ome.zarr" / str(k)) for k in range(4)],
        np.concatenate([data, extra], axis=3),
    )
    # the same for sw.pyramid's images
    sw.pyramid(
        data,
        tmp_path / "p.ome.zarr",
        factors=FACTORS,
        levels=4,
        chunks=CHUNKS,
        shards=SHARDS,
        axes="tczyx",
    )
    sw.open(tmp_path / "p.ome.zarr" / "0").append(extra, axis=3)
    sw.add_levels(tmp_path / "p.ome.zarr")
    check_levels(
        [sw.open(tmp_path / "p.ome.zarr" / str(k)) for k in range(4)],
        np.concatenate([data, extra], axis=3),
    )


def test_one_level_with_channels_gets_windows_from_the_data(tmp_path):
    data = volume(seed=13)
    with make(tmp_path, levels=1, channels=["a", "b", "c"]) as img:
        img.map_chunks(lambda c: data[c.slices])
    group = json.loads((tmp_path / "img.ome.zarr" / "zarr.json").read_text())
    windows = [c["window"] for c in group["attributes"]["ome"]["omero"]["channels"]]
    assert [(w["min"], w["max"]) for w in windows] == [
        (int(data[:, c].min()), int(data[:, c].max())) for c in range(3)
    ]


def _rewrite_first_shard_and_abandon(tmp_path, data):
    with make(tmp_path) as img:
        img.map_chunks(lambda c: data[c.slices])
    img = sw.open_image(tmp_path / "img.ome.zarr")
    first = next(iter(img[0].iter_shards()))
    data[first.slices] = 200
    with img.write_shard(first) as w:
        w[first.slices] = data[first.slices]
    img.abandon()
    return tmp_path / "img.ome.zarr"


def test_create_image_resume_honours_the_journal_as_open_image_does(tmp_path):
    data = volume(seed=14)
    _rewrite_first_shard_and_abandon(tmp_path, data)
    with make(tmp_path, resume=True) as img:
        pass
    check_levels(img.levels, data)


def test_add_levels_recomputes_an_abandoned_images_rewritten_shards(tmp_path):
    data = volume(seed=15)
    dest = _rewrite_first_shard_and_abandon(tmp_path, data)
    levels = sw.add_levels(dest)
    check_levels(levels, data)
    record = json.loads((dest / "zarr.json").read_text())["attributes"]["shardwright"]
    assert "rewritten" not in record and record["level0_shape"] == list(SHAPE)
    # the physical metadata recorded at creation came back with the OME metadata
    group = json.loads((dest / "zarr.json").read_text())["attributes"]["ome"]
    assert group["multiscales"][0]["axes"][0]["name"] == "t"
