"""The model-based test's building blocks for its rules (test_model_based.py): drawing
values, writes and shards, applying writes to the model, and running planned writes."""

from __future__ import annotations

import contextlib
from typing import Any

import model_helpers as mh
import numpy as np
import pytest
import shardwright as sw
from hypothesis import strategies as st


class Boom(Exception):
    """Raised inside blocks by the test."""


class ModelSteps:
    """Mixed into the state machine (``Model``); needs its ``a``, ``geom``, ``dtype``,
    ``model``, ``backend``, ``limited`` and ``too_large``."""

    def value(self, data: Any, shape: tuple[int, ...], kinds: tuple[str, ...] = mh.VALUE_KINDS):
        kind = data.draw(st.sampled_from(kinds))
        seed = data.draw(st.integers(0, 2**32 - 1))
        return mh.make_value(seed, kind, self.dtype, shape, self.geom.fill)

    def op(self, data: Any, box: tuple[slice, ...]) -> tuple[Any, Any, Any]:
        """``(key, value, (model_key, model_value))`` of a write of ``box``."""
        key = mh.write_key(data, box)
        mkey = mh.model_key(key)
        value, mvalue = self.value(data, self.model[mkey].shape)
        return key, value, (mkey, mvalue)

    def shard_index(self, data: Any) -> tuple[int, ...]:
        return tuple(data.draw(st.integers(0, g - 1)) for g in self.geom.grid)

    def shard_box(self, index: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        sl = self.geom.shard_slices(index)
        return tuple(s.start for s in sl), tuple(s.stop - s.start for s in sl)

    def applied(self, ops: list[Any], base: np.ndarray | None = None) -> np.ndarray:
        out = (self.model if base is None else base).copy()
        for mkey, mvalue in ops:
            out[mkey] = mvalue
        return out

    def unchanged_after(self, block: Any) -> None:
        """Run ``block`` (which must raise :class:`Boom`) and check nothing was stored."""
        before = self.backend.digest()
        with pytest.raises(Boom):
            block()
        assert self.backend.digest() == before, "an aborted block changed the store"

    def writer(self, index: tuple[int, ...], data: Any) -> sw.ShardWriter:
        retries = data.draw(st.sampled_from((10, 0)))
        if data.draw(st.booleans()):
            return self.a.write_shard(index, retries=retries)
        origin, shape = self.shard_box(index)
        return self.a.write_shard(sw.Domain(origin, shape), retries=retries)

    def writer_plan(self, index: tuple[int, ...], data: Any) -> list[Any]:
        """1 to 4 writes of inner chunks or regions of the shard, often after every inner
        chunk (so a big shard streams to its temporary file, and the chunks written again
        afterwards replace streamed ones): ``(key, value, (model_key, model_value))``.
        Everything is drawn before anything is written, so what is drawn never depends
        on what the writes do."""
        origin, shape = self.shard_box(index)
        chunks = list(self.a.iter_chunks(within=sw.Domain(origin, shape)))
        plan = []
        if data.draw(st.integers(0, 3)) == 0:
            seed = data.draw(st.integers(0, 2**32 - 1))
            for c in chunks:
                value, mvalue = mh.make_value(seed + len(plan), "array", self.dtype, c.shape, 0)
                plan.append((c, value, (c.slices, mvalue)))
        for _ in range(data.draw(st.integers(1, 4))):
            if data.draw(st.booleans()):
                c = chunks[data.draw(st.integers(0, len(chunks) - 1))]
                value, mvalue = self.value(data, c.shape)
                plan.append((c, value, (c.slices, mvalue)))
            else:
                plan.append(self.op(data, mh.boxes(data, origin, shape)))
        return plan

    def write_plan(self, w: Any, plan: list[Any]) -> list[Any]:
        """Carry out ``plan`` through ``w`` (a writer or transaction); the model's ops."""
        for key, value, _ in plan:
            w[key] = value
        return [mop for _, _, mop in plan]

    def writer_ops(self, w: sw.ShardWriter, index: tuple[int, ...], data: Any) -> list[Any]:
        return self.write_plan(w, self.writer_plan(index, data))

    @contextlib.contextmanager
    def refusable(self) -> Any:
        """Inside a transaction under a small ``memory_limit``: a TransactionTooLarge
        (whose moment depends on how far the encoders got) is noted, not raised."""
        try:
            yield
        except sw.TransactionTooLarge:
            if not self.limited:
                raise
            self.too_large = True

    def tx_ops(self, tx: sw.Transaction, ops: list[Any], data: Any) -> None:
        """Stage 1 to 4 writes across shards (some through ``tx.write_shard``, whose
        block may raise and drop only its own writes); check read-your-writes."""
        whole = ((0,) * self.a.ndim, self.a.shape)
        plan = []
        for _ in range(data.draw(st.integers(1, 4))):
            kind = data.draw(st.sampled_from(("region", "region", "writer", "writer_raise")))
            if kind == "region":
                plan.append((kind, None, [self.op(data, mh.boxes(data, *whole))]))
            else:
                index = self.shard_index(data)
                plan.append((kind, index, self.writer_plan(index, data)))
        box = mh.boxes(data, *whole)
        for kind, index, writes in plan:
            with self.refusable():
                if kind == "region":
                    ops.extend(self.write_plan(tx, writes))
                    continue
                w = tx.write_shard(index)
                if kind == "writer_raise":
                    with pytest.raises(Boom), w:
                        self.write_plan(w, writes)
                        raise Boom
                else:
                    with w:
                        done = self.write_plan(w, writes)
                    ops.extend(done)
        if not self.too_large:
            mh.assert_exact(tx[box], self.applied(ops)[box], f"tx[{box}] (read-your-writes)")
