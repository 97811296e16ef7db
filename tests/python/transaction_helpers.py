"""Helpers shared by the transaction tests (test_transactions_*.py)."""

from __future__ import annotations

import numpy as np
import shard_bytes as sb
import shardwright as sw


def assert_stored(array: sw.Array, model: np.ndarray) -> None:
    np.testing.assert_array_equal(array[...], model)
    np.testing.assert_array_equal(sb.read_zarr(array.path), model)
    np.testing.assert_array_equal(sb.read_ts(array.path), model)
