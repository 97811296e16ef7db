"""Model-based testing: random sequences of writes, commits, aborts, exceptions, reads,
reopenings and a second process's writes, against a numpy model (issue 14, item 1).

:class:`Model` (a hypothesis ``RuleBasedStateMachine``) draws a geometry (rank 1 to 4,
sharded or not, edge shards, the index at the start or the end, eleven dtypes, four
compressors, a zero or other fill value; or shards over the writers' 1 MiB staging
buffer), creates the array on a backend (a local folder, ``memory:///``, a zarr-python
``MemoryStore`` through the adapter, moto's S3), then runs random rules: shard writers
(ended by their block, ``commit()``, ``abort()`` or an exception; or held open across
steps), transactions (across shards, with ``tx.write_shard`` inside, read-your-writes,
early commits, memory limits; or held open), ``a[key] = value`` and ``oindex``/``vindex``
assignments, reads, reopening, whole shards of the fill value, resize and append,
zarr-python's own writes, and (for the local folder and S3) a second process committing
between steps, while a writer is held, or racing this process on one shard. After every
step shardwright's read, zarr-python's read and the model agree exactly (dtype, shape
and bytes: NaN equals NaN, -0.0 is not 0.0), a shard's key is stored exactly when its
region holds something other than the fill value (on S3 an all-fill shard may be the
index-only empty shard), no key lies outside the grid, and no temporary file or
multipart upload is left over.

The model of a writer or transaction: its writes are kept in order and applied to the
model when it commits, on top of whatever the model holds then (chunks written whole
replace the stored ones; chunks written in part are merged with what is stored at the
commit). An abort, or an exception inside its block, applies nothing, and the stored
bytes are checked to be unchanged. Helpers: model_helpers.py (geometries, values,
keys), model_backends.py (backends, the worker process), model_steps.py (drawing and
running writes), model_second_process.py (the second-process rules).

CI runs a bounded number of examples (35 s on 3.12 and 32 s on 3.11 on a busy 2-core
machine, 20 s of CPU); ``SHARDWRIGHT_MODEL_EXAMPLES=2000`` (and
``SHARDWRIGHT_MODEL_STEPS=30``) runs long.
Each test prints its example and step counts (``-s``).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import time
from typing import Any

import model_backends as mb
import model_helpers as mh
import numpy as np
import pytest
import shardwright as sw
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from model_second_process import SecondProcessRules
from model_steps import Boom, ModelSteps

EXAMPLES = int(os.environ.get("SHARDWRIGHT_MODEL_EXAMPLES", "0"))
STEPS = int(os.environ.get("SHARDWRIGHT_MODEL_STEPS", "0"))
COUNTS: dict[str, dict[str, int]] = {}


class Model(ModelSteps, SecondProcessRules, RuleBasedStateMachine):
    """The state machine; :func:`machine` binds it to a backend and a worker."""

    backend: mb.Backend
    worker: mb.Worker | None
    geometries: st.SearchStrategy[mh.Geometry] = mh.geometries()
    label = "?"  # what the counts are printed under

    def __init__(self) -> None:
        super().__init__()
        self.held_writer: tuple[sw.ShardWriter, tuple[int, ...], list[Any]] | None = None
        self.held_tx: tuple[sw.Transaction, list[Any]] | None = None
        self.limited = self.too_large = False  # see refusable()
        self.counts = COUNTS.setdefault(self.label, {"examples": 0, "steps": 0})

    # ---------------------------------------------------------------- set-up and helpers

    def tick(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    @initialize(data=st.data())
    def create(self, data: Any) -> None:
        geom = data.draw(self.geometries)
        self.geom = geom
        self.dtype = np.dtype(geom.dtype)
        self.a = self.backend.create(geom)
        self.model = mh.full_of_fill(geom)
        self.counts["examples"] += 1
        self.zarr_touched: set[tuple[int, ...]] = set()  # shards zarr-python wrote last

    # ---------------------------------------------------------------- shard writers

    @rule(data=st.data())
    def writer_block(self, data: Any) -> None:
        """A shard writer, ended by its block, an explicit commit or abort, or an
        exception inside its block."""
        self.tick("writer_block")
        index = self.shard_index(data)
        ending = data.draw(
            st.sampled_from(("exit", "commit", "commit_in_with", "abort", "abort_in_with", "raise"))
        )
        w = self.writer(index, data)
        if ending == "raise":

            def block() -> None:
                with w:
                    self.writer_ops(w, index, data)
                    raise Boom

            self.unchanged_after(block)
            assert w.closed
            return
        if ending in ("exit", "commit_in_with", "abort_in_with"):
            with w:
                ops = self.writer_ops(w, index, data)
                if ending == "commit_in_with":
                    w.commit()
                elif ending == "abort_in_with":
                    w.abort()
        else:
            ops = self.writer_ops(w, index, data)
            w.commit() if ending == "commit" else w.abort()
        if ending not in ("abort", "abort_in_with"):
            self.model = self.applied(ops)

    @precondition(lambda self: self.held_writer is None)
    @rule(data=st.data())
    def writer_open(self, data: Any) -> None:
        """Open a shard writer held across the next steps."""
        self.tick("writer_open")
        index = self.shard_index(data)
        w = self.writer(index, data)
        self.held_writer = (w, index, self.writer_ops(w, index, data))

    @precondition(lambda self: self.held_writer is not None)
    @rule(data=st.data())
    def writer_more(self, data: Any) -> None:
        self.tick("writer_more")
        w, index, ops = self.held_writer
        ops.extend(self.writer_ops(w, index, data))

    @precondition(lambda self: self.held_writer is not None)
    @rule(ending=st.sampled_from(("commit", "abort", "with_raise")))
    def writer_close(self, ending: str) -> None:
        self.tick("writer_close")
        w, _, ops = self.held_writer
        self.held_writer = None
        if ending == "commit":
            w.commit()
            self.model = self.applied(ops)
        elif ending == "abort":
            w.abort()
        else:

            def block() -> None:
                with w:
                    raise Boom

            self.unchanged_after(block)

    # ---------------------------------------------------------------- transactions

    @rule(data=st.data())
    def transaction_block(self, data: Any) -> None:
        self.tick("transaction_block")
        ending = data.draw(st.sampled_from(("exit", "commit", "abort", "raise")))
        # early commits (each shard once all its chunks are written whole) stay after
        # an abort: only with endings that commit
        early = ending in ("exit", "commit") and data.draw(st.booleans())
        limit = data.draw(st.sampled_from((None, 64 << 20)))
        tx = self.a.transaction(
            memory_limit=limit, early_commit=early, retries=data.draw(st.sampled_from((10, 1)))
        )
        ops: list[Any] = []
        if ending == "raise":

            def block() -> None:
                with tx:
                    self.tx_ops(tx, ops, data)
                    raise Boom

            self.unchanged_after(block)
            return
        if ending == "exit" and not early and data.draw(st.booleans()):
            # a small memory limit: the write past it raises and nothing is stored
            tx = self.a.transaction(memory_limit=data.draw(st.sampled_from((16, 256))))
            before = self.backend.digest()
            self.limited, self.too_large = True, False
            try:
                with tx:
                    self.tx_ops(tx, ops, data)
            except sw.TransactionTooLarge:
                self.tick("transaction_too_large")
                assert self.backend.digest() == before, "a refused transaction stored data"
                return
            finally:
                self.limited = False
            assert not self.too_large, "a transaction refused a write, then committed"
            self.too_large = False
        elif ending == "exit":
            with tx:
                self.tx_ops(tx, ops, data)
        else:
            self.tx_ops(tx, ops, data)
            if ending == "abort":
                before = self.backend.digest()
                tx.abort()
                assert self.backend.digest() == before
                return
            tx.commit()
        self.model = self.applied(ops)

    @precondition(lambda self: self.held_tx is None)
    @rule(data=st.data())
    def transaction_open(self, data: Any) -> None:
        self.tick("transaction_open")
        tx = self.a.transaction()
        ops: list[Any] = []
        self.tx_ops(tx, ops, data)
        self.held_tx = (tx, ops)

    @precondition(lambda self: self.held_tx is not None)
    @rule(data=st.data())
    def transaction_more(self, data: Any) -> None:
        self.tick("transaction_more")
        tx, ops = self.held_tx
        self.tx_ops(tx, ops, data)

    @precondition(lambda self: self.held_tx is not None)
    @rule(commit=st.booleans())
    def transaction_close(self, commit: bool) -> None:
        self.tick("transaction_close")
        tx, ops = self.held_tx
        self.held_tx = None
        if commit:
            tx.commit()
            self.model = self.applied(ops)
        else:
            tx.abort()

    # ---------------------------------------------------------------- a[key] = value, reads

    @rule(data=st.data())
    def assign(self, data: Any) -> None:
        """``a[key] = value``, ``a.oindex[...] = ``, ``a.vindex[...] = `` (one-shot
        transactions) with the keys zarr-python reads, values broadcast or scalar."""
        self.tick("assign")
        how, key, mkey = data.draw(mh.selections(self.a.shape, writes=True))
        target = {"plain": self.a, "oindex": self.a.oindex, "vindex": self.a.vindex}[how]
        value, mvalue = self.value(data, self.model[mkey].shape)
        target[key] = value
        self.model[mkey] = mvalue

    @rule(data=st.data())
    def read(self, data: Any) -> None:
        self.tick("read")
        how, key, mkey = data.draw(mh.selections(self.a.shape, writes=False))
        source = {"plain": self.a, "oindex": self.a.oindex, "vindex": self.a.vindex}[how]
        expected = np.asarray(self.model[mkey])
        mh.assert_exact(source[key], expected, f"shardwright {how}[{key!r}]")
        z = self.backend.zarr_array()
        if z is not None and mh.zarr_reads(key):
            zsource = {"plain": z, "oindex": z.oindex, "vindex": z.vindex}[how]
            mh.assert_exact(np.asarray(zsource[key]), expected, f"zarr-python {how}[{key!r}]")

    @precondition(lambda self: self.backend.name in ("local", "zarr-memory"))
    @rule(data=st.data())
    def zarr_python_writes(self, data: Any) -> None:
        """zarr-python writes a region (its shards then merged by shardwright's writes)."""
        self.tick("zarr_python_writes")
        z = self.backend.zarr_array(mode="r+")
        box = mh.boxes(data, (0,) * self.a.ndim, self.a.shape)
        value, mvalue = self.value(data, self.model[box].shape, ("array", "fill", "mixed"))
        z[box] = value
        self.model[box] = mvalue
        self.zarr_touched.update(self.shards_meeting(box))

    def shards_meeting(self, box: tuple[slice, ...]) -> set[tuple[int, ...]]:
        ranges = [range(s.start // c, (s.stop - 1) // c + 1) for s, c in zip(box, self.geom.cell)]
        return set(itertools.product(*ranges))

    @precondition(lambda self: self.held_writer is None and self.held_tx is None)
    @rule(data=st.data())
    def resize(self, data: Any) -> None:
        """``a.resize(shape)`` (shrinking clears what falls outside) or ``a.append``."""
        self.tick("resize")
        cell, shape = self.geom.cell, self.a.shape
        if data.draw(st.booleans()):
            new = tuple(data.draw(st.integers(1, 3 * c)) for c in cell)
            if np.prod(new) > mh.MAX_ELEMENTS:
                new = tuple(min(n, c) for n, c in zip(new, cell))
            self.a.resize(new)
            model = np.full(new, self.geom.fill, self.dtype)
            both = tuple(slice(0, min(n, m)) for n, m in zip(new, shape))
            model[both] = self.model[both]
        else:
            axis = data.draw(st.integers(0, self.a.ndim - 1))
            part = tuple(
                data.draw(st.integers(1, cell[axis])) if d == axis else n
                for d, n in enumerate(shape)
            )
            if np.prod(shape) + np.prod(part) > mh.MAX_ELEMENTS:
                return
            value, mvalue = self.value(data, part, ("array", "mixed", "list"))
            assert self.a.append(value, axis=axis) == self.a.shape
            model = np.concatenate([self.model, np.asarray(mvalue, self.dtype)], axis=axis)
            new = model.shape
        assert self.a.shape == new
        self.geom = dataclasses.replace(self.geom, shape=new)
        self.model = model
        self.zarr_touched = {
            i for i in self.zarr_touched if all(a < g for a, g in zip(i, self.geom.grid))
        }

    @rule()
    def reopen(self) -> None:
        """Reopen the array (writers held stay on the old handle)."""
        self.tick("reopen")
        self.a = self.backend.open()

    @rule(data=st.data())
    def fill_shard(self, data: Any) -> None:
        """Write a whole shard of the fill value: afterwards its key is not stored."""
        self.tick("fill_shard")
        index = self.shard_index(data)
        box = self.geom.shard_slices(index)
        how = data.draw(st.sampled_from(("chunks", "region", "transaction", "assign")))
        fill = np.array(self.geom.fill, dtype=self.dtype)[()]
        if how in ("chunks", "region"):
            with self.a.write_shard(index) as w:
                if how == "region":
                    w[box] = fill
                else:
                    for c in w.inner_chunks():
                        w[c] = np.full(c.shape, fill, self.dtype)
        elif how == "transaction":
            with self.a.transaction() as tx:
                tx[box] = fill
        else:
            self.a[box] = fill
        self.model[box] = fill
        assert self.backend.shard_present(self.geom.shard_key(index)) in (None, False)

    # ---------------------------------------------------------------- the checks

    @invariant()
    def agree(self) -> None:
        self.counts["steps"] += 1
        mh.assert_exact(self.a[...], self.model, "shardwright a[...]")
        z = self.backend.zarr_array()
        if z is not None:
            mh.assert_exact(z[...], self.model, "zarr-python z[...]")
        else:
            mh.assert_exact(self.backend.open()[...], self.model, "a reopened handle")
        sizes = self.backend.sizes()
        keys = {self.geom.shard_key(i) for i in np.ndindex(*self.geom.grid)}
        for index in np.ndindex(*self.geom.grid) if sizes is not None else ():
            key = self.geom.shard_key(index)
            holds_data = not mh.all_fill(self.model[self.geom.shard_slices(index)], self.geom.fill)
            if holds_data:
                assert key in sizes, f"shard {key} holds data but is not stored"
            elif key not in sizes or index in self.zarr_touched:
                pass  # (zarr-python keeps shards of its own)
            elif self.backend.name == "s3" and self.geom.shards is not None:
                # object stores cannot delete conditionally: a merge puts an empty shard
                n = int(np.prod([s // c for s, c in zip(self.geom.shards, self.geom.chunks)]))
                assert sizes[key] == 16 * n + 4, f"shard {key} holds only the fill value"
            elif self.backend.name != "s3":
                raise AssertionError(f"shard {key} holds only the fill value but is stored")
        if sizes is not None:
            stray = {k for k in sizes if k.startswith("c/")} - keys
            assert not stray, f"keys outside the shard grid are stored: {sorted(stray)}"
        if self.held_writer is None:
            assert self.backend.debris() == [], self.backend.debris()

    def teardown(self) -> None:
        if self.held_writer is not None:
            self.held_writer[0].abort()
        if self.held_tx is not None:
            self.held_tx[0].abort()
        if isinstance(self.backend, mb.LocalBackend) and self.backend.root != self.backend.base:
            shutil.rmtree(self.backend.root, ignore_errors=True)


def machine(
    backend: mb.Backend,
    worker: mb.Worker | None,
    geometries: st.SearchStrategy[mh.Geometry],
    label: str,
) -> type[Model]:
    return type(
        f"Model_{backend.name}",
        (Model,),
        {
            "backend": backend,
            "worker": worker if backend.subprocess_ok else None,
            "geometries": geometries,
            "label": label,
        },
    )


def run(
    backend: mb.Backend,
    worker: mb.Worker | None,
    examples: int,
    steps: int,
    geometries: st.SearchStrategy[mh.Geometry] | None = None,
    label: str | None = None,
) -> None:
    label = label or backend.name
    run_state_machine_as_test(
        machine(backend, worker, mh.geometries() if geometries is None else geometries, label),
        settings=settings(
            max_examples=EXAMPLES or examples,
            stateful_step_count=STEPS or steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
    print(f"model-based {label}: {COUNTS.get(label, {})}")


@pytest.fixture
def worker():
    w = mb.Worker()
    yield w
    w.close()


def test_model_local(tmp_path, worker):
    run(mb.LocalBackend(tmp_path), worker, examples=15, steps=20)


def test_model_local_streaming(tmp_path, worker):
    """Shards over the writers' 1 MiB staging buffer: written chunks stream to the
    temporary file before the commit (and are read back from it by merges)."""
    run(
        mb.LocalBackend(tmp_path),
        worker,
        examples=3,
        steps=8,
        geometries=mh.streaming_geometries(),
        label="local-streaming",
    )


def test_second_process_writes_while_a_writer_is_open(tmp_path, worker):
    """Deterministically, once per run: another process commits a transaction on other
    shards (and then the same shard) while this process holds a writer open, with data
    streamed to its temporary file; both commits keep everything."""
    geom = mh.Geometry((600, 400), (50, 100), (400, 400), "float64", 0, "zstd", "end")
    backend = mb.LocalBackend(tmp_path)
    a = backend.create(geom)
    model = mh.full_of_fill(geom)
    rng = np.random.default_rng(5)
    w = a.write_shard((0, 0))
    mine = rng.standard_normal((400, 400))  # 1.28 MB of random float64: over the 1 MiB
    for c in w.inner_chunks():
        w[c] = mine[c.slices]
    for _ in range(500):  # the encoders finish in the background
        if backend.debris():
            break
        time.sleep(0.01)
    assert len(backend.debris()) == 1, "the writer streams to a temporary file"
    theirs = rng.standard_normal((30, 70))
    answer = worker.call(
        {
            "op": "tx",
            "target": str(backend.root),
            "options": None,
            "writes": [mb.encode_write((420, 10), theirs)],
            "retries": 0,
        }
    )
    assert answer == {"ok": True}, answer
    model[420:450, 10:80] = theirs
    mh.assert_exact(a[...], model, "after the other process's commit")
    same = rng.standard_normal((10, 10))
    answer = worker.call(
        {
            "op": "tx",
            "target": str(backend.root),
            "options": None,
            "writes": [mb.encode_write((5, 5), same)],
            "retries": 0,
        }
    )
    assert answer == {"ok": True}, answer
    model[5:15, 5:15] = same
    mh.assert_exact(a[...], model, "after the other process's second commit")
    w.commit()  # every chunk of shard (0, 0) written whole: replaces the other's region
    model[:400] = mine
    mh.assert_exact(a[...], model, "after this process's commit")
    mh.assert_exact(backend.zarr_array()[...], model, "zarr-python")
    assert backend.debris() == []


def test_model_memory_url():
    run(mb.MemoryBackend(), None, examples=20, steps=20)


def test_model_zarr_memory_store():
    run(mb.ZarrMemoryBackend(), None, examples=10, steps=20)


def test_model_s3(s3_bucket, s3_client, worker):
    bucket, options = s3_bucket
    run(mb.S3Backend(bucket, options, s3_client), worker, examples=5, steps=15)
