"""The catalogue rows of sw.create_image and sw.open_image (docs/errors.md)."""

from __future__ import annotations

import numpy as np
import shardwright as sw
from error_doc import expect


def image(tmp_path, name="img.ome.zarr", **kw):
    settings = dict(shape=(8, 8), dtype="uint8", chunks=(4, 4), shards=(4, 4), factors=(2, 2))
    settings.update(kw)
    return sw.create_image(tmp_path / name, **settings)


def test_settings(tmp_path):
    with expect("image-factors"):
        image(tmp_path, factors=(2,))
    assert not (tmp_path / "img.ome.zarr").exists()
    image(tmp_path).close()
    with expect("image-exists"):
        image(tmp_path)


def test_an_open_image(tmp_path):
    img = image(tmp_path)
    with expect("image-level0-shape"):
        img[0].append(np.zeros((4, 8), "uint8"))
    with expect("image-level-read-only"):
        img[1][0, 0] = 1
    img.close()
    with expect("image-closed"):
        img.close()


def test_a_writer_committed_after_close(tmp_path):
    img = image(tmp_path)
    writer = img.write_shard((0, 0))
    writer[0:4, 0:4] = 1
    img.close()
    with expect("image-stored-after-close"):
        writer.commit()
    assert not img[0][0:4, 0:4].any()  # nothing was stored


def test_open_image_of_another_group(tmp_path):
    sw.pyramid(np.zeros((8, 8), "uint8"), tmp_path / "p.zarr", factors=(2, 2))
    with expect("image-open-not-image"):
        sw.open_image(tmp_path / "p.zarr")
