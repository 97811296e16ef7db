"""Writes the TIFF fixtures of shardwright-tiff's tests (run from any folder):

    /work/main/.venv/bin/python crates/shardwright-tiff/tests/data/make_fixtures.py

Every pixel is ``sum(coordinate * WEIGHT[axis]) % modulus`` over the output axes (t, c,
z, y, x), which the Rust tests recompute (tests/common/mod.rs); the JPEG fixture's
decoded pixels (by tifffile) are stored beside it, ``jpeg.expected.bin``.
"""

import pathlib
import shutil

import numpy as np
import tifffile

HERE = pathlib.Path(__file__).parent
WEIGHT = {"t": 7, "c": 13, "z": 31, "y": 17, "x": 3}
MODULUS = {"uint8": 251, "int8": 127, "int16": 32749, "float32": 65521, "uint16": 65521}


def values(axes, shape, dtype):
    """The formula's array for `axes` (a string of t c z y x) of `shape`."""
    grids = np.indices(shape, dtype=np.int64)
    total = sum(grid * WEIGHT[a] for grid, a in zip(grids, axes))
    out = total % MODULUS[dtype]
    if dtype in ("int8", "int16"):
        out = out - MODULUS[dtype] // 2
    return out.astype(dtype)


def write(name, axes, shape, dtype, **kwargs):
    kwargs.setdefault("photometric", "minisblack")
    tifffile.imwrite(HERE / name, values(axes, shape, dtype), **kwargs)


