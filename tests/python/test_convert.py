"""sw.convert and `shardwright convert` (issue 25): TIFF, BigTIFF, OME-TIFF, ImageJ
hyperstacks and folders of slices to OME-Zarr 0.5 in one pass, with the file's metadata
carried; every level checked against tifffile's decoding and TensorStore's downsampling,
the group against the OME-Zarr 0.5 schema (ome-zarr-models)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import tifffile
import zarr


def pattern(shape: tuple[int, ...], dtype: str = "uint16") -> np.ndarray:
    """Values that differ along every axis and are not smooth (so a misplaced tile shows)."""
    grids = np.indices(shape, dtype="int64")
    weights = [7, 13, 31, 17, 3][-len(shape) :]
    values = sum(w * g for w, g in zip(weights, grids, strict=True)) + (grids[-1] * grids[-2]) % 29
    return (values % np.iinfo(dtype).max if np.dtype(dtype).kind in "ui" else values).astype(dtype)


def expected_levels(data: np.ndarray, factors: list[int], count: int) -> list[np.ndarray]:
    out = [data]
    for _ in range(count - 1):
        out.append(ts.downsample(ts.array(out[-1]), factors, "mean").read().result())
    return out


def ome_of(dest: Path) -> dict:
    return zarr.open_group(str(dest), mode="r").attrs.asdict()["ome"]


def check_levels(levels: list[sw.Array], data: np.ndarray, factors: list[int]) -> None:
    for got, want in zip(levels, expected_levels(data, factors, len(levels)), strict=True):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got[...], want)


# --------------------------------------------------------------------------------------
# the metadata carried
# --------------------------------------------------------------------------------------


def test_an_ome_tiff_keeps_its_axes_pixel_sizes_and_channels(tmp_path):
    data = pattern((2, 3, 8, 96, 80))
    tif = tmp_path / "cells.ome.tif"
    tifffile.imwrite(
        tif,
        data,
        ome=True,
        tile=(32, 32),
        compression="zlib",
        metadata={
            "axes": "TCZYX",
            "PhysicalSizeX": 0.406,
            "PhysicalSizeY": 0.406,
            "PhysicalSizeZ": 2.0,
            "PhysicalSizeXUnit": "µm",
            "PhysicalSizeYUnit": "µm",
            "PhysicalSizeZUnit": "µm",
            "Channel": {"Name": ["DAPI", "GFP", "RFP"]},
        },
    )
    dest = tmp_path / "cells.ome.zarr"
    levels = sw.convert(tif, dest, chunks=(1, 1, 8, 32, 32), shards=(1, 1, 8, 64, 64))
    # z steps of 2 µm against 0.406 µm pixels: z is kept, y and x halved
    factors = [1, 1, 1, 2, 2]
    assert len(levels) == 3  # 96x80 -> 48x40 -> 24x20: both fit one 32x32 chunk
    check_levels(levels, data, factors)
    ome = ome_of(dest)
    models = pytest.importorskip("ome_zarr_models.v05.image")  # 3.12+ only
    models.Image.from_zarr(zarr.open_group(str(dest), mode="r"))
    multiscale = ome["multiscales"][0]
    assert [a["name"] for a in multiscale["axes"]] == list("tczyx")
    assert [a.get("unit") for a in multiscale["axes"]][2:] == ["micrometer"] * 3
    scale = multiscale["datasets"][1]["coordinateTransformations"][0]["scale"]
    assert scale == pytest.approx([1.0, 1.0, 2.0, 0.812, 0.812])
    assert [c["label"] for c in ome["omero"]["channels"]] == ["DAPI", "GFP", "RFP"]


def test_explicit_arguments_override_what_the_file_says(tmp_path):
    data = pattern((2, 64, 64))
    tif = tmp_path / "two.ome.tif"
    tifffile.imwrite(
        tif, data, ome=True, metadata={"axes": "CYX", "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5}
    )
    dest = tmp_path / "two.zarr"
    sw.convert(
        tif,
        dest,
        levels=2,
        scale=(1, 0.25, 0.25),
        units=[None, "nm", "nm"],
        channels=[{"label": "a", "color": "red"}, "b"],
        factors=(1, 2, 2),
    )
    ome = ome_of(dest)
    datasets = ome["multiscales"][0]["datasets"]
    assert datasets[0]["coordinateTransformations"][0]["scale"] == [1.0, 0.25, 0.25]
    assert ome["multiscales"][0]["axes"][1]["unit"] == "nanometer"
    assert ome["omero"]["channels"][0]["color"] == "FF0000"
    assert ome["omero"]["channels"][1]["label"] == "b"


def test_an_imagej_hyperstack_keeps_its_order_and_spacing(tmp_path):
    data = pattern((3, 4, 2, 40, 48))  # T Z C Y X, as ImageJ stores it
    tif = tmp_path / "hyper.tif"
    tifffile.imwrite(
        tif,
        data,
        imagej=True,
        resolution=(1 / 0.5, 1 / 0.5),
        metadata={"axes": "TZCYX", "spacing": 1.5, "unit": "um", "finterval": 2.0},
    )
    dest = tmp_path / "hyper.zarr"
    levels = sw.convert(tif, dest, levels=2, chunks=(1, 1, 4, 16, 16))
    tczyx = data.transpose(0, 2, 1, 3, 4)
    check_levels(levels, tczyx, [1, 1, 1, 2, 2])  # 1.5 µm z steps, 0.5 µm pixels: z kept
    axes = ome_of(dest)["multiscales"][0]["axes"]
    assert [a["name"] for a in axes] == list("tczyx")
    scale = ome_of(dest)["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"]
    assert scale == pytest.approx([2.0, 1.0, 1.5, 0.5, 0.5])


@pytest.mark.parametrize(
    "options",
    [
        {"compression": None},
        {"compression": "lzw", "rowsperstrip": 7},
        {"compression": "zlib", "tile": (16, 32)},
        {"compression": "zstd", "tile": (32, 16)},
        {"compression": "packbits"},
        {"compression": None, "bigtiff": True, "tile": (16, 16)},
        {"compression": "lzw", "byteorder": ">"},
    ],
    ids=["raw", "lzw-strips", "zlib-tiles", "zstd-tiles", "packbits", "bigtiff", "big-endian"],
)
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "float32"])
def test_every_layout_and_compression_reads_exactly(tmp_path, options, dtype):
    data = pattern((5, 45, 70), dtype)
    tif = tmp_path / "stack.tif"
    tifffile.imwrite(tif, data, **options)
    levels = sw.convert(tif, tmp_path / "s.zarr", levels=1, chunks=(2, 16, 16))
    np.testing.assert_array_equal(levels[0][...], tifffile.imread(tif))


def test_a_folder_and_a_glob_of_slices_stack_along_z(tmp_path):
    slices = tmp_path / "slices"
    slices.mkdir()
    data = pattern((6, 40, 30))
    for z in range(6):
        tifffile.imwrite(slices / f"slice_{z:03}.tif", data[z], compression="lzw")
    (slices / "notes.txt").write_text("not a slice")
    for source in (slices, str(slices / "slice_*.tif")):
        dest = tmp_path / f"z{len(str(source))}.zarr"
        levels = sw.convert(source, dest, levels=2, chunks=(2, 16, 16))
        check_levels(levels, data, [2, 2, 2])
        assert [a["name"] for a in ome_of(dest)["multiscales"][0]["axes"]] == ["z", "y", "x"]


def test_levels_1_is_a_plain_conversion_and_pyramid_and_copy_read_tiffs_too(tmp_path):
    data = pattern((4, 64, 64))
    tif = tmp_path / "s.tif"
    tifffile.imwrite(tif, data, tile=(32, 32), compression="zstd", photometric="minisblack")
    (level0,) = sw.convert(tif, tmp_path / "plain.zarr", levels=1)
    np.testing.assert_array_equal(level0[...], data)
    copied = sw.copy(tif, tmp_path / "copy.zarr", chunks=(1, 32, 32))
    np.testing.assert_array_equal(copied[...], data)
    levels = sw.pyramid(str(tif), tmp_path / "p.zarr", factors=(1, 2, 2), levels=2)
    check_levels(levels, data, [1, 2, 2])


def test_anything_pyramid_takes_converts_with_default_factors(tmp_path):
    data = pattern((2, 32, 32))
    levels = sw.convert(data, tmp_path / "n.zarr", levels=2, chunks=(1, 16, 16))
    check_levels(levels, data, [2, 2, 2])


def test_zarr_python_and_tensorstore_read_the_result(tmp_path):
    data = pattern((3, 50, 60))
    tif = tmp_path / "s.tif"
    tifffile.imwrite(tif, data, compression="zlib", tile=(16, 16), photometric="minisblack")
    dest = tmp_path / "s.zarr"
    sw.convert(tif, dest, levels=2, chunks=(1, 16, 16), shards=(2, 32, 32))
    np.testing.assert_array_equal(zarr.open_array(str(dest / "0"), mode="r")[...], data)
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(dest / "0")}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), data)


# --------------------------------------------------------------------------------------
# resume, overwrite and the command line
# --------------------------------------------------------------------------------------


def test_a_stopped_conversion_resumes_exactly(tmp_path):
    data = pattern((8, 128, 128))
    tif = tmp_path / "s.tif"
    tifffile.imwrite(tif, data, tile=(32, 32), compression="zstd")
    dest = tmp_path / "s.zarr"
    options = {"levels": 3, "chunks": (2, 16, 16), "shards": (4, 32, 32)}

    def stop_after_five(progress):
        if progress["shards_done"] == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sw.convert(tif, dest, progress=stop_after_five, **options)
    assert not (dest / "zarr.json").exists()  # the group is written last
    levels = sw.convert(tif, dest, resume=True, **options)
    assert sum(levels.stats["shards_skipped"]) >= 5
    check_levels(levels, data, [2, 2, 2])


KILLED = """
import sys, time, shardwright as sw
print("started", flush=True)
sw.convert(sys.argv[1], sys.argv[2], levels=3, chunks=(4, 32, 32), shards=(8, 64, 64),
           progress=lambda event: time.sleep(0.01), resume=True)
