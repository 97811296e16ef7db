"""The encoder pool: sized to the machine by default, overridable before its first use."""

import os
import subprocess
import sys

CHILD = r"""
import numpy as np, sys, tempfile, shardwright as sw
sw.set_encoder_threads(1)
assert sw.encoder_threads() == 1
a = sw.create(tempfile.mkdtemp() + "/t.zarr", shape=(16, 16), dtype="uint16",
              chunks=(4, 4), shards=(8, 8))
a.map_chunks(lambda c: np.full(c.shape, 3, dtype="uint16"))
assert (a[...] == 3).all()
try:
    sw.set_encoder_threads(2)
except sw.ShardwrightError as e:
    print("refused:", e)
"""


def run(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_the_pool_is_sized_before_first_use_and_fixed_after():
    proc = run(CHILD)
    assert proc.returncode == 0, proc.stderr
    assert "refused: the encoder pool already runs 1 threads" in proc.stdout


def test_the_default_is_one_thread_per_core_and_rayon_num_threads_overrides():
    proc = run("import shardwright as sw; print(sw.encoder_threads())")
    assert int(proc.stdout) == len(os.sched_getaffinity(0))
    proc = run("import shardwright as sw; print(sw.encoder_threads())", RAYON_NUM_THREADS="3")
    assert int(proc.stdout) == 3


def test_zero_threads_is_a_value_error():
    proc = run(
        "import shardwright as sw\n"
        "try:\n    sw.set_encoder_threads(0)\nexcept ValueError as e:\n    print('ok', e)"
    )
    assert proc.stdout.startswith("ok"), proc.stderr
