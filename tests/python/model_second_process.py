"""The model-based test's rules for a second process (test_model_based.py): its
transactions between steps or while this process holds a writer open, and races of both
processes' commits on one shard."""

from __future__ import annotations

from typing import Any

import model_helpers as mh
import shardwright as sw
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from model_backends import encode_write


class SecondProcessRules:
    """Mixed into the state machine (``Model``); needs its ``worker``, ``backend``,
    ``model``, ``geom``, ``held_writer`` and helpers (``shard_index``, ``shard_box``,
    ``value``, ``applied``, ``tick``, ``counts``)."""

    def worker_writes(self, data: Any, shards: list[tuple[int, ...]]) -> tuple[list, list]:
        wire, ops = [], []
        for index in shards:
            origin, shape = self.shard_box(index)
            box = mh.boxes(data, origin, shape)
            region_shape = tuple(s.stop - s.start for s in box)
            value, _ = self.value(data, region_shape, ("array", "fill", "mixed"))
            wire.append(encode_write(tuple(s.start for s in box), value))
            ops.append((box, value))
        return wire, ops

    def worker_target(self) -> dict[str, Any]:
        target, options = self.backend.target()
        return {"target": target, "options": options}

    @precondition(lambda self: self.worker is not None)
    @rule(data=st.data())
    def second_process(self, data: Any) -> None:
        """A transaction in another process, between steps or while this process holds
        a writer open (on another shard, or on the same one: its commit merges later)."""
        self.tick("second_process")
        shards = [self.shard_index(data) for _ in range(data.draw(st.integers(1, 3)))]
        if self.held_writer is not None and data.draw(st.booleans()):
            held = self.held_writer[1]
            others = [s for s in shards if s != held]
            shards = others or shards
            self.counts["second_process_while_holding"] = (
                self.counts.get("second_process_while_holding", 0) + 1
            )
        wire, ops = self.worker_writes(data, shards)
        answer = self.worker.call(
            {"op": "tx", "writes": wire, "retries": 10, **self.worker_target()}
        )
        assert answer == {"ok": True}, answer
        self.model = self.applied(ops)

    @precondition(lambda self: self.worker is not None)
    @rule(data=st.data(), retries=st.sampled_from((0, 2)))
    def race(self, data: Any, retries: int) -> None:
        """This process and another commit one shard at the same moment: both land (in
        either order), or the loser raises ConflictError and stored nothing; never a
        torn shard."""
        self.tick("race")
        index = self.shard_index(data)
        wire, theirs = self.worker_writes(data, [index])
        answer = self.worker.call(
            {"op": "stage", "shard": list(index), "writes": wire, "retries": retries}
            | self.worker_target()
        )
        assert answer == {"ready": True}, answer
        w = self.a.write_shard(index, retries=retries)
        origin, shape = self.shard_box(index)
        box = mh.boxes(data, origin, shape)
        value, _ = self.value(data, tuple(s.stop - s.start for s in box), ("array", "mixed"))
        w[box] = value
        ours = [(box, value)]
        self.worker.send({"op": "go"})
        mine_lost = False
        try:
            w.commit()
        except sw.ConflictError as err:
            assert self.geom.shard_key(index) in str(err), err
            mine_lost = True
        answer = self.worker.receive()
        theirs_lost = answer.get("error") == "ConflictError"
        if theirs_lost:
            assert self.geom.shard_key(index) in answer["message"], answer
        assert theirs_lost or answer == {"ok": True}, answer
        assert not (mine_lost and theirs_lost), "both writers of one shard lost"
        if mine_lost:
            candidates = [self.applied(theirs)]
        elif theirs_lost:
            candidates = [self.applied(ours)]
        else:
            candidates = [
                self.applied(ours, self.applied(theirs)),
                self.applied(theirs, self.applied(ours)),
            ]
        stored = self.a[...]
        problems = [mh.exact_mismatch(stored, c) for c in candidates]
        assert None in problems, f"the raced shard {index} is none of the outcomes: {problems}"
        self.model = candidates[problems.index(None)]
        self.counts["races_lost"] = self.counts.get("races_lost", 0) + (mine_lost or theirs_lost)
