"""docs/errors.md's bad input to a conversion (``sw.convert`` and ``shardwright
convert``): a file that is not a TIFF, a compression the reader does not decode (named),
pages of different shapes in one series, a folder or pattern without TIFF files, axes of
the wrong length."""

from __future__ import annotations

import numpy as np
import shardwright as sw
import tifffile
from error_doc import expect, expect_cli


def bad_sources(tmp_path):
    text = tmp_path / "scan.tif"
    text.write_text("a text file named .tif")
    lzma = tmp_path / "lzma.tif"
    tifffile.imwrite(lzma, np.zeros((8, 8), "uint16"), compression="lzma")
    mixed = tmp_path / "mixed.tif"
    with tifffile.TiffWriter(mixed) as tiff:
        tiff.write(np.zeros((8, 8), "uint16"))
        tiff.write(np.zeros((9, 8), "uint16"))
    empty = tmp_path / "slices"
    empty.mkdir()
    (empty / "notes.txt").write_text("no slices here")
    return text, lzma, mixed, empty


def test_convert_inputs(tmp_path):
    text, lzma, mixed, empty = bad_sources(tmp_path)
    with expect("convert-not-tiff"):
        sw.convert(text, tmp_path / "a.zarr")
    with expect("convert-compression"):
        sw.convert(lzma, tmp_path / "b.zarr")
    with expect("convert-page-shapes"):
        sw.convert(mixed, tmp_path / "c.zarr")
    with expect("convert-no-tiff"):
        sw.convert(empty, tmp_path / "d.zarr")
    with expect("convert-no-tiff"):
        sw.convert(str(empty / "*.tif"), tmp_path / "e.zarr")
    good = tmp_path / "good.tif"
    tifffile.imwrite(good, np.zeros((3, 8, 8), "uint16"), photometric="minisblack")
    with expect("convert-axes"):
        sw.convert(good, tmp_path / "f.zarr", axes="yx")
    assert not any((tmp_path / n).exists() for n in ("a.zarr", "b.zarr", "c.zarr", "f.zarr"))


def test_convert_on_the_command_line(tmp_path, capfd):
    text, _, mixed, _ = bad_sources(tmp_path)
    expect_cli("cli-convert-not-tiff", capfd, "convert", text, tmp_path / "a.zarr")
    expect_cli("cli-convert-page-shapes", capfd, "convert", mixed, tmp_path / "b.zarr")
