"""Where the time of ``w[c] = data`` goes, per inner chunk: 8³ uint16 chunks (1 KiB), 32,768
in one 256³ shard, no compression unless ``--zstd`` (so the codec does not hide the
overhead); best of 5 runs of each step.

    python benchmarks/per_chunk.py [--zstd]
"""

import sys
import tempfile
import time

import numpy as np
import shardwright as sw
from shardwright._indexing import parse_write_key
from shardwright._writer import coerce

SHAPE = (256, 256, 256)
array = sw.create(
    tempfile.mkdtemp() + "/t.zarr",
    shape=SHAPE,
    dtype="uint16",
    chunks=(8, 8, 8),
    shards=SHAPE,
    compressor="zstd" if "--zstd" in sys.argv else None,
)
block = (np.arange(512, dtype="uint16") % 7).reshape(8, 8, 8)


def best_us_per_chunk(step, runs=5):
    best = float("inf")
    for _ in range(runs):
        writer = array.write_shard((0, 0, 0))
        chunks = list(writer.inner_chunks())
        started = time.perf_counter()
        step(writer, chunks)
        best = min(best, time.perf_counter() - started)
        writer.abort()
    return best / len(chunks) * 1e6


def iterate(writer, chunks):
    for _ in writer.inner_chunks():
        pass


def python_checks(writer, chunks):
    for c in chunks:
        _, shape = parse_write_key(c, SHAPE)
        coerce(block, writer._dtype, shape)


def engine_call(writer, chunks):
    core = writer._core
    for c in chunks:
        core.write(c.origin, c.shape, block)


def assign(writer, chunks):
    for c in chunks:
        writer[c] = block


for name, step in [
    ("iterate inner_chunks()", iterate),
    ("Python checks (key, dtype, shape)", python_checks),
    ("engine call", engine_call),
    ("w[c] = data", assign),
]:
    print(f"{name}: {best_us_per_chunk(step):.2f} us per chunk")
