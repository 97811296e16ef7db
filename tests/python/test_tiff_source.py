"""``_core.open_tiff``: TIFF files tifffile writes read back as tifffile reads them, the
metadata dict, and the error classes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shardwright as sw
import tifffile
from shardwright import _core


def read_all(source: _core.Source) -> np.ndarray:
    shape = source.shape
    return source.read([0] * len(shape), shape).view(source.dtype).reshape(shape)


def ramp(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    values = np.arange(int(np.prod(shape)), dtype=np.int64) * 7919 % 251
    return values.astype(dtype).reshape(shape)


LAYOUTS = [
    ("none-strips", (3, 40, 50), "uint16", {"rowsperstrip": 7}),
    ("lzw", (40, 50), "uint8", {"compression": "lzw"}),
    ("zlib-predictor", (2, 33, 47), "uint16", {"compression": "zlib", "predictor": True}),
    ("zstd-tiles-edges", (2, 45, 70), "uint16", {"compression": "zstd", "tile": (16, 32)}),
    ("packbits", (40, 50), "int8", {"compression": "packbits"}),
    ("bigtiff-float", (2, 20, 30), "float32", {"bigtiff": True}),
    ("big-endian-int32", (20, 30), "int32", {"byteorder": ">"}),
    ("float64", (20, 30), "float64", {"compression": "zlib"}),
    ("miniswhite", (20, 30), "uint16", {"photometric": "miniswhite"}),
    ("float-predictor", (2, 20, 30), "float32", {"compression": "zlib", "predictor": 3}),
]


@pytest.mark.parametrize(
    ("name", "shape", "dtype", "options"), LAYOUTS, ids=[c[0] for c in LAYOUTS]
)
def test_reads_what_tifffile_reads(tmp_path: Path, name, shape, dtype, options):
    path = tmp_path / f"{name}.tif"
    options = {"photometric": "minisblack", **options}
    tifffile.imwrite(path, ramp(shape, dtype), **options)
    source, info = _core.open_tiff(str(path))
    want = tifffile.imread(path)
    assert source.shape == list(want.shape) and source.dtype == want.dtype.name
    np.testing.assert_array_equal(read_all(source), want)
    assert info["axes"] == ["z", "y", "x"][-len(shape) :]
    if len(shape) == 3:
        part = source.read([1, 3, 5], [1, 10, 11]).view(dtype).reshape(1, 10, 11)
        np.testing.assert_array_equal(part, want[1:2, 3:13, 5:16])


def test_rgb_chunky_and_planar_have_a_channel_axis(tmp_path: Path):
    rgb = ramp((20, 30, 3), "uint8")
    tifffile.imwrite(tmp_path / "chunky.tif", rgb, photometric="rgb")
    tifffile.imwrite(
        tmp_path / "planar.tif", np.moveaxis(rgb, -1, 0), photometric="rgb", planarconfig="separate"
    )
    for name in ("chunky.tif", "planar.tif"):
        source, info = _core.open_tiff(str(tmp_path / name))
        assert info["axes"] == ["c", "y", "x"]
        np.testing.assert_array_equal(read_all(source), np.moveaxis(rgb, -1, 0))


def test_rgb_jpeg_is_rgb_close_to_what_libjpeg_decodes(tmp_path: Path):
    rgb = ramp((32, 48, 3), "uint8")
    path = tmp_path / "jpeg.tif"
    tifffile.imwrite(path, rgb, photometric="rgb", compression="jpeg")
    source, info = _core.open_tiff(str(path))
    assert info["axes"] == ["c", "y", "x"]
    got = read_all(source).astype(int)
    want = np.moveaxis(tifffile.imread(path), -1, 0).astype(int)
    assert np.abs(got - want).max() <= 3


def test_ome_tiff_metadata(tmp_path: Path):
    data = ramp((2, 3, 4, 10, 12), "uint16")
    path = tmp_path / "image.ome.tif"
    metadata = {
        "axes": "TCZYX",
        "PhysicalSizeX": 0.406,
        "PhysicalSizeY": 0.406,
        "PhysicalSizeZ": 2.0,
        "Channel": {"Name": ["DAPI", "GFP", "RFP"], "Color": [-16776961, 16711935, 65535]},
    }
    tifffile.imwrite(path, data, ome=True, metadata=metadata)
    source, info = _core.open_tiff(str(path))
    np.testing.assert_array_equal(read_all(source), data)
    assert info == {
        "axes": ["t", "c", "z", "y", "x"],
        "scale": [1.0, 1.0, 2.0, 0.406, 0.406],
        "units": [None, None, "micrometer", "micrometer", "micrometer"],
        "pixel_sizes": [None, None, 2.0, 0.406, 0.406],
        "channels": [
            {"label": "DAPI", "color": "FF0000"},
            {"label": "GFP", "color": "00FF00"},
            {"label": "RFP", "color": "0000FF"},
        ],
    }


def test_a_folder_and_a_pattern_stack_the_files(tmp_path: Path):
    planes = ramp((3, 20, 30), "uint16")
    for i, plane in enumerate(planes):
        tifffile.imwrite(tmp_path / f"slice_{i:02}.tif", plane)
    for spec in (str(tmp_path), str(tmp_path / "slice_*.tif")):
        source, info = _core.open_tiff(spec)
        assert info == {
            "axes": ["z", "y", "x"],
            "scale": None,
            "units": None,
            "channels": None,
            "pixel_sizes": [None, None, None],
        }
        np.testing.assert_array_equal(read_all(source), planes)


def test_pixel_sizes_are_none_where_the_files_declare_none(tmp_path: Path):
    # Slices of 0.1 um pixels, no z spacing: z's size is unknown (None), not 1.0 as the
    # scale (OME's) says.
    for i, plane in enumerate(ramp((2, 8, 10), "uint16")):
        tifffile.imwrite(
            tmp_path / f"slice_{i}.tif",
            plane,
            resolution=(100000, 100000),
            resolutionunit="CENTIMETER",
        )
    _, info = _core.open_tiff(str(tmp_path))
    assert info["axes"] == ["z", "y", "x"]
    assert info["pixel_sizes"][0] is None
    assert info["pixel_sizes"][1:] == pytest.approx([0.1, 0.1])
    assert info["scale"] == pytest.approx([1.0, 0.1, 0.1])


def test_errors_have_the_classes_of_their_kinds(tmp_path: Path):
    text = tmp_path / "x.tif"
    text.write_text("not a tiff")
    with pytest.raises(sw.UnsupportedError, match=r"x\.tif' is not a TIFF file"):
        _core.open_tiff(str(text))
    lzma = tmp_path / "lzma.tif"
    tifffile.imwrite(lzma, ramp((8, 8), "uint8"), compression="lzma")
    with pytest.raises(sw.UnsupportedError, match=r"compression 'LZMA' \(34925\) is not supported"):
        _core.open_tiff(str(lzma))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    tifffile.imwrite(mixed / "a.tif", ramp((8, 8), "uint8"))
    tifffile.imwrite(mixed / "b.tif", ramp((9, 8), "uint8"))
    with pytest.raises(sw.ShapeError, match=r"b\.tif' holds axes"):
        _core.open_tiff(str(mixed))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(sw.ArrayNotFoundError, match="no TIFF files at"):
        _core.open_tiff(str(empty))
    source, _ = _core.open_tiff(str(mixed / "a.tif"))
    with pytest.raises(sw.ShardwrightError, match="not inside"):
        source.read([4, 0], [8, 8])
