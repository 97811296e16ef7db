"""The physical metadata of a pyramid (issue 24, item 4): level 0's pixel size and offset
carried to every level (scale times the factors so far; translation shifted to the centre
of the first pixel for the reducing methods), OME unit names, and ``omero`` channels whose
windows are the top level's range and 2%/98% quantiles, from ``sw.pyramid``,
``shardwright.dask.pyramid`` and the command line; the output validates as OME-Zarr 0.5."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shardwright as sw
import zarr
from shardwright import _cli

S0 = (1.0, 1.0, 2.0, 0.406, 0.406)
T0 = (0.0, 0.0, 5.0, 10.0, -1.0)


def tczyx(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 4000, size=(2, 3, 6, 40, 48), dtype="uint16")
    data[:, 1] += 10_000  # channels of different ranges
    return data


def ome_of(dest) -> dict:
    return json.loads((dest / "zarr.json").read_text())["attributes"]["ome"]


def transforms(ome: dict) -> tuple[list, list]:
    datasets = ome["multiscales"][0]["datasets"]
    scales = [d["coordinateTransformations"][0]["scale"] for d in datasets]
    shifts = [
        d["coordinateTransformations"][1]["translation"]
        for d in datasets
        if len(d["coordinateTransformations"]) > 1
    ]
    return scales, shifts


def test_every_level_carries_level_0s_pixel_size_and_offset_and_validates(tmp_path):
    models = pytest.importorskip("ome_zarr_models.v05.image")
    dest = tmp_path / "img.zarr"
    sw.pyramid(
        tczyx(),
        dest,
        factors=(1, 1, 1, 2, 2),
        levels=3,
        chunks=(1, 1, 6, 16, 16),
        scale=S0,
        translation=T0,
        units=["s", None, "µm", "um", "micron"],
    )
    ome = ome_of(dest)
    scales, shifts = transforms(ome)
    for k, f in enumerate((1, 2, 4)):
        assert scales[k] == pytest.approx([1, 1, 2.0, 0.406 * f, 0.406 * f])
        shift = 0.406 * (f - 1) / 2
        assert shifts[k] == pytest.approx([0, 0, 5.0, 10.0 + shift, -1.0 + shift])
    axes = ome["multiscales"][0]["axes"]
    assert [a.get("unit") for a in axes] == ["second", None] + ["micrometer"] * 3
    image = models.Image.from_zarr(zarr.open_group(dest, mode="r"))
    assert len(image.attributes.ome.multiscales[0].datasets) == 3


def test_stride_keeps_the_offset_and_no_translation_is_written_unless_given(tmp_path):
    sw.pyramid(tczyx(), tmp_path / "a.zarr", factors=(1, 1, 1, 2, 2), levels=3, method="stride")
    assert transforms(ome_of(tmp_path / "a.zarr"))[1] == []
    sw.pyramid(
        tczyx(), tmp_path / "b.zarr", factors=(1, 1, 1, 2, 2), levels=3, method="stride",
        scale=S0, translation=T0,
    )  # fmt: skip
    assert transforms(ome_of(tmp_path / "b.zarr"))[1] == [list(T0)] * 3
    # mean without a translation given: the centre shift from 0
    sw.pyramid(tczyx(), tmp_path / "c.zarr", factors=(1, 1, 1, 2, 2), levels=2, scale=S0)
    assert transforms(ome_of(tmp_path / "c.zarr"))[1][1] == pytest.approx([0, 0, 0, 0.203, 0.203])


def test_channel_windows_are_the_top_levels_range_and_quantiles(tmp_path):
    models = pytest.importorskip("ome_zarr_models.v05.image")
    dest = tmp_path / "img.zarr"
    levels = sw.pyramid(
        tczyx(),
        dest,
        factors=(1, 1, 1, 2, 2),
        levels=3,
        chunks=(1, 1, 6, 16, 16),
        channels=["DAPI", {"label": "GFP", "color": "#00ff00"}, {"color": "magenta"}],
    )
    omero = ome_of(dest)["omero"]
    top = np.asarray(levels[-1][...]).astype("float64")
    for c, channel in enumerate(omero["channels"]):
        values = top[:, c]
        start, end = np.quantile(values, [0.02, 0.98])
        window = channel["window"]
        assert (window["min"], window["max"]) == (values.min(), values.max())
        assert (window["start"], window["end"]) == pytest.approx((start, end))
        assert channel["active"] is True and channel["family"] == "linear"
    got = [(c["label"], c["color"]) for c in omero["channels"]]
    assert got == [("DAPI", "0000FF"), ("GFP", "00FF00"), ("Channel 2", "FF00FF")]
    assert omero["rdefs"] == {"defaultT": 0, "defaultZ": 3, "model": "color"}
    models.Image.from_zarr(zarr.open_group(dest, mode="r"))


def test_an_image_without_a_channel_axis_takes_one_channel(tmp_path):
    data = np.arange(64 * 64, dtype="float32").reshape(64, 64)
    dest = tmp_path / "img.zarr"
    sw.pyramid(data, dest, factors=(2, 2), levels=2, channels=["only"])
    (channel,) = ome_of(dest)["omero"]["channels"]
    assert (channel["label"], channel["color"]) == ("only", "FFFFFF")
    assert ome_of(dest)["omero"]["rdefs"]["model"] == "greyscale"
    sw.pyramid(data, tmp_path / "plain.zarr", factors=(2, 2), levels=2)
    assert "omero" not in ome_of(tmp_path / "plain.zarr")


def test_dask_and_a_resumed_build_write_the_same_group_document(tmp_path):
    swd = pytest.importorskip("shardwright.dask")
    settings = dict(
        factors=(1, 1, 1, 2, 2),
        levels=3,
        chunks=(1, 1, 6, 16, 16),
        scale=S0,
        units=[None, None, "micrometer", "micrometer", "micrometer"],
        channels=["a", "b", "c"],
    )
    data = tczyx()
    sw.pyramid(data, tmp_path / "one" / "img.zarr", **settings)
    swd.pyramid(data, tmp_path / "dask" / "img.zarr", scheduler="threads", **settings)
    want = (tmp_path / "one" / "img.zarr" / "zarr.json").read_bytes()
    assert (tmp_path / "dask" / "img.zarr" / "zarr.json").read_bytes() == want
    # a resumed build whose top level is stored already reads it back for the windows
    (tmp_path / "one" / "img.zarr" / "zarr.json").unlink()
    again = sw.pyramid(data, tmp_path / "one" / "img.zarr", resume=True, **settings)
    assert sum(again.stats["shards_written"]) == 0
    assert (tmp_path / "one" / "img.zarr" / "zarr.json").read_bytes() == want


def test_the_command_line_flags_and_info(tmp_path, capfd):
    src = tmp_path / "src.zarr"
    data = np.arange(2 * 32 * 32, dtype="uint16").reshape(2, 32, 32)
    source = sw.create(src, shape=data.shape, dtype="uint16", chunks=(1, 16, 16))
    source[...] = data
    dest = tmp_path / "img.zarr"
    flags = [
        *("--axes", "c,y,x", "--factors", "1,2,2", "--levels", "2", "--scale", "1,0.5,0.5"),
        *("--translation", "0,1,2", "--units", ",um,um"),
        *("--channel-names", "DAPI,GFP", "--channel-colors", "0000FF,green"),
    ]
    assert _cli.main(["pyramid", str(src), str(dest), "-q", *flags]) == 0
    ome = ome_of(dest)
    scales, shifts = transforms(ome)
    assert scales == [[1, 0.5, 0.5], [1, 1.0, 1.0]]
    assert shifts == [[0, 1, 2], [0, 1.25, 2.25]]
    channels = ome["omero"]["channels"]
    assert [(c["label"], c["color"]) for c in channels] == [("DAPI", "0000FF"), ("GFP", "00FF00")]
    capfd.readouterr()
    assert _cli.main(["info", str(dest)]) == 0
    out = capfd.readouterr().out
    assert "units:         c: -, y: micrometer, x: micrometer" in out
    assert "level 0 (scale [1.0, 0.5, 0.5], translation [0.0, 1.0, 2.0]):" in out
    assert "level 1 (scale [1.0, 1.0, 1.0], translation [0.0, 1.25, 2.25]):" in out
    assert "channel 1:     GFP (colour 00FF00, window " in out
