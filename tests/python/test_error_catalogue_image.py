"""docs/errors.md's bad physical metadata of an image (``scale``, ``translation``,
``units``, ``channels``): each refused before anything is written, in Python and on the
command line."""

from __future__ import annotations

import numpy as np
import shardwright as sw
from error_doc import array, expect, expect_cli


def test_physical_metadata_arguments(tmp_path):
    data = np.arange(64, dtype="uint8").reshape(8, 8)
    image = tmp_path / "img.zarr"

    def build(source=data, **settings):
        return sw.pyramid(source, image, factors=(2,) * source.ndim, levels=2, **settings)

    with expect("pyramid-scale-length"):
        build(scale=(0.5,))
    with expect("pyramid-scale-positive"):
        build(scale=(0, 0.5))
    with expect("pyramid-translation-finite"):
        build(translation=(float("nan"), 0))
    with expect("pyramid-units-length"):
        build(units=["micrometer"])
    with expect("pyramid-unit-name"):
        build(units=["furlong", "um"])
    with expect("pyramid-unit-kind"):
        build(units=["second", "micrometer"])
    cyx = np.zeros((2, 8, 8), "uint8")
    with expect("pyramid-channels-count"):
        sw.pyramid(cyx, image, factors=(1, 2, 2), levels=2, axes="cyx", channels=["DAPI"])
    with expect("pyramid-channels-no-axis"):
        build(channels=["a", "b"])
    with expect("pyramid-channel-color"):
        build(channels=[{"label": "GFP", "color": "#0f0"}])
    with expect("pyramid-channel-keys"):
        build(channels=[{"colour": "red"}])
    assert not image.exists()  # nothing was written


def test_physical_metadata_flags(tmp_path, capfd):
    a = array(tmp_path)
    image = tmp_path / "img.zarr"
    expect_cli("cli-scale", capfd, "pyramid", a.path, image, "--factors", "2,2", "--scale", "0.5")
    expect_cli(
        "cli-channels",
        capfd,
        *("pyramid", a.path, image, "--factors", "2,2"),
        *("--channel-names", "DAPI,GFP", "--channel-colors", "blue"),
    )
    assert not image.exists()
