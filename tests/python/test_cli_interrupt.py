"""Ctrl-C (SIGINT) or SIGTERM during ``shardwright pyramid`` (the console script, run in
the Python process): the build stops at the next shard, aborts its uploads, removes its
temporary files, says "interrupted: rerun with --resume" and exits 130; ``--resume`` then
finishes the same pyramid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import shardwright as sw
import tensorstore as ts
import zarr


def levels_of(data: np.ndarray, factors, levels: int) -> list[np.ndarray]:
    out = [data]
    for _ in range(levels - 1):
        out.append(ts.downsample(ts.array(out[-1]), list(factors), "mean").read().result())
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupt") / "src.zarr"
    src = sw.create(
        path,
        shape=(1, 2, 64, 512, 512),
        dtype="uint16",
        chunks=(1, 1, 32, 128, 128),
        shards=(1, 1, 64, 256, 256),
    )

    def value(c: sw.Domain) -> np.ndarray:
        t, ch, z, y, x = np.ogrid[c.slices]
        noise = np.random.default_rng(list(c.origin)).integers(0, 256, c.shape)
        return ((t + ch * 7 + z * 3 + y * 5 + x * 11) % 4001 + noise).astype("uint16")

    src.map_chunks(value)
    return path, np.asarray(src)


@pytest.mark.heavy  # memory, streaming or kill test: run on the primary Python only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_cli_pyramid_cleans_up_and_resumes(tmp_path, source, signum):
    src, data = source
    dest = tmp_path / "p.zarr"
    args = [sys.executable, "-m", "shardwright", "pyramid", src, dest, "--factors", "1,1,2,2,2"]
    # Small shards: 4,096 at level 0, so that when the test signals after the first is
    # stored, thousands remain and the build cannot finish first, however loaded the machine.
    args += ["--levels", "3", "--chunks", "1,1,8,32,32", "--shards", "1,1,8,32,32", "-q"]
    args = [str(a) for a in args]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120

    def stored() -> bool:
        chunks = dest / "0" / "c"
        return chunks.exists() and any(
            p.is_file() and not p.name.startswith(".") for p in chunks.rglob("*")
        )

    while not stored():  # poll for progress: signal once a shard is stored
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted: rerun with --resume" in err and "Traceback" not in err, err
    assert not out
    assert not [p for p in dest.rglob("*") if "shardwright-tmp" in p.name]

    done = subprocess.run([*args, "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "already stored and skipped" in done.stdout
    for k, want in enumerate(levels_of(data, (1, 1, 2, 2, 2), 3)):
        np.testing.assert_array_equal(zarr.open_array(dest / str(k))[...], want, err_msg=str(k))
    assert sw.check(dest).ok


def test_an_exception_from_a_signal_handler_stops_the_command_and_propagates(tmp_path, capfd):
    # A SIGALRM handler raising TimeoutError (as pytest-timeout's does) during a long command:
    # the command stops cleanly, then the exception reaches the caller of main().
    from shardwright import _cli

    def expire(signum, frame):
        raise TimeoutError("too slow")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(TimeoutError, match="too slow"):
            _cli.main(["demo", str(tmp_path / "demo"), "--shape", "1,1,64,1024,1024", *SMALL])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert "interrupted: the demo stopped" in capfd.readouterr().err


#: Small shards, so that a long command has thousands to write.
SMALL = ["--levels", "3", "--shards", "1,1,8,32,32", "--chunks", "1,1,8,32,32", "-q"]


def run_console(monkeypatch, fake, argv):
    """Run ``console()`` with ``fake`` in place of the compiled command line."""
    from shardwright import _cli

    monkeypatch.setattr(_cli._core, "run_cli", fake)
    monkeypatch.setattr(sys, "argv", ["shardwright", *argv])
    with pytest.raises(SystemExit) as exited:
        _cli.console()
    return exited.value.code


def test_after_the_first_interrupt_a_second_ends_the_console_script_at_once(monkeypatch):
    seen = {}

    def fake(argv):  # the command polls the handlers after a shard, as run_cli does
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                time.sleep(0.001)
        except KeyboardInterrupt:
            seen["int"] = signal.getsignal(signal.SIGINT)
            seen["term"] = signal.getsignal(signal.SIGTERM)
            raise
        return 0

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert run_console(monkeypatch, fake, ["pyramid", "a", "b"]) == 130
    # While the command winds down, a second signal gets the default disposition: it ends
    # the process (docs/errors.md).
    assert seen == {"int": signal.SIG_DFL, "term": signal.SIG_DFL}
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_console_script_leaves_an_ignored_sigint_ignored(monkeypatch):
    seen = []

    def fake(argv):
        seen.append(signal.getsignal(signal.SIGINT))
        return 0

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `shardwright ... &` in sh
    try:
        assert run_console(monkeypatch, fake, ["pyramid", "a", "b"]) == 0
        assert run_console(monkeypatch, fake, ["info", "a"]) == 0
        assert seen == [signal.SIG_IGN, signal.SIG_IGN]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