"""


def every_file(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_conversion_killed_at_random_resumes_exactly_with_no_temporary_files(tmp_path, seed):
    data = pattern((32, 256, 256))
    tif = tmp_path / "s.ome.tif"
    tifffile.imwrite(
        tif, data, tile=(64, 64), compression="zlib", ome=True, metadata={"axes": "ZYX"}
    )
    dest = tmp_path / "s.zarr"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tif), str(dest)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 60
    # a stored shard, not the hidden temporary file a shard streams into before its commit
    # (on a loaded machine the kill could land before the first commit: nothing to skip)
    while not any(
        p.parent.name != "s.zarr" and not p.name.startswith(".")
        for p in every_file(dest)
        if dest.exists()
    ):
        assert time.monotonic() < deadline, "no shard stored within 60 s"
        time.sleep(0.005)
    time.sleep(random.Random(seed).uniform(0.0, 0.5))  # the whole run takes about 1.5 s
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the conversion ended before the kill"
    levels = sw.convert(tif, dest, levels=3, chunks=(4, 32, 32), shards=(8, 64, 64), resume=True)
    assert sum(levels.stats["shards_skipped"]) > 0
    check_levels(levels, data, [2, 2, 2])
    hidden = [p for p in every_file(dest) if p.name.startswith(".")]
    assert hidden == [], hidden


def test_overwrite_never_deletes_the_tiff(tmp_path):
    tif = tmp_path / "data" / "s.tif"
    tif.parent.mkdir()
    tifffile.imwrite(tif, pattern((2, 16, 16)), photometric="minisblack")
    with pytest.raises(ValueError, match="overlap"):
        sw.convert(tif, tmp_path / "data", overwrite=True)
    assert tif.is_file()


def test_the_command_line_converts_with_the_same_options(tmp_path, capfd):
    data = pattern((2, 4, 64, 64))
    tif = tmp_path / "c.ome.tif"
    tifffile.imwrite(
        tif,
        data,
        ome=True,
        metadata={"axes": "CZYX", "PhysicalSizeX": 0.3, "PhysicalSizeY": 0.3, "PhysicalSizeZ": 0.5},
    )
    dest = tmp_path / "c.zarr"
    code = sw._core.run_cli(
        ["shardwright", "convert", str(tif), str(dest), "--levels", "2", "--chunks", "1,2,32,32"]
    )
    assert code == 0, capfd.readouterr().err
    check_levels([sw.open(dest / "0"), sw.open(dest / "1")], data, [1, 2, 2, 2])
    scale = ome_of(dest)["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"]
    assert scale == pytest.approx([1.0, 0.5, 0.3, 0.3])
    code = sw._core.run_cli(["shardwright", "info", str(tif)])
    out = capfd.readouterr().out
    assert code == 0 and "(2, 4, 64, 64)" in out.replace("[", "(").replace("]", ")")


def test_glob_sources_need_no_shell(tmp_path):
    slices = tmp_path / "s"
    slices.mkdir()
    for z in range(3):
        tifffile.imwrite(slices / f"{z}.tiff", pattern((16, 16)) + z)
    levels = sw.convert(os.fspath(slices) + "/*.tiff", tmp_path / "g.zarr", levels=1)
    assert levels[0].shape == (3, 16, 16)


def test_overwrite_never_deletes_tiffs_a_glob_matches(tmp_path):
    for pos in (1, 2):
        (tmp_path / "acq" / f"pos{pos}").mkdir(parents=True)
        tifffile.imwrite(tmp_path / "acq" / f"pos{pos}" / "img.tif", pattern((16, 16)))
    with pytest.raises(ValueError, match="overlap"):
        sw.convert(
            str(tmp_path / "acq" / "pos*" / "img.tif"), tmp_path / "acq" / "pos1", overwrite=True
        )
    assert (tmp_path / "acq" / "pos1" / "img.tif").is_file()


def test_a_folder_of_slices_with_resolution_tags_is_halved_along_z_too(tmp_path):
    slices = tmp_path / "slices"
    slices.mkdir()
    data = pattern((8, 32, 32))
    for z in range(8):  # 0.1 µm pixels (100,000 per cm); no z step anywhere
        tifffile.imwrite(
            slices / f"{z}.tif", data[z], resolution=(1e5, 1e5), resolutionunit="CENTIMETER"
        )
    dest = tmp_path / "s.zarr"
    levels = sw.convert(slices, dest, levels=2, chunks=(4, 16, 16))
    assert levels[1].shape == (4, 16, 16)
    scale = ome_of(dest)["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"]
    assert scale == pytest.approx([1.0, 0.1, 0.1])


def test_axes_given_take_the_file_metadata_by_name(tmp_path):
    data = pattern((4, 32, 32))
    tif = tmp_path / "frames.tif"
    tifffile.imwrite(tif, data, imagej=True, metadata={"axes": "TYX", "finterval": 2.0})
    dest = tmp_path / "z.zarr"
    sw.convert(tif, dest, axes="zyx", levels=1)  # the frames called z: no time unit on z
    axes = ome_of(dest)["multiscales"][0]["axes"]
    assert [a["name"] for a in axes] == ["z", "y", "x"]
    assert "unit" not in axes[0] or axes[0]["unit"] != "second"
    with pytest.raises(sw.ShapeError, match=r"name 2 axes; the source has 3"):
        sw.convert(tif, tmp_path / "w.zarr", axes="yx")


def test_a_glob_source_refuses_only_destinations_holding_its_matches(tmp_path):
    slices = tmp_path / "slices"
    slices.mkdir()
    for z in range(2):
        tifffile.imwrite(slices / f"{z}.tif", pattern((16, 16)))
    glob_source = str(slices / "*.tif")
    for build in (
        lambda dest: sw.pyramid(glob_source, dest, factors=(1, 2, 2), levels=1, overwrite=True),
        lambda dest: sw.copy(glob_source, dest, overwrite=True),
        lambda dest: sw.convert(glob_source, dest, levels=1, overwrite=True),
    ):
        with pytest.raises(ValueError, match="overlap"):
            build(slices)
        with pytest.raises(ValueError, match="overlap"):
            build(tmp_path)
        build(slices / "out.zarr")  # beside the slices, in their folder: fine
    assert sorted(p.name for p in slices.glob("*.tif")) == ["0.tif", "1.tif"]


def test_a_missing_tiff_path_says_no_tiff_files(tmp_path):
    with pytest.raises(sw.ArrayNotFoundError, match="no TIFF files at"):
        sw.convert(tmp_path / "scan.ome.tif", tmp_path / "o.zarr")


def test_an_image_started_empty_reopens_after_fewer_frames_than_a_shard(tmp_path):
    dest = tmp_path / "acq.ome.zarr"
    img = sw.create_image(
        dest, shape=(0, 16, 16), dtype="uint16", chunks=(2, 8, 8), shards=(64, 16, 16),
        factors=(1, 2, 2), levels=2, axes="tyx",
    )  # fmt: skip
    with img.appender(0) as ap:
        for t in range(3):
            ap.append(np.full((16, 16), t, "uint16"))
    again = sw.open_image(dest)
    assert [a.shards for a in again.levels] == [(64, 16, 16), (64, 8, 8)]
    with again.appender(0) as ap:
        ap.append(np.full((16, 16), 3, "uint16"))
    assert sw.open(dest / "1")[:, 0, 0].tolist() == [0, 1, 2, 3]
