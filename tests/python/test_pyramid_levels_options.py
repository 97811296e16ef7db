"""Issue 23: where ``levels=None`` stops (the first level within one inner chunk, as
ngff-zarr and ome-zarr-py), explicit levels that would downsample nothing refused before
anything is written or removed, and the storage options of each side of sw.pyramid,
sw.copy and swd.pyramid (``storage_options`` for whichever side is a URL,
``source_storage_options`` for the source's own)."""

from __future__ import annotations

import time

import dask.array as da
import numpy as np
import pytest
import shardwright as sw
import shardwright.dask as swd
from conftest import reference

BUILDERS = {
    "sw": lambda src, dst, **kw: sw.pyramid(src, dst, **kw),
    "swd": lambda src, dst, **kw: swd.pyramid(src, dst, scheduler="sync", **kw),
}


@pytest.mark.parametrize("how", BUILDERS)
def test_levels_none_stops_at_the_first_level_within_one_inner_chunk(tmp_path, how):
    build = BUILDERS[how]
    plane = da.zeros((1024, 1024), dtype="uint8", chunks=512) if how == "swd" else None
    plane = np.zeros((1024, 1024), "uint8") if plane is None else plane
    levels = build(plane, tmp_path / "default.zarr", factors=(2, 2))
    assert [a.shape for a in levels] == [(1024, 1024), (512, 512), (256, 256)]  # chunks 256
    levels = build(plane, tmp_path / "c64.zarr", factors=(2, 2), chunks=(64, 64))
    assert [a.shape[0] for a in levels] == [1024, 512, 256, 128, 64]
    # axes kept (factor 1) need not fit; each downsampled one must
    levels = build(plane[:40], tmp_path / "kept.zarr", factors=(1, 2), chunks=(8, 100))
    assert [a.shape for a in levels] == [(40, 1024), (40, 512), (40, 256), (40, 128), (40, 64)]


@pytest.mark.parametrize("how", BUILDERS)
def test_levels_that_downsample_nothing_are_refused_before_anything_is_removed(tmp_path, how):
    build = BUILDERS[how]
    data = reference((64, 64), "uint16")
    image = tmp_path / "img.zarr"
    first = build(data, image, factors=(2, 2), levels=7)  # down to 1 x 1: allowed
    assert first[-1].shape == (1, 1)
    stored = sorted(p.relative_to(image) for p in image.rglob("*"))
    start = time.monotonic()
    with pytest.raises(sw.ShapeError) as err:
        build(data, image, factors=(2, 2), levels=10**5, overwrite=True)
    assert time.monotonic() - start < 5
    assert str(err.value) == (
        "levels=100000 would add levels that downsample nothing: a (64, 64) image with "
        "factors (2, 2) has at most 7 levels (the last 1\u00d71)"
    )
    with pytest.raises(sw.ShapeError, match="has at most 7 levels"):
        build(data, image, factors=(2, 2), levels=8, overwrite=True)
    assert sorted(p.relative_to(image) for p in image.rglob("*")) == stored
    np.testing.assert_array_equal(sw.open(image / "0")[...], data)


def _local_source(tmp_path):
    data = reference((32, 32), "uint16", seed=3)
    src = sw.create(tmp_path / "src.zarr", shape=(32, 32), dtype="uint16", chunks=(8, 8))
    src[...] = data
    return str(tmp_path / "src.zarr"), data


@pytest.mark.parametrize("how", ["sw", "swd", "copy"])
def test_a_local_source_and_a_url_destination_share_storage_options(tmp_path, s3_bucket, how):
    bucket, options = s3_bucket
    path, data = _local_source(tmp_path)
    dest = f"s3://{bucket}/{how}.zarr"
    if how == "copy":
        out = sw.copy(path, dest, chunks=(8, 8), storage_options=options)
    else:
        out = BUILDERS[how](path, dest, factors=(2, 2), levels=2, storage_options=options)[0]
    np.testing.assert_array_equal(out[...], data)
    np.testing.assert_array_equal(sw.open(out.url, storage_options=options)[...], data)


@pytest.mark.parametrize("how", ["sw", "swd", "copy"])
def test_source_storage_options_serve_the_source_only(tmp_path, s3_bucket, s3_proxy, how):
    bucket, direct = s3_bucket
    through_proxy, proxy = s3_proxy
    data = reference((32, 32), "uint16", seed=4)
    src = f"s3://{bucket}/src.zarr"
    sw.create(src, shape=(32, 32), dtype="uint16", chunks=(8, 8), storage_options=direct)[...] = (
        data
    )
    proxy.clear()
    dest = f"s3://{bucket}/{how}.zarr"
    sides = {"storage_options": through_proxy, "source_storage_options": direct}
    if how == "copy":
        sw.copy(src, dest, chunks=(8, 8), **sides)
    else:
        BUILDERS[how](src, dest, factors=(2, 2), levels=2, **sides)
    assert proxy.matching("PUT", f"/{how}.zarr/")  # the destination through its options
    assert not proxy.matching("GET", "/src.zarr/")  # the source through its own
    np.testing.assert_array_equal(
        sw.open(dest + "/0" * (how != "copy"), storage_options=direct)[...], data
    )


@pytest.mark.parametrize("how", ["sw", "swd"])
def test_storage_options_that_serve_no_side_are_refused(tmp_path, how):
    path, _ = _local_source(tmp_path)
    build = BUILDERS[how]
    with pytest.raises(TypeError, match="source_storage_options are for a source that is"):
        build(path, tmp_path / "a.zarr", factors=(2, 2), source_storage_options={"region": "x"})
    with pytest.raises(TypeError, match="storage_options are for object-store URLs"):
        build(path, tmp_path / "b.zarr", factors=(2, 2), storage_options={"region": "x"})
    assert not (tmp_path / "a.zarr").exists() and not (tmp_path / "b.zarr").exists()
