"""docs/errors.md's bad input to an appender (``a.appender()``): a frame of the wrong
shape or of values the dtype does not hold (each leaves the appender usable), an axis the
array lacks, a closed appender."""

from __future__ import annotations

import numpy as np
import shardwright as sw
from error_doc import expect


def test_appender_inputs(tmp_path):
    a = sw.create(tmp_path / "a.zarr", shape=(10, 7), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    with a.appender(axis=0) as ap:
        with expect("append-frame-shape"):
            ap.append(np.zeros((10, 6)))
        with expect("append-frame-dtype"):
            ap.append(np.full(7, 70000))
        ap.append(np.arange(7))  # still usable
    with expect("append-axis"):
        a.appender(axis=2)
    with expect("append-after-close"):
        ap.append(np.arange(7))
    assert a.shape == (11, 7) and sw.open(a.path)[10].tolist() == list(range(7))
