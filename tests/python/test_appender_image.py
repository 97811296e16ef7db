"""Image.appender (issue 25): frames appended to level 0 of an image, every coarser level
growing with it, each equal to sw.pyramid of the final level 0 (two methods, a factor of
1 and of 2 along the axis), continued by a new appender after open_image; the OME
metadata stays valid."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shardwright as sw
import zarr

FRAME = (12, 10)


def frames(start: int, stop: int) -> np.ndarray:
    t, y, x = np.ogrid[start:stop, 0 : FRAME[0], 0 : FRAME[1]]
    return ((t * 37 + y * 11 + x * 7 + (t * y * x) % 5) % 200).astype("uint16")


@pytest.mark.parametrize("method", ["mean", "mode"])
@pytest.mark.parametrize("along", [1, 2])
def test_every_level_equals_the_pyramid_of_the_final_level_0(tmp_path, method, along):
    dest = tmp_path / "img.ome.zarr"
    settings = dict(chunks=(2, 4, 4), shards=(4, 8, 8), levels=3, method=method)
    factors = (along, 2, 2)
    img = sw.create_image(
        dest, shape=(2, *FRAME), dtype="uint16", factors=factors, axes="tyx", **settings
    )
    img[0][...] = frames(0, 2)
    with img.appender(axis=0) as ap:
        for start, stop in [(2, 3), (3, 8), (8, 8), (8, 11)]:
            ap.append(frames(start, stop) if stop - start != 1 else frames(start, stop)[0])
        assert ap.length == 11
    assert img.levels[0].shape == (11, *FRAME)
    again = sw.open_image(dest)  # opens the result, and continues it
    with again.appender(axis=0) as ap:
        ap.append(frames(11, 16))
    data = frames(0, 16)
    want = sw.pyramid(data, tmp_path / "ref.zarr", factors=factors, **settings)
    got = sw.open_image(dest)
    with got:
        assert [a.shape for a in got.levels] == [a.shape for a in want]
        for level, expected in zip(got.levels, want, strict=True):
            np.testing.assert_array_equal(level[...], expected[...])
    # The OME metadata names the three levels, and zarr-python reads them.
    group = json.loads((dest / "zarr.json").read_text())
    datasets = group["attributes"]["ome"]["multiscales"][0]["datasets"]
    assert [d["path"] for d in datasets] == ["0", "1", "2"]
    np.testing.assert_array_equal(zarr.open_array(str(dest / "2"), mode="r")[...], want[2][...])


def test_a_wrong_frame_appends_nothing_to_any_level(tmp_path):
    img = sw.create_image(
        tmp_path / "i.ome.zarr",
        shape=(1, 4, 4),
        dtype="uint8",
        chunks=(2, 4, 4),
        shards=(2, 4, 4),
        factors=(2, 2, 2),
        levels=2,
        axes="tyx",
    )
    with img.appender(0) as ap:
        with pytest.raises(sw.ShapeError):
            ap.append(np.zeros((4, 3), "uint8"))
        with pytest.raises(sw.DTypeError):
            ap.append(np.full((4, 4), -1))
        ap.append(np.full((4, 4), 8, "uint8"))
        assert ap.shapes == [(2, 4, 4), (1, 2, 2)]  # frames 0 (unwritten) and 1: a group
    assert [a.shape for a in img.levels] == [(2, 4, 4), (1, 2, 2)]
    assert img.levels[1][0].tolist() == [[4, 4], [4, 4]]


@pytest.mark.parametrize("along", [1, 2])
def test_an_acquisition_starts_from_an_image_of_zero_frames(tmp_path, along):
    dest = tmp_path / "acq.ome.zarr"
    settings = dict(chunks=(2, 4, 4), shards=(4, 8, 8), levels=3)
    img = sw.create_image(
        dest, shape=(0, *FRAME), dtype="uint16", factors=(along, 2, 2), axes="tyx", **settings
    )
    assert [a.shape for a in img.levels] == [(0, 12, 10), (0, 6, 5), (0, 3, 3)]
    with img.appender(axis=0) as ap:
        for t in range(9):
            ap.append(frames(t, t + 1)[0])
    want = sw.pyramid(frames(0, 9), tmp_path / "ref.zarr", factors=(along, 2, 2), **settings)
    for level, expected in zip(img.levels, want, strict=True):
        np.testing.assert_array_equal(level[...], expected[...])
    group = json.loads((dest / "zarr.json").read_text())
    assert len(group["attributes"]["ome"]["multiscales"][0]["datasets"]) == 3
    with sw.open_image(dest) as reopened:
        assert reopened.levels[0].shape == (9, *FRAME)