def main():
    for old in HERE.glob("*.tif"):
        old.unlink()
    for folder in ("folder2d", "folder3d", "folder_mixed", "folder_resolution"):
        shutil.rmtree(HERE / folder, ignore_errors=True)
    write("strip_none.tif", "zyx", (3, 40, 50), "uint16", rowsperstrip=7)
    write("strip_lzw.tif", "yx", (40, 50), "uint8", compression="lzw", rowsperstrip=9)
    write("deflate.tif", "zyx", (2, 40, 50), "uint16", compression="zlib", predictor=True)
    write("packbits.tif", "yx", (40, 50), "uint8", compression="packbits")
    write("tiled_zstd.tif", "zyx", (2, 64, 96), "uint16", tile=(32, 32), compression="zstd")
    write(
        "tiled_edge.tif",
        "yx",
        (45, 70),
        "uint16",
        tile=(16, 32),
        resolution=(20000, 20000),
        resolutionunit="CENTIMETER",
    )
    write("bigtiff.tif", "zyx", (3, 40, 50), "uint16", bigtiff=True, rowsperstrip=16)
    write("bigendian.tif", "zyx", (2, 40, 50), "uint16", byteorder=">", tile=(16, 16))
    write("float32.tif", "yx", (20, 30), "float32", compression="zlib")
    write("int16.tif", "zyx", (2, 20, 30), "int16", rowsperstrip=5)
    write("rgb_chunky.tif", "yxc", (20, 30, 3), "uint8", photometric="rgb")
    write(
        "rgb_planar.tif",
        "cyx",
        (3, 20, 30),
        "uint8",
        photometric="rgb",
        planarconfig="separate",
        rowsperstrip=6,
    )
    jpeg = values("yx", (64, 64), "uint8")
    tifffile.imwrite(HERE / "jpeg.tif", jpeg, compression="jpeg", compressionargs={"level": 95})
    (HERE / "jpeg.expected.bin").write_bytes(tifffile.imread(HERE / "jpeg.tif").tobytes())
    rgb = values("yxc", (32, 32, 3), "uint8")
    tifffile.imwrite(HERE / "jpeg_rgb.tif", rgb, photometric="rgb", compression="jpeg")
    (HERE / "jpeg_rgb.expected.bin").write_bytes(
        np.moveaxis(tifffile.imread(HERE / "jpeg_rgb.tif"), -1, 0).tobytes()
    )
    write("miniswhite.tif", "yx", (20, 30), "uint16", photometric="miniswhite")
    # an OME-TIFF pyramid: level 1 in SubIFDs, which the source leaves out
    full = values("zyx", (2, 32, 32), "uint16")
    with tifffile.TiffWriter(HERE / "ome_pyramid.ome.tif", ome=True) as tw:
        tw.write(full, subifds=1, metadata={"axes": "ZYX"}, photometric="minisblack")
        tw.write(full[:, ::2, ::2], subfiletype=1, photometric="minisblack")
    # a reduced-resolution page (NewSubfileType 1) after the full one
    with tifffile.TiffWriter(HERE / "reduced.tif") as tw:
        tw.write(values("yx", (20, 30), "uint16"), photometric="minisblack")
        tw.write(values("yx", (10, 15), "uint16"), subfiletype=1, photometric="minisblack")
    ome_meta = {
        "axes": "TCZYX",
        "PhysicalSizeX": 0.406,
        "PhysicalSizeY": 0.406,
        "PhysicalSizeZ": 2.0,
        "TimeIncrement": 1.5,
        "Channel": {"Name": ["DAPI", "GFP", "RFP"], "Color": [-16776961, 16711935, 65535]},
    }
    tifffile.imwrite(
        HERE / "ome_xyzct.ome.tif",
        values("tczyx", (2, 3, 4, 10, 12), "uint16"),
        ome=True,
        metadata=ome_meta,
    )
    tifffile.imwrite(
        HERE / "ome_xyczt.ome.tif",
        values("tzcyx", (2, 4, 3, 10, 12), "uint16"),
        ome=True,
        metadata={"axes": "TZCYX", "PhysicalSizeZ": 0.5, "PhysicalSizeZUnit": "nm"},
    )
    tifffile.imwrite(
        HERE / "imagej.tif",
        values("tzcyx", (2, 3, 2, 10, 12), "uint16"),
        imagej=True,
        resolution=(4.0, 4.0),
        metadata={"axes": "TZCYX", "spacing": 1.5, "unit": "um", "finterval": 0.5},
    )
    for folder, axes, shape in (("folder2d", "yx", (20, 30)), ("folder3d", "zyx", (3, 20, 30))):
        (HERE / folder).mkdir()
        lead = "z" if len(shape) == 2 else "t"
        for i in range(3 if lead == "z" else 2):
            offset = values(lead + axes, (i + 1, *shape), "uint16")[i]
            tifffile.imwrite(HERE / folder / f"slice_{i:03}.tif", offset, photometric="minisblack")
    (HERE / "folder_mixed").mkdir()
    write("folder_mixed/a.tif", "yx", (20, 30), "uint16")
    write("folder_mixed/b.tif", "yx", (21, 30), "uint16")
    (HERE / "not_a_tiff.tif").write_text("this is a text file, not a TIFF\n")
    with tifffile.TiffWriter(HERE / "mixed_shapes.tif") as tw:
        tw.write(values("yx", (20, 30), "uint16"), photometric="minisblack")
        tw.write(values("yx", (21, 30), "uint16"), photometric="minisblack")
    write("lzma.tif", "yx", (20, 30), "uint16", compression="lzma")
    # RGB pixels in two OME channels: a channel axis and samples, not supported
    tifffile.imwrite(
        HERE / "ome_rgb_channels.ome.tif",
        np.zeros((2, 8, 8, 3), "uint8"),
        ome=True,
        photometric="rgb",
        metadata={"axes": "CYXS"},
    )
    # an ImageJ description declaring more images than the file has pages
    write(
        "imagej_short.tif",
        "zyx",
        (2, 8, 8),
        "uint8",
        metadata=None,
        description="ImageJ=1.11a\nimages=4\nslices=4\n",
    )
    write(
        "ome_bad.ome.tif",
        "yx",
        (8, 8),
        "uint8",
        metadata=None,
        description='<?xml version="1.0"?><OME><Image><Pixels DimensionOrder="XYZCT" '
        'SizeX="8" SizeY="8" SizeZ="zero"/></Image></OME>',
    )

    # RGB with a 4th sample that is not alpha (ExtraSamples 0, unspecified): the tiff
    # crate decodes interleaved pixels as RGB, so the source refuses them; in separate
    # planes every sample is decoded
    write("rgb_extra.tif", "yxc", (8, 10, 4), "uint8", photometric="rgb", extrasamples=[0])
    write(
        "rgb_extra_planar.tif",
        "cyx",
        (4, 8, 10),
        "uint8",
        photometric="rgb",
        planarconfig="separate",
        extrasamples=[0],
    )
    # tiles cut at the bottom edge in every plane
    write(
        "rgb_planar_tiled.tif",
        "cyx",
        (3, 20, 30),
        "uint8",
        photometric="rgb",
        planarconfig="separate",
        tile=(16, 16),
    )
    # page axes whose sizes multiply past 2**64 (to 0 when wrapped)
    write(
        "ome_overflow.ome.tif",
        "yx",
        (8, 8),
        "uint8",
        metadata=None,
        description='<?xml version="1.0"?><OME><Image><Pixels DimensionOrder="XYZCT" '
        'SizeX="8" SizeY="8" SizeZ="4294967296" SizeC="1" SizeT="4294967296"/></Image></OME>',
    )
    write(
        "imagej_overflow.tif",
        "yx",
        (8, 8),
        "uint8",
        metadata=None,
        description="ImageJ=1.11a\nimages=1\nchannels=4294967296\nslices=4294967296\n",
    )
    # slices with 0.1 um pixels (resolution tags) and no z spacing
    (HERE / "folder_resolution").mkdir()
    for i in range(2):
        write(
            f"folder_resolution/slice_{i}.tif",
            "yx",
            (8, 10),
            "uint16",
            resolution=(100000, 100000),
            resolutionunit="CENTIMETER",
        )


if __name__ == "__main__":
    main()
